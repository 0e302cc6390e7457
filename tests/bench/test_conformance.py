"""`bbrbench conformance` without root: the case data (draft-ietf-ccwg-bbr-06 Appendix A) and its
validation, and every case's check on synthetic record series built to the draft's steps, one series that
meets them and one that breaks the step the check is about. Records carry the keys of `bbrctl trace`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from bbrbench.cli import main
from bbrbench.experiments import conformance as conf
from bbrbench.scenario import AlgoCatalog, validate
from bbrbench.testbed.emulation import Emulation
from bbrbench.testbed.topology import Topology

CASES = {c.id: c for c in conf.load_cases()}
CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr", "reno"}), bbrkit=frozenset(conf.ALGOS))
MSS = 1448
RTT_US = 20_000
# 50 Mbit/s as payload, as A.1's path delivers it; a BDP of ~82.5 packets at 20 ms.
BW = conf.payload_bps(50, MSS)


def rec(t: float, mode: str, rnd: int, phase: str | None = None, **kw: Any) -> dict[str, Any]:
    r = {"t_s": t, "event": "round", "mode": mode, "bw_phase": phase, "round": rnd, "bw_bps": BW,
         "pacing_rate_bps": BW, "pacing_gain": 1.0, "cwnd_gain": 2.0, "min_rtt_us": RTT_US, "cwnd": 170,
         "inflight": 80, "lost": 0, "delivered": rnd * 80, "mss": MSS, "ca_state": "open", "loss_rate": 0.0,
         "inflight_hi": None, "bw_lo_bps": None, "inflight_lo": None, "probe_rtt_min_us": RTT_US}
    r.update(kw)
    return r


def verdict(case: str, records: list[dict[str, Any]], algo: str = "bbr3") -> str:
    return conf.verdict(conf.evaluate(CASES[case], algo, records))


def startup_series(exit_mode: str = "DRAIN", exit_count: int = 3, lost: int = 0,
                   **extra: Any) -> list[dict[str, Any]]:
    """STARTUP doubling to the link's rate, then rounds of plateau that the algorithm counts (full_bw_cnt)
    up to the exit record."""
    bws = [BW / 16, BW / 8, BW / 4, BW / 2, BW / 1.1 / 1.1, BW / 1.1, BW]
    counts = [0, 0, 0, 0, 0, 1, 2]
    out = [rec(0.02 * i, "STARTUP", i, bw_bps=b, full_bw_cnt=c, **extra) for i, (b, c) in enumerate(zip(bws, counts))]
    out.append(rec(0.02 * len(bws), exit_mode, len(bws), lost=lost, full_bw_cnt=exit_count, **extra))
    return out


def test_the_draft_s_cases_are_all_there_each_with_a_check() -> None:
    # draft-ietf-ccwg-bbr-06 Appendix A has A.1-A.22.
    assert list(CASES) == [f"A.{n}" for n in range(1, 23)]
    for case in CASES.values():
        assert set(case.algos) | set(case.not_applicable) == set(conf.ALGOS), case.id


def test_real_cases_are_valid_testbed_scenarios(tmp_path: Path) -> None:
    for case in CASES.values():
        if case.runner == "real":
            for algo in case.algos:
                validate(conf.real_scenario(case, algo, tmp_path), CATALOG)


def test_a_rate_step_becomes_a_trace_of_each_rate() -> None:
    lines = conf.rate_trace_lines(((0, 12), (1, 1.2)), 2)  # 1000 then 100 opportunities a second
    times = [int(x) for x in lines]
    assert sum(t < 1000 for t in times) == 1000 and sum(t >= 1000 for t in times) == 100
    assert times == sorted(times) and times[-1] < 2000


@pytest.mark.parametrize("change, message", [
    ({"colour": 1}, "case A.1: unknown key colour"),
    ({"runner": "sim"}, "case A.1: runner must be real or twin"),
    ({"algos": ["bbr3", "bbr2"]}, "case A.1: not_applicable needs a reason for bbr1"),
    ({"algos": ["cubic"]}, "case A.1: algos must be some of bbr3, bbr2, bbr1, bbr_draft"),
    ({"tolerances": {"bw_rel": 0.02}}, "case A.1: tolerances lack plateau_rounds"),
    ({"tolerances": {"bw_rel": "2%", "plateau_rounds": 3}}, "case A.1: tolerances must be numbers"),
    ({"sender": [{"s": 1, "mbit": 10}]}, "case A.1: sender segments must add up to duration_s"),
    ({"rate_steps": [[1, 10]]}, "case A.1: rate_steps must start at 0 s, rise in time and have rates > 0"),
    ({"id": "B.1"}, "case B.1: id must be A.<n>"),
    ({"id": "A.99"}, "case A.99: no checker"),
    ({"algos": ["bbr3", "bbr2", "bbr_draft"], "not_applicable": {"bbr1": "v1 lacks it"}},
     'case A.1: not_applicable reason for bbr1 must read "by design of draft|v1|v2alpha|v3: ..."'),
    ({"runner": "twin", "twin": {"rate": "50mbit"}, "trigger": {"phase": "UP", "rate_rel": 0.5, "loss_pct": 1}},
     "case A.1: trigger is a phase, its nth start and one of app_limit_mbit, loss_pct, pause_s, rate_rel, spurious"),
    ({"runner": "twin", "twin": {"rate": "50mbit"}, "trigger": {"phase": "UP", "spurious": "rtoo"}},
     "case A.1: trigger spurious is one of fast_recovery, rto"),
])
def test_bad_case_data_is_one_line_naming_case_and_key(change: dict[str, Any], message: str) -> None:
    raw = {"id": "A.1", "title": "t", "statement": "s", "algos": list(conf.ALGOS), "runner": "real",
           "duration_s": 4, "path": {"bottleneck": {"rate_mbit": 50}}, "tolerances": {"bw_rel": 0.02,
                                                                                      "plateau_rounds": 3}}
    raw.update(change)
    with pytest.raises(conf.CaseError, match=f"^{message}$".replace(".", r"\.").replace("(", r"\(")
                       .replace(")", r"\)")):
        conf.parse_case(raw)


def test_bad_command_line_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["conformance", "--case", "A.23", "--out", str(tmp_path / "x")]) == 2
    assert main(["conformance", "cubic", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bbrbench: unknown case A.23 (cases: A.1-A.22)",
                   "bbrbench: unknown algorithm cubic (conformance covers bbr3, bbr2, bbr1, bbr_draft)"]
    assert not (tmp_path / "x").exists()


def test_twin_cases_without_the_twin_are_blocked_not_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BBRKIT_TWIN", str(tmp_path / "absent"))
    assert main(["conformance", "--case", "A.14", "--case", "A.18", "--runner", "twin", "--out", str(tmp_path),
                 "--markdown", str(tmp_path / "c.md")]) == 0
    doc = json.loads((tmp_path / "conformance.json").read_text())
    verdicts = {(o["case"], o["algo"]): o["verdict"] for o in doc["outcomes"]}
    assert verdicts[("A.14", "bbr1")] == "blocked" and verdicts[("A.18", "bbr3")] == "blocked"
    assert verdicts[("A.18", "bbr1")] == "not applicable"
    row = next(line for line in (tmp_path / "c.md").read_text().splitlines() if line.startswith("| A.18 "))
    assert [c.strip() for c in row.strip("|").split("|")] == ["A.18", "Handling Spurious Fast Recovery", "twin",
                                                               "blocked (twin)", "blocked (twin)", "not applicable",
                                                               "blocked (twin)"]


def test_a_failed_case_fails_the_run_and_blocked_does_not() -> None:
    def outcome(v: str) -> conf.Outcome:
        return conf.Outcome("A.1", "bbr3", "real", v)
    assert conf.exit_status([outcome("pass"), outcome("blocked"), outcome("not applicable")]) == 0
    assert conf.exit_status([outcome("pass"), outcome("fail")]) == 1
    assert conf.verdict([conf.Check("a", "pass"), conf.Check("b", "blocked")]) == "blocked"
    assert conf.verdict([conf.Check("a", "fail"), conf.Check("b", "blocked")]) == "fail"
    assert conf.verdict([conf.Check("a", "pass"), conf.Check("b", "info")]) == "pass"


def test_a_missing_key_blocks_and_an_alias_counts() -> None:
    series = startup_series()
    assert verdict("A.1", series) == "blocked"  # full_bw_reached, full_bw_now absent
    assert conf.key_of(series, "inflight_longterm") == "inflight_hi"  # bbrctl's earlier name


# ---- each check: a series that meets the draft's steps, one that does not -------------------------------

def test_a1_startup_exits_on_plateau() -> None:
    good = startup_series(full_bw_reached=True, full_bw_now=True)
    assert verdict("A.1", good) == "pass"
    assert verdict("A.1", startup_series(exit_count=2, full_bw_reached=True, full_bw_now=True)) == "fail"
    assert verdict("A.1", startup_series(lost=3, full_bw_reached=True, full_bw_now=True)) == "fail"
    assert verdict("A.1", startup_series(exit_mode="PROBE_BW", full_bw_reached=True, full_bw_now=True)) == "fail"
    off = [dict(r, bw_bps=r["bw_bps"] * 1.03) for r in good]  # 3% over the link: outside the draft's 2%
    assert verdict("A.1", off) == "fail"
    assert verdict("A.1", startup_series(full_bw_reached=True, full_bw_now=False)) == "fail"


def test_a2_startup_exits_on_loss_when_app_limited() -> None:
    series = [rec(0.04 * i, "STARTUP", i, bw_bps=BW / 4, is_app_limited=True, loss_rate=0.0) for i in range(10)]
    series[-1]["loss_rate"] = 0.05
    good = [*series, rec(0.4, "DRAIN", 10, full_bw_reached=True, full_bw_now=True, is_app_limited=True)]
    assert verdict("A.2", good) == "pass"
    assert verdict("A.2", [dict(r, loss_rate=0.01) for r in good]) == "fail"  # under BBR.LossThresh
    late = [dict(r, t_s=r["t_s"] * 10) for r in good]  # STARTUP lasting 4 s
    assert verdict("A.2", late) == "fail"
    # App-limited only in the first rounds, not when the loss ends STARTUP: the case's step 2 not met.
    early = [dict(r, is_app_limited=r["round"] < 3) for r in good]
    assert verdict("A.2", early) == "blocked"
    # The draft's own CheckStartupHighLoss() sets full_bw_reached only: full_bw_now is not asked for.
    assert verdict("A.2", [dict(r, full_bw_now=False) for r in good]) == "pass"
    drained_at_once = [*series, rec(0.4, "PROBE_BW", 10, "DOWN", full_bw_reached=True, is_app_limited=True,
                                    drain_start_round=10)]
    assert verdict("A.2", drained_at_once) == "pass"  # DRAIN entered and left on the same ACK


def test_a3_drain_exits_on_inflight() -> None:
    good = [rec(0, "STARTUP", 1), rec(0.02, "DRAIN", 2, pacing_gain=0.35, inflight=200),
            rec(0.06, "PROBE_BW", 4, "DOWN", inflight=84)]
    assert verdict("A.3", good) == "pass"
    assert verdict("A.3", [*good[:2], dict(good[2], inflight=120)]) == "fail"
    assert verdict("A.3", [good[0], dict(good[1], pacing_gain=0.75), good[2]]) == "fail"
    assert verdict("A.3", [good[0], dict(good[1], pacing_gain=0.2), good[2]]) == "fail"  # below both values
    assert verdict("A.3", [*good[:2], dict(good[2], inflight=28)]) == "fail"  # stayed until a third of the BDP
    assert verdict("A.3", [good[0], dict(good[1], inflight=60), dict(good[2], inflight=28)]) == "blocked"
    # DRAIN entered and left on one ACK (no DRAIN record): at the target, no queue to drain; above it, a
    # DRAIN skipped; no exit from STARTUP at all, a fail; a PROBE_RTT out of STARTUP, not the case's path.
    assert verdict("A.3", [good[0], good[2]]) == "blocked"
    assert verdict("A.3", [good[0], dict(good[2], inflight=120)]) == "fail"
    assert verdict("A.3", [good[0], dict(good[0], round=3)]) == "fail"
    assert verdict("A.3", [good[0], rec(0.06, "PROBE_RTT", 4, inflight=120)]) == "blocked"  # not via DRAIN


def test_a4_drain_exits_after_three_rounds() -> None:
    good = [rec(0, "STARTUP", 1), rec(0.02, "DRAIN", 2, inflight=200, drain_start_round=2),
            rec(0.04, "DRAIN", 3, inflight=200, drain_start_round=2),
            rec(0.08, "PROBE_BW", 5, "DOWN", inflight=190, drain_start_round=2)]
    assert verdict("A.4", good) == "pass"
    assert verdict("A.4", [*good[:3], dict(good[3], round=9)]) == "fail"
    assert verdict("A.4", [{k: v for k, v in r.items() if k != "drain_start_round"} for r in good]) == "blocked"
    assert verdict("A.4", good[:3]) == "blocked"  # the run ended a round into DRAIN: no exit due yet
    stuck = [*good[:3], *[rec(0.06 + 0.02 * k, "DRAIN", 4 + k, inflight=200, drain_start_round=2) for k in range(5)]]
    assert verdict("A.4", stuck) == "fail"  # DRAIN to the end, past its 3 rounds
    # An exit at the target is an inflight exit: the path did not force the case's condition.
    assert verdict("A.4", [*good[:3], dict(good[3], inflight=80)]) == "blocked"
    # Google's v3 has no time exit: a DRAIN kept above target to the end of the run fails at its last record.
    stuck = [*good[:3], *(rec(0.02 * k, "DRAIN", k, inflight=200, drain_start_round=2) for k in range(4, 30))]
    checks = conf.evaluate(CASES["A.4"], "bbr3", stuck, "twin")
    assert conf.verdict(checks) == "fail" and checks[1].measured == "27, never left", checks
    assert verdict("A.4", [dict(r, inflight=80) if r["mode"] == "DRAIN" else r for r in stuck]) == "blocked"


def up_series(up_rounds: int, lost_in_up: int = 0, after: str = "DOWN", **kw: Any) -> list[dict[str, Any]]:
    out = [rec(0, "PROBE_BW", 10, "CRUISE", **kw), rec(0.02, "PROBE_BW", 11, "REFILL", **kw)]
    out += [rec(0.04 + 0.02 * k, "PROBE_BW", 12 + k, "UP", pacing_gain=1.25, lost=lost_in_up if k else 0, **kw)
            for k in range(up_rounds)]
    out.append(rec(0.04 + 0.02 * up_rounds, "PROBE_BW", 12 + up_rounds, after, lost=lost_in_up, **kw))
    return out


def test_a5_up_exits_on_plateau() -> None:
    assert verdict("A.5", up_series(4, full_bw_now=True)) == "pass"
    assert verdict("A.5", up_series(2, full_bw_now=True)) == "fail"  # under 3 rounds: no plateau yet
    assert verdict("A.5", up_series(4, after="REFILL", full_bw_now=True)) == "fail"
    assert verdict("A.5", up_series(4, lost_in_up=5, full_bw_now=True)) == "blocked"  # the path forced none
    assert verdict("A.5", up_series(4, full_bw_now=True), algo="bbr2") == "pass"


def test_a6_up_exits_on_loss_when_app_limited() -> None:
    # The exit's sample app-limited: HandleInflightTooHigh() leaves inflight_longterm as it was.
    good = up_series(2, lost_in_up=5, is_app_limited=True, inflight_hi=100)
    assert verdict("A.6", good) == "pass"
    assert verdict("A.6", up_series(2, lost_in_up=5, after="REFILL", is_app_limited=True, inflight_hi=100)) == "fail"
    assert verdict("A.6", up_series(6, lost_in_up=5, is_app_limited=True, inflight_hi=100)) == "fail"
    moved = [*good[:-1], dict(good[-1], inflight_hi=80)]
    assert verdict("A.6", moved) == "fail"
    # A sample that is not app-limited at the exit must set it.
    set_by_loss = [*good[:-1], dict(good[-1], is_app_limited=False, inflight_hi=80)]
    assert verdict("A.6", set_by_loss) == "pass"
    assert verdict("A.6", up_series(2, lost_in_up=0, is_app_limited=True, inflight_hi=100)) == "blocked"


def test_a7_app_limited_startup_is_never_left() -> None:
    good = [rec(0.1 * i, "STARTUP", i, is_app_limited=True) for i in range(80)]
    assert verdict("A.7", good) == "pass"
    assert verdict("A.7", [*good[:40], *[dict(r, mode="DRAIN") for r in good[40:]]]) == "fail"
    assert verdict("A.7", [*good[:40], *[dict(r, lost=2) for r in good[40:]]]) == "fail"


def test_a8_down_exits_on_inflight() -> None:
    good = [rec(0, "PROBE_BW", 1, "UP", inflight=160), rec(0.02, "PROBE_BW", 2, "DOWN", pacing_gain=0.91,
                                                            inflight=120), rec(0.04, "PROBE_BW", 3, "CRUISE",
                                                                               inflight=80)]
    assert verdict("A.8", good) == "pass"
    assert verdict("A.8", [good[0], dict(good[1], pacing_gain=0.75), good[2]]) == "fail"  # v2alpha's gain
    assert verdict("A.8", [*good[:2], dict(good[2], inflight=110)]) == "fail"
    # With inflight_longterm set, the headroom target (0.85 x 100) is the lower one.
    assert verdict("A.8", [*good[:2], dict(good[2], inflight=80, inflight_hi=70)]) == "fail"


def test_a9_down_goes_to_refill_after_the_probe_wait() -> None:
    # The case cuts the rate in the first DOWN after an UP; the one after DRAIN, over at once, does not count.
    first = [rec(-0.2, "PROBE_BW", 0, "DOWN"), rec(-0.15, "PROBE_BW", 0, "CRUISE"), rec(-0.1, "PROBE_BW", 0, "UP")]
    good = [*first, rec(0, "PROBE_BW", 1, "DOWN", inflight=120), rec(2.5, "PROBE_BW", 100, "REFILL", inflight=120)]
    assert verdict("A.9", good) == "pass"
    assert verdict("A.9", [*good[:4], dict(good[4], bw_phase="CRUISE")]) == "fail"
    assert verdict("A.9", [*good[:4], dict(good[4], t_s=4.0)]) == "fail"
    assert verdict("A.9", [*good[:4], dict(good[4], inflight=90)]) == "blocked"  # the path let inflight fall
    # Without the DOWN after DRAIN in the records (over within the ACK that entered it) the same DOWN counts.
    assert verdict("A.9", good[2:]) == "pass"


def probe_rtt_series(entry_s: float = 5.1, stay_s: float = 0.22, gain: float = 0.5, cwnd: int = 41,
                     after: str = "PROBE_BW") -> list[dict[str, Any]]:
    out = [rec(0.1 * i, "PROBE_BW", i, "CRUISE") for i in range(int(entry_s * 10))]
    out.append(rec(entry_s, "PROBE_RTT", 60, cwnd_gain=gain, cwnd=cwnd))
    out.append(rec(entry_s + stay_s, after, 70, "CRUISE" if after == "PROBE_BW" else None))
    return out


def test_a10_probe_rtt_entered_and_left() -> None:
    assert verdict("A.10", probe_rtt_series()) == "pass"
    assert verdict("A.10", probe_rtt_series(entry_s=3.0)) == "fail"
    assert verdict("A.10", probe_rtt_series(stay_s=0.1)) == "fail"
    assert verdict("A.10", probe_rtt_series(gain=1.0, cwnd=80)) == "fail"
    assert verdict("A.10", probe_rtt_series(gain=1.0, cwnd=44)) == "pass"  # v3: the 0.5 is in the cwnd
    assert verdict("A.10", probe_rtt_series(gain=1.0, cwnd=4)) == "fail"  # v1's 4 packets: not 0.5 BDP
    assert verdict("A.10", probe_rtt_series(entry_s=5.5)) == "fail"  # 0.5 s late: the interval ran out before
    assert verdict("A.10", probe_rtt_series(after="STARTUP")) == "fail"
    series = probe_rtt_series()
    series[30]["probe_rtt_min_us"] = RTT_US - 5  # a new low at 3 s: 2.1 s before the entry is too soon
    assert verdict("A.10", series) == "fail"


def test_a11_probe_rtt_skipped_after_idle() -> None:
    before = [rec(0.1 * i, "PROBE_BW", i, "CRUISE", idle_restart=False) for i in range(30)]
    after = [rec(14 + 0.1 * i, "PROBE_BW", 40 + i, "CRUISE", idle_restart=i == 0) for i in range(20)]
    assert verdict("A.11", before + after) == "pass"
    assert verdict("A.11", before + [dict(after[0], mode="PROBE_RTT"), *after[1:]]) == "fail"
    assert verdict("A.11", before + [dict(r, idle_restart=False) for r in after]) == "fail"


def test_a12_startup_with_ack_aggregation() -> None:
    good = startup_series(cwnd=200, extra_acked=20)
    assert verdict("A.12", good) == "pass"
    assert verdict("A.12", startup_series(cwnd=150, extra_acked=20)) == "fail"  # < 2 BDP (165)
    assert verdict("A.12", startup_series(cwnd=200, extra_acked=0)) == "fail"
    assert verdict("A.12", [dict(r, bw_bps=r["bw_bps"] * 0.8) for r in good]) == "fail"


def test_a13_cruise_with_ack_aggregation() -> None:
    # 50 Mbit/s payload = 4315 packets/s; delivered advances that much per second.
    good = [rec(0.1 * i, "PROBE_BW", i, "CRUISE", delivered=int(431.5 * i), cwnd=185, extra_acked=20)
            for i in range(100)]
    assert verdict("A.13", good) == "pass"
    assert verdict("A.13", [dict(r, delivered=r["delivered"] // 2) for r in good]) == "fail"
    assert verdict("A.13", [dict(r, cwnd=150) for r in good]) == "fail"  # not 2 x 82.5 + 20


def test_a14_sub_packet_bdp() -> None:
    link = 0.064e6
    good = [rec(0.5 * i, "PROBE_BW", i, "CRUISE", cwnd=4, pacing_rate_bps=link, bw_bps=link, min_rtt_us=1000)
            for i in range(20)]
    assert verdict("A.14", good) == "pass"
    assert verdict("A.14", [dict(r, cwnd=2) for r in good]) == "fail"
    assert verdict("A.14", [dict(r, pacing_rate_bps=link * 2) for r in good]) == "fail"


def step_up_series(found_at_s: float, doubling: bool = True) -> list[dict[str, Any]]:
    low, high = conf.payload_bps(10, MSS), conf.payload_bps(100, MSS)
    out = [rec(0.04 * i, "PROBE_BW", i, "CRUISE", bw_bps=low, inflight_hi=40, min_rtt_us=40_000)
           for i in range(125)]  # 0-5 s at 10 Mbit/s
    t, rnd, hi, step = 5.0, 125, 40, 1
    out.append(rec(t, "PROBE_BW", rnd, "REFILL", bw_bps=low, inflight_hi=hi, min_rtt_us=40_000))
    while t < found_at_s:
        t, rnd = t + 0.04, rnd + 1
        hi += step
        step = step * 2 if doubling else step + 1
        out.append(rec(t, "PROBE_BW", rnd, "UP", bw_bps=low * 1.05, inflight_hi=hi, min_rtt_us=40_000))
    out.append(rec(t + 0.04, "PROBE_BW", rnd + 1, "UP", bw_bps=high, inflight_hi=hi + step, min_rtt_us=40_000))
    return out


def test_a15_ten_times_up() -> None:
    assert verdict("A.15", step_up_series(5.4)) == "pass"
    assert verdict("A.15", step_up_series(5.4, doubling=False)) == "fail"
    assert verdict("A.15", step_up_series(16.0)) == "fail"


def step_down_series(adapt_at_s: float, probes: int, short_at_s: float = 5.5,
                     lossy: bool = True) -> list[dict[str, Any]]:
    """100 -> 10 Mbit/s at 5 s; `probes` one-record UPs spread between the step and max_bw's fall."""
    high, low = conf.payload_bps(100, MSS), conf.payload_bps(10, MSS)
    ups = [5.0 + (adapt_at_s - 5.0) * (k + 1) / (probes + 1) for k in range(probes)]
    out = []
    for i in range(int(adapt_at_s * 10) + 20):
        t = 0.1 * i
        phase = "UP" if any(abs(t - u) < 0.05 for u in ups) else "CRUISE"
        bw = high if t < adapt_at_s else low
        out.append(rec(t, "PROBE_BW", i, phase, bw_bps=bw, pacing_rate_bps=bw, lost=max(0, i - 50) if lossy else 0,
                       bw_lo_bps=low if t >= short_at_s else None))
    return out


def test_a16_ten_times_down() -> None:
    good = step_down_series(12.0, probes=2)
    ups = [p for p, _, _ in conf.runs(good) if p == "UP"]
    assert len(ups) >= 1
    assert verdict("A.16", good) == "pass"
    assert verdict("A.16", step_down_series(12.0, probes=7)) == "fail"  # more cycles than the window
    assert verdict("A.16", step_down_series(12.0, probes=2, short_at_s=9.0)) == "fail"
    assert verdict("A.16", step_down_series(30.0, probes=2)[:200]) == "fail"  # never adapts
    assert verdict("A.16", step_down_series(12.0, probes=2, lossy=False)) == "blocked"  # nothing to adapt on


def test_a17_policer() -> None:
    token = conf.payload_bps(10, MSS) / 8 / MSS  # packets a second
    good = [rec(0.5 * i, "PROBE_BW", i, "CRUISE", delivered=int(token * 0.5 * i), lost=i // 4,
                bw_lo_bps=1e6 if i > 2 else None, inflight_lo=30 if i > 2 else None) for i in range(40)]
    assert verdict("A.17", good) == "pass"
    assert verdict("A.17", [dict(r, lost=r["lost"] * 400) for r in good]) == "fail"  # continuous loss
    assert verdict("A.17", [dict(r, delivered=r["delivered"] * 2) for r in good]) == "fail"  # over the token rate
    assert verdict("A.17", [dict(r, bw_lo_bps=None) for r in good]) == "fail"
    assert verdict("A.17", [dict(r, bw_lo_bps=None) for r in good], algo="bbr1") == "pass"


def undo_series(restored: bool, longterm_before: int | None = 150, resumes: str = "REFILL") -> list[dict[str, Any]]:
    """UP with inflight_longterm set; a recovery saves it and cuts it, the undo (its record written right
    after it ran) restores it and the flow probes again."""
    saved = {"undo_bw_shortterm_bps": None, "undo_inflight_shortterm": None, "undo_inflight_longterm": 0}
    at_undo = {**saved, "undo_inflight_longterm": longterm_before}
    out = [rec(0, "PROBE_BW", 1, "UP", inflight_hi=longterm_before, **saved),
           rec(0.02, "PROBE_BW", 2, "DOWN", ca_state="recovery", inflight_hi=105, inflight_lo=100, bw_lo_bps=BW / 2,
               **at_undo),
           rec(0.03, "PROBE_BW", 2, "DOWN", event="undo", ca_state="recovery",
               inflight_hi=longterm_before if restored else 105, **at_undo)]
    out.append(rec(0.04, "PROBE_BW", 3, resumes, inflight_hi=longterm_before if restored else 105, **saved))
    return out


def test_a18_a19_undo_restores_the_saved_state() -> None:
    assert verdict("A.18", undo_series(True)) == "pass"
    assert verdict("A.18", undo_series(False)) == "fail"
    assert verdict("A.19", undo_series(False)) == "fail"
    assert verdict("A.18", undo_series(True, resumes="CRUISE")) == "fail"  # UP's probe not restarted
    assert verdict("A.18", undo_series(True, longterm_before=None)) == "pass"  # unset is infinite: stays unset
    unmoved = [dict(r, inflight_hi=150, inflight_lo=None, bw_lo_bps=None, bw_phase="UP") for r in undo_series(True)]
    assert verdict("A.18", unmoved) == "blocked"  # the recovery changed nothing: a restore would be vacuous
    assert verdict("A.18", [r for r in undo_series(True) if r["event"] != "undo"]) == "fail"


def test_a20_probe_rtt_during_startup_returns_to_startup() -> None:
    good = [rec(0.1 * i, "STARTUP", i) for i in range(52)]
    good += [rec(5.2, "PROBE_RTT", 52), rec(5.45, "STARTUP", 55)]
    assert verdict("A.20", good) == "pass"
    assert verdict("A.20", [*good[:-1], rec(5.45, "PROBE_BW", 55, "CRUISE")]) == "fail"
    assert verdict("A.20", good[:52]) == "blocked"  # no PROBE_RTT at all: the path did not force one
    # A PROBE_RTT the run's end cut short has no exit: not judged, so never a failure.
    assert verdict("A.20", good[:53]) == "blocked"
    assert verdict("A.20", [*good, *[rec(5.5 + 0.1 * i, "STARTUP", 56 + i) for i in range(45)],
                            rec(10.2, "PROBE_RTT", 101)]) == "pass"


def test_a21_loss_in_up_cuts_inflight_longterm() -> None:
    def series(hi_after: int, after: str = "DOWN") -> list[dict[str, Any]]:
        out = [rec(0, "PROBE_BW", 10, "REFILL", inflight_hi=100)]
        out += [rec(0.02 * (k + 1), "PROBE_BW", 11 + k, "UP", inflight_hi=100 + 4 * k, lost=3 * k) for k in range(3)]
        out.append(rec(0.08, "PROBE_BW", 14, after, inflight_hi=hi_after, lost=6))
        return out
    assert verdict("A.21", series(90)) == "pass"
    assert verdict("A.21", series(120)) == "fail"  # grew, not cut
    assert verdict("A.21", series(40)) == "fail"  # below beta x BDP (0.7 x 82.5, less 10%)
    assert verdict("A.21", series(90, after="REFILL")) == "fail"
    assert verdict("A.21", [dict(r, lost=0) for r in series(90)]) == "blocked"  # no loss in UP: not forced
    # The run ends a round after UP's loss: its exit was not due yet, so it is not judged.
    assert verdict("A.21", series(90)[:3]) == "blocked"
    stuck = series(90)[:4] + [rec(0.1 + 0.02 * k, "PROBE_BW", 14 + k, "UP", inflight_hi=112, lost=6 + 3 * k)
                              for k in range(4)]
    assert verdict("A.21", stuck) == "fail"  # UP to the end, rounds after the loss: the exit never came


def test_a22_app_limited_refill_keeps_max_bw() -> None:
    # The case's app sends for 0.1 s from REFILL's start, between this cycle's slot and max_bw.
    app = CASES["A.22"].trigger["app_limit_mbit"] * 1e6
    slot = {"max_bw_this_cycle_bps": app - 0.5e6, "bw_bps": app + 1e6}
    good = [rec(0, "PROBE_BW", 1, "CRUISE", **slot), rec(0.02, "PROBE_BW", 2, "REFILL", is_app_limited=True, **slot),
            rec(0.04, "PROBE_BW", 3, "UP", **slot), rec(0.2, "PROBE_BW", 4, "UP", max_bw_this_cycle_bps=app + 1e6)]
    assert verdict("A.22", good) == "pass"  # the slot rose to max_bw only after the app-limited stretch
    assert verdict("A.22", [*good[:2], dict(good[2], max_bw_this_cycle_bps=app + 0.5e6)]) == "fail"
    assert verdict("A.22", [*good[:2], dict(good[2], bw_bps=BW / 2)]) == "fail"
    assert verdict("A.22", [*good[:2], dict(good[2], bw_phase="DOWN")]) == "fail"
    # A slot already above the app's rate hides the step: blocked, not a pass.
    above = [dict(r, max_bw_this_cycle_bps=app + 0.5e6) for r in good]
    assert verdict("A.22", above) == "blocked"


def test_case_objects_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CASES["A.1"].runner = "twin"  # type: ignore[misc]


def test_trigger_becomes_the_twin_s_options_from_the_phase_start() -> None:
    base = {"rate": "50mbit", "rtt": "20ms", "buffer": "170p"}
    cut = dataclasses.replace(CASES["A.4"], trigger={"phase": "DRAIN", "rate_rel": 0.9})
    assert conf.trigger_options(cut, 0.25) == {**base, "rate": "50mbit@0,45000000bit@250000us"}
    pause = dataclasses.replace(CASES["A.22"], twin={**base, "pause": "1s-2s"},
                                trigger={"phase": "REFILL", "pause_s": 0.02})
    assert conf.trigger_options(pause, 3.0) == {**base, "pause": "1s-2s,3000000us-3020000us"}
    lossy = dataclasses.replace(CASES["A.6"], trigger={"phase": "UP", "app_limit_mbit": 30, "loss_pct": 5,
                                                       "for_s": 0.3})
    assert conf.trigger_options(lossy, 1.0) == {**base, "app_limit": "30mbit@1000000us-1300000us",
                                                "loss": "5%@1000000us-1300000us"}
    spurious = dataclasses.replace(CASES["A.18"], twin=base, trigger={"phase": "UP", "spurious": "fast_recovery"})
    assert conf.trigger_options(spurious, 2.0) == {**base, "spurious_loss": "2005000us"}
    # A spurious RTO: the ACKs held from 5 ms into the phase for RTO_BLACKOUT_S (0.35 s).
    rto = dataclasses.replace(CASES["A.19"], twin=base, trigger={"phase": "UP", "spurious": "rto"})
    assert conf.trigger_options(rto, 2.0) == {**base, "ack_blackout": "2005000us-2355000us"}


FAKE_TWIN = """#!/usr/bin/env python3
# A deterministic stand-in for bbrkit-twin: DRAIN from 0.2 s; with a --rate cut, DRAIN lasts 4 rounds.
import json, sys
cut = "--rate" in sys.argv
open(sys.argv[0] + ".calls", "a").write(" ".join(sys.argv[1:]) + "\\n")
rec = dict(event="round", bw_phase=None, bw_bps=47e6, pacing_rate_bps=47e6, pacing_gain=1.0, cwnd_gain=2.0,
           min_rtt_us=20000, cwnd=170, inflight=200, lost=0, delivered=0, mss=1448, ca_state="open")
modes = ["STARTUP"] * 10 + ["DRAIN"] * (4 if cut else 1) + ["PROBE_BW"] * 3
for i, m in enumerate(modes):
    print(json.dumps(dict(rec, t_ns=i * 20_000_000, mode=m, round=i, drain_start_round=10,
                          bw_phase="DOWN" if m == "PROBE_BW" else None)))
"""


def test_a_trigger_runs_the_twin_twice_and_applies_from_the_phase_start(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    twin = tmp_path / "twin"
    twin.write_text(FAKE_TWIN)
    twin.chmod(0o755)
    monkeypatch.setenv("BBRKIT_TWIN", str(twin))
    records, why = conf.run_twin(CASES["A.4"], "bbr3", tmp_path / "work")
    assert why is None
    calls = (tmp_path / "twin.calls").read_text().splitlines()
    assert len(calls) == 2
    # A.4's cut to 0.3 comes as the DRAIN the first run found at 0.2 s starts.
    assert calls[1] == calls[0].replace("--rate 50mbit", "--rate 50mbit@0,15000000bit@200000us")
    assert verdict("A.4", records) == "pass"  # the fake's DRAIN: rounds 10-13, PROBE_BW at 14


def test_a_real_case_s_path_as_the_twin_s_options() -> None:
    # A.11: 50 Mbit/s, 20 ms, 2 BDP (2 x 82.6 frames of 1514 bytes); bulk 3 s, idle 11 s, bulk 3 s.
    assert conf.twin_path(CASES["A.11"]) == ({"rate": "50mbit", "rtt": "20ms", "buffer": "165p",
                                               "pause": "3000000us-14000000us"}, None)
    options, why = conf.twin_path(CASES["A.16"])
    assert why is None and options["rate"] == "100mbit@0s,10mbit@5s" and options["buffer"] == "660p"
    assert conf.twin_path(CASES["A.20"])[0]["app_limit"] == "10mbit@0us-13000000us"
    assert conf.twin_path(CASES["A.12"])[0]["ack_aggregation"] == "20ms"
    assert conf.twin_path(CASES["A.17"])[0]["policer"] == "10mbit/30000b"
    assert conf.twin_path(dataclasses.replace(CASES["A.17"], path={**CASES["A.17"].path, "bottleneck": {
        **CASES["A.17"].path["bottleneck"], "jitter_ms": 1}})) == ({}, "the twin has no jitter_ms")


def test_a_byte_buffer_holds_as_many_packets_on_the_twin_as_frames_on_the_link(tmp_path: Path) -> None:
    # A.16's 1 MB FIFO reaches bbrkit-link as --limit-bytes; the link takes a frame while the backlog of
    # frames' bytes stays within it (test_queue.c), so it holds the n full-size frames with
    # n x frame <= limit < (n + 1) x frame. The twin's FIFO must hold n packets too.
    case = CASES["A.16"]
    scenario = validate(conf.real_scenario(case, "bbr3", tmp_path), CATALOG)
    b = scenario.bottleneck
    link = Emulation(Topology("t", scenario), None).link_options()
    assert link[link.index("--limit-bytes") + 1] == str(b.buffer_bytes) == "1000000"
    twin = conf.twin_path(case)[0]["buffer"]
    assert twin.endswith("p")
    packets = int(twin.removesuffix("p"))
    assert packets * b.frame_bytes <= b.buffer_bytes < (packets + 1) * b.frame_bytes
    assert packets == b.limit_packets == 660


def test_runners_a_case_can_use() -> None:
    assert conf.runners_for(CASES["A.1"], "both") == ["real", "twin"]
    assert conf.runners_for(CASES["A.1"], "twin") == ["twin"]
    assert conf.runners_for(CASES["A.4"], "both") == ["twin"]
    assert conf.runners_for(CASES["A.4"], "real") == []


def test_regenerating_the_report_keeps_the_hand_written_part(tmp_path: Path) -> None:
    doc = tmp_path / "c.md"
    conf.write_markdown(doc, "# generated 1\n" + conf.GENERATED_END + "\n")
    doc.write_text(doc.read_text() + "## Findings\nby hand\n")
    conf.write_markdown(doc, "# generated 2\n" + conf.GENERATED_END + "\n")
    assert doc.read_text() == "# generated 2\n" + conf.GENERATED_END + "\n\n## Findings\nby hand\n"


def test_a13_cwnd_target_is_bounded_by_the_model_in_cruise() -> None:
    # inflight_longterm 150: CRUISE's cwnd bound is 0.85 x 150 = 127.5, under 2 x 82.5 + 20.
    bounded = [rec(0.1 * i, "PROBE_BW", i, "CRUISE", delivered=int(431.5 * i), cwnd=128, extra_acked=20,
                   inflight_hi=150) for i in range(100)]
    assert verdict("A.13", bounded) == "pass"
    assert verdict("A.13", [dict(r, cwnd=110) for r in bounded]) == "fail"


def test_doc_needs_a_clean_checkout_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from bbrbench import provenance
    monkeypatch.setattr(provenance, "tree_state", lambda: "dirty 0123")
    monkeypatch.chdir(tmp_path)
    assert main(["conformance", "--doc"]) == 2
    assert main(["conformance", "--doc", "--case", "A.1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bbrbench: conformance --doc needs a clean checkout: tracked files differ from HEAD (commit first)",
                   "bbrbench: --doc runs every case on every algorithm into a new directory: no ALGO, --case, --out "
                   "or --markdown"]
    assert not list(tmp_path.iterdir())  # nothing ran


def test_doc_links_each_verdict_to_its_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    twin = Path(__file__).resolve().parents[2] / "build" / "bbrkit-twin"
    assert twin.exists(), f"{twin} is missing: run `make` first"
    monkeypatch.setenv("BBRKIT_TWIN", str(twin))
    cases = [CASES["A.4"], CASES["A.18"]]
    conf.run(list(conf.ALGOS), cases, "twin", tmp_path / "out")
    doc = tmp_path / "docs" / "conformance.md"
    conf.write_doc(tmp_path / "out", cases, doc)
    text = doc.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| A.4 "))
    # The twin names its loss-decision path for bbr2, bbr3 and bbr_draft; bbr1 makes none.
    assert "[fail (twin: per-packet, hooks at mark time)](../data/conformance/A.4-bbr3-twin.png)" in row
    assert "(twin)](../data/conformance/A.4-bbr1-twin.png)" in row
    assert "(plot)" not in text.split("## A.18")[1].split("bbr1")[1].splitlines()[0]  # not applicable: no run
    plot_dir = tmp_path / "data" / "conformance"  # recorded results under data/, documents under docs/
    plots = sorted(p.name for p in plot_dir.iterdir())
    assert plots == ["A.18-bbr2-twin.png", "A.18-bbr3-twin.png", "A.18-bbr_draft-twin.png", "A.4-bbr1-twin.png",
                     "A.4-bbr2-twin.png", "A.4-bbr3-twin.png", "A.4-bbr_draft-twin.png"]
    assert all((plot_dir / p).stat().st_size < 80_000 for p in plots)


def test_real_outcomes_name_the_loss_decision_path_bbrctl_gave_their_run(tmp_path: Path) -> None:
    """A real run's path is what its host.json recorded from bbrctl list while attached; a run without one
    (and an outcome written before outcomes carried it) says "not recorded"; bbr1 has no such path."""
    from bbrbench.experiments.conformance.run import ran_with
    from bbrbench.results import write_json
    work = tmp_path / "A.1-bbr3-real"
    work.mkdir()
    write_json(work / "host.json", "host", {"bbrkit_attachments": {"bbr3": {"loss_decisions": "ack-time"}}})
    assert ran_with("bbr3", "real", work) == "ack-time"
    assert ran_with("bbr2", "real", tmp_path / "A.1-bbr2-real") == "not recorded"
    assert ran_with("bbr1", "real", work) is None
    doc = {"invocations": [], "outcomes": [
        conf.Outcome("A.1", "bbr3", "real", "pass", loss_decisions="ack-time").as_dict(),
        {**conf.Outcome("A.1", "bbr2", "real", "pass").as_dict(), "loss_decisions": None},
        conf.Outcome("A.1", "bbr1", "real", "pass").as_dict(),
        conf.Outcome("A.1", "bbr_draft", "real", "blocked", "run failed: no netns").as_dict()]}
    del doc["outcomes"][1]["loss_decisions"]  # as conformance.json held it before
    text = conf.markdown(doc, [CASES["A.1"]])
    row = next(line for line in text.splitlines() if line.startswith("| A.1 "))
    assert [c.strip() for c in row.strip("|").split("|")][3:] == [
        "pass (real: ack-time)", "pass (real: not recorded)", "pass (real)", "blocked (real)"]
    assert "- bbr3 (real: ack-time): **pass**" in text
    assert "bbr3 (ack-time)" in conf.table([conf.Outcome("A.1", "bbr3", "real", "pass", loss_decisions="ack-time")],
                                           [CASES["A.1"]])
