"""Sweeps: points x repetitions, aggregated with CIs; an interrupted sweep resumes where it stopped."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest

from bbrbench import sweep
from bbrbench.errors import HarnessError
from bbrbench.scenario import AlgoCatalog, ScenarioError, find_scenario, load_raw
from bbrbench.sweep import plan_runs
from benchutil import FakeExecutor, needs_net, popen_cli, run_cli

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr", "reno"}), bbrkit=frozenset())
SWEEP = ("sweep", "smoke", "--quiet", "duration_s=2", "--grid", "bottleneck.rate_mbit=[10, 20]",
         "--grid", "flows.0.algo=['cubic', 'bbr']")


def test_plan_validates_every_point() -> None:
    raw = load_raw(find_scenario("smoke"))
    p = plan_runs(raw, CATALOG, [("bottleneck.rate_mbit", [10, 20]), ("flows.0.algo", ["cubic", "bbr"])], 3)
    assert len(p.points) == 4 and p.repetitions == 3
    assert len({pt.id for pt in p.points}) == 4
    with pytest.raises(ScenarioError, match=r"^sweep point \(bottleneck.rate_mbit=0\): bottleneck.rate_mbit"):
        plan_runs(raw, CATALOG, [("bottleneck.rate_mbit", [10, 0])], 1)


def test_cases_combine_with_the_grid() -> None:
    raw = load_raw(find_scenario("smoke"))
    raw["sweep"] = {"repetitions": 2, "grid": {"bottleneck.buffer_packets": [10, 20]},
                    "cases": [{"duration_s": 3}, {"duration_s": 5, "bottleneck.rate_mbit": 5}]}
    p = plan_runs(raw, CATALOG, [], None)
    assert p.repetitions == 2 and len(p.points) == 4
    assert p.points[3].overrides == {"duration_s": 5, "bottleneck.rate_mbit": 5, "bottleneck.buffer_packets": 20}


@pytest.mark.net
@needs_net
def test_interrupted_sweep_resumes(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    proc = popen_cli(*SWEEP, "--out", str(out))
    deadline = time.monotonic() + 60
    while not list(out.glob("points/*/rep0/done")):
        assert time.monotonic() < deadline and proc.poll() is None, "first point never finished"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    done_before = {p.parent for p in out.glob("points/*/rep0/done")}
    assert 1 <= len(done_before) < 4
    stamps = {d: (d / "summary.json").stat().st_mtime_ns for d in done_before}

    result = run_cli(*(a for a in SWEEP if a != "--quiet"), "--out", str(out), timeout=180)
    assert result.returncode == 0, result.stderr
    # Only the missing runs were run: the sweep says so, and earlier results are untouched.
    assert f"4 run(s), {4 - len(done_before)} to do" in result.stderr
    assert {d: (d / "summary.json").stat().st_mtime_ns for d in done_before} == stamps
    sweep = json.loads((out / "sweep.json").read_text())
    assert [p["repetitions"] for p in sweep["points"]] == [1, 1, 1, 1]
    for point in sweep["points"]:
        rate = point["overrides"]["bottleneck.rate_mbit"]
        goodput = point["metrics"]["total.goodput_mbps"]["mean"]
        assert goodput == pytest.approx(rate * 1448 / 1514, rel=0.1), point["label"]
    assert all(m["ci95"] is None for p in sweep["points"] for m in p["metrics"].values())   # one repetition

    other = run_cli("sweep", "smoke", "--quiet", "duration_s=3", "--out", str(out))
    assert other.returncode == 1 and "different sweep" in other.stderr


def _two_invocations(out: Path, second_revision: str, shift_ms: float) -> None:
    """A 4-repetition sweep of one point whose last two repetitions come from another invocation, their
    RTTs shifted by shift_ms."""
    raw = load_raw(find_scenario("smoke"))
    raw["sweep"] = {"metrics": ["total.rtt_ms_mean"]}
    sweep.run_sweep(plan_runs(raw, CATALOG, [], 4), out, CATALOG, FakeExecutor())
    for rep in range(4):
        run = next(out.glob(f"points/*/rep{rep}"))
        meta = json.loads((run / "scenario.json").read_text())
        meta["bbrbench"] = {"revision": "a" if rep < 2 else second_revision, "command": "bbrbench sweep smoke"}
        (run / "scenario.json").write_text(json.dumps(meta))
        summary = json.loads((run / "summary.json").read_text())
        summary["total"]["rtt_ms_mean"] = 40.0 + rep % 2 * 0.1 + (shift_ms if rep >= 2 else 0.0)
        (run / "summary.json").write_text(json.dumps(summary))


def test_invocations_pool_with_a_batch_test_and_never_with_a_dirty_tree(tmp_path: Path) -> None:
    _two_invocations(tmp_path / "same", "b", 0.0)
    sweep.aggregate(tmp_path / "same")
    assert "batch_effects" not in json.loads((tmp_path / "same" / "sweep.json").read_text())["points"][0]
    _two_invocations(tmp_path / "shifted", "b", 5.0)
    sweep.aggregate(tmp_path / "shifted")
    effects = json.loads((tmp_path / "shifted" / "sweep.json").read_text())["points"][0]["batch_effects"]
    assert effects["total.rtt_ms_mean"] < 0.01
    _two_invocations(tmp_path / "dirty", "b-dirty", 0.0)
    with pytest.raises(HarnessError, match=r"dirty tree \(b-dirty\)"):
        sweep.aggregate(tmp_path / "dirty")
    sweep.aggregate(tmp_path / "dirty", mix_hosts=True)


def test_a_run_that_fails_the_link_trust_check_is_listed_not_pooled(tmp_path: Path) -> None:
    """A repetition marked untrusted (analysis.trust: bbrkit-link fell behind) stays out of the point's mean
    and count, the point's status says why, and runs.csv lists it with trusted = 0 and the reason."""
    out = tmp_path / "sw"
    _two_invocations(out, "a", 0.0)
    bad = next(out.glob("points/*/rep3"))
    summary = json.loads((bad / "summary.json").read_text())
    summary["total"]["rtt_ms_mean"] = 900.0
    summary["trust"] = {"ok": False, "failed": ["forward thread busy 97% of the run (over 90%): CPU-bound"]}
    (bad / "summary.json").write_text(json.dumps(summary))
    sweep.aggregate(out)
    point = json.loads((out / "sweep.json").read_text())["points"][0]
    assert point["metrics"]["total.rtt_ms_mean"]["n"] == 3 and point["metrics"]["total.rtt_ms_mean"]["mean"] < 41
    assert point["status"] == "3/4 repetitions (1 failed the trust check, not pooled)"
    rows = (out / "runs.csv").read_text().splitlines()
    assert len(rows) == 5 and "CPU-bound" in rows[4] and ",0,forward thread" in rows[4]


def test_the_sweep_page_marks_each_cell_of_a_point_that_lost_a_run_to_the_trust_check(tmp_path: Path) -> None:
    """sweep.html, written with sweep.json by the code compare's page uses (analysis/pages.py): every
    cell of a point with a run that failed the trust check is marked, the run and its reason in the
    tooltip, other points' cells are not, and each run the link carried has its verdict below."""
    raw = load_raw(find_scenario("smoke"))
    raw["sweep"] = {"metrics": ["total.rtt_ms_mean", "total.goodput_mbps"]}
    out = tmp_path / "sw"
    plan_ = plan_runs(raw, CATALOG, [("flows.0.algo", ["cubic", "bbr"])], 2)
    sweep.run_sweep(plan_, out, CATALOG, FakeExecutor())
    assert "<table>" in (out / sweep.PAGE).read_text()  # run_sweep writes it, not only report
    bad, good = plan_.points
    reason = "frames over 1 ms in the socket buffer: 900 (over 1 in 1000)"
    for point, rep, ok in ((bad, 0, True), (bad, 1, False), (good, 0, True)):
        path = out / "points" / point.id / f"rep{rep}" / "summary.json"
        summary = json.loads(path.read_text())
        summary["trust"] = {"ok": ok, "failed": [] if ok else [reason], "not_reported": []}
        path.write_text(json.dumps(summary))
    # A run recorded before its delay line reported lateness: trusted, and said to be unchecked there.
    path = out / "points" / good.id / "rep1" / "summary.json"
    summary = json.loads(path.read_text())
    summary["trust"] = {"ok": True, "failed": [], "not_reported": ["delay line not checked (sender a, data direction)"]}
    path.write_text(json.dumps(summary))
    sweep.aggregate(out)
    page = (out / sweep.PAGE).read_text()
    table, verdicts = page.split("<h2>Trust check (bbrkit-link, delay lines), per run</h2>")
    rows = {re.search(r"<td[^>]*>([^<]*)</td>", tr).group(1).strip(): tr  # type: ignore[union-attr]
            for tr in re.findall(r"<tr>.*?</tr>", table, re.S)[1:]}
    point = json.loads((out / "sweep.json").read_text())["points"][0]
    marked = re.findall(r'<span class="untrusted" title="([^"]*)">([^<]*)</span>', rows[bad.label])
    assert [text for _, text in marked] == [sweep.aggregation.format_mean(point["metrics"][m]["mean"], None)
                                            for m in plan_.metrics]
    assert all(title.startswith("1 run(s) of this point failed the trust check and are left out: "
                                f"rep 1: {reason}") for title, _ in marked)
    assert "untrusted" not in rows[good.label]
    assert verdicts.count("<tr>") == 5  # the header and the four runs with a trust record
    assert f"UNTRUSTED: {reason}" in verdicts and len(re.findall(r">trusted *<", verdicts)) == 2
    assert len(re.findall(r">trusted \(delay line not checked\) *<", verdicts)) == 1
    assert "2 point(s) over flows.0.algo, 2 repetition(s) each" in page
