"""Runs the host unit tests of the BBR core (tests/unit/test_*.c, built by `make`) as pytest cases,
one case per C test, so that a failure names the C test and shows its message."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARIES = sorted(p.stem for p in (ROOT / "tests" / "unit").glob("test_*.c"))


def _cases() -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for name in BINARIES:
        binary = ROOT / "build" / name
        if not binary.exists():
            cases.append((name, "<not built: run make>"))
            continue
        listed = subprocess.run([binary, "--list"], capture_output=True, text=True, check=True)
        cases.extend((name, case) for case in listed.stdout.split())
    return cases


@pytest.mark.parametrize(("binary", "case"), _cases())
def test_c_unit(binary: str, case: str) -> None:
    path = ROOT / "build" / binary
    assert path.exists(), f"{path} is missing: run `make` first"
    result = subprocess.run([path, case], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
