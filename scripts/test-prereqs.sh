#!/usr/bin/env bash
# Installs what the test suite talks to, so `npm test` on a fresh machine needs nothing by hand:
# Debian's chromium (browser tests), etcd-server (Kubernetes tests), nginx (benchmark peer) and
# redis (a real TCP protocol through a TCP share); for
# the one-node test cluster (test/k8s/cluster/) Debian's containerd, runc, CNI plugins, iptables,
# conntrack, and buildah + mmdebstrap to build the image without Docker; then kube-apiserver,
# kube-controller-manager and helm, and the node components (kubelet, kube-scheduler, kube-proxy,
# CoreDNS, pause), built once with Go into a cache directory outside the repository. Each step is
# skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# ip netns: the tunnel's end-to-end test runs the laptop in its own network namespace
[ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
# a real TCP protocol through a private TCP share (test/tunnel/tcp-share-netns.test.ts)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
# the README's and docs' commands, run as written by test/docs/
[ -x /usr/bin/curl ] || missing+=(curl)
[ -x /usr/bin/jq ] || missing+=(jq)
[ -x /usr/bin/python3 ] || missing+=(python3)
[ -x /usr/bin/containerd ] || missing+=(containerd)
[ -x /usr/sbin/runc ] || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
[ -x /usr/sbin/iptables ] || missing+=(iptables)
[ -x /usr/sbin/conntrack ] || missing+=(conntrack)
[ -x /usr/bin/buildah ] || missing+=(buildah)
[ -x /usr/bin/mmdebstrap ] || missing+=(mmdebstrap)
sh scripts/apt-install.sh "[prereqs]" "${missing[@]}"

bash test/k8s/provide-binaries.sh >/dev/null
bash test/k8s/provide-node-binaries.sh >/dev/null
