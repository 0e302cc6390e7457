#!/bin/sh
# Runs the tests that need no root against the oldest versions bbrbench claims to work with: the lower
# bounds in pyproject.toml's dependencies (and pytest's), installed exactly into a throwaway venv.
# Needs network access to PyPI. Usage: scripts/check-min-versions.sh [pytest args]
set -eu
cd "$(dirname "$0")/.."
venv=$(mktemp -d /tmp/bbrbench-minv.XXXXXX)
trap 'rm -rf "$venv"' EXIT INT TERM
python3 -m venv "$venv"
pins=$(python3 - <<'PY'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
specs = project["dependencies"] + [d for d in project["optional-dependencies"]["test"] if d.startswith("pytest")]
print(" ".join(re.sub(r">=", "==", s) for s in specs))
PY
)
echo "oldest versions: $pins"
# shellcheck disable=SC2086  # one argument per pin
"$venv/bin/pip" install --quiet --disable-pip-version-check $pins
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -e .
PATH="$PWD/build:$PATH" "$venv/bin/python" -m pytest -p no:cacheprovider -m "not root" \
    --deselect tests/test_lint.py "$@"
