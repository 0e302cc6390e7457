#!/bin/sh
# The project's test command, as root on a Debian 12 machine: installs what is missing (Debian packages;
# bbrbench and the test tools into .venv), builds everything, checks the record keys in docs/reference.md against
# the build (make check-readme), then runs every suite: first the tests that need no root (lint gate,
# host unit tests of the BBR core, bbrctl's help/man page/completion, scenarios, metrics, statistics,
# model, parsing, reports), then the root ones (bbrctl, real transfers, the harness in namespaces).
# Safe to re-run. Extra arguments go to both pytest runs (-k bbr_acd, -x, ...).
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test
cpus=$(nproc)
make -s -j"$cpus" all check-readme
# The binaries just built, ahead of any installed copy (the harness looks on PATH first).
PATH="$PWD/build:$PWD/.venv/bin:$PATH"
export PATH
# The slowest tests of each run are listed (above pytest's summary line), so a test that outgrows the time
# budget shows in CI's log.
DURATIONS=--durations=15
# The tests that need no root write only into their own temporary directories and use ports free at the time
# (the `installed` fixture's build in build/ takes a lock), so they run on every CPU, a test file per worker
# (a module's fixtures are made once).
# The root ones change the machine's shared state (registrations, pins, namespaces), checked after each
# test, and time real transfers, so they run one at a time. `-n 0` in the arguments runs the first serially.
python -m pytest -m "not root" -n "$cpus" --dist loadfile "$DURATIONS" "$@"
exec python -m pytest -m root "$DURATIONS" "$@"
