#!/usr/bin/env bash
# Provides the real Kubernetes control-plane binaries the integration tests start as processes
# (the way controller-runtime's envtest does). etcd comes from Debian; kube-apiserver,
# kube-controller-manager and helm are built with Go from the module proxy into a cache directory
# outside the repository and reused on later runs (how: k8s-tools.sh).
set -euo pipefail

HELM_VERSION="${SVC_HELM_VERSION:-v3.19.0}"
# Keep in step with GATEWAY_API_VERSION in binaries.ts.
GATEWAY_API_VERSION="${SVC_GATEWAY_API_VERSION:-v1.6.3}"
log() { printf '[provide-binaries] %s\n' "$*" >&2; }
# shellcheck source=k8s-tools.sh
source "$(dirname "$0")/k8s-tools.sh"

if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
  if [ "$(id -u)" = 0 ]; then
    log "installing Debian etcd-server"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  else
    log "etcd is missing: run 'apt-get install etcd-server' as root"; exit 1
  fi
fi

k8s_build "$CACHE_ROOT/tools-$K8S_VERSION" kube-apiserver kube-controller-manager

helm_current() { [ -x "$OUT/helm" ] && "$OUT/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$HELM_VERSION"; }

if ! helm_current; then
  log "building helm $HELM_VERSION"
  # As helm's Makefile: its version, and the Kubernetes version `helm template` assumes by default.
  helm_k8s_minor="${K8S_VERSION#v1.}"
  helm_k8s_minor="${helm_k8s_minor%%.*}"
  helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$helm_k8s_minor"
  done
  GOBIN="$OUT" go install -trimpath -ldflags="$helm_ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

# The Gateway API's own HTTPRoute CRD (standard channel), which the tests install into the API
# server: taken from the sigs.k8s.io/gateway-api module as published, never written by hand.
gateway_crd="$CACHE_ROOT/gateway-api-$GATEWAY_API_VERSION/gateway.networking.k8s.io_httproutes.yaml"
if [ ! -s "$gateway_crd" ]; then
  log "fetching the Gateway API $GATEWAY_API_VERSION HTTPRoute CRD"
  gateway_dir=$(cd "$CACHE_ROOT" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" |
    sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$(dirname "$gateway_crd")"
  cat "$gateway_dir/config/crd/standard/gateway.networking.k8s.io_httproutes.yaml" >"$gateway_crd.tmp"
  mv "$gateway_crd.tmp" "$gateway_crd"
fi

echo "$OUT"
