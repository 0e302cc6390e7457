#!/bin/sh
# The project's test command, as root on a Debian 12 machine: installs what is missing, builds
# everything, then runs every suite (host unit tests of the BBR core, bbrctl, real transfers in
# network namespaces, the benchmark harness). Safe to re-run. Extra arguments go to pytest.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q pytest
make -s all
exec python3 -m pytest tests "$@"
