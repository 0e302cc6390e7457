#!/bin/sh
# The lint gate (CI fails on any finding): ruff and mypy for the harness and tests, shellcheck for the
# scripts, clang-format (.clang-format) for the delay line's C. Expects the tools of install-deps.sh --test.
set -eu
cd "$(dirname "$0")/.."
venv=.venv/bin
"$venv/ruff" check bench tests
"$venv/mypy"
shellcheck scripts/*.sh .ci/run
# The harness's C only for now: bpf/, loader/, include/ and tests/unit are hand-aligned and under edit on
# other branches; reformatting them with `clang-format -i` is one commit after those merge, then they
# join this list.
clang-format --dry-run --Werror bench/delayline/*.c
echo "lint: clean"
