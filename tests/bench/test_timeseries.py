"""The time-series measures (repro/timeseries.py) on synthetic samples whose answer is known, their data file,
and the decision of a statement on them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bbrbench.repro import timeseries
from bbrbench.repro.claims import Outcome, Rule
from bbrbench.repro.timeseries import Run

RATE_MBIT = 20
BASE_MS = 20.0


def bytes_for_ms(ms: np.ndarray) -> np.ndarray:
    """The backlog that adds `ms` of queueing at RATE_MBIT."""
    return ms * 1e-3 * RATE_MBIT * 1e6 / 8


def make_run(duration_s: float = 40.0, starts: tuple[float, ...] = (0.0,), probe_ms: float = 5.0,
             probe_rtt_every_s: float = 10.0, retrans_every_other_s: bool = False,
             full_buffer_ms: float = 0.0) -> Run:
    """A flow in ProbeBW: every 200 ms a 20 ms probe adds `probe_ms` of queue, 1.5 s of Startup at +38 ms,
    cwnd 40 with 36 packets in flight, and PROBE_RTT (cwnd 4) every probe_rtt_every_s for 200 ms."""
    t_q = np.arange(0.0, duration_s, 0.01)
    queue_ms = np.where((t_q % 0.2) < 0.02, probe_ms, 0.0)
    queue_ms[t_q < 1.5] = 38.0
    t_f = np.arange(0.0, duration_s, 0.1)
    in_probe_rtt = (t_f > 3) & ((t_f % probe_rtt_every_s) < 0.25) & (t_f >= probe_rtt_every_s)
    cwnd = np.where(in_probe_rtt, 4.0, 40.0)
    # Drops at the bottleneck in the middle of every other second, away from the 1 s bins' edges.
    mid_even_second = ((t_q % 2) > 0.25) & ((t_q % 2) < 0.75)
    drops = np.cumsum(np.where(retrans_every_other_s & mid_even_second, 1.0, 0.0))
    # A buffer of full_buffer_ms: the probes' queue fills it when they reach it.
    limit = bytes_for_ms(np.array(full_buffer_ms or 1000.0))
    flow = {"t": t_f, "cwnd": cwnd, "unacked": np.where(in_probe_rtt, 4.0, 36.0),
            "srtt_us": np.full(t_f.shape, BASE_MS * 1e3)}
    scenario = {"bottleneck": {"rate_mbit": RATE_MBIT}, "duration_s": duration_s,
                "senders": [{"delay_fwd_ms": BASE_MS / 2, "delay_rev_ms": BASE_MS / 2}],
                "flows": [{"start_s": s, "index": i, "sender": "s"} for i, s in enumerate(starts)]}
    backlog = np.minimum(bytes_for_ms(queue_ms), limit)
    return Run(Path("run"), scenario, t_q, backlog, backlog / 1514, {i: flow for i in range(len(starts))}, drops,
               float(limit))


def test_measures_read_the_known_answer() -> None:
    run = make_run()
    assert timeseries.probe_rtt_peak_ms(run) == pytest.approx(BASE_MS + 5.0)
    assert timeseries.startup_rtt_peak_ms(run) == pytest.approx(BASE_MS + 38.0)
    assert timeseries.probe_rtt_interval_s(run) == pytest.approx(10.0)
    assert timeseries.probe_rtt_inflight_packets(run) == 4.0
    # PROBE_RTT's samples are left out: 36 of 40 elsewhere.
    assert timeseries.inflight_over_cwnd(run) == pytest.approx(0.9)
    assert timeseries.queue_drops(run) == 0.0


def test_drop_seconds_count_the_bottlenecks_drops_after_the_last_start() -> None:
    """Seed 002's loss statements on the bottleneck's drop counter, not the senders' retransmissions."""
    run = make_run(starts=(0.0, 10.0), retrans_every_other_s=True)
    assert timeseries.drop_seconds_share(run) == pytest.approx(0.5, abs=0.05)
    # 50 samples of 10 ms in every other second of 40.
    assert timeseries.queue_drops(run) == pytest.approx(20 * 50, abs=50)


def test_full_buffer_share_tells_a_filling_flow_from_one_that_does_not() -> None:
    """Fig 4.9's statement made able to fail: a flow whose 5 ms probes fill a 5 ms buffer keeps it
    full during the probes (a tenth of the time), one whose probes reach only half of a 10 ms buffer never
    fills it; the RTT bound at the buffer's size holds for both."""
    filling = make_run(full_buffer_ms=5.0)
    assert timeseries.full_buffer_share(filling) == pytest.approx(0.1, abs=0.02)
    assert timeseries.full_buffer_share(make_run(full_buffer_ms=10.0)) == 0.0
    assert timeseries.steady_rtt_max_ms(filling) <= BASE_MS + 5.0 + 1e-9


def test_a_statement_is_decided_on_every_repetition_at_the_papers_magnitude() -> None:
    claim = {"measure": "probe_rtt_peak_ms", "needs_s": 20, "why": "steady ProbeBW", "paper": 25,
             "paper_factor": 1.25}
    rule = Rule.from_data(claim)

    def judge(runs: list[Run]) -> Outcome:
        return timeseries._judge(claim, runs, [rule])[0].outcome
    runs = [make_run(probe_ms=p) for p in (4.8, 5.0, 5.2)]
    assert judge(runs) is Outcome.HOLDS
    # A probe phase that adds 20 ms, not 5, lies outside 25 ms x/÷ 1.25: the statement fails.
    assert judge([make_run(probe_ms=p) for p in (19.8, 20.0, 20.2)]) is Outcome.FAILS
    assert judge(runs[:2]) is Outcome.TOO_FEW_RUNS
    assert judge([make_run(duration_s=15.0) for _ in range(3)]) is Outcome.NOT_TESTABLE
    # 35 ms is outside x/÷ 1.25 of 25 ms (31.25) and inside x/÷ 1.5 (37.5): the second family moves it.
    wide = [make_run(probe_ms=p) for p in (14.8, 15.0, 15.2)]
    first, second = timeseries._judge(claim, wide, [rule, rule.widened()])
    assert first.outcome is Outcome.FAILS and second.outcome is Outcome.HOLDS


def test_time_series_claims_carry_the_second_margins_fragility_and_n() -> None:
    """As the experiments' claims, each time-series claim declares its n and shows its verdict
    under the second margin family and its fragile mark; a verdict recorded before these existed (2026-11-25)
    is decided again on the repetitions its text lists."""
    (fig,) = [f for f in timeseries.figures() if f["item"] == "Fig 4.1"]
    claim = next(c for c in fig["claims"] if c["measure"] == "startup_rtt_peak_ms")
    rule = Rule.from_data(claim)
    recorded = {"claim": f"{claim['claim']} [margin: {rule.describe()}]",
                "verdict": {"outcome": "holds", "min_n": None, "text": "startup_rtt_peak_ms: startup_rtt_peak_ms "
                            "(each: 65.4, 65.4, 65.4) 65.4 ± 0 ms (95% CI, n = 3) inside [46.4 ms, 72.5 ms]"}}
    js = {"claims": [recorded], "figures": {"Fig 4.1": {"title": fig["title"], "claims": [dict(recorded)],
                                                        "figure": None, "drawn_from": None}}}
    lines, out = timeseries.render(js, Path("f"), "figures")
    text = "\n".join(lines)
    assert "(Fragile: zero-width interval.)" in text and "(Second margins, within x/÷ 1.5" in text
    assert f"(n declared for the next run: {claim['n']}.)" in text
    (c,) = [c for c in out["claims"] if c["claim"] == recorded["claim"]]
    assert c["verdict"]["fragile"] == "zero-width interval" and c["wide"]["verdict"]["outcome"] == "holds"
    assert c["experiment"] == fig["experiment"] and c["n"] == claim["n"]
    # Every claim of the data file declares its n before its next run.
    assert all(c.get("n", 0) >= 3 for f in timeseries.figures() for c in f["claims"])


def test_a_later_summary_replaces_only_the_figures_it_ran() -> None:
    """A rerun of one experiment (seed000/table4.1) holds only its figure (Fig 4.9): merged into the record,
    it replaces that figure and keeps the others (Figs 4.1, 4.3), in the data file's order."""
    def section(*items: str) -> dict[str, object]:
        figs = {i: {"title": i, "claims": [{"claim": f"{i} claim", "verdict": {"outcome": "holds", "text": "t"}}]}
                for i in items}
        return {"claims": [c for f in figs.values() for c in f["claims"]], "figures": figs}
    earlier = section("Fig 4.9", "Fig 4.1", "Fig 4.3")
    later = section("Fig 4.9")
    later["figures"]["Fig 4.9"]["claims"][0]["verdict"]["outcome"] = "does not hold"
    merged = timeseries.merge_recorded(earlier, later)
    assert list(merged["figures"]) == ["Fig 4.1", "Fig 4.3", "Fig 4.9"]
    assert [c["verdict"]["outcome"] for c in merged["claims"]] == ["holds", "holds", "does not hold"]


def test_the_data_file_names_real_measures_drawings_and_rules() -> None:
    figures = timeseries.figures()
    assert {f["item"] for f in figures} >= {"Fig 4.1", "Fig 4.3", "Fig 4.9", "Fig 9"}
    for fig in figures:
        assert fig["drawing"] in timeseries.DRAWINGS
        for claim in fig["claims"]:
            assert claim["measure"] in timeseries.MEASURES
            assert claim["needs_s"] > 0 and claim["why"]
            Rule.from_data(claim)


def test_jain_after_the_last_start_reads_the_flows_shares() -> None:
    run = make_run(duration_s=40.0, starts=(0.0, 10.0))
    equal = {"t": run.flows[0]["t"], "bytes_acked": run.flows[0]["t"] * 1e6}
    run.flows[0].update(equal)
    assert timeseries.jain_after_last_start(run) == pytest.approx(1.0)
    # One flow at three times the other's rate: (1 + 3)^2 / (2 (1 + 9)) = 0.8.
    run.flows[1] = {**run.flows[0], "bytes_acked": run.flows[0]["t"] * 3e6}
    assert timeseries.jain_after_last_start(run) == pytest.approx(0.8)
    assert timeseries.jain_after_last_start(make_run(duration_s=20.0, starts=(0.0, 10.0))) is None


def test_near_full_share_counts_a_buffer_full_within_the_reports_margin() -> None:
    """A 10 ms sample rarely catches a buffer holding its very last packet: probes that reach 5 ms of a 6 ms
    buffer never leave less than one packet free, but they hold more than 6 / 1.25 = 4.8 ms of it."""
    run = make_run(full_buffer_ms=6.0)
    assert timeseries.full_buffer_share(run) == 0.0
    assert timeseries.near_full_share(run) == pytest.approx(0.1, abs=0.02)
    assert timeseries.near_full_share(make_run(full_buffer_ms=10.0)) == 0.0


def test_cwnd_jain_reads_how_equally_the_flows_hold_the_path() -> None:
    """Seed 002's Figs 5(a) and 10(a): Jain's index of the flows' cwnd over the steady window."""
    run = make_run(starts=(0.0, 0.0))
    assert timeseries.cwnd_jain(run) == pytest.approx(1.0)
    # One flow's cwnd three times the other's: (1 + 3)^2 / (2 (1 + 9)) = 0.8.
    run.flows[1] = {**run.flows[0], "cwnd": run.flows[0]["cwnd"] * 3}
    assert timeseries.cwnd_jain(run) == pytest.approx(0.8)
    assert timeseries.cwnd_jain(make_run()) is None


def _claim(text: str, outcome: Outcome) -> dict[str, object]:
    return {"claim": f"{text} [margin: m]", "verdict": {"outcome": outcome.value, "text": "t", "min_n": None}}


def test_a_claim_whose_control_fails_is_undecided() -> None:
    """A measure that misses the effect where the paper shows it (the control) cannot show its absence."""
    defs = [{"claim": "Claim", "control": "Control: x"}, {"claim": "Control: x"}]
    claims = [_claim("Claim", Outcome.HOLDS), _claim("Control: x", Outcome.FAILS)]
    timeseries._apply_controls(defs, claims)
    assert claims[0]["verdict"]["outcome"] == Outcome.UNDECIDED.value
    assert "its control ('Control: x') does not hold" in claims[0]["verdict"]["text"]
    claims = [_claim("Claim", Outcome.FAILS), _claim("Control: x", Outcome.HOLDS)]
    timeseries._apply_controls(defs, claims)
    assert claims[0]["verdict"]["outcome"] == Outcome.FAILS.value


def test_every_control_names_a_claim_of_its_figure() -> None:
    for fig in timeseries.figures():
        texts = [c["claim"] for c in fig["claims"]]
        for claim in (c for c in fig["claims"] if "control" in c):
            assert [t for t in texts if t.startswith(claim["control"])][:1] != [claim["claim"]]
            assert any(t.startswith(claim["control"]) for t in texts), claim["control"]


def test_a_recorded_claim_names_the_experiment_that_reruns_it() -> None:
    """The report's rerun command for a fragile time-series verdict must name a runnable experiment
    (seed000/table4.1), not the report section (seed000/timeseries), also for records made before claims
    carried it."""
    fig = next(f for f in timeseries.figures() if f["item"] == "Fig 4.9")
    first = fig["claims"][0]
    recorded = {"claim": f"{first['claim']} [margin: m]",
                "verdict": {"outcome": Outcome.HOLDS.value, "text": "t", "min_n": 3}}
    js = {"claims": [recorded], "figures": {"Fig 4.9": {"title": fig["title"], "claims": [recorded]}}}
    _, out = timeseries.render(js, Path("."), "figures")
    assert {c.get("experiment") for c in out["claims"]} == {"seed000/table4.1"}
