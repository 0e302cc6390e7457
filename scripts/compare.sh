#!/bin/sh
# The main job, as root on a Debian 12 machine: installs what is missing (Debian packages; bbrbench into
# .venv), builds, then runs `bbrbench compare --profile quick`: cubic, bbr and every bbrkit algorithm,
# each alone on one emulated 50 Mbit/s, 20 ms, 2 BDP path, one flow and then two, 5 s runs, 3 repetitions.
# Prints the table over each run's steady state (from 1 s after the last flow's start); writes
# compare.html, plots and the raw runs under results/compare-quick/. Safe to re-run: a rerun resumes there
# (an interrupted one keeps its finished runs).
# Arguments go to `bbrbench compare` (e.g. bbr bbr1, --reps 5, --profile '' for 20 s runs, --out DIR).
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
make -s all
PATH="$PWD/build:$PATH"
export PATH
exec .venv/bin/bbrbench compare --profile quick "$@"
