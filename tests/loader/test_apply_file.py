"""`bbrctl apply FILE` checks the whole file before it needs root or touches anything: a bad line is one
error naming FILE:LINE and the reason, exit status 2, nothing on stdout. These run as nobody. The shipped
unit is checked by systemd's own verifier on the installed tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from loaderutil import ctl

BAD_FILES = [
    ("attach bbr9\n", 1, "unknown algorithm 'bbr9'"),
    ("\n# fine\nattach bbr3\nattach bbr3\n", 4, "bbr3 is attached twice"),
    ("attach bbr3 beta=7\n", 1, "beta: 7 is out of range"),
    ("attach bbr3 colour=blue\n", 1, "unknown parameter 'colour'"),
    ("attach\n", 1, "attach needs an ALGO"),
    ("rule web arms=bbr3\n", 1, "rule web: bbr3 is not attached by an attach line"),
    ("rule web arms=no_such_cc\n", 1, "rule web: no_such_cc is not a registered algorithm"),
    ("rule web arms=cubic:50,reno:40\n", 1, "arms: weights add up to 90.00%, not 100%"),
    ("rule web arms=cubic replace=yes\n", 1, "replace is not a key here"),
    ("rule a arms=cubic\nrule a arms=reno\n", 2, "rule a is declared twice"),
    ("detach bbr3\n", 1, "unknown keyword 'detach' (attach, rule)"),
]


@pytest.fixture
def conf_dir() -> Iterator[Path]:
    """A directory nobody can read (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="bbrkit-apply-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d)


@pytest.mark.parametrize(("text", "line", "message"), BAD_FILES, ids=[m for _, _, m in BAD_FILES])
def test_bad_line_is_one_error_naming_file_and_line(conf_dir: Path, text: str, line: int, message: str) -> None:
    conf = conf_dir / "bbrkit.conf"
    conf.write_text(text)
    conf.chmod(0o644)
    r = ctl("apply", "--dry-run", str(conf), unprivileged=True)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"bbrctl: apply {conf}:{line}: "), lines[0]
    assert message in lines[0]


def test_missing_file(conf_dir: Path) -> None:
    r = ctl("apply", str(conf_dir / "none.conf"), unprivileged=True)
    assert r.returncode == 2
    assert f"cannot read {conf_dir / 'none.conf'}: No such file or directory" in r.stderr


def test_good_file_reaches_the_root_check(conf_dir: Path) -> None:
    conf = conf_dir / "bbrkit.conf"
    conf.write_text("attach bbr3 beta=0.6\nrule web arms=bbr3:90,cubic:10 lport=8080  # canary\n")
    conf.chmod(0o644)
    r = ctl("apply", "--dry-run", str(conf), unprivileged=True)
    assert r.returncode == 1
    assert "must be run as root" in r.stderr


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_installed_unit_verifies(installed: Path) -> None:
    """systemd's verifier checks the unit's syntax and that ExecStart names an executable in the tree."""
    unit = installed / "usr/lib/systemd/system/bbrkit.service"
    assert "ExecStart=/usr/bin/bbrctl apply /etc/bbrkit/bbrkit.conf" in unit.read_text()
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", f"--root={installed}", str(unit)],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    assert r.returncode == 0, r.stderr
