"""The papers' claims, decided on our aggregated results. A claim's data (scenarios/repro/SEED/
EXPERIMENT.paper.toml) names the quantity it is about (a function of quantities.py: which means, ratios
or differences at which points), the seconds of running its mechanism needs, and its decision: the paper's
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
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from scipy import stats

from ..analysis.stats import Moments, diff_of_moments, diff_of_ratios, ratio_of_moments

MIN_N = 3
# The family-wise error rate of a claim over several points: the 95% of each single verdict.
FAMILY_ALPHA = 0.05
# A share of a whole in %: its physical upper bound.
PCT = 100.0


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
    # The point's runs the trust check failed, left out of n (with n = 0, every run: no value to show), and the
    # checks they failed (analysis/trust.py's check_of), so that too few runs says why.
    untrusted: int = 0
    failed_checks: tuple[str, ...] = ()
    # Repetitions in n whose only failed trust check was the late share, used for this measure alone because
    # their late share is within its own limit (analysis/trust.py's LATE_SHARE_LIMIT_BY_MEASURE), and that limit.
    late_reps: tuple[int, ...] = ()
    late_limit: float | None = None

    def text(self, scale: float = 1.0) -> str:
        m = self.mean * scale
        cut = f", {self.censored} censored" if self.censored else ""
        cut += f", {len(self.late_reps)} under its lateness limit" if self.late_reps else ""
        if self.ci95 is None:
            return f"{m:.3g} (n={self.n}{cut})"
        return f"{m:.3g} ± {self.ci95 * scale:.2g} (n={self.n}{cut})"

    def to_json(self) -> dict[str, Any]:
        """With every repetition's value where they are known and the repetitions used under the measure's own
        lateness limit, so that a report rebuilt from its summary.json has them too."""
        known = {"values": list(self.values)} if self.values else {}
        censored = {"censored": self.censored} if self.censored else {}
        late = {"late_reps": list(self.late_reps), "late_limit": self.late_limit} if self.late_reps else {}
        return {"mean": self.mean, "ci95": self.ci95, "n": self.n, **known, **censored, **late}

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
    # A bound the set-up meets for any algorithm (its data file says why): it holds, but shows nothing, so it
    # is not counted with the claims that hold.
    CANNOT_FAIL = "cannot fail"


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
    Outcome.CANNOT_FAIL: "**cannot fail** here (holds, but the set-up meets it for any algorithm)",
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


def _failed_checks(s: Stat) -> str:
    return f"the trust check ({'; '.join(s.failed_checks)})" if s.failed_checks else "the trust check"


def _few(label: str, stats: list[Stat | None]) -> Verdict | None:
    """Too few runs, and why: none recorded, every run failed the trust check (and which check), some did and
    too few are left, or fewer runs were made."""
    if any(s is None for s in stats):
        return Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured", 0)
    known = [s for s in stats if s is not None]
    if none_left := [s for s in known if s.n == 0 and s.untrusted]:
        s = max(none_left, key=lambda s: s.untrusted)
        return Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured: every run ({s.untrusted}) failed "
                                             f"{_failed_checks(s)}", 0)
    fewest = min(known, key=lambda s: s.n)
    if fewest.n >= MIN_N:
        return None
    why = (f"{fewest.untrusted} more run(s) failed {_failed_checks(fewest)}" if fewest.untrusted
           else "fewer runs were made")
    return Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not decided: n = {fewest.n}, needs {MIN_N}: {why}", fewest.n)


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
    if gap >= width:
        return ""
    return f"{gap:.3g} from the edge, interval width {width:.3g}{_n_to_decide(iv, gap + width / 2)}"


# The power a declared n is to have to decide a fragile verdict again at the spread recorded.
POWER = 0.8
# Beyond this many repetitions the answer is "more than the machine's budget".
MAX_REPS = 100


def _n_to_decide(iv: Interval, distance: float) -> str:
    """The repetitions at which the verdict's 95% interval, at the spread the runs showed, would clear the edge
    `distance` (shown units) from its estimate with POWER 80%: the smallest n with
    (t(0.975, n-1) + t(0.8, n-1)) * sd / sqrt(n) <= distance, sd from the recorded half-width and n."""
    found = re.search(r"n = (\d+)", iv.n)
    if found is None or distance <= 0:
        return ""
    n0 = int(found.group(1))
    sd = (iv.high - iv.low) / 2 * n0 ** 0.5 / float(stats.t.ppf(1 - FAMILY_ALPHA / 2, n0 - 1))
    for n in range(MIN_N, MAX_REPS + 1):
        if (stats.t.ppf(1 - FAMILY_ALPHA / 2, n - 1) + stats.t.ppf(POWER, n - 1)) * sd / n ** 0.5 <= distance:
            return f"; 80% power to decide it again needs n {n} at this spread"
    return f"; more than {MAX_REPS} repetitions would be needed at this spread"


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


def _at_level(iv: Interval, alpha: float) -> Interval:
    """The interval at confidence 1 - alpha instead of 95%, by the ratio of Student's t quantiles at n - 1
    degrees of freedom: the fewest a mean, ratio or difference of n repetitions each has, so the widening
    is at least the exact one (conservative)."""
    found = re.search(r"n = (\d+)", iv.n)
    df = max((int(found.group(1)) if found else MIN_N) - 1, 1)
    w = float(stats.t.ppf(1 - alpha / 2, df) / stats.t.ppf(1 - FAMILY_ALPHA / 2, df))
    fieller = None if iv.fieller is None else (iv.estimate - (iv.estimate - iv.fieller[0]) * w,
                                                iv.estimate + (iv.fieller[1] - iv.estimate) * w)
    return replace(iv, half=iv.half * w, fieller=fieller)


def _failure_strength(iv: Interval, bounds: tuple[float | None, float | None]) -> float:
    """How far a failing interval lies beyond the edge it misses, in its own widths: Holm's order (the
    strongest failure, the smallest p-value, first)."""
    lo, hi = bounds
    gap = max((lo - iv.high) if lo is not None else 0.0, (iv.low - hi) if hi is not None else 0.0)
    width = iv.high - iv.low
    return gap / width if width > 0 else float("inf")


def decide_all(estimates: Iterable[Estimate], rule: Rule, run_s: float) -> Verdict:
    """A claim over several points. Each distinct point counts once (a point a quantity lists twice is one
    test). Holds when every point holds: an intersection-union test, whose family-wise error is each
    verdict's 5% with no correction. Does not hold when a point fails after Holm's step-down over the
    points: the i-th strongest failure (from 0) must still fail at FAMILY_ALPHA / (m - i), m the points; a
    failure that does not is undecided. Else undecided (or not decided), as combine()."""
    distinct = list({(str(e.value), e.paper): e for e in estimates}.values())
    verdicts = [decide(e, rule, run_s) for e in distinct]
    m = len(distinct)
    failing = [(e.value, e, i) for i, (e, v) in enumerate(zip(distinct, verdicts))
               if v.outcome is Outcome.FAILS and isinstance(e.value, Interval)]
    if m < 2 or not failing:
        return combine(verdicts)
    failing.sort(key=lambda f: -_failure_strength(f[0], rule.bounds(f[1].paper, run_s) or (None, None)))
    kept: set[int] = set()
    for step, (iv, e, i) in enumerate(failing):
        if decide(replace(e, value=_at_level(iv, FAMILY_ALPHA / (m - step))), rule, run_s).outcome \
                is not Outcome.FAILS:
            break
        kept.add(i)
    verdicts = [v if v.outcome is not Outcome.FAILS or i in kept or not isinstance(distinct[i].value, Interval)
                else Verdict(Outcome.UNDECIDED, f"{v.text}, but not beyond the edge at Holm's level over the "
                             f"claim's {m} points") for i, v in enumerate(verdicts)]
    return combine(verdicts)
