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
# shellcheck disable=SC2086 # one word per package
sh scripts/apt-install.sh "provide-tools:" $missing

sh bench/provide-go-tools.sh
