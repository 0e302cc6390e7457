#!/bin/sh
# Install what bbrkit needs to build, test and benchmark on Debian, then the harness (bbrbench) with its
# Python dependencies into the checkout's virtual environment .venv (never the system Python).
# Safe to re-run: apt-get runs only when a package is missing, pip only when pyproject.toml changed.
# Usage: install-deps.sh [--test]   (--test: also the test and lint tools and the cluster extra)
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
extras=""
PACKAGES="clang llvm libbpf-dev libmicrohttpd-dev bpftool libelf-dev zlib1g-dev pkg-config iperf3 iproute2 nftables make gcc
iputils-ping ethtool util-linux python3 python3-venv"
if [ "${1:-}" = "--test" ]; then
	extras="[test,lint,cluster]"
	# A headless browser for the HTML report test; shellcheck and clang-format for the lint gate;
	# a web server, HTTP load generators and Prometheus for the policy and exporter tests; Slurm and munge
	# for the --slurm tests (their fixture starts its own daemons; the packages' services are not needed).
	PACKAGES="$PACKAGES chromium chromium-driver shellcheck clang-format nginx-light wrk curl prometheus slurm-wlm munge"
fi

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

venv="$repo/.venv"
# Debian's own interpreter when there is one (Debian 12: 3.11.2), not a newer python3 that happens to be
# first on PATH (pyenv, CI images): the suite then runs on the Python a fresh Debian host gives bbrbench.
python=python3
if [ -x /usr/bin/python3 ]; then
	python=/usr/bin/python3
fi
if [ -x "$venv/bin/python" ] && [ "$(readlink -f "$venv/bin/python")" != "$(readlink -f "$(command -v "$python")")" ]; then
	echo "install-deps: $venv was made by another python; recreating it with $python"
	rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
	echo "install-deps: creating $venv with $python ($("$python" --version 2>&1))"
	"$python" -m venv "$venv"
fi
# pip runs again only when pyproject.toml changed since the last install of these extras, or when
# bbrbench is gone from the venv.
stamp="$venv/.bbrbench-installed${extras:+-test}"
want=$(sha256sum "$repo/pyproject.toml" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$venv/bin/python" -c 'import bbrbench' 2>/dev/null; then
	echo "install-deps: installing bbrbench$extras into $venv"
	"$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$repo$extras"
	echo "$want" >"$stamp"
else
	echo "install-deps: bbrbench$extras already installed in $venv"
fi
