#!/bin/sh
# Builds the Go programs bench/frontend.ts runs, from the Go module proxy into the cache directory
# shared with the Kubernetes test binaries (outside the repository). Each binary is skipped when
# present.
#
#   oauth2-proxy         the release as published (its defaults: Go's http.Transport keeps at most
#                        2 idle connections per upstream host, so under concurrency most requests
#                        open a new upstream connection)
#   oauth2-proxy-pool64  the same source with one line added: MaxIdleConnsPerHost = 64 (and
#                        MaxIdleConns = 64) on the upstream transport — the "tuned" peer. The
#                        release has no option for it, so it is a build-time patch, checked below.
#
# Versions are pinned so figures stay comparable between runs: oauth2-proxy v7.15.6, the newest
# release the module proxy here serves (a user installing it today gets this one; its go.mod asks
# for go 1.26.0, which the local toolchain is). The builds are stamped with the version
# (oauth2-proxy.version beside them): a build of another version is built again, and the bench
# reads its label from this file's `version=` line. GOTOOLCHAIN=local keeps Go from downloading
# another toolchain.
#
# Not `go install …@version`: that also asks the module proxy for the module's version list (to
# report deprecations), which the proxy reachable here refuses (403). The module is downloaded at
# the pinned version and built inside its own directory, with its own go.mod and go.sum — the same
# build `go install` would do.
set -eu

version="v7.15.6"
module="github.com/oauth2-proxy/oauth2-proxy/v7"
bin_dir="${SVC_TEST_BIN:-$HOME/.cache/svc-test-bin}"

go_cmd="$(command -v go || echo /usr/local/go/bin/go)"
if [ ! -x "$go_cmd" ]; then
  echo "provide-go-tools: no Go toolchain found (looked on PATH and /usr/local/go/bin/go)" >&2
  exit 1
fi

# build <source dir> <binary name>: to a temporary name first, so an interrupted build never
# leaves a half-written binary that a later run would skip.
build() {
  (cd "$1" && GOTOOLCHAIN=local GOFLAGS="-trimpath -buildvcs=false" "$go_cmd" build -o "$bin_dir/$2.tmp" .)
  mv "$bin_dir/$2.tmp" "$bin_dir/$2"
  echo "ready: $bin_dir/$2"
}

# module_dir <module> <version>: the module's source, downloaded into Go's module cache.
module_dir() {
  dir="$(GOTOOLCHAIN=local "$go_cmd" mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  if [ -z "$dir" ]; then
    echo "provide-go-tools: could not download $1@$2" >&2
    exit 1
  fi
  echo "$dir"
}

mkdir -p "$bin_dir"

stamp="$bin_dir/oauth2-proxy.version"
if [ "$(cat "$stamp" 2>/dev/null)" = "$version" ] && [ -x "$bin_dir/oauth2-proxy" ] && [ -x "$bin_dir/oauth2-proxy-pool64" ]; then
  echo "oauth2-proxy $version already present in $bin_dir"
  exit 0
fi

echo "building oauth2-proxy $version into $bin_dir (takes minutes)"
rm -f "$stamp" "$bin_dir/oauth2-proxy" "$bin_dir/oauth2-proxy-pool64"
module_dir="$(module_dir "$module" "$version")"

build "$module_dir" oauth2-proxy

patched="$(mktemp -d)"
trap 'chmod -R u+w "$patched"; rm -rf "$patched"' EXIT
cp -R "$module_dir/." "$patched"
chmod -R u+w "$patched"
file="$patched/pkg/upstream/http.go"
# The first Clone() in http.go is the reverse proxy's transport (the second is the websocket one).
sed -i '0,/transport := http.DefaultTransport.(\*http.Transport).Clone()/s//&\n\ttransport.MaxIdleConns = 64\n\ttransport.MaxIdleConnsPerHost = 64/' "$file"
if [ "$(grep -c 'transport.MaxIdleConnsPerHost = 64' "$file")" != 1 ]; then
  echo "provide-go-tools: the pool patch no longer applies to $file" >&2
  exit 1
fi
build "$patched" oauth2-proxy-pool64
echo "$version" >"$stamp"
