"""bbrbench reproduce: the verdicts, from claims judged on intervals over fake lookups (bands, minimum
effects, ties, physical bounds, Fieller, Holm, the second margin family) to the claim files."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from bbrbench.analysis import stats
from bbrbench.repro import claims, papers, quantities, report, seed004
from bbrbench.repro.claims import Outcome, Stat


class FakeLookup:
    """Aggregated results given directly: (series, x, metric) -> the repetitions' values; the paper's numbers
    as (series, x, metric) -> value."""

    def __init__(self, data: dict[tuple[str, Any, str], list[float]],
                 paper: dict[tuple[str, Any, str], float] | None = None) -> None:
        self.data = data
        self.papers = paper or {}

    def stat(self, series: str, x: Any, metric: str) -> Stat | None:
        values = self.data.get((series, x, metric))
        if not values:
            return None
        m, ci = stats.mean_ci95(values)
        return Stat(m, ci, len(values), tuple(values))

    def xs(self, series: str) -> list[Any]:
        return sorted({x for s, x, _ in self.data if s == series})

    def x_name(self, x: Any) -> str:
        return f"{x} flows"

    def paper(self, series: str, x: Any, metric: str) -> float | None:
        return self.papers.get((series, x, metric))


def _rtt(points: dict[int, tuple[list[float], list[float]]]) -> FakeLookup:
    """Original and alpha 1 RTTs per flow count, for "RTT-gain BBR reduces the RTT to around half"."""
    data: dict[tuple[str, Any, str], list[float]] = {}
    for n, (bbr, gain) in points.items():
        data[("bbr", n, quantities.RTT)] = bbr
        data[("rttgain_a1", n, quantities.RTT)] = gain
    return FakeLookup(data)


BASE = [40.0, 41.0, 39.0]
HALF = [20.0, 21.0, 19.0]
SAME = [38.0, 39.0, 40.0]
WIDE = [20.0, 40.0, 30.0]
TINY = [1.0, 1.1, 0.9]
HALVES = claims.Rule(band=(0.4, 0.625))


def _judge(lk: FakeLookup, rule: claims.Rule, quantity: quantities.Quantity = quantities.rttgain_over_original_rtt,
           run_s: float = 60) -> claims.Verdict:
    return claims.combine(claims.decide(e, rule, run_s) for e in quantity(lk))


def test_verdict_outcomes_from_intervals() -> None:
    held = _judge(_rtt({2: (BASE, HALF)}), HALVES)
    assert held.outcome is Outcome.HOLDS
    r = stats.ratio_ci95(HALF, BASE)
    assert held.text == (f"2 flows, alpha 1 / original RTT: ratio {r.ratio:.3g} ± {r.ci95:.2g} "
                         "(95% CI, n = 3 each) inside [0.4, 0.625]")
    failed = _judge(_rtt({2: (BASE, SAME)}), HALVES)
    assert failed.outcome is Outcome.FAILS and "outside [0.4, 0.625]" in failed.text
    # The ratio's interval (about 0.75 ± 0.6) reaches into the band: neither way.
    undecided = _judge(_rtt({2: (BASE, WIDE)}), HALVES)
    assert undecided.outcome is Outcome.UNDECIDED and "straddles an edge of [0.4, 0.625]" in undecided.text
    few = _judge(_rtt({2: (BASE, HALF[:2])}), HALVES)
    assert few.outcome is Outcome.TOO_FEW_RUNS and few.min_n == 2
    assert "not decided: n = 2, needs 3" in few.text
    assert _judge(FakeLookup({}), HALVES).outcome is Outcome.TOO_FEW_RUNS


def test_a_tiny_effect_cannot_hold_at_the_papers_magnitude() -> None:
    """"Around half": an RTT cut to a fortieth is a far larger effect than the paper's, not the same."""
    assert _judge(_rtt({2: (BASE, TINY)}), HALVES).outcome is Outcome.FAILS
    # The rule before margins (below 0.75) let it hold.
    assert _judge(_rtt({2: (BASE, TINY)}), claims.Rule(at_most=0.75)).outcome is Outcome.HOLDS


def test_a_missing_effect_can_fail_a_minimum_effect() -> None:
    """A difference whose interval sits wholly short of the minimum effect does not hold; one that reaches
    it is undecided; one beyond it holds."""
    # The difference of two ratios' interval: with the senders' counts constant, it is Welch's on the drops.
    d, low, high = stats.diff_of_ratios(stats.Moments(3.0, 1.0, 3), stats.Moments(10.0, 0.0, 3),
                                        stats.Moments(2.0, 1.0, 3), stats.Moments(10.0, 0.0, 3))
    assert (d, low, high) == pytest.approx(stats.diff_of_moments(stats.Moments(0.3, 0.1, 3),
                                                                 stats.Moments(0.2, 0.1, 3)))
    sent = [10000.0, 10000.0, 10000.0]

    def sim(acd: list[float], bbr: tuple[float, ...] = (0.22, 0.23, 0.21)) -> claims.Verdict:
        """Drop rates as drops over a constant 10000 packets sent (seed 002's loss)."""
        lk = FakeLookup({("bbr", None, quantities.DROPS): [x * 1e4 for x in bbr], ("bbr", None, quantities.SENT): sent,
                         ("acd_tol1000", None, quantities.DROPS): [x * 1e4 for x in acd],
                         ("acd_tol1000", None, quantities.SENT): sent})
        return _judge(lk, claims.Rule(band=(-48.4, -31)), quantities.sim_drop_diff)
    # Seed 002's simulation: the paper's 3.3% against 42%; ours without the effect.
    none = sim([0.22, 0.24, 0.21])
    assert none.outcome is Outcome.FAILS and "outside [-48.4 points, -31 points]" in none.text
    assert sim([0.01, 0.50, 0.02]).outcome is Outcome.UNDECIDED
    assert sim([0.033, 0.030, 0.036], (0.42, 0.41, 0.43)).outcome is Outcome.HOLDS
    # At least / at most: wholly short fails, reaching the bound is undecided.
    rtt = _rtt({2: (BASE, SAME)})
    assert _judge(rtt, claims.Rule(at_most=0.8)).outcome is Outcome.FAILS
    assert _judge(_rtt({2: (BASE, WIDE)}), claims.Rule(at_most=0.8)).outcome is Outcome.UNDECIDED
    assert _judge(rtt, claims.Rule(at_least=0.8)).outcome is Outcome.HOLDS


def test_a_tie_at_zero_is_undecided() -> None:
    """No retransmission on either side: a difference or ratio of two zeros decides nothing, whatever the
    bound (before margins it "held" as 0 <= 0)."""
    key = "derived.retrans_packets"
    lk = FakeLookup({("bbr", (100, 0), key): [0.0] * 5, ("bbr_acd", (100, 0), key): [0.0] * 5})
    for rule in (claims.Rule(band=(0.4, 0.625)), claims.Rule(at_most=1.0), claims.Rule(at_least=0.0)):
        v = _judge(lk, rule, quantities.QUANTITIES["acd_retrans_small_buffer"])
        assert v.outcome is Outcome.UNDECIDED and "0 on both sides (n = 5 each): nothing to compare" in v.text
    d = claims.diff(lk, "#3", ("bbr_acd", (100, 0), key), ("bbr", (100, 0), key))
    assert isinstance(d, claims.Verdict) and d.outcome is Outcome.UNDECIDED


def test_decisions_relative_to_the_papers_number() -> None:
    """paper_factor: x/÷ f around each point's paper value; startup_over_s widens the upper edge for a
    count of start-up events spread over a shorter run; a point without a paper number decides nothing."""
    key = quantities.RETRANS
    lk = FakeLookup({("rttgain_a0.5", 20, key): [0.002, 0.0021, 0.0019]}, {("rttgain_a0.5", 20, key): 0.1})
    rule = claims.Rule(paper_factor=1.25)
    assert _judge(lk, rule, quantities.rttgain_retrans).outcome is Outcome.FAILS
    # 0.2% is what 0.1% over 87 s becomes over 43.5 s, inside the widened band.
    widened = claims.Rule(paper_factor=1.25, startup_over_s=87)
    assert _judge(lk, widened, quantities.rttgain_retrans, run_s=43.5).outcome is Outcome.HOLDS
    assert _judge(lk, widened, quantities.rttgain_retrans, run_s=87).outcome is Outcome.FAILS
    no_paper = FakeLookup({("rttgain_a0.5", 20, key): [0.002, 0.0021, 0.0019]})
    assert _judge(no_paper, rule, quantities.rttgain_retrans).outcome is Outcome.UNDECIDED
    margin = claims.Rule(paper_margin=5)
    assert margin.bounds(80.0, 30) == (75.0, 85.0)


def test_intervals_keep_to_physical_bounds() -> None:
    """A Jain index of 100 ± 0.03% is inside [95, 100]: the interval is cut at 100%."""
    lk = FakeLookup({("bbr2 + cubic", ("fq_codel", 1), quantities.JAIN): [1.0, 0.9998, 1.0]})
    v = _judge(lk, claims.Rule(band=(95, 100)), quantities.QUANTITIES["fqcodel_jain"])
    assert v.outcome is Outcome.HOLDS and "95% CI cut to [" in v.text


def test_rules_come_from_the_data() -> None:
    assert claims.Rule.from_data({"band": [1, 2]}) == claims.Rule(band=(1.0, 2.0))
    for bad in ({}, {"band": [1, 2], "at_most": 3}, {"band": [2, 1]}, {"at_most": 1, "startup_over_s": 9},
                {"paper_factor": 1}):
        with pytest.raises(ValueError):
            claims.Rule.from_data(bad)
    assert claims.Rule(band=(0.4, 0.625)).describe() == "inside [0.4, 0.625]"
    # Every claim of the catalogue decides by a rule of its data file and says why its margin is what it is.
    specs = papers.specs()
    assert all(c.margin and c.rule.describe() for s in specs for c in s.claims)


def test_moments_from_an_interval_decide_as_the_values_do() -> None:
    """A summary.json's mean, half-width and n give the same ratio and difference intervals as the
    repetitions' values: what rebuilding a report from its summary.json rests on."""
    x, y = [20.0, 21.5, 19.0, 20.2], [40.0, 41.0, 39.0]
    recorded = [Stat(*stats.mean_ci95(v), len(v)) for v in (x, y)]  # type: ignore[misc]
    r, again = stats.ratio_ci95(x, y), stats.ratio_of_moments(recorded[0].moments(), recorded[1].moments())
    assert again.ratio == pytest.approx(r.ratio) and again.ci95 == pytest.approx(r.ci95)
    assert stats.diff_of_moments(recorded[0].moments(), recorded[1].moments()) == pytest.approx(stats.diff_ci95(x, y))


def test_not_testable_comes_before_the_numbers() -> None:
    spec = papers.spec_for("seed000/fig4.12")
    assert spec is not None
    claim = next(c for c in spec.claims if c.check is quantities.rttgain_over_original_rtt)
    lk = _rtt({2: (BASE, HALF)})
    short = claim.judge(lk, claim.needs_s - 0.5)
    assert short.outcome is Outcome.NOT_TESTABLE
    assert short.text.startswith(f"needs {claim.needs_s:g} s after the last flow starts, runs give "
                                 f"{claim.needs_s - 0.5:g} s")
    assert claim.judge(lk, claim.needs_s).outcome is Outcome.HOLDS
    assert "**not testable in this profile** (needs" in claims.verdict_line(claim.text, short)


def test_several_points_combine() -> None:
    def outcome(second: tuple[list[float], list[float]]) -> Outcome:
        return _judge(_rtt({2: (BASE, HALF), 6: second}), HALVES).outcome

    assert outcome((BASE, HALF)) is Outcome.HOLDS
    assert outcome((BASE, SAME)) is Outcome.FAILS
    assert outcome((BASE, WIDE)) is Outcome.UNDECIDED
    assert outcome((BASE, HALF[:1])) is Outcome.TOO_FEW_RUNS
    # A decided failure stands even where another point lacks repetitions.
    assert _judge(_rtt({2: (BASE, SAME), 6: (BASE, HALF[:1])}), HALVES).outcome is Outcome.FAILS


def test_difference_and_single_mean_checks() -> None:
    # Smaller alpha, lower queueing delay: alpha 0.75's RTT - 20 ms over alpha 1's.
    lk = FakeLookup({("bbr", 2, quantities.RTT): BASE, ("rttgain_a1", 2, quantities.RTT): [30.0, 31.0, 29.0],
                     ("rttgain_a0.75", 2, quantities.RTT): [24.0, 25.0, 23.0]})
    order = _judge(lk, claims.Rule(at_most=0.8), quantities.alpha_queueing_ratio)
    assert order.outcome is Outcome.HOLDS and "ratio 0.4 ± " in order.text
    # Original BBR's RTT / 20 ms: 2 ± 0.12 is inside a band of 1.8-2.7, 1 ± 0.12 wholly outside it.
    assert _judge(lk, claims.Rule(band=(1.8, 2.7)), quantities.original_rtt_over_min).outcome is Outcome.HOLDS
    half = FakeLookup({("bbr", 2, quantities.RTT): HALF})
    assert _judge(half, claims.Rule(band=(1.8, 2.7)), quantities.original_rtt_over_min).outcome is Outcome.FAILS


def test_fieller_interval_matches_its_closed_form_and_inverts_its_test() -> None:
    """Fieller's interval (Fieller 1954, independent samples, no covariance) against the closed form as the
    literature writes it, (r -+ (t / m_y) sqrt(v_x (1 - g) + r^2 v_y)) / (1 - g), g = t^2 v_y / m_y^2, and
    against its definition: at each end, x - rho y is exactly t standard errors from 0."""
    x, y = stats.Moments(0.43, 0.30, 3), stats.Moments(1.0, 0.35, 3)
    r = stats.fieller_of_moments(x, y)
    vx, vy = x.sd ** 2 / x.n, y.sd ** 2 / y.n
    assert r.df is not None and r.bounds is not None
    t = float(stats.stats.t.ppf(0.975, r.df))
    g = t * t * vy / y.mean ** 2
    q = x.mean / y.mean
    half = t / y.mean * math.sqrt(vx * (1 - g) + q * q * vy)
    assert r.bounds == pytest.approx(((q - half) / (1 - g), (q + half) / (1 - g)))
    for rho in r.bounds:
        assert abs(x.mean - rho * y.mean) / math.sqrt(vx + rho * rho * vy) == pytest.approx(t)
    # Skewed away from the small denominators: the upper end lies further from the estimate than the lower.
    assert r.bounds[1] - q > q - r.bounds[0]
    # A denominator whose own interval reaches 0: unbounded, no decision.
    assert stats.fieller_of_moments(x, stats.Moments(1.0, 2.0, 3)).bounds is None
    # g far below FIELLER_G: the ratio keeps the delta method, and the two agree closely.
    tight = stats.Moments(100.0, 1.0, 5)
    delta = stats.ratio_of_moments(stats.Moments(50.0, 1.0, 5), tight)
    fieller = stats.fieller_of_moments(stats.Moments(50.0, 1.0, 5), tight)
    assert delta.method == "delta" and delta.bounds is not None and fieller.bounds is not None
    assert delta.bounds == pytest.approx(fieller.bounds, rel=1e-3)
    # A ratio of 0.43 whose reference's CV is large goes to Fieller's. (A review read seed 002 #4 so; there the
    # large CV is the numerator's, BBR's count being precise, g about 0.02, where the two intervals agree.)
    assert stats.ratio_of_moments(x, y).method == "fieller"


def test_a_single_point_experiment_names_only_its_measure() -> None:
    """fig21-long has one point and no x to name: its verdict reads 'Tail Drop, 100 BDP, Jain: mean ...', not
    ': , Tail Drop'."""
    class OnePoint(FakeLookup):
        def x_name(self, x: Any) -> str:
            return ""
    lk = OnePoint({(quantities.FIG21, None, quantities.JAIN): [0.90, 0.91, 0.92]})
    (est,) = quantities.QUANTITIES["taildrop_jain_long"](lk)
    assert est.label == "Tail Drop, 100 BDP, Jain"


def test_a_zero_width_interval_is_not_certainty() -> None:
    """Identical repetitions (a quantised measure) give a zero-width interval: the verdict says so and counts
    as fragile; an edge at the quantity's physical bound (Jain's 100%) is not one a rerun could cross."""
    lk = FakeLookup({("bbr", 2, "total.rtt_ms_mean"): [40.0, 40.0, 40.0]})
    v = _judge(lk, claims.Rule(band=(1.9, 2.5)), quantities.original_rtt_over_min)
    assert v.outcome is Outcome.HOLDS and "zero width" in v.text and v.fragile == "zero-width interval"
    jain = FakeLookup({("bbr2", 5, "total.jain"): [0.9999, 0.9998, 1.0]})
    held = _judge(jain, claims.Rule(band=(95, 100)), quantities.bbr2_rtt_jain)
    assert held.outcome is Outcome.HOLDS and held.fragile == ""
    near = FakeLookup({("bbr2", 5, "total.jain"): [0.962, 0.965, 0.968]})
    assert _judge(near, claims.Rule(band=(95, 100)), quantities.bbr2_rtt_jain).fragile.startswith("0.")


def test_the_second_margin_family() -> None:
    """x/÷ 1.5 for 'about', +- 10 points for shares, stated bounds unchanged, a minimum effect grown with the
    margin, and the data file's own where it writes one."""
    about = claims.Rule.from_data({"band": [0.4, 0.625], "family": "factor"}).widened()
    assert about.band == pytest.approx((0.5 / 1.5, 0.5 * 1.5))
    assert claims.Rule.from_data({"at_most": 0.8, "family": "factor"}).widened().at_most == pytest.approx(1 / 1.5)
    share = claims.Rule.from_data({"band": [55, 65], "family": "points"}).widened()
    assert share.band == (50, 70)
    assert claims.Rule.from_data({"at_least": 5, "family": "points"}).widened().at_least == 10
    assert claims.Rule.from_data({"paper_factor": 1.25}).widened().paper_factor == pytest.approx(1.5)
    assert claims.Rule.from_data({"paper_margin": 5}).widened().paper_margin == 10
    stated = claims.Rule.from_data({"at_least": 85, "family": "stated"})
    assert stated.widened() == stated
    negative = claims.Rule.from_data({"band": [-48.4, -31], "family": "factor"}).widened()
    assert negative.band is not None and negative.band[0] < -48.4 and -31 < negative.band[1] < 0
    own = claims.Rule.from_data({"band": [0.9375, 0.96], "family": "factor", "wide": {"band": [0.925, 0.9667]}})
    assert own.widened().band == (0.925, 0.9667)
    with pytest.raises(ValueError, match="family"):
        claims.Rule.from_data({"band": [1, 2], "family": "loose"})


def test_every_claim_file_claim_names_its_family_and_its_n() -> None:
    """The second family needs each band's or bound's family; the next run needs each claim's n, declared
    before it."""
    for spec in papers.specs():
        for c in spec.claims:
            assert c.rule.family in claims.FAMILIES, (spec.key, c.text)
            assert c.n is not None and c.n >= claims.MIN_N, (spec.key, c.text)


def test_claim_lines_show_scaling_post_hoc_hedges_and_the_second_family() -> None:
    """What the data file says of a claim stands at its verdict."""
    base = papers.spec_for("seed001/fig14-15")
    assert base is not None
    c = papers.Claim("c", quantities.bbr2_rtt_jain, 10, "w", claims.Rule(band=(55, 65), family="points"), "m", 5,
                     post_hoc="margin written on 2026-11-26, after the data", scaled="100 Mbit/s for 1 Gbit/s (x 0.1)",
                     hedge="no run isolates it")
    lk = FakeLookup({("bbr2", 5, "total.jain"): [0.69, 0.70, 0.71]})
    lines, js = report.claim_lines(c, lk, 60)
    text = "\n".join(lines)
    assert "**does not hold**" in lines[0]
    assert "(Second margins, inside [50, 70]: **undecided** (differs: depends on the margin).)" in text
    assert "(Scaled: 100 Mbit/s for 1 Gbit/s (x 0.1).)" in text and "(Post-hoc: margin written" in text
    assert "(Unproven: no run isolates it.)" in text and "(n declared for the next run: 5.)" in text
    assert js["wide"]["verdict"]["outcome"] == "undecided" and js["post_hoc"].startswith("margin")
    untestable = papers.Claim("c", quantities.bbr2_rtt_jain, 10, "w", claims.Rule(band=(55, 65)), "m",
                              untestable="not testable at this scale: why")
    assert untestable.judge(lk, 60).outcome is Outcome.NOT_TESTABLE


def test_table2s_best_count_is_decided_on_rms_differences_with_intervals() -> None:
    """Seed 004 Table 2's 'best at 13 BBR flows': with one queue size per count each RMS error is
    |measured - model|, so the difference's interval is Welch's on the two measured means."""
    def row(n: int, values: list[float], model: float) -> dict[str, Any]:
        m, ci = stats.mean_ci95(values)
        return {"n_bbr": n, "queue_bdp": 4.0, "model": model, "measured": {"mean": m, "ci95": ci, "n": len(values)}}
    five, thirteen = [0.70, 0.72, 0.71], [0.64, 0.65, 0.66]
    rows = [row(5, five, 0.60), row(13, thirteen, 0.60)]
    (est,) = seed004.best_fit_estimates(rows, 13)
    assert isinstance(est.value, claims.Interval)
    d, low, high = stats.diff_ci95(five, thirteen)
    assert est.value.estimate == pytest.approx(d) and est.value.half == pytest.approx((high - low) / 2)
    rule = claims.Rule(at_least=0)
    assert claims.decide(est, rule, 60).outcome is Outcome.HOLDS
    # Five flows nearer the model than thirteen: 13 is not the best.
    (worse,) = seed004.best_fit_estimates([row(5, thirteen, 0.60), row(13, five, 0.60)], 13)
    assert claims.decide(worse, rule, 60).outcome is Outcome.FAILS


def test_a_claim_over_several_points_fails_only_under_holms_correction() -> None:
    """A claim that does not hold when any one point fails is a family of tests: a failure must stand at
    Holm's level (5% / m for the strongest of m points, n - 1 degrees of freedom), and a point the quantity
    lists twice is one test. Holding needs every point to hold (intersection-union: no correction)."""
    rule = claims.Rule(band=(10.0, 20.0))

    def point(label: str, mean: float, half: float) -> claims.Estimate:
        return claims.Estimate(label, claims.Interval("mean", mean, half, "n = 3"))
    barely = point("a", 22.0, 1.5)  # 20.5-23.5: outside at 95%, not at 97.5% (half x 1.44)
    clearly = point("b", 40.0, 1.0)
    inside = point("c", 15.0, 1.0)
    assert claims.decide_all([barely], rule, 30).outcome is Outcome.FAILS
    assert claims.decide_all([barely, barely], rule, 30).outcome is Outcome.FAILS  # one point, once
    v = claims.decide_all([barely, inside], rule, 30)
    assert v.outcome is Outcome.UNDECIDED and "Holm's level over the claim's 2 points" in v.text
    assert claims.decide_all([barely, clearly], rule, 30).outcome is Outcome.FAILS
    assert claims.decide_all([inside, point("d", 12.0, 1.0)], rule, 30).outcome is Outcome.HOLDS


def test_bbrs_equilibrium_at_scenario_3_is_held_to_the_papers_30_s() -> None:
    """Table 2's 'BBR takes about 30 s' (#3) is decided at that size, on BBR's own equilibrium time, not as
    'not at equilibrium 15 s after the last start'."""
    key = "censored.total.convergence_time_s"
    claim = next(c for c in papers.spec_for("seed002/testbed").claims if "BBR reaches equilibrium in" in c.text)
    at_30 = FakeLookup({("bbr", (100, 0), key): [29.0, 30.0, 31.0]}, {("bbr", (100, 0), key): 30.0})
    assert claim.judge(at_30, 76).outcome is Outcome.HOLDS
    at_60 = FakeLookup({("bbr", (100, 0), key): [59.0, 60.0, 61.0]},  # later than 15 s, yet not about 30 s
                       {("bbr", (100, 0), key): 30.0})
    assert claim.judge(at_60, 76).outcome is Outcome.FAILS


def test_a_claim_over_every_buffer_size_says_at_which_it_was_decided() -> None:
    """A claim the paper makes 'at every buffer size' that the standard profile runs at one or two sizes is
    marked so at its verdict (its scaled note), not read as covering the paper's range."""
    claims_ = [c for s in papers.specs() for c in s.claims
               if re.search(r"every buffer|independently of .*buffer size|always above", c.text)]
    assert len(claims_) >= 4
    assert all("decided at" in c.scaled for c in claims_), [c.text for c in claims_ if "decided at" not in c.scaled]


def test_seed004s_headline_compares_the_grids_span_with_the_cubic_counts_effect() -> None:
    """'Queue size and BBR count dominate the share': the span of the share over the grid less the CUBIC
    count's change over the counts run, at least 5 points."""
    def row(n_bbr: int, queue: float, mean: float) -> dict[str, Any]:
        return {"n_bbr": n_bbr, "queue_bdp": queue, "model": 0.5, "status": "3/3",
                "measured": {"mean": mean, "ci95": 0.02, "n": 3}}
    cubic = {"regression": {"slope": -0.01, "slope_ci95": 0.002, "n": 9}, "points": [[1.0, 0.8], [17.0, 0.64]]}
    wide = seed004.headline_claim([row(1, 16, 0.2), row(13, 0.5, 0.8)], cubic)
    assert wide is not None and wide["verdict"]["outcome"] == "holds"  # 0.6 against 0.16
    narrow = seed004.headline_claim([row(1, 16, 0.5), row(13, 0.5, 0.55)], cubic)
    assert narrow is not None and narrow["verdict"]["outcome"] == "does not hold"  # 0.05 against 0.16


def test_table3s_best_tolerance_leads_each_other_in_goodput() -> None:
    """Table 3: 1000 us gives the highest goodput: above 500 us's and 1500 us's, each."""
    key = quantities.GOODPUT
    claim = next(c for c in papers.spec_for("seed002/simulation").claims if "highest of the three" in c.text)
    def lookup(at_1000: list[float]) -> FakeLookup:
        return FakeLookup({("acd_tol1000", None, key): at_1000, ("acd_tol500", None, key): [0.82, 0.821, 0.822],
                           ("acd_tol1500", None, key): [0.85, 0.855, 0.86]})
    assert claim.judge(lookup([0.90, 0.901, 0.902]), 45).outcome is Outcome.HOLDS
    assert claim.judge(lookup([0.83, 0.831, 0.832]), 45).outcome is Outcome.FAILS  # below 1500 us's


def test_fig46s_probe_phase_rtt_is_read_on_the_steady_rtts_peak() -> None:
    """Fig 4.6: the RTT grows in each probe phase to around 30 ms: alpha 1, 2 flows, the steady window's
    95th percentile, x/÷ 1.25 of 30 ms."""
    key = quantities.STEADY_RTT_P95
    claim = next(c for c in papers.spec_for("seed000/fig4.12").claims if "Fig 4.6" in c.text)
    paper = {("rttgain_a1", 2, key): float(papers.spec_for("seed000/fig4.12").paper[("rttgain_a1", 2, key)])}
    assert claim.judge(FakeLookup({("rttgain_a1", 2, key): [29.0, 30.0, 31.0]}, paper), 30).outcome is Outcome.HOLDS
    assert claim.judge(FakeLookup({("rttgain_a1", 2, key): [49.0, 50.0, 51.0]}, paper), 30).outcome is Outcome.FAILS


def test_a_fragile_verdict_names_the_n_that_would_decide_it() -> None:
    """At the recorded spread (sd from the half-width and n), the smallest n whose interval clears the edge
    with 80% power: (t(0.975, n-1) + t(0.8, n-1)) sd / sqrt(n) <= the estimate's distance to the edge."""
    est = claims.Estimate("x", claims.Interval("mean", 10.0, 1.5, "n = 3"))
    v = claims.decide(est, claims.Rule(at_least=8.4), 30)
    # sd 0.604, distance 1.6: n 3 gives 1.87, n 4 gives 1.26.
    assert v.outcome is Outcome.HOLDS and v.fragile.endswith("80% power to decide it again needs n 4 at this spread")
