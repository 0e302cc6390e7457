#!/bin/sh
# The project's test command (run as root from anywhere): every test suite under tests/.
set -eu
cd "$(dirname "$0")/.."
exec python3 -m pytest tests "$@"
