"""scripts/vm-run.sh (a command on Debian's stock kernel in a qemu guest, docs/reference.md "Testing on
another kernel"): bad input is one lowercase line and exit status 2, before anything is downloaded,
cached or booted. Booting itself is too slow for the test command and needs root and qemu; it was run
by hand (docs/overhead.md, "The per-packet hooks on Debian's 6.12")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "vm-run.sh"


@pytest.mark.parametrize(("args", "message"), [
    (["--mem", "2G", "--", "true"], "vm-run: not a positive number: '2G'"),
    (["--cpus", "", "--", "true"], "vm-run: not a positive number: ''"),
    (["--timeout", "-5", "--", "true"], "vm-run: not a positive number: '-5'"),
    (["--mem"], "vm-run: option --mem needs a value"),
    (["--"], "vm-run: no command given (usage: vm-run.sh [options] -- CMD...)"),
    (["--bogus", "--", "true"], "vm-run: unknown option '--bogus' (usage: vm-run.sh [--kernel PKG] "
     "[--accel kvm|tcg] [--mem MB] [--cpus N] [--timeout S] -- CMD...)"),
])
def test_bad_input_is_one_line_and_changes_nothing(args: list[str], message: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    res = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "BBRKIT_VM_CACHE": str(cache)})
    assert res.returncode == 2, res
    assert res.stderr.splitlines() == [message]
    assert res.stdout == ""
    assert not cache.exists(), "bad input must not download or cache anything"
