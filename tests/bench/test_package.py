"""The package's plumbing: results files carry a format version that readers check, binaries are found on
PATH before the checkout's build/, and -v/-q work on every subcommand."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bbrbench.errors import HarnessError
from bbrbench.results import read_json, write_json
from bbrbench.testbed.procs import CHECKOUT_BUILD, find_binary
from benchutil import run_cli


def test_results_files_carry_and_check_their_format(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_json(path, "summary", {"flows": []})
    assert json.loads(path.read_text())["format"] == "bbrbench-summary/1"
    assert read_json(path, "summary")["flows"] == []
    with pytest.raises(HarnessError, match=r"format bbrbench-summary/1, this bbrbench reads bbrbench-plan/1"):
        read_json(path, "plan")
    path.write_text(json.dumps({"flows": []}))
    with pytest.raises(HarnessError, match="format unversioned"):
        read_json(path, "summary")


def test_report_of_an_old_results_directory_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "scenario.json").write_text(json.dumps({"resolved": {}}))
    res = run_cli("report", str(tmp_path))
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "scenario.json: format unversioned" in res.stderr
    assert not (tmp_path / "summary.json").exists()


def test_binaries_on_path_come_before_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bbrctl"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("BBRCTL", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert find_binary("bbrctl", "BBRCTL") == fake
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    built = CHECKOUT_BUILD / "bbrctl"
    assert find_binary("bbrctl", "BBRCTL") == (built if built.is_file() else None)
    monkeypatch.setenv("BBRCTL", str(tmp_path / "missing"))
    assert find_binary("bbrctl", "BBRCTL") is None


@pytest.mark.parametrize("args", [("-q", "check", "smoke"), ("check", "smoke", "-q"), ("-v", "check", "smoke"),
                                  ("model", "--bbr", "1", "--queue-bdp", "2", "-v")])
def test_verbosity_options_on_every_subcommand(args: tuple[str, ...]) -> None:
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)


def test_verbose_and_quiet_exclude_each_other() -> None:
    res = run_cli("-v", "check", "smoke", "-q")
    assert res.returncode == 2 and res.stderr.count("\n") == 1


def test_a_non_editable_install_carries_its_subpackages_and_data(installed: Path, tmp_path: Path) -> None:
    """What `make install` puts in place runs from anywhere: every layer and the scenarios with the papers'
    data files come along."""
    found = sorted(installed.glob("usr/lib/python3*/*-packages/bbrbench/__init__.py"))
    assert found, sorted(str(p.relative_to(installed)) for p in installed.rglob("*.py"))[:20]
    target = found[0].parent.parent
    env = dict(os.environ, PYTHONPATH=str(target))
    code = ("import bbrbench, bbrbench.repro.papers as p; print(bbrbench.__file__); print(len(p.specs()))")
    probe = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    where, specs = probe.stdout.split()
    assert where.startswith(str(target)) and int(specs) > 0
    check = subprocess.run([sys.executable, "-m", "bbrbench", "check", "compare"], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert check.returncode == 0 and json.loads(check.stdout)["name"] == "compare", check.stderr
