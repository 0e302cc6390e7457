#!/bin/sh
# Install what bbrkit needs to build, test and benchmark on Debian. Safe to re-run: apt-get runs
# only when a package is missing.
set -eu

PACKAGES="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config iperf3 iproute2 nftables make gcc iputils-ping ethtool"

missing=""
for pkg in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $pkg" ;;
	esac
done

if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing packages:$missing; run as root to install them" >&2
		exit 1
	fi
	echo "install-deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# shellcheck disable=SC2086 # the list is meant to split into words
	apt-get install -y -q --no-install-recommends $missing
else
	echo "install-deps: all Debian packages present"
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
req="$repo/bench/requirements.txt"
if [ -f "$req" ]; then
	if ! python3 -m pip --version >/dev/null 2>&1; then
		apt-get install -y -q --no-install-recommends python3-pip
	fi
	# Debian's own python3 refuses pip installs (PEP 668) unless told; this is a test machine.
	if python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
		export PIP_BREAK_SYSTEM_PACKAGES=1
	fi
	python3 -m pip install -q -r "$req"
fi
