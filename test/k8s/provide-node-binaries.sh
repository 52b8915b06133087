#!/usr/bin/env bash
# Provides the node components of the one-node test cluster (test/k8s/cluster/): kubelet,
# kube-scheduler and kube-proxy built from k8s.io/kubernetes, CoreDNS built from its own module,
# and the Kubernetes pause program (the pod sandbox's process) compiled from the pause.c that the
# k8s.io/kubernetes module ships. All of it goes into the cache directory next to the control-plane
# binaries of provide-binaries.sh and is reused on later runs. The container runtime (containerd,
# runc, CNI plugins) and the image tools (buildah, mmdebstrap) are Debian packages that
# scripts/test-prereqs.sh installs.
set -euo pipefail

COREDNS_VERSION="${SVC_COREDNS_VERSION:-v1.15.0}"
log() { printf '[provide-node-binaries] %s\n' "$*" >&2; }
# shellcheck source=k8s-tools.sh
source "$(dirname "$0")/k8s-tools.sh"

timed() {
  local start=$SECONDS
  "$@"
  log "$1 ${2:-}: $((SECONDS - start)) s"
}

timed k8s_build "$CACHE_ROOT/node-tools-$K8S_VERSION" kubelet kube-scheduler kube-proxy

coredns_current() { [ -x "$OUT/coredns" ] && "$OUT/coredns" -version 2>/dev/null | grep -q "CoreDNS-${COREDNS_VERSION#v}"; }
build_coredns() {
  log "building coredns $COREDNS_VERSION"
  GOFLAGS=-mod=mod GOBIN="$OUT" go install -trimpath -ldflags="-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
}
coredns_current || timed build_coredns

# pause: the sandbox image's only program, built as the Kubernetes Makefile (build/pause) does.
PAUSE_VERSION=3.10.1
pause_current() { [ -x "$OUT/pause" ] && "$OUT/pause" -v 2>&1 | grep -q "pause.c v$PAUSE_VERSION"; }
build_pause() {
  local src
  src="$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')/build/pause/linux/pause.c"
  log "compiling pause $PAUSE_VERSION from $src"
  gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION" -o "$OUT/pause.tmp" "$src"
  mv "$OUT/pause.tmp" "$OUT/pause"
}
pause_current || timed build_pause

echo "$OUT"
