#!/bin/sh
# Runs the harness from anywhere: bench/bbrbench.sh run default
here=$(dirname "$(readlink -f "$0")")
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m bbrbench "$@"
