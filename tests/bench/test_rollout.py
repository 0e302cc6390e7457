"""bbrbench rollout's reading of `bbrctl export` and its guards, on exposition text written here in the
format bbrctl serves (Prometheus text format 0.0.4, read with Prometheus' own Python parser). The
guard acts only when the whole 95% Welch interval of candidate minus holdback is past its margin."""

from __future__ import annotations

import pytest

from bbrbench.analysis.rollout import Comparison, check_guards, interval_sample, parse_guards, parse_scrape


def exposition(arms: dict[str, dict[str, float]], rule: str = "web", holdback: str = "cubic") -> str:
    counters = {"bytes_acked", "segs_out", "retrans_segs"}
    lines = []
    names = sorted({k for v in arms.values() for k in v})
    for name in names:
        full = f"bbrkit_policy_{name}" + ("_total" if name in counters else "")
        lines.append(f"# TYPE {full} {'counter' if name in counters else 'gauge'}")
        for arm, values in arms.items():
            labels = f'rule="{rule}",arm="{arm}",holdback="{"true" if arm == holdback else "false"}"'
            lines.append(f"{full}{{{labels}}} {values[name]}")
    return "\n".join(lines) + "\n"


def arm(t: float, goodput_bps: float, stalled: int, retrans_per_s: float = 0.0, flows: int = 10) -> dict[str, float]:
    """An arm's series at time t for a steady goodput per flow and a number of stalled flows."""
    return {"bytes_acked": goodput_bps * flows * t / 8, "segs_out": 1000 * t, "retrans_segs": retrans_per_s * t,
            "flows": flows, "busy_flows": flows, "stalled_flows": stalled, "srtt_seconds": 0.02,
            "weight_ratio": 0.5}


def run_rollout(bad_stalls: list[int], guards: dict[str, float], good_rate: float = 8e6,
                bad_rate: float = 8e6) -> Comparison:
    c = None
    prev = None
    for i, stalled in enumerate([0, *bad_stalls]):
        t = float(i)
        s = parse_scrape(exposition({"bbr3": arm(t, bad_rate, stalled), "cubic": arm(t, good_rate, 0)}), "web", t)
        if c is None:
            assert s.holdback == "cubic"
            c = Comparison(s.holdback)
        else:
            assert prev is not None
            c.add(prev, s)
        prev = s
    assert c is not None
    return c


def test_scrape_reads_only_the_rule() -> None:
    text = exposition({"bbr3": arm(1, 1e6, 0)}) + exposition({"bbr1": arm(1, 1e6, 0)}, rule="other")
    s = parse_scrape(text, "web", 0)
    assert set(s.arms) == {"bbr3"}
    assert s.arms["bbr3"]["bbrkit_policy_bytes_acked"] == pytest.approx(1e6 * 10 / 8)


def test_interval_sample_units() -> None:
    a, b = arm(0, 8e6, 0, retrans_per_s=10), arm(2, 8e6, 3, retrans_per_s=10)
    s = interval_sample({f"bbrkit_policy_{k}": v for k, v in a.items()},
                        {f"bbrkit_policy_{k}": v for k, v in b.items()}, 2.0)
    assert s is not None
    assert s["goodput_bps"] == pytest.approx(8e6)
    assert s["retrans_rate"] == pytest.approx(10 / 1000)
    assert s["stall_share"] == pytest.approx(0.3)
    assert s["rtt_ms"] == pytest.approx(20)


def test_stalling_arm_breaches_after_enough_intervals() -> None:
    c = run_rollout([6, 7, 6, 7], {"stalls": 0.05})
    breach = check_guards(c, {"stalls": 0.05}, min_samples=3)
    assert breach is not None and breach.arm == "bbr3" and breach.guard == "stalls"
    assert breach.low > 0.05
    # Too few intervals: no decision yet.
    assert check_guards(run_rollout([6, 7], {"stalls": 0.05}), {"stalls": 0.05}, min_samples=3) is None


def test_one_bad_interval_is_not_evidence() -> None:
    c = run_rollout([0, 9, 0, 0], {"stalls": 0.05})
    assert check_guards(c, {"stalls": 0.05}, min_samples=3) is None


def test_margin_is_respected() -> None:
    """A steady 10% more stalls breaches a 5% margin but not a 20% one."""
    c = run_rollout([1, 1, 1, 1], {"stalls": 0.05})
    assert check_guards(c, {"stalls": 0.05}, min_samples=3) is not None
    assert check_guards(c, {"stalls": 0.2}, min_samples=3) is None


def test_goodput_ratio_guard() -> None:
    c = run_rollout([0, 0, 0, 0], {}, good_rate=8e6, bad_rate=2e6)
    breach = check_guards(c, {"goodput": 0.2}, min_samples=3)
    assert breach is not None and breach.guard == "goodput" and breach.value == pytest.approx(0.25)
    same = run_rollout([0, 0, 0, 0], {}, good_rate=8e6, bad_rate=7.6e6)
    assert check_guards(same, {"goodput": 0.2}, min_samples=3) is None


@pytest.mark.parametrize("spec", ["stall=0.1", "stalls", "stalls=x", "stalls=-1"])
def test_bad_guard(spec: str) -> None:
    with pytest.raises(ValueError, match="guard"):
        parse_guards([spec])
