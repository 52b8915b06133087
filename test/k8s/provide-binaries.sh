#!/usr/bin/env bash
# Provides the real Kubernetes control-plane binaries the integration tests start as processes
# (the way controller-runtime's envtest does). etcd comes from Debian; kube-apiserver,
# kube-controller-manager and helm are built with Go from the module proxy into a cache directory
# outside the repository and reused on later runs.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces every k8s.io staging module with a
# path inside its own tree. A throw-away tools module requires it and replaces each staging module
# with the matching published v0.Y.Z version instead.
set -euo pipefail

K8S_VERSION="${SVC_K8S_VERSION:-v1.34.4}"
HELM_VERSION="${SVC_HELM_VERSION:-v3.19.0}"
CACHE_ROOT="${SVC_TEST_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-test-bin}"
OUT="$CACHE_ROOT/k8s-$K8S_VERSION"
mkdir -p "$OUT"

log() { printf '[provide-binaries] %s\n' "$*" >&2; }

# Go lives in /usr/local/go on these machines; a non-login shell may not have it on PATH.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi

if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
  if [ "$(id -u)" = 0 ]; then
    log "installing Debian etcd-server"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  else
    log "etcd is missing: run 'apt-get install etcd-server' as root"; exit 1
  fi
fi

build_k8s() {
  local tools="$CACHE_ROOT/tools-$K8S_VERSION"
  local staging_version="v0.${K8S_VERSION#v1.}"
  mkdir -p "$tools"
  export GOFLAGS="-mod=mod"
  export GOTOOLCHAIN=local
  local gomod
  gomod=$(cd "$tools" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module svc.local/k8s-tools"
    echo
    echo "go 1.24"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$gomod" | awk '{print $1}' | sort -u |
      while read -r m; do echo "replace $m => $m $staging_version"; done
  } >"$tools/go.mod"
  cat >"$tools/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
  (cd "$tools" && go mod tidy >/dev/null 2>&1 || true)
  # Stamp the version the way the Kubernetes Makefile does: the API server reports it in /version,
  # which Helm checks against a chart's kubeVersion.
  local minor="${K8S_VERSION#v1.}"
  minor="${minor%%.*}"
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  for cmd in kube-apiserver kube-controller-manager; do
    if ! k8s_current "$cmd"; then
      log "building $cmd $K8S_VERSION (several minutes the first time)"
      (cd "$tools" && go build -trimpath -ldflags="$ldflags" -o "$OUT/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
      mv "$OUT/$cmd.tmp" "$OUT/$cmd"
    fi
  done
}

# A binary is reused when it exists and reports the wanted version.
k8s_current() { [ -x "$OUT/$1" ] && "$OUT/$1" --version 2>/dev/null | grep -qx "Kubernetes $K8S_VERSION"; }
helm_current() { [ -x "$OUT/helm" ] && "$OUT/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$HELM_VERSION"; }

if ! k8s_current kube-apiserver || ! k8s_current kube-controller-manager; then
  build_k8s
fi

if ! helm_current; then
  log "building helm $HELM_VERSION"
  # As helm's Makefile: its version, and the Kubernetes version `helm template` assumes by default.
  helm_k8s_minor="${K8S_VERSION#v1.}"
  helm_k8s_minor="${helm_k8s_minor%%.*}"
  helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$helm_k8s_minor"
  done
  GOTOOLCHAIN=local GOBIN="$OUT" go install -trimpath -ldflags="$helm_ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

echo "$OUT"
