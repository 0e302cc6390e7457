"""The lint gate, as tests so that CI fails on any finding and its output still ends with pytest's
summary: ruff and mypy (config in pyproject.toml) for the harness and the tests, shellcheck for the
scripts, clang-format (.clang-format) for the delay line's C. The tools come from
scripts/install-deps.sh --test."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netutil import ROOT, may_write

VENV_BIN = Path(sys.executable).parent
CLANG_FORMAT_FILES = sorted(str(p.relative_to(ROOT))
                            for d in ("bench/delayline", "bench/link", "bench/wire", "bench/kernelbbr",
                                      "bench/kernelbbr/floor", "bench/kernelbbr/lockstep", "loader", "loader/gen",
                                      "include", "bpf", "tests/unit", "tests/diff")
                            for p in (ROOT / d).glob("*.[ch]"))
SHELL_SCRIPTS = [*sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scripts").glob("*.sh")), ".ci/run"]

CHECKS = {
    "ruff": [str(VENV_BIN / "ruff"), "check", "bench", "tests"],
    "mypy": [str(VENV_BIN / "mypy")],
    "shellcheck": ["shellcheck", *SHELL_SCRIPTS],
    "clang-format": ["clang-format", "--dry-run", "--Werror", *CLANG_FORMAT_FILES],
}


# The tools that keep a cache in the checkout: in one this user cannot write, they keep it in the test's
# temporary directory instead (mypy then checks everything afresh).
CACHE_DIRS = {"ruff": ".ruff_cache", "mypy": ".mypy_cache"}


@pytest.mark.parametrize("tool", CHECKS)
def test_clean(tool: str, tmp_path: Path) -> None:
    argv = CHECKS[tool]
    if shutil.which(argv[0]) is None:
        pytest.fail(f"{argv[0]} is not installed: run scripts/install-deps.sh --test")
    if tool in CACHE_DIRS and not may_write(ROOT / CACHE_DIRS[tool]):
        argv = [*argv, "--cache-dir", str(tmp_path / CACHE_DIRS[tool])]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{tool} found problems:\n{proc.stdout}{proc.stderr}"


def test_bbrctl_header_sections_name_the_files_that_define_them() -> None:
    """loader/bbrctl.h is the map of loader/: each function declared under a `/* name.c: ... */` label is
    defined in that file (a declaration filed under the wrong label misleads the reader looking for it)."""
    label = re.compile(r"^/\* ([a-z_]+\.c):")
    declaration = re.compile(r"^[a-z].*?[ *]([a-z_0-9]+)\(")
    definitions = {m.group(1): path.name for path in (ROOT / "loader").glob("*.c")
                   for line in path.read_text().splitlines()
                   if (m := declaration.match(line)) and not line.rstrip().endswith(";")}
    section, misfiled = None, []
    for line in (ROOT / "loader" / "bbrctl.h").read_text().splitlines():
        if m := label.match(line):
            section = m.group(1)
        elif not line.strip():  # a section runs to the next blank line
            section = None
        elif section and (d := declaration.match(line)) and line.rstrip().endswith((";", ",")):
            if definitions.get(d.group(1)) != section:
                misfiled.append(f"{d.group(1)}: under {section}, defined in {definitions.get(d.group(1))}")
    assert not misfiled
