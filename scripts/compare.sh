#!/bin/sh
# The main job, as root on a Debian 12 machine: installs what is missing, builds, then runs the
# default comparison (cubic, bbr and bbrkit's algorithms sharing one emulated bottleneck), which
# prints a table and writes samples, summary.json and plots under results/. Safe to re-run.
# Arguments go to `bbrbench run` (e.g. --out DIR, duration_s=60, bottleneck.rate_mbit=100).
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
make -s all
exec bench/bbrbench.sh run default "$@"
