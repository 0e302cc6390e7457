"""Which bbrbench made a result: `bbrbench --version`, and the version and command line in compare.json
(one entry per invocation, so a resumed compare shows both). Each run's scenario.json carries the same
record (checked by the real compare in test_compare.py, which needs root)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

import bbrbench
from bbrbench import cli, provenance, sweep
from bbrbench.experiments import compare
from bbrbench.results import read_json
from bbrbench.scenario import AlgoCatalog
from benchutil import FakeExecutor, run_cli

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr"}), bbrkit=frozenset())


def test_version() -> None:
    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout.startswith(f"bbrbench {bbrbench.__version__}")
    # pyproject.toml takes the version from the package: what pip installed says the same.
    assert importlib.metadata.version("bbrbench") == bbrbench.__version__
    if provenance.revision():
        assert res.stdout.strip().endswith(f"(git {provenance.revision()})")


def test_compare_records_version_and_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from bbrbench.testbed import system
    monkeypatch.setattr(system, "catalog", lambda: CATALOG)
    monkeypatch.setattr(cli.compare, "need_root", lambda: None)
    monkeypatch.setattr(sweep.execution, "LocalExecutor", FakeExecutor)
    out = tmp_path / "cmp"
    argv = ["-q", "compare", "cubic", "--reps", "2", "--set", "duration_s=4", "--out", str(out)]
    assert cli.main(argv) == 0
    assert cli.main(argv) == 0        # resumes: nothing left to run, one more invocation
    doc = read_json(out / compare.RESULT_FILE, "compare")
    assert [i["command"] for i in doc["invocations"]] == [f"bbrbench -q compare cubic --reps 2 --set duration_s=4 "
                                                          f"--out {out}"] * 2
    assert all(i["version"] == bbrbench.__version__ and i["revision"] == provenance.revision()
               for i in doc["invocations"])
    assert doc["started"] == doc["invocations"][0]["started"] and doc["finished"] == doc["invocations"][1]["finished"]
    assert f"results: {out}" in capsys.readouterr().out
