"""The lint gate, as tests so that CI fails on any finding and its output still ends with pytest's
summary: ruff and mypy (config in pyproject.toml) for the harness and the tests, shellcheck for the
scripts, clang-format (.clang-format) for the delay line's C. The tools come from
scripts/install-deps.sh --test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
CLANG_FORMAT_FILES = sorted(str(p.relative_to(ROOT))
                            for d in ("bench/delayline", "bench/link", "bench/wire", "bench/floor", "loader",
                                      "loader/gen", "include", "bpf", "tests/unit", "tests/lockstep")
                            for p in (ROOT / d).glob("*.[ch]"))
SHELL_SCRIPTS = [*sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scripts").glob("*.sh")), ".ci/run"]

CHECKS = {
    "ruff": [str(VENV_BIN / "ruff"), "check", "bench", "tests"],
    "mypy": [str(VENV_BIN / "mypy")],
    "shellcheck": ["shellcheck", *SHELL_SCRIPTS],
    "clang-format": ["clang-format", "--dry-run", "--Werror", *CLANG_FORMAT_FILES],
}


@pytest.mark.parametrize("tool", CHECKS)
def test_clean(tool: str) -> None:
    argv = CHECKS[tool]
    if shutil.which(argv[0]) is None:
        pytest.fail(f"{argv[0]} is not installed: run scripts/install-deps.sh --test")
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{tool} found problems:\n{proc.stdout}{proc.stderr}"
