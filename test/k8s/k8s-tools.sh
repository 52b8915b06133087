#!/usr/bin/env bash
# Shared by provide-binaries.sh and provide-node-binaries.sh (sourced, not run): where the built
# binaries go, how a Kubernetes command is built from the Go module proxy, and the version checks
# that let a later run reuse them.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces every k8s.io staging module with a
# path inside its own tree. A throw-away tools module requires it and replaces each staging module
# with the matching published v0.Y.Z version instead.

K8S_VERSION="${SVC_K8S_VERSION:-v1.34.4}"
CACHE_ROOT="${SVC_TEST_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-test-bin}"
OUT="$CACHE_ROOT/k8s-$K8S_VERSION"
mkdir -p "$OUT"

# Go lives in /usr/local/go on these machines; a non-login shell may not have it on PATH.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
export GOTOOLCHAIN=local

# A binary is reused when it exists and reports the wanted version.
k8s_current() { [ -x "$OUT/$1" ] && "$OUT/$1" --version 2>/dev/null | grep -qx "Kubernetes $K8S_VERSION"; }

# k8s_build TOOLS_DIR CMD... — builds k8s.io/kubernetes/cmd/CMD for each CMD that is not current,
# in one `go build` (so the packages they share compile once), into $OUT.
k8s_build() {
  local tools="$1"
  shift
  local wanted=() cmd
  for cmd in "$@"; do k8s_current "$cmd" || wanted+=("$cmd"); done
  [ ${#wanted[@]} -gt 0 ] || return 0
  local staging_version="v0.${K8S_VERSION#v1.}"
  mkdir -p "$tools"
  export GOFLAGS="-mod=mod"
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
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for cmd in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$cmd"; done
    printf ')\n'
  } >"$tools/tools.go"
  (cd "$tools" && go mod tidy >/dev/null 2>&1 || true)
  # Stamp the version the way the Kubernetes Makefile does: the API server reports it in /version
  # (Helm checks it against a chart's kubeVersion), the kubelet in its Node status.
  local minor="${K8S_VERSION#v1.}"
  minor="${minor%%.*}"
  local ldflags="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  local tmp="$OUT/.build-$$"
  mkdir -p "$tmp"
  local pkgs=()
  for cmd in "${wanted[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$cmd"); done
  log "building ${wanted[*]} $K8S_VERSION (several minutes the first time)"
  (cd "$tools" && go build -trimpath -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}")
  for cmd in "${wanted[@]}"; do mv "$tmp/$cmd" "$OUT/$cmd"; done
  rmdir "$tmp"
}
