#!/bin/sh
# The lint gate (CI fails on any finding): ruff and mypy for the harness and tests, shellcheck for the
# scripts, clang-format (.clang-format) for the C sources. Expects the tools of install-deps.sh --test.
set -eu
cd "$(dirname "$0")/.."
venv=.venv/bin
"$venv/ruff" check bench tests
"$venv/mypy"
shellcheck scripts/*.sh .ci/run
# shellcheck disable=SC2046 # file names without spaces, one word each
clang-format --dry-run --Werror $(git ls-files '*.c' '*.h')
echo "lint: clean"
