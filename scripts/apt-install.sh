#!/bin/sh
# apt-install.sh <label> <Debian package>…: installs the packages (as root, after apt-get update),
# or, without root, names them and the command to run and fails. Shared by scripts/test-prereqs.sh
# and bench/provide-tools.sh, which each pass only the packages they found missing.
set -eu
label="$1"
shift
[ $# -gt 0 ] || exit 0
if [ "$(id -u)" = 0 ]; then
  echo "$label apt-get install $*" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
else
  echo "$label missing Debian packages: $* — run: sudo apt-get install $*" >&2
  exit 1
fi
