"""A measure's own late-share limit (analysis/trust.py's LATE_SHARE_LIMIT_BY_MEASURE, docs/trust-sensitivity.md):
a run whose only failed trust check is the late share is used for a measure whose limit it is within, and for
no other; a run that failed another check too is never used. Each entry of the table stands on the kept runs of
the experiment its reason names; the other tests give it a synthetic one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bbrbench.analysis import sensitivity, trust
from bbrbench.repro import points, reproduce
from bbrbench.results import write_json
from reprofakes import fake_flow, fake_summary, fig8_bbr1_bbr2, long_table41

LATE = "departures over 200 us late: 6927 (2.42%, over 0.1%)"
WAITED = "frames over 1 ms in the socket buffer: 440 (0.15%, over 0.1%)"
LATE_SHARE = 0.0242


def late_trust(*failed: str) -> dict[str, Any]:
    return {"ok": False, "failed": list(failed), "checks": {"late_wakeups_share": LATE_SHARE}}


@pytest.fixture
def retrans_limit(monkeypatch: pytest.MonkeyPatch) -> float:
    """A synthetic limit for the whole-run retransmission rate alone, above the late runs' share: the table holds
    it and nothing else."""
    limit = 0.03
    monkeypatch.setattr(trust, "LATE_SHARE_LIMIT_BY_MEASURE", {"total.retrans_rate": trust.Threshold(limit, "a test")})
    return limit


REPO = Path(__file__).resolve().parents[2]


def test_each_measure_limit_is_what_its_kept_runs_decide() -> None:
    """The rule (decide_by_measure), run again on the kept summaries the entry's reason names, gives that measure
    a limit at least the entry's: an entry cannot claim more than its run supports."""
    for metric, entry in trust.LATE_SHARE_LIMIT_BY_MEASURE.items():
        found = re.search(r"data/benchmarks/[\w.-]+", entry.reason)
        assert found, f"{metric}: the reason names no data folder"
        sweeps = sorted(p.parent for p in (REPO / found.group(0)).glob("*/plan.json"))
        runs = sensitivity.load_by_measure(sweeps, "bottleneck.stall.percent")
        decided = sensitivity.decide_by_measure(runs, trust.THRESHOLDS["late_share"].limit)[metric]["limit"]
        assert trust.THRESHOLDS["late_share"].limit < entry.limit <= decided, (metric, entry.limit, decided)


def test_only_a_run_that_failed_the_late_share_alone_has_a_late_only_share() -> None:
    assert trust.late_only_share(late_trust(LATE)) == LATE_SHARE
    assert trust.late_only_share(late_trust(LATE, WAITED)) is None
    assert trust.late_only_share(late_trust(WAITED)) is None
    assert trust.late_only_share({"ok": True, "failed": [], "checks": {"late_wakeups_share": 0.0005}}) is None


def _point(*late: points.LateRun) -> points.PointResult:
    trusted = [fake_summary([fake_flow("bbr", "bbr", 9.0)], {"retrans_rate": r, "jain": 0.99}) for r in (0.30, 0.31)]
    return points.PointResult({}, "p", "2/4 repetitions", 10.0, trusted, [{"rep": r.rep, "failed": [LATE]}
                                                                          for r in late], {}, list(late))


def test_a_late_only_run_within_a_measures_limit_is_used_for_that_measure_and_no_other(retrans_limit: float) -> None:
    within = points.LateRun(2, LATE_SHARE,
                            fake_summary([fake_flow("bbr", "bbr", 9.0)], {"retrans_rate": 0.5, "jain": 0.5}))
    beyond = points.LateRun(3, 0.05, fake_summary([fake_flow("bbr", "bbr", 9.0)], {"retrans_rate": 0.7, "jain": 0.7}))
    p = _point(within, beyond)
    retrans = p.stat("total.retrans_rate")
    assert retrans is not None and retrans.values == (0.30, 0.31, 0.5)
    assert (retrans.late_reps, retrans.late_limit) == ((2,), retrans_limit)
    jain = p.stat("total.jain")
    assert jain is not None and (jain.n, jain.late_reps, jain.late_limit) == (2, (), None)
    assert points.late_uses(p, [("total.retrans_rate", "retrans %"), ("total.jain", "Jain %")]) == {
        2: "used for retrans % under its measured lateness limit of 3.00%, docs/trust-sensitivity.md; left out of "
           "every other measure"}
    # A point whose only runs are late-only ones has something to show for the measure that uses them alone.
    alone = points.PointResult({}, "p", "0/1 repetitions", 10.0, [], [{"rep": 2, "failed": [LATE]}], {}, [within])
    assert not alone.measured and points.shown(alone, ["total.retrans_rate"])
    assert not points.shown(alone, ["total.jain"])


def test_without_a_limit_no_late_only_run_is_used() -> None:
    p = _point(points.LateRun(2, LATE_SHARE, fake_summary([fake_flow("bbr", "bbr", 9.0)], {"retrans_rate": 0.5})))
    retrans = p.stat("total.retrans_rate")
    assert retrans is not None and (retrans.n, retrans.late_reps) == (2, ())


def _fail(runs: Path, point: str, rep: int, trust_record: dict[str, Any], **total: float) -> None:
    """One of Table 4.1's repetitions, failed by the trust check, its whole-run figures changed by @total."""
    path = runs / "seed000/table4.1" / "points" / point / f"rep{rep}" / "summary.json"
    summary = json.loads(path.read_text())
    write_json(path, "summary", {**summary, "total": {**summary["total"], **total}, "trust": trust_record})


def test_the_report_uses_a_late_only_run_for_its_measure_says_so_and_a_rebuild_keeps_it(
        tmp_path: Path, retrans_limit: float, monkeypatch: pytest.MonkeyPatch) -> None:
    runs, again = tmp_path / "runs", tmp_path / "again"
    runs.mkdir()
    long_table41(runs)
    _fail(runs, "p0", 2, late_trust(LATE), retrans_rate=0.9)
    text = reproduce.report_only(runs).read_text()
    point = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]["points"][0]
    used = point["metrics"]["total.retrans_rate"]
    assert (used["n"], used["late_reps"], used["late_limit"], used["values"][-1]) == (3, [2], retrans_limit, 0.9)
    steady = point["metrics"]["steady.retrans_rate"]
    assert steady["n"] == 2 and "late_reps" not in steady
    said = (f"- flows.0.label=bbr, bottleneck.rate_mbit=20, rep 2: {LATE}; used for retrans % under its measured "
            "lateness limit of 3.00%, docs/trust-sensitivity.md; left out of every other measure")
    assert said in text and "Left out of every figure and verdict" not in text
    assert "(n=3, 1 under its lateness limit)" in text
    # Rebuilt from the summary, with the table empty again: the recorded use stands.
    monkeypatch.delitem(trust.LATE_SHARE_LIMIT_BY_MEASURE, "total.retrans_rate")
    reproduce.rebuild([runs / "summary.json"], again)
    rebuilt = json.loads((again / "summary.json").read_text())["experiments"]["seed000/table4.1"]["points"][0]
    assert rebuilt["metrics"] == point["metrics"]
    assert said in (again / "report.md").read_text()


def test_a_run_that_failed_another_check_too_is_never_used(tmp_path: Path, retrans_limit: float) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    long_table41(runs)
    _fail(runs, "p0", 2, late_trust(LATE, WAITED))
    text = reproduce.report_only(runs).read_text()
    point = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]["points"][0]
    whole = point["metrics"]["total.retrans_rate"]
    assert whole["n"] == 2 and "late_reps" not in whole
    assert "Left out of every figure and verdict: 1 run(s)" in text and "Used for one measure alone" not in text


def test_a_verdict_counts_a_used_run_in_n_and_names_only_the_checks_of_the_runs_left_out(
        tmp_path: Path, retrans_limit: float) -> None:
    """Two of RTT-gain alpha 0.5's three runs failed: one on its late share alone (used for the whole-run
    retransmissions the claim reads), one on a delay line's added delay (left out)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    long_table41(runs)
    delay_line = ("delay line of sender s1, data direction: added delay p99 1900 us against a base RTT of 10 ms "
                  "(over 1000 us): the path's delay is not the configured one")
    _fail(runs, "p2", 0, late_trust(LATE))
    _fail(runs, "p2", 1, {"ok": False, "failed": [delay_line]})
    reproduce.report_only(runs)
    claims_ = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]["claims"]
    assert ("rttgain_a0.5 retransmissions, whole run: not decided: n = 2, needs 3: 1 more run(s) failed the trust "
            "check (delay line of sender s1, data direction: added delay p99)") in claims_[1]["verdict"]["text"]


def test_a_verdict_over_late_only_runs_names_their_loss_decision_path(tmp_path: Path, retrans_limit: float) -> None:
    """A measure read from runs under its lateness limit alone names the loss-decision path those runs recorded,
    not "not recorded" as if no run had been read."""
    runs = tmp_path / "runs"
    fig8_bbr1_bbr2(runs)
    for rep in (runs / "seed001/fig8/points/p2").glob("rep*"):  # bbr2, one flow: every run late, within the limit
        summary = json.loads((rep / "summary.json").read_text())
        write_json(rep / "summary.json", "summary", {**summary, "trust": late_trust(LATE)})
        write_json(rep / "host.json", "host", {"bbrkit_attachments": {"bbr2": {"loss_decisions": "per-packet"}}})
    reproduce.report_only(runs)
    fig8 = json.loads((runs / "summary.json").read_text())["experiments"]["seed001/fig8"]
    assert fig8["claims"][1].get("loss_decisions") == {"bbr2": "per-packet"}
