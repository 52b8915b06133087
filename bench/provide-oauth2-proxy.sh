#!/bin/sh
# Builds oauth2-proxy, the peer that bench/frontend.ts measures the frontend against, from the Go
# module proxy into the cache directory shared with the Kubernetes test binaries (outside the
# repository). Each binary is skipped when present.
#
#   oauth2-proxy         the release as published (its defaults: Go's http.Transport keeps at most
#                        2 idle connections per upstream host, so under concurrency most requests
#                        open a new upstream connection)
#   oauth2-proxy-pool64  the same source with one line added: MaxIdleConnsPerHost = 64 (and
#                        MaxIdleConns = 64) on the upstream transport — the "tuned" peer. v7.15.2
#                        has no option for it, so it is a build-time patch, checked below.
#
# The version is pinned so figures stay comparable between runs; v7.15.2 is the newest release the
# module proxy here serves (v7.15.3 is refused) and its go.mod (go 1.25) builds with the local
# toolchain. GOTOOLCHAIN=local keeps Go from downloading another toolchain.
#
# Not `go install …@version`: that also asks the module proxy for the module's version list (to
# report deprecations), which the proxy reachable here refuses (403). The module is downloaded at
# the pinned version and built inside its own directory, with its own go.mod and go.sum — the same
# build `go install` would do.
set -eu

version="v7.15.2"
module="github.com/oauth2-proxy/oauth2-proxy/v7"
bin_dir="${SVC_TEST_BIN:-$HOME/.cache/svc-test-bin}"

go_cmd="$(command -v go || echo /usr/local/go/bin/go)"
if [ ! -x "$go_cmd" ]; then
  echo "provide-oauth2-proxy: no Go toolchain found (looked on PATH and /usr/local/go/bin/go)" >&2
  exit 1
fi

# build <source dir> <binary name>: to a temporary name first, so an interrupted build never
# leaves a half-written binary that a later run would skip.
build() {
  (cd "$1" && GOTOOLCHAIN=local GOFLAGS="-trimpath -buildvcs=false" "$go_cmd" build -o "$bin_dir/$2.tmp" .)
  mv "$bin_dir/$2.tmp" "$bin_dir/$2"
  echo "ready: $bin_dir/$2"
}

if [ -x "$bin_dir/oauth2-proxy" ] && [ -x "$bin_dir/oauth2-proxy-pool64" ]; then
  echo "oauth2-proxy already present in $bin_dir"
  exit 0
fi

mkdir -p "$bin_dir"
echo "building oauth2-proxy $version into $bin_dir (takes minutes)"
module_dir="$(GOTOOLCHAIN=local "$go_cmd" mod download -json "$module@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$module_dir" ]; then
  echo "provide-oauth2-proxy: could not download $module@$version" >&2
  exit 1
fi

[ -x "$bin_dir/oauth2-proxy" ] || build "$module_dir" oauth2-proxy

if [ ! -x "$bin_dir/oauth2-proxy-pool64" ]; then
  patched="$(mktemp -d)"
  trap 'chmod -R u+w "$patched"; rm -rf "$patched"' EXIT
  cp -R "$module_dir/." "$patched"
  chmod -R u+w "$patched"
  file="$patched/pkg/upstream/http.go"
  # The first Clone() in http.go is the reverse proxy's transport (the second is the websocket one).
  sed -i '0,/transport := http.DefaultTransport.(\*http.Transport).Clone()/s//&\n\ttransport.MaxIdleConns = 64\n\ttransport.MaxIdleConnsPerHost = 64/' "$file"
  if [ "$(grep -c 'transport.MaxIdleConnsPerHost = 64' "$file")" != 1 ]; then
    echo "provide-oauth2-proxy: the pool patch no longer applies to $file" >&2
    exit 1
  fi
  build "$patched" oauth2-proxy-pool64
fi
