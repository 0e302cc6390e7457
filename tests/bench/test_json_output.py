"""--json on compare, run and report (as iperf3 -J): stdout holds one JSON document, the results file with
where the results are, and nothing else; a failure is an error object with the exit status. Synthetic
results directories, no root."""

from __future__ import annotations

import json
from pathlib import Path

from test_compare_page import compare_plan, fake_compare

from bbrbench.experiments import compare
from benchutil import run_cli


def test_report_json_of_a_compare_a_sweep_point_and_a_run(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    fake_compare(out, compare_plan("cubic", "--reps", "2", "--set", "duration_s=4"))
    res = run_cli("report", str(out), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["format"] == "bbrbench-compare/1" and doc["results_dir"] == str(out.resolve())
    assert {(r["case"], r["algo"]) for r in doc["rows"]} == {("1 flow", "bbr"), ("1 flow", "cubic"),
                                                             ("2 flows", "bbr"), ("2 flows", "cubic")}
    assert doc["window"].startswith("steady state: from 1 s after the last flow's start")
    # compare --report-only --json prints the same document.
    again = run_cli("compare", "--report-only", "--out", str(out), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["rows"] == doc["rows"]

    run_dir = next(out.glob("points/*/rep0"))
    res = run_cli("report", str(run_dir), "--json", "--no-plots")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["format"] == "bbrbench-summary/1" and set(doc) >= {"flows", "total", "steady", "results_dir"}
    assert not (run_dir / "plots").exists()
    # Without --json the same command prints the table.
    assert "goodput" in run_cli("report", str(run_dir), "--no-plots").stdout
    assert (out / compare.PAGE).is_file()


def test_json_failures_are_an_error_object(tmp_path: Path) -> None:
    for args, status, words in [(["compare", "nosuchcc", "--json"], 2, "nosuchcc"),
                                (["report", str(tmp_path), "--json"], 1, "not a run, sweep or compare"),
                                (["run", "smoke", "--json", "--bogus"], 2, "invalid command line")]:
        res = run_cli(*args)
        assert res.returncode == status, res.stderr
        doc = json.loads(res.stdout)
        assert doc["exit_status"] == status and words in doc["error"]
