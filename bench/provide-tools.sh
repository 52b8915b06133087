#!/bin/sh
# What the load benchmarks run besides the project: Debian's wrk (the saturation load; without it
# the benchmarks fall back to autocannon, which takes a core of its own on a small machine) and
# nginx (a contender, and bench:frontend's backend), then the Go programs (bench/provide-go-tools.sh).
# Each is skipped when present; installing needs root, as scripts/test-prereqs.sh does.
set -eu
cd "$(dirname "$0")/.."

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "provide-tools: apt-get install$missing" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "provide-tools: missing Debian packages:$missing — run: sudo apt-get install$missing" >&2
    exit 1
  fi
fi

sh bench/provide-go-tools.sh
