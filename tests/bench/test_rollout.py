"""bbrbench rollout's reading of `bbrctl export` and its guards, on exposition text written here in the
format bbrctl serves (Prometheus text format 0.0.4, read with Prometheus' own Python parser). A guard is
breached only when the whole 95% interval (Welch's; Fieller's for a ratio whose holdback is noisy) is past
its margin and passes only when it is wholly within. The command itself runs against fake HTTP servers on
127.0.0.1 (tests/bench/test_rollout_cli.py)."""

from __future__ import annotations

import pytest
from rolloututil import arm, exposition

from bbrbench.analysis.rollout import (
    ACKED,
    Comparison,
    check_guards,
    interval_sample,
    parse_guards,
    parse_query,
    parse_scrape,
    query,
)
from bbrbench.analysis.stats import ratio_ci95


def comparison_of(scrapes: list[str]) -> Comparison:
    """The Comparison a rollout builds from scrapes one second apart."""
    c = None
    prev = None
    for i, text in enumerate(scrapes):
        s = parse_scrape(text, "web", float(i))
        if c is None:
            assert s.holdback == "cubic"
            c = Comparison(s.holdback)
        else:
            assert prev is not None
            c.add(prev, s)
        prev = s
    assert c is not None
    return c


def run_rollout(bad_stalls: list[int], good_rate: float = 8e6, bad_rate: float = 8e6) -> Comparison:
    return comparison_of([exposition({"bbr3": arm(i, bad_rate, stalled), "cubic": arm(i, good_rate, 0)})
                          for i, stalled in enumerate([0, *bad_stalls])])


def goodput_series(per_interval_mbps: list[float], flows: int) -> list[float]:
    """Cumulative acked bytes at each second for the given goodput per flow in each interval."""
    acked = [0.0]
    for mbps in per_interval_mbps:
        acked.append(acked[-1] + mbps * 1e6 * flows / 8)
    return acked


def test_scrape_reads_only_the_rule() -> None:
    text = exposition({"bbr3": arm(1, 1e6, 0)}) + exposition({"bbr1": arm(1, 1e6, 0)}, rule="other")
    s = parse_scrape(text, "web", 0)
    assert set(s.arms) == {"bbr3"}
    assert s.arms["bbr3"][ACKED] == pytest.approx(1e6 * 10 / 8)


def test_interval_sample_units() -> None:
    a = parse_scrape(exposition({"cubic": arm(0, 8e6, 0, retrans_per_s=10)}), "web", 0).arms["cubic"]
    b = parse_scrape(exposition({"cubic": arm(2, 8e6, 3, retrans_per_s=10)}), "web", 2).arms["cubic"]
    s = interval_sample(a, b, 2.0)
    assert s is not None
    assert s["goodput_bps"] == pytest.approx(8e6)
    assert s["retrans_rate"] == pytest.approx(10 / 1000)
    assert s["stall_share"] == pytest.approx(0.3)
    assert s["rtt_ms"] == pytest.approx(20)  # the histogram's _sum over its _count


def test_stalling_arm_breaches_after_enough_intervals() -> None:
    verdict = check_guards(run_rollout([6, 7, 6, 7]), {"stalls": 0.05}, min_samples=3)
    breach = verdict.breach
    assert breach is not None and breach.arm == "bbr3" and breach.guard == "stalls"
    assert breach.low is not None and breach.low > 0.05
    assert verdict.outcome == "breached"
    # Too few intervals: no decision yet.
    early = check_guards(run_rollout([6, 7]), {"stalls": 0.05}, min_samples=3)
    assert early.breach is None and early.outcome == "undecided"


def test_one_bad_interval_is_not_evidence() -> None:
    verdict = check_guards(run_rollout([0, 9, 0, 0]), {"stalls": 0.05}, min_samples=3)
    assert verdict.breach is None and verdict.outcome == "undecided"


def test_margin_is_respected() -> None:
    """A steady 10% more stalls breaches a 5% margin, passes a 20% one."""
    c = run_rollout([1, 1, 1, 1])
    assert check_guards(c, {"stalls": 0.05}, min_samples=3).outcome == "breached"
    assert check_guards(c, {"stalls": 0.2}, min_samples=3).outcome == "passed"


def test_goodput_ratio_guard() -> None:
    verdict = check_guards(run_rollout([0, 0, 0, 0], good_rate=8e6, bad_rate=2e6), {"goodput": 0.2}, min_samples=3)
    assert verdict.breach is not None and verdict.breach.guard == "goodput"
    assert verdict.breach.value == pytest.approx(0.25)
    same = run_rollout([0, 0, 0, 0], good_rate=8e6, bad_rate=7.6e6)
    assert check_guards(same, {"goodput": 0.2}, min_samples=3).outcome == "passed"


def test_starved_candidate_against_a_noisy_holdback_breaches() -> None:
    """The field case: 0.62 Mbit/s per flow against the holdback's 11.45, two flows per arm, the holdback's
    goodput swinging by a third between intervals. The ratio's interval is Fieller's (the holdback's mean
    is uncertain enough that the delta method would understate it) and lies far below 1 - 0.3: breached.
    (The guard used to look only at the delta method's half-width, which a Fieller interval has not, and
    said nothing.)"""
    candidate = [0.60, 0.64, 0.58, 0.66, 0.62]
    holdback = [11.45 * x for x in (0.66, 1.34, 0.74, 1.26, 1.0)]
    r = ratio_ci95(candidate, holdback)
    assert r.method == "fieller" and r.bounds is not None
    assert r.bounds[0] == pytest.approx(0.039, abs=0.002) and r.bounds[1] == pytest.approx(0.086, abs=0.002)
    cand_acked, hold_acked = goodput_series(candidate, 2), goodput_series(holdback, 2)
    c = comparison_of([exposition({"bbr_rttgain": arm(i, 0, 0, flows=2, acked=cand_acked[i]),
                                   "cubic": arm(i, 0, 0, flows=2, acked=hold_acked[i])})
                       for i in range(len(cand_acked))])
    verdict = check_guards(c, {"goodput": 0.3}, min_samples=3)
    assert verdict.breach is not None and verdict.breach.arm == "bbr_rttgain"
    assert verdict.breach.high is not None and verdict.breach.high < 0.7
    assert verdict.breach.value == pytest.approx(0.62 / 11.45, rel=1e-3)


def test_unbounded_ratio_is_undecided_not_passed() -> None:
    """A holdback whose own mean is not told from 0 bounds no ratio: the guard stays undecided."""
    cand_acked = goodput_series([1.0, 1.0, 1.1, 0.9], 2)
    hold_acked = goodput_series([0.01, 5.0, 0.01, 0.01], 2)
    c = comparison_of([exposition({"bbr3": arm(i, 0, 0, flows=2, acked=cand_acked[i]),
                                   "cubic": arm(i, 0, 0, flows=2, acked=hold_acked[i])})
                       for i in range(len(cand_acked))])
    verdict = check_guards(c, {"goodput": 0.3}, min_samples=3)
    assert verdict.outcome == "undecided"
    assert "not told from 0" in verdict.checks[0].why


def test_candidate_without_samples_is_undecided() -> None:
    """An arm seen with no live flow gives no sample: its guards cannot pass."""
    c = comparison_of([exposition({"bbr3": arm(i, 8e6, 0, flows=0), "cubic": arm(i, 8e6, 0)}) for i in range(5)])
    verdict = check_guards(c, {"stalls": 0.05}, min_samples=3)
    assert [ch.arm for ch in verdict.checks] == ["bbr3"] and verdict.outcome == "undecided"


def test_prometheus_answer_sums_the_fleet() -> None:
    """The query API's vector, one element per series and arm already summed by Prometheus; a second
    element of the same series (another label set) adds up too."""
    assert query("web").startswith("sum by (__name__, arm, holdback) ({__name__=~")
    assert 'rule="web"' in query("web") and "bbrkit_policy_acked_bytes_total" in query("web")
    doc = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "bbrkit_policy_acked_bytes_total", "arm": "bbr3", "holdback": "false"},
         "value": [1.0, "100"]},
        {"metric": {"__name__": "bbrkit_policy_acked_bytes_total", "arm": "bbr3", "holdback": "false"},
         "value": [1.0, "50"]},
        {"metric": {"__name__": "bbrkit_policy_flows", "arm": "cubic", "holdback": "true"}, "value": [1.0, "4"]}]}}
    s = parse_query(doc, 3.0)
    assert s.holdback == "cubic" and s.t == 3.0
    assert s.arms["bbr3"][ACKED] == 150 and s.arms["cubic"]["bbrkit_policy_flows"] == 4
    with pytest.raises(ValueError, match="instant vector"):
        parse_query({"status": "error", "error": "bad query"}, 0.0)


@pytest.mark.parametrize("spec", ["stall=0.1", "stalls", "stalls=x", "stalls=-1"])
def test_bad_guard(spec: str) -> None:
    with pytest.raises(ValueError, match="guard"):
        parse_guards([spec])
