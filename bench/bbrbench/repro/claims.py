"""The papers' claims, decided on our aggregated results. A claim's data (scenarios/repro/SEED/
EXPERIMENT.paper.toml) names the quantity it is about (a function here: which means, ratios or
differences at which points), the seconds of running its mechanism needs, and its decision: the paper's
magnitude with the margin around it, written before the runs. The numbers live in the data, the
arithmetic here.

The rule, the same for every claim. A quantity is estimated at each point it covers with its 95% interval:
Student's t for a mean, the delta method with Welch's degrees of freedom for a ratio of two means, Welch's
interval for a difference; every mean needs MIN_N repetitions. The decision is one of
  - band [lo, hi]: the paper's magnitude with its margin (equivalence). Holds when the interval lies inside
    the band, does not hold when it lies wholly outside, else undecided;
  - at_least b / at_most b: a minimum effect or a bound the paper states. Holds when the interval lies
    wholly beyond b, does not hold when it lies wholly short of it, else undecided;
  - paper_factor f / paper_margin m: a band of x/÷ f (ratio scales) or +- m (shares of a whole) around the
    paper's own value at each point.
So a missing effect can fail (its interval sits short of the minimum effect) and a tiny one cannot hold.
A comparison of two means that are both exactly 0 (no event on either side) is undecided: there is
nothing to compare. A claim over several points holds when each holds, does not hold when any one
decidedly fails, and is otherwise undecided (or not decided, where a point lacks repetitions)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..analysis.stats import Moments, diff_of_moments, diff_of_ratios, ratio_of_moments

MIN_N = 3


@dataclass(frozen=True)
class Stat:
    """A measure's mean over repetitions, the half-width of its 95% interval (None with n = 1), n and, when
    the runs are at hand, the repetitions' values. Ratios and differences need only the moments, which the
    mean, half-width and n give back exactly: a summary.json is enough to decide."""

    mean: float
    ci95: float | None
    n: int
    values: tuple[float, ...] = ()
    # Repetitions whose event (equilibrium) had not happened when the run ended: their value is the run's
    # length after the last flow started, a lower bound (right-censored), not dropped.
    censored: int = 0

    def text(self, scale: float = 1.0) -> str:
        m = self.mean * scale
        cut = f", {self.censored} censored" if self.censored else ""
        if self.ci95 is None:
            return f"{m:.3g} (n={self.n}{cut})"
        return f"{m:.3g} ± {self.ci95 * scale:.2g} (n={self.n}{cut})"

    def to_json(self) -> dict[str, Any]:
        """With every repetition's value where they are known, so that a report rebuilt from its summary.json
        has them too."""
        known = {"values": list(self.values)} if self.values else {}
        censored = {"censored": self.censored} if self.censored else {}
        return {"mean": self.mean, "ci95": self.ci95, "n": self.n, **known, **censored}

    def moments(self, offset: float = 0.0) -> Moments:
        """Mean (less `offset`), sd and n."""
        m = Moments.of(self.values) if self.values else Moments.from_ci95(self.mean, self.ci95 or 0.0, self.n)
        return Moments(m.mean - offset, m.sd, m.n)

    @property
    def all_zero(self) -> bool:
        return self.mean == 0 and not self.ci95


class Lookup(Protocol):
    """Our aggregated result: a measure at (series, x), None when not measured; the paper's number there
    (in the measure's shown units), None where it gives none or only words."""

    def stat(self, series: str, x: Any, metric: str) -> Stat | None: ...

    def xs(self, series: str) -> list[Any]: ...

    def x_name(self, x: Any) -> str: ...

    def paper(self, series: str, x: Any, metric: str) -> float | None: ...


class Outcome(enum.Enum):
    HOLDS = "holds"
    FAILS = "does not hold"
    UNDECIDED = "undecided"
    NOT_TESTABLE = "not testable"
    TOO_FEW_RUNS = "too few runs"


@dataclass(frozen=True)
class Verdict:
    """An outcome, the intervals (or missing repetitions) that decided it, and for TOO_FEW_RUNS the
    smallest n among the means it needed."""

    outcome: Outcome
    text: str
    min_n: int | None = None
    # A decided outcome (holds, does not hold) that one interval width would move to the edge of its region,
    # or that stands on an interval of zero width (every repetition the same value: the measure's resolution,
    # not certainty): why it is fragile, else "".
    fragile: str = ""

    def to_json(self) -> dict[str, Any]:
        fragile = {"fragile": self.fragile} if self.fragile else {}
        return {"outcome": self.outcome.value, "text": self.text, "min_n": self.min_n, **fragile}


VERDICT_LABELS = {
    Outcome.HOLDS: "**holds** on Linux here",
    Outcome.FAILS: "**does not hold** on Linux here",
    Outcome.UNDECIDED: "**undecided**",
    Outcome.NOT_TESTABLE: "**not testable in this profile**",
    Outcome.TOO_FEW_RUNS: "**not decided**",
}


def verdict_line(claim: str, v: Verdict) -> str:
    """A claim's line in the report: its words, the outcome and the intervals that decided it."""
    head = VERDICT_LABELS[v.outcome]
    if v.outcome is Outcome.NOT_TESTABLE:
        return f"- {claim}: {head} ({v.text})."
    if v.outcome is Outcome.TOO_FEW_RUNS:
        head += f" (n = {v.min_n}, needs {MIN_N})"
    return f"- {claim}: {head}: {v.text}."


def too_short(needs_s: float, why: str, run_s: float) -> Verdict | None:
    """NOT_TESTABLE when the runs go on for less than the claim's mechanism needs after the last flow
    has started (run_s), None when they are long enough."""
    if run_s >= needs_s:
        return None
    return Verdict(Outcome.NOT_TESTABLE, f"needs {needs_s:g} s after the last flow starts, runs give {run_s:g} s "
                                         f"— {why}")


# ---------------------------------------------------------------- estimates


@dataclass(frozen=True)
class Interval:
    """An estimate with the symmetric half-width of its 95% interval; `scale` and `unit` give the units it
    is shown (and decided) in. `limits` are the physical bounds of the quantity in those units (a share
    lies in 0-100%, a time or a ratio of times is not negative): the interval is cut to them, since the true
    value lies inside them whatever Student's t says."""

    what: str
    estimate: float
    half: float
    n: str
    scale: float = 1.0
    unit: str = ""
    limits: tuple[float | None, float | None] = (None, None)
    # Fieller's interval of a ratio (not symmetric): its (low, high), replacing estimate +- half.
    fieller: tuple[float, float] | None = None
    # Every repetition gave the same value: a zero half-width is the measure's resolution, not certainty.
    zero_spread: bool = False

    def _raw(self) -> tuple[float, float]:
        if self.fieller is not None:
            return self.fieller[0] * self.scale, self.fieller[1] * self.scale
        e, h = self.estimate * self.scale, self.half * self.scale
        return e - h, e + h

    @property
    def low(self) -> float:
        low, floor = self._raw()[0], self.limits[0]
        return low if floor is None else max(low, floor)

    @property
    def high(self) -> float:
        high, ceiling = self._raw()[1], self.limits[1]
        return high if ceiling is None else min(high, ceiling)

    def show(self, v: float) -> str:
        """A value in the shown units, with the unit."""
        return f"{v:.3g}{self.unit}"

    def __str__(self) -> str:
        low, high = self._raw()
        cut = (self.limits[0] is not None and low < self.limits[0]) or \
            (self.limits[1] is not None and high > self.limits[1])
        ci = f"95% CI cut to [{self.show(self.low)}, {self.show(self.high)}]" if cut else "95% CI"
        if self.zero_spread:
            ci += " of zero width: every repetition gave the same value, the measure's resolution, not certainty"
        if self.fieller is not None:
            return (f"{self.what} {self.estimate * self.scale:.3g}{self.unit} (Fieller's 95% CI "
                    f"[{self.show(self.low)}, {self.show(self.high)}], the reference's mean being uncertain, {self.n})")
        return (f"{self.what} {self.estimate * self.scale:.3g} ± {self.half * self.scale:.2g}{self.unit} "
                f"({ci}, {self.n})")


@dataclass(frozen=True)
class Estimate:
    """A quantity at one point: its interval, or the verdict that stands in for one (too few runs, not
    measured, undefined); `paper` is the paper's number there, for a decision relative to it."""

    label: str
    value: Interval | Verdict
    paper: float | None = None
    # Outcomes that censored repetitions may have produced (their true values lie beyond the run's end), so
    # that the decision cannot stand on them: such an outcome becomes undecided.
    censored_for: frozenset[Outcome] = frozenset()


# (series, x, metric): one measure at one point.
Key = tuple[str, Any, str]


def _few(label: str, stats: list[Stat | None]) -> Verdict | None:
    if any(s is None for s in stats):
        return Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured", 0)
    n = min(s.n for s in stats if s is not None)
    if n >= MIN_N:
        return None
    return Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not decided: n = {n}, needs {MIN_N}", n)


def _n_text(a: Stat, b: Stat) -> str:
    return f"n = {a.n} each" if a.n == b.n else f"n = {a.n} and {b.n}"


def _tie(label: str, a: Stat, b: Stat) -> Verdict | None:
    """Two means that are both exactly 0: no event on either side, nothing to compare."""
    if a.all_zero and b.all_zero:
        return Verdict(Outcome.UNDECIDED, f"{label}: 0 on both sides ({_n_text(a, b)}): nothing to compare")
    return None


def mean(lk: Lookup, label: str, key: Key, scale: float = 1.0, unit: str = "",
         offset: float = 0.0) -> Interval | Verdict:
    """A measure's mean (less `offset`); every measure here is not negative, and one shown in % is a share
    of a whole."""
    s = lk.stat(*key)
    if (few := _few(label, [s])) is not None or s is None:
        return few or Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured", 0)
    return Interval("mean", s.mean - offset, s.ci95 or 0.0, f"n = {s.n}", scale, unit,
                    (0.0, PCT if unit == "%" else None), zero_spread=s.ci95 == 0)


def ratio(lk: Lookup, label: str, num: Key, den: Key, offset: float = 0.0) -> Interval | Verdict:
    """mean(num) / mean(den), each less `offset` (e.g. the propagation RTT, for queueing delays)."""
    a, b = lk.stat(*num), lk.stat(*den)
    if (few := _few(label, [a, b])) is not None or a is None or b is None:
        return few or Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured", 0)
    if (tie := _tie(label, a, b)) is not None:
        return tie
    r = ratio_of_moments(a.moments(offset), b.moments(offset))
    if r.ratio is None:
        return Verdict(Outcome.UNDECIDED, f"{label}: ratio undefined (reference mean is 0)")
    if r.method == "fieller":
        if r.bounds is None:
            return Verdict(Outcome.UNDECIDED, f"{label}: ratio {r.ratio:.3g}, {r.interval_text()}: any ratio "
                                              f"is possible ({_n_text(a, b)})")
        return Interval("ratio", r.ratio, 0.0, _n_text(a, b), limits=(0.0, None), fieller=r.bounds)
    return Interval("ratio", r.ratio, r.ci95 or 0.0, _n_text(a, b), limits=(0.0, None), zero_spread=r.zero_spread)


def diff(lk: Lookup, label: str, first: Key, second: Key, scale: float = 1.0, unit: str = "") -> Interval | Verdict:
    a, b = lk.stat(*first), lk.stat(*second)
    if (few := _few(label, [a, b])) is not None or a is None or b is None:
        return few or Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured", 0)
    if (tie := _tie(label, a, b)) is not None:
        return tie
    d, low, high = diff_of_moments(a.moments(), b.moments())
    return Interval("difference", d, (high - low) / 2, _n_text(a, b), scale, unit, zero_spread=low == high)


def diff_ratios(lk: Lookup, label: str, first: tuple[Key, Key], second: tuple[Key, Key], scale: float = 1.0,
                unit: str = "") -> Interval | Verdict:
    """mean(first num) / mean(first den) - mean(second num) / mean(second den)."""
    keys = [*first, *second]
    found = [lk.stat(*k) for k in keys]
    if (few := _few(label, found)) is not None:
        return few
    m = [s.moments() for s in found if s is not None]
    if m[1].mean == 0 or m[3].mean == 0:
        return Verdict(Outcome.UNDECIDED, f"{label}: ratio undefined (reference mean is 0)")
    d, low, high = diff_of_ratios(*m)
    n = "n = " + ", ".join(str(s.n) for s in found if s is not None)
    return Interval("difference of ratios", d, (high - low) / 2, n, scale, unit, zero_spread=low == high)


# ---------------------------------------------------------------- the decision


# The margins of the rule (report.RULE): 'about' x/÷ FACTOR, a share +- POINTS; the second family, published
# beside the first so that a reader sees which verdicts depend on the margin: x/÷ WIDE_FACTOR, +- WIDE_POINTS.
FACTOR = 1.25
POINTS = 5.0
WIDE_FACTOR = 1.5
WIDE_POINTS = 10.0
# factor: bounds x/÷ FACTOR around the paper's number (or a change beyond it); points: +- POINTS of a share;
# stated: a bound or range the paper itself states, the same in both families.
FAMILIES = ("factor", "points", "stated")


@dataclass(frozen=True)
class Rule:
    """A claim's decision as its data file writes it, in the units the verdict shows (module docstring).
    `startup_over_s`, with paper_factor: the paper's number counts events of start-up alone spread over this
    many seconds after its last flow started, so over our runs' run_s it lies between the paper's value
    and that value x startup_over_s / run_s."""

    band: tuple[float, float] | None = None
    at_least: float | None = None
    at_most: float | None = None
    paper_factor: float | None = None
    paper_margin: float | None = None
    startup_over_s: float | None = None
    # Which of the margins the bounds come from (FAMILIES), so that the second family can be derived; `wide`
    # where the data file writes it (a margin on a derived quantity, e.g. a cost of 5% decided on a ratio).
    family: str = "stated"
    wide: Rule | None = None

    KEYS = ("band", "at_least", "at_most", "paper_factor", "paper_margin")

    @classmethod
    def from_data(cls, d: dict[str, Any]) -> Rule:
        given = [k for k in cls.KEYS if k in d]
        if len(given) != 1:
            raise ValueError(f"a claim decides by exactly one of {', '.join(cls.KEYS)} (has {given or 'none'})")
        band = d.get("band")
        if band is not None and (len(band) != 2 or band[0] > band[1]):
            raise ValueError(f"band {band}: needs [low, high]")
        if "startup_over_s" in d and "paper_factor" not in d:
            raise ValueError("startup_over_s goes with paper_factor")
        if d.get("paper_factor", 2) <= 1:
            raise ValueError("paper_factor must exceed 1")
        family = d.get("family", "factor" if "paper_factor" in d else "points" if "paper_margin" in d else "stated")
        if family not in FAMILIES:
            raise ValueError(f"family {family!r}: the margin's family is one of {', '.join(FAMILIES)}")
        wide = d.get("wide")
        if wide is not None and (not isinstance(wide, dict) or "wide" in wide):
            raise ValueError("wide: the second family's decision, a table with one of band, at_least, at_most")
        return cls(band=None if band is None else (float(band[0]), float(band[1])),
                   at_least=d.get("at_least"), at_most=d.get("at_most"), paper_factor=d.get("paper_factor"),
                   paper_margin=d.get("paper_margin"), startup_over_s=d.get("startup_over_s"), family=family,
                   wide=None if wide is None else cls.from_data({"family": "stated", **wide}))

    def widened(self) -> Rule:
        """The same claim under the second margin family (x/÷ WIDE_FACTOR for 'about', +- WIDE_POINTS for
        shares): a band around the paper's magnitude widens; a minimum effect ('a change beyond the margin')
        grows with the margin; a bound or range the paper states stays as stated."""
        if self.wide is not None:
            return self.wide
        if self.family == "stated":
            return self
        f = WIDE_FACTOR / FACTOR
        p = WIDE_POINTS - POINTS

        def lower(v: float) -> float:
            return v / f if self.family == "factor" else v - p

        def upper(v: float) -> float:
            return v * f if self.family == "factor" else v + p
        if self.band is not None:
            lo, hi = self.band
            if self.family == "factor" and lo < 0:
                # a negative magnitude (a difference): widen away from 0 on each side
                return replace(self, band=(lo * f, hi / f))
            return replace(self, band=(lower(lo), upper(hi)))
        if self.at_least is not None:
            return replace(self, at_least=upper(self.at_least))
        if self.at_most is not None:
            return replace(self, at_most=lower(self.at_most))
        if self.paper_factor is not None:
            return replace(self, paper_factor=self.paper_factor * f)
        assert self.paper_margin is not None
        return replace(self, paper_margin=self.paper_margin + p)

    def describe(self) -> str:
        """The decision in words, for the report."""
        if self.band is not None:
            return f"inside [{self.band[0]:g}, {self.band[1]:g}]"
        if self.at_least is not None:
            return f"at least {self.at_least:g}"
        if self.at_most is not None:
            return f"at most {self.at_most:g}"
        around = f"x/÷ {self.paper_factor:g}" if self.paper_margin is None else f"+- {self.paper_margin:g}"
        startup = (f", the upper edge x {self.startup_over_s:g} s / the run's seconds after the last start"
                   if self.startup_over_s else "")
        return f"within {around} of the paper's number at each point{startup}"

    def bounds(self, paper: float | None, run_s: float) -> tuple[float | None, float | None] | None:
        """(low, high) of the region where the claim holds, None for an open side; None when the bounds
        come from a paper value there is none of."""
        if self.band is not None:
            return self.band
        if self.paper_factor is None and self.paper_margin is None:
            return self.at_least, self.at_most
        if paper is None:
            return None
        if self.paper_margin is not None:
            return paper - self.paper_margin, paper + self.paper_margin
        assert self.paper_factor is not None
        k = self.startup_over_s / run_s if self.startup_over_s and run_s > 0 else 1.0
        return paper * min(1.0, k) / self.paper_factor, paper * max(1.0, k) * self.paper_factor


def decide(est: Estimate, rule: Rule, run_s: float) -> Verdict:
    """One point's verdict (module docstring); undecided where censored repetitions may have made it."""
    verdict = _decide(est, rule, run_s)
    if verdict.outcome in est.censored_for:
        return Verdict(Outcome.UNDECIDED, f"{verdict.text}, but censored repetitions (the run ended first) could "
                                          f"have made that '{verdict.outcome.value}'")
    return verdict


def _decide(est: Estimate, rule: Rule, run_s: float) -> Verdict:
    verdict = _decide_interval(est, rule, run_s)
    if isinstance(est.value, Verdict) or verdict.outcome not in (Outcome.HOLDS, Outcome.FAILS):
        return verdict
    return replace(verdict, fragile=_fragility(est.value, rule.bounds(est.paper, run_s) or (None, None),
                                               verdict.outcome))


def _fragility(iv: Interval, bounds: tuple[float | None, float | None], outcome: Outcome) -> str:
    """Why a decided outcome is fragile: it stands on a zero-width interval, or the interval lies within one
    of its own widths of the edge that decided it (a rerun at the same n could well land across it)."""
    if iv.zero_spread:
        return "zero-width interval"
    lo, hi = bounds
    # An edge at or beyond the quantity's physical bound (a Jain index's 100%) is one no rerun can cross.
    floor, ceiling = iv.limits
    lo = None if lo is not None and floor is not None and lo <= floor else lo
    hi = None if hi is not None and ceiling is not None and hi >= ceiling else hi
    width = iv.high - iv.low
    if outcome is Outcome.HOLDS:
        gaps = [g for g in ((iv.low - lo) if lo is not None else None, (hi - iv.high) if hi is not None else None)
                if g is not None]
    else:
        gaps = [g for g in ((lo - iv.high) if lo is not None and iv.high < lo else None,
                            (iv.low - hi) if hi is not None and iv.low > hi else None) if g is not None]
    gap = min(gaps, default=float("inf"))
    return f"{gap:.3g} from the edge, interval width {width:.3g}" if gap < width else ""


def _decide_interval(est: Estimate, rule: Rule, run_s: float) -> Verdict:
    if isinstance(est.value, Verdict):
        return est.value
    iv = est.value
    bounds = rule.bounds(est.paper, run_s)
    if bounds is None:
        return Verdict(Outcome.UNDECIDED, f"{est.label}: {iv}; the paper gives no number here")
    lo, hi = bounds
    if lo is not None and hi is not None:
        span = f"[{iv.show(lo)}, {iv.show(hi)}]"
        if lo <= iv.low and iv.high <= hi:
            return Verdict(Outcome.HOLDS, f"{est.label}: {iv} inside {span}")
        if iv.high < lo or iv.low > hi:
            return Verdict(Outcome.FAILS, f"{est.label}: {iv} outside {span}")
        return Verdict(Outcome.UNDECIDED, f"{est.label}: {iv} straddles an edge of {span}")
    if lo is not None:
        if iv.low >= lo:
            return Verdict(Outcome.HOLDS, f"{est.label}: {iv} >= {iv.show(lo)}")
        if iv.high < lo:
            return Verdict(Outcome.FAILS, f"{est.label}: {iv} < {iv.show(lo)}")
        return Verdict(Outcome.UNDECIDED, f"{est.label}: {iv} straddles {iv.show(lo)}")
    assert hi is not None
    if iv.high <= hi:
        return Verdict(Outcome.HOLDS, f"{est.label}: {iv} <= {iv.show(hi)}")
    if iv.low > hi:
        return Verdict(Outcome.FAILS, f"{est.label}: {iv} > {iv.show(hi)}")
    return Verdict(Outcome.UNDECIDED, f"{est.label}: {iv} straddles {iv.show(hi)}")


def combine(verdicts: Iterable[Verdict]) -> Verdict:
    """Several points or conditions: holds if all hold, does not hold if any decidedly fails, else not
    decided (a point lacks repetitions) or undecided."""
    vs = list(verdicts)
    if not vs:
        return Verdict(Outcome.TOO_FEW_RUNS, f"no runs: n = 0, needs {MIN_N}", 0)
    outcomes = {v.outcome for v in vs}
    overall = next((o for o in (Outcome.FAILS, Outcome.TOO_FEW_RUNS, Outcome.UNDECIDED) if o in outcomes),
                   Outcome.HOLDS)
    ns = [v.min_n for v in vs if v.min_n is not None]
    # Holds is fragile if any point's is; does not hold only if every point that fails is (one firm failure
    # suffices).
    deciding = [v for v in vs if v.outcome is overall]
    fragile = ""
    if overall is Outcome.HOLDS:
        fragile = next((v.fragile for v in vs if v.fragile), "")
    elif overall is Outcome.FAILS and all(v.fragile for v in deciding):
        fragile = deciding[0].fragile
    return Verdict(overall, "; ".join(v.text for v in vs),
                   min(ns) if overall is Outcome.TOO_FEW_RUNS and ns else None, fragile)


# ---------------------------------------------------------------- the quantities

Quantity = Callable[[Lookup], list[Estimate]]

RTT = "total.rtt_ms_mean"
GOODPUT = "total.goodput_mbps"
STEADY_GOODPUT = "steady.goodput_mbps"
RETRANS = "total.retrans_rate"
STEADY_RETRANS = "steady.retrans_rate"
UTIL = "total.utilisation"
JAIN = "total.jain"
PCT = 100.0
# Seed 000's path: 20 ms propagation RTT.
SEED000_RTT_MIN_MS = 20.0
# Seed 000's small buffer: 0.8 BDP holds 16 ms of queueing at any rate (Fig 4.4, p. 24: 20 + 16 = 36 ms).
SEED000_SMALL_BUFFER_MS = 16.0


def _each_mean(lk: Lookup, series: str, metric: str, what: str, scale: float = 1.0, unit: str = "",
               where: Callable[[Any], bool] = lambda x: True, paper_metric: str | None = None,
               offset: float = 0.0) -> list[Estimate]:
    """The mean of `metric` (less `offset`) at each of the series' points that `where` accepts, with the
    paper's number for `paper_metric` (default the same metric) there."""
    out = []
    for x in (x for x in lk.xs(series) if where(x)):
        # An experiment of one point (fig21-long) has no x to name.
        label = ", ".join(part for part in (lk.x_name(x), what) if part)
        out.append(Estimate(label, mean(lk, label, (series, x, metric), scale, unit, offset),
                            lk.paper(series, x, paper_metric or metric)))
    return out


# seed 000


def original_rtt_over_min(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr", RTT, "original RTT / RTT_min", 1 / SEED000_RTT_MIN_MS)


def rttgain_over_original_rtt(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{n} flows, alpha 1 / original RTT", ratio(
        lk, f"{n} flows", ("rttgain_a1", n, RTT), ("bbr", n, RTT))) for n in lk.xs("bbr")]


def alpha_queueing_ratio(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{n} flows, alpha 0.75 / alpha 1 queueing delay (RTT - 20 ms)", ratio(
        lk, f"{n} flows", ("rttgain_a0.75", n, RTT), ("rttgain_a1", n, RTT), SEED000_RTT_MIN_MS))
        for n in lk.xs("rttgain_a1")]


def original_goodput(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr", GOODPUT, "original goodput", unit=" Mbit/s")


def alpha_goodput_ratio(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{n} flows, alpha 0.75 / original goodput, steady state", ratio(
        lk, f"{n} flows", ("rttgain_a0.75", n, STEADY_GOODPUT), ("bbr", n, STEADY_GOODPUT))) for n in lk.xs("bbr")]


def original_retrans(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr", STEADY_RETRANS, "original retransmissions, steady state", PCT, "%",
                      paper_metric=RETRANS)


def rttgain_retrans(lk: Lookup) -> list[Estimate]:
    return [e for s in ("rttgain_a0.75", "rttgain_a0.5")
            for e in _each_mean(lk, s, RETRANS, f"{s} retransmissions, whole run", PCT, "%")]


def rttgain_steady_retrans(lk: Lookup) -> list[Estimate]:
    return [e for s in ("rttgain_a0.75", "rttgain_a0.5")
            for e in _each_mean(lk, s, STEADY_RETRANS, f"{s} retransmissions after start-up", PCT, "%")]


def original_small_buffer_queue(lk: Lookup) -> list[Estimate]:
    """Fig 4.4: original BBR's mean queueing delay (RTT - 20 ms) over the 0.8 BDP buffer's 16 ms."""
    return _each_mean(lk, "bbr", RTT, "original queueing delay / the buffer's 16 ms",
                      1 / SEED000_SMALL_BUFFER_MS, where=lambda x: x == 20, offset=SEED000_RTT_MIN_MS)


def rttgain_rtt_over_min_60ms(lk: Lookup) -> list[Estimate]:
    """Fig 4.7: alpha 1's RTT over a 60 ms RTT_min (Table 3.2's point)."""
    return _each_mean(lk, "rttgain_a1", RTT, "alpha 1 RTT / RTT_min (60 ms)", 1 / 60,
                      where=lambda x: x == (60, None, None))


def rttgain_rtt_200_over_20_mbit(lk: Lookup) -> list[Estimate]:
    """Fig 4.8: alpha 1's RTT at 200 Mbit/s (Table 3.2) over the same at 20 Mbit/s (Fig 4.12's 2 flows)."""
    return [Estimate("2 flows, alpha 1 RTT at 200 / at 20 Mbit/s", ratio(
        lk, "200 vs 20 Mbit/s", ("rttgain_a1", (None, 200, None), RTT), ("rttgain_a1", 2, RTT)))]


def alpha_cost_falls_with_flows(lk: Lookup) -> list[Estimate]:
    """L624: alpha 0.75's steady goodput over original's, 6 flows less 2 flows (positive: a smaller cost)."""
    six = (("rttgain_a0.75", 6, STEADY_GOODPUT), ("bbr", 6, STEADY_GOODPUT))
    two = (("rttgain_a0.75", 2, STEADY_GOODPUT), ("bbr", 2, STEADY_GOODPUT))
    return [Estimate("alpha 0.75 / original goodput, 6 flows - 2 flows", diff_ratios(
        lk, "6 vs 2 flows", six, two, PCT, " points"))]


def rttgain_queue_grows_with_flows(lk: Lookup) -> list[Estimate]:
    """L624: alpha 1's queueing delay (RTT - 20 ms) with 6 flows over 2."""
    return [Estimate("alpha 1 queueing delay (RTT - 20 ms), 6 / 2 flows", ratio(
        lk, "6 vs 2 flows", ("rttgain_a1", 6, RTT), ("rttgain_a1", 2, RTT), SEED000_RTT_MIN_MS))]


# seed 001


def _retrans_vs_paper(series: tuple[str, ...]) -> Quantity:
    """Each steady-state retransmission rate of the series where the paper gives a number."""
    return lambda lk: [e for s in series for e in _each_mean(
        lk, s, STEADY_RETRANS, f"{s} retransmissions, steady state", PCT, "%", paper_metric=RETRANS)
        if e.paper is not None]


def single_flow_retrans(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr2", "cubic")
            for e in _each_mean(lk, s, STEADY_RETRANS, f"{s} retransmissions, steady state", PCT, "%",
                                where=lambda x: x == 1)]


def bbr2_over_bbr1_retrans(lk: Lookup) -> list[Estimate]:
    return [Estimate("10 flows, bbr2 / bbr1 retransmissions, steady state", ratio(
        lk, "10 flows", ("bbr2", 10, STEADY_RETRANS), ("bbr1", 10, STEADY_RETRANS)))]


def _flows(n: int) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, tuple) and x[0] == n


def bbr_rtt_10_flows(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2") for e in _each_mean(lk, s, RTT, f"{s} RTT", unit=" ms", where=_flows(10))]


def bbr_rtt_2_flows(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2") for e in _each_mean(lk, s, RTT, f"{s} RTT", unit=" ms", where=_flows(2))]


def cubic_rtt_2_flows_10_bdp(lk: Lookup) -> list[Estimate]:
    return [Estimate("2 flows, 10 BDP, cubic RTT", mean(lk, "2 flows, 10 BDP", ("cubic", (2, 10), RTT), unit=" ms"))]


def cubic_rtt_10_over_2_flows(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{b} BDP, cubic RTT 10 / 2 flows", ratio(lk, f"{b} BDP", ("cubic", (10, b), RTT),
                                                              ("cubic", (2, b), RTT)))
            for b in sorted({x[1] for x in lk.xs("cubic") if isinstance(x, tuple)})]


def _at(buffer: float, loss: float | None = None) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, tuple) and x[0] == buffer and (loss is None or x[1] == loss)


def util_vs_paper_small_buffer(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2")
            for e in _each_mean(lk, s, UTIL, f"{s} utilisation", PCT, "%", where=lambda x: x[0] == 0.1)
            if e.paper is not None]


def bbr2_util_1pct(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", UTIL, "bbr2 utilisation", PCT, "%", where=_at(1, 1))


def bbr2_util_10pct(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", UTIL, "bbr2 utilisation", PCT, "%", where=_at(1, 10))


def bbr1_over_bbr2_util(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, bbr1 - bbr2 utilisation", diff(
        lk, lk.x_name(x), ("bbr1", x, UTIL), ("bbr2", x, UTIL), PCT, " points"))
        for x in lk.xs("bbr1") if isinstance(x, tuple) and x[0] == 1 and x[1] > 0.1]


def bbr_over_cubic_util(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, {s} - cubic utilisation", diff(
        lk, lk.x_name(x), (s, x, UTIL), ("cubic", x, UTIL), PCT, " points"))
        for s in ("bbr1", "bbr2") for x in lk.xs(s) if isinstance(x, tuple) and x[0] == 1 and x[1] <= 1]


def bbr1_share_below_1_bdp(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, bbr1 share", mean(lk, lk.x_name(x), ("", x, "algo.bbr1.share"), PCT, "%"))
            for x in lk.xs("") if x[1:] == (None, None, None) and x[0] < 1]


def bbr1_share_above_1_bdp(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, bbr1 share", mean(lk, lk.x_name(x), ("", x, "algo.bbr1.share"), PCT, "%"))
            for x in lk.xs("") if x[1:] == (None, None, None) and x[0] > 1]


def bbr2_jain_100_bdp(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", JAIN, "bbr2 + cubic Jain", PCT, "%", where=lambda x: x == (100, None, None, None))


def bbr1_rtt50_share(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr1", "derived.share.rtt50", "50 ms flow's share", PCT, "%", where=lambda b: b >= 3)


def bbr1_rtt_jain(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr1", JAIN, "bbr1 Jain", PCT, "%", where=lambda b: b >= 3)


def bbr2_rtt_jain(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", JAIN, "bbr2 Jain", PCT, "%")


def fqcodel_rtt_jain(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2")
            for e in _each_mean(lk, s, JAIN, f"{s} Jain", PCT, "%", where=lambda x: x[0] == "fq_codel")]


def fqcodel_retrans_ratio(lk: Lookup) -> list[Estimate]:
    # Below 1 BDP, where the paper (Fig 15a) finds Tail Drop's BBRv1 retransmissions high; at larger buffers
    # Tail Drop retransmits nothing here and there is nothing to reduce.
    return [Estimate(f"{b} BDP, bbr1 retransmissions FQ-CoDel / Tail Drop", ratio(
        lk, f"{b} BDP", ("bbr1", ("fq_codel", b), RETRANS), ("bbr1", ("fifo", b), RETRANS)))
        for aqm, b in lk.xs("bbr1") if aqm == "fq_codel" and b < 1]


def taildrop_bbr1_jain_below_1_bdp(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr1", JAIN, "bbr1 Jain, Tail Drop", PCT, "%", where=lambda x: x[0] == "fifo" and x[1] < 1)


def fqcodel_retrans_change_large_buffer(lk: Lookup) -> list[Estimate]:
    """FQ-CoDel's bbr1 retransmission rate less Tail Drop's at 1 BDP and above, in points: where Tail Drop
    retransmits nothing there is no ratio, but a rise still decides against a reduction."""
    return [Estimate(f"{b} BDP, bbr1 retransmissions FQ-CoDel - Tail Drop", diff(
        lk, f"{b} BDP", ("bbr1", ("fq_codel", b), RETRANS), ("bbr1", ("fifo", b), RETRANS), PCT, " points"))
        for aqm, b in lk.xs("bbr1") if aqm == "fq_codel" and b >= 1]


def taildrop_bbr1_over_bbr2_retrans(lk: Lookup) -> list[Estimate]:
    """Fig 15(a): BBRv1's Tail Drop retransmissions below 1 BDP over BBRv2's there."""
    return [Estimate(f"{b} BDP, Tail Drop, bbr1 / bbr2 retransmissions", ratio(
        lk, f"{b} BDP", ("bbr1", ("fifo", b), RETRANS), ("bbr2", ("fifo", b), RETRANS)))
        for aqm, b in lk.xs("bbr1") if aqm == "fifo" and b < 1]


def bbr2_retrans_low_everywhere(lk: Lookup) -> list[Estimate]:
    """Fig 15(a, b): BBRv2's retransmissions at every AQM and buffer over BBRv1's with Tail Drop below 1 BDP
    (the rate the paper calls high)."""
    high = [x for x in lk.xs("bbr1") if x[0] == "fifo" and x[1] < 1]
    return [Estimate(f"{lk.x_name(x)}, bbr2 / bbr1 (Tail Drop, {h[1]} BDP) retransmissions", ratio(
        lk, lk.x_name(x), ("bbr2", x, RETRANS), ("bbr1", h, RETRANS))) for h in high for x in lk.xs("bbr2")]


def bbr2_over_bbr1_retrans_1_bdp(lk: Lookup) -> list[Estimate]:
    """Fig 10(d): BBRv2's retransmission rate over BBRv1's at 1 BDP, at each loss rate."""
    return [Estimate(f"{lk.x_name(x)}, bbr2 / bbr1 retransmissions", ratio(
        lk, lk.x_name(x), ("bbr2", x, RETRANS), ("bbr1", x, RETRANS))) for x in lk.xs("bbr1") if x[0] == 1]


def bbr2_over_bbr1_cubic_jain(lk: Lookup) -> list[Estimate]:
    """Finding 5: Jain's index of one bbr2 and one cubic flow (fig11-bbrv2) less that of one bbr1 and one
    cubic flow (fig11-12, series ''), at each buffer both ran."""
    return [Estimate(f"{lk.x_name(x)}, Jain bbr2 + cubic - bbr1 + cubic", diff(
        lk, lk.x_name(x), ("bbr2", x, JAIN), ("", x, JAIN), PCT, " points"))
        for x in lk.xs("bbr2") if x in lk.xs("")]


def _fct_ratio(where: Callable[[float], bool]) -> Quantity:
    return lambda lk: [Estimate(f"{b} BDP, cubic / {s} mean FCT", ratio(
        lk, f"{b} BDP", ("cubic", b, "total.fct_mean_s"), (s, b, "total.fct_mean_s")))
        for s in ("bbr1", "bbr2") for b in lk.xs(s) if where(b)]


FIG21 = "bbr2 + cubic"


def _fig21_jain(aqm: str, where: Callable[[float], bool] = lambda b: True) -> Quantity:
    return lambda lk: _each_mean(lk, FIG21, JAIN, "Jain", PCT, "%",
                                 where=lambda x: x[0] == aqm and where(x[1]))


# seed 002

ACD_RETRANS = "derived.retrans_packets"
DROPS = "total.queue_drops"
SENT = "derived.sent_packets"


def _acd_ratio(metric: str, what: str, where: Callable[[Any], bool]) -> Quantity:
    return lambda lk: [Estimate(f"{lk.x_name(x)}, bbr_acd / bbr {what}", ratio(
        lk, lk.x_name(x), ("bbr_acd", x, metric), ("bbr", x, metric))) for x in lk.xs("bbr") if where(x)]


def acd_equilibrium(lk: Lookup) -> list[Estimate]:
    """A repetition that never reaches equilibrium counts at the run's end (a lower bound): where BBR-ACD's
    are censored, its true times are longer, so a 'holds' cannot stand on them; where BBR's are, a 'does
    not hold' cannot."""
    key = "censored.total.convergence_time_s"
    found = []
    for x in lk.xs("bbr"):
        acd, bbr = lk.stat("bbr_acd", x, key), lk.stat("bbr", x, key)
        doubtful = ({Outcome.HOLDS} if acd and acd.censored else set()) | \
                   ({Outcome.FAILS} if bbr and bbr.censored else set())
        found.append(Estimate(f"{lk.x_name(x)}, bbr_acd - bbr equilibrium time", diff(
            lk, lk.x_name(x), ("bbr_acd", x, key), ("bbr", x, key), unit=" s"), censored_for=frozenset(doubtful)))
    return found


def sim_drop_diff(lk: Lookup) -> list[Estimate]:
    """The bottleneck's drops over the packets sent, BBR-ACD (1000 us) less BBR, in points."""
    return [Estimate("acd (1000 us) - bbr bottleneck drops / sent packets", diff_ratios(
        lk, "drops", (("acd_tol1000", None, DROPS), ("acd_tol1000", None, SENT)),
        (("bbr", None, DROPS), ("bbr", None, SENT)), PCT, " points"))]


def sim_goodput_diff(lk: Lookup) -> list[Estimate]:
    return [Estimate("acd (1000 us) - bbr goodput", diff(
        lk, "goodput", ("acd_tol1000", None, GOODPUT), ("bbr", None, GOODPUT), unit=" Mbit/s"))]


def tolerance_ratios(lk: Lookup) -> list[Estimate]:
    """Retransmitted packets at each larger tolerance over the next smaller one, beside the paper's ratio
    (Table 3's counts)."""
    out = []
    for a, b in ((1000, 500), (1500, 1000)):
        num, den = (f"acd_tol{a}", None, ACD_RETRANS), (f"acd_tol{b}", None, ACD_RETRANS)
        pa, pb = lk.paper(*num), lk.paper(*den)
        out.append(Estimate(f"{a} / {b} us retransmitted packets", ratio(lk, f"{a} vs {b} us", num, den),
                            pa / pb if pa is not None and pb else None))
    return out


QUANTITIES: dict[str, Quantity] = {
    "original_rtt_over_min": original_rtt_over_min,
    "rttgain_over_original_rtt": rttgain_over_original_rtt,
    "alpha_queueing_ratio": alpha_queueing_ratio,
    "original_goodput": original_goodput,
    "alpha_goodput_ratio": alpha_goodput_ratio,
    "original_retrans": original_retrans,
    "rttgain_retrans": rttgain_retrans,
    "rttgain_steady_retrans": rttgain_steady_retrans,
    "bbr1_retrans": _retrans_vs_paper(("bbr1",)),
    "ten_flow_retrans": _retrans_vs_paper(("bbr2", "cubic")),
    "single_flow_retrans": single_flow_retrans,
    "bbr2_over_bbr1_retrans": bbr2_over_bbr1_retrans,
    "bbr_rtt_10_flows": bbr_rtt_10_flows,
    "bbr_rtt_2_flows": bbr_rtt_2_flows,
    "cubic_rtt_2_flows_10_bdp": cubic_rtt_2_flows_10_bdp,
    "cubic_rtt_10_over_2_flows": cubic_rtt_10_over_2_flows,
    "util_vs_paper_small_buffer": util_vs_paper_small_buffer,
    "bbr2_util_1pct": bbr2_util_1pct,
    "bbr2_util_10pct": bbr2_util_10pct,
    "bbr1_over_bbr2_util": bbr1_over_bbr2_util,
    "bbr_over_cubic_util": bbr_over_cubic_util,
    "bbr1_share_below_1_bdp": bbr1_share_below_1_bdp,
    "bbr1_share_above_1_bdp": bbr1_share_above_1_bdp,
    "bbr2_jain_100_bdp": bbr2_jain_100_bdp,
    "bbr1_rtt50_share": bbr1_rtt50_share,
    "bbr1_rtt_jain": bbr1_rtt_jain,
    "bbr2_rtt_jain": bbr2_rtt_jain,
    "fqcodel_rtt_jain": fqcodel_rtt_jain,
    "fqcodel_retrans_ratio": fqcodel_retrans_ratio,
    "original_small_buffer_queue": original_small_buffer_queue,
    "rttgain_rtt_over_min_60ms": rttgain_rtt_over_min_60ms,
    "rttgain_rtt_200_over_20_mbit": rttgain_rtt_200_over_20_mbit,
    "alpha_cost_falls_with_flows": alpha_cost_falls_with_flows,
    "rttgain_queue_grows_with_flows": rttgain_queue_grows_with_flows,
    "taildrop_bbr1_jain_below_1_bdp": taildrop_bbr1_jain_below_1_bdp,
    "fqcodel_retrans_change_large_buffer": fqcodel_retrans_change_large_buffer,
    "taildrop_bbr1_over_bbr2_retrans": taildrop_bbr1_over_bbr2_retrans,
    "bbr2_retrans_low_everywhere": bbr2_retrans_low_everywhere,
    "bbr2_over_bbr1_retrans_1_bdp": bbr2_over_bbr1_retrans_1_bdp,
    "bbr2_over_bbr1_cubic_jain": bbr2_over_bbr1_cubic_jain,
    "cubic_fct_small_buffer": _fct_ratio(lambda b: b < 0.2),
    "fct_large_buffer": _fct_ratio(lambda b: b >= 0.2),
    "taildrop_large_jain": _fig21_jain("fifo", lambda b: b >= 100),
    "taildrop_jain_long": lambda lk: _each_mean(lk, FIG21, JAIN, "Tail Drop, 100 BDP, Jain", PCT, "%"),
    "taildrop_mid_jain": _fig21_jain("fifo", lambda b: 0.5 <= b <= 10),
    "fqcodel_jain": _fig21_jain("fq_codel"),
    "cake_jain": _fig21_jain("cake"),
    "acd_retrans_small_buffer": _acd_ratio(ACD_RETRANS, "retransmitted packets", lambda x: x[0] == 100),
    "acd_retrans_random_loss": _acd_ratio(ACD_RETRANS, "retransmitted packets", lambda x: x == (100000, 0.1)),
    "acd_goodput": _acd_ratio(GOODPUT, "goodput", lambda x: True),
    "acd_equilibrium": acd_equilibrium,
    "sim_drop_diff": sim_drop_diff,
    "sim_goodput_diff": sim_goodput_diff,
    "tolerance_ratios": tolerance_ratios,
}
