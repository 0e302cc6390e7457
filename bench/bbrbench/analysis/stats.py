"""Statistics over repetitions, all from scipy.stats: Student's t intervals of means, a ratio and a
difference of two means with their intervals (the delta method, or Fieller's where the denominator is
uncertain), least-squares regression and correlation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
# Fieller's g (the denominator mean's squared t-ratio inverted: t^2 sem_y^2 / mean_y^2) from which a ratio's
# interval is Fieller's, not the delta method's: the usual rule of thumb (Fieller 1954; Finney's bioassay
# texts) is that below 0.05 the two agree to a few percent; above it the delta method's symmetric interval
# understates how far the ratio can run when the denominator could be smaller.
FIELLER_G = 0.05


def mean_ci95(values: Sequence[float]) -> tuple[float, float | None]:
    """(mean, half-width of the 95% CI from Student's t); the half-width is None with a single value."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        raise ValueError("no values")
    if len(x) == 1:
        return float(x[0]), None
    sem = float(stats.sem(x))
    return float(x.mean()), float(stats.t.ppf((1 + CONFIDENCE) / 2, len(x) - 1)) * sem


@dataclass(frozen=True)
class Ratio:
    """mean(x) / mean(y) with its 95% CI; None where the reference mean is zero. The delta method's interval
    is ratio +- ci95; Fieller's (method "fieller") is [low, high], not symmetric, and unbounded (low and high
    None) where the denominator's own interval reaches 0. `zero_spread`: every repetition on both sides
    gave the same value, so the interval's zero width is the measure's resolution, not certainty."""

    ratio: float | None
    ci95: float | None
    df: float | None
    method: str = "delta"
    low: float | None = None
    high: float | None = None
    zero_spread: bool = False

    @property
    def bounds(self) -> tuple[float, float] | None:
        """(low, high) of the interval, None where it is unbounded or undefined."""
        if self.method == "fieller":
            return None if self.low is None or self.high is None else (self.low, self.high)
        if self.ratio is None or self.ci95 is None:
            return None
        return self.ratio - self.ci95, self.ratio + self.ci95

    @property
    def excludes_one(self) -> bool:
        """The interval lies wholly on one side of 1; never for an interval of zero spread (it is not
        certainty) or an unbounded one."""
        b = self.bounds
        return b is not None and not self.zero_spread and (b[0] > 1.0 or b[1] < 1.0)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Ratio:
        """From asdict() of one, also of one written before Fieller's fields existed."""
        return cls(**{k: d[k] for k in ("ratio", "ci95", "df", "method", "low", "high", "zero_spread") if k in d})

    def interval_text(self) -> str:
        """The interval in words: '± h', 'Fieller [a, b]', 'Fieller: unbounded' or the zero spread."""
        if self.zero_spread:
            return "no spread in any repetition: the measure's resolution, not certainty"
        if self.method == "fieller":
            b = self.bounds
            return "Fieller: unbounded (the reference's interval reaches 0)" if b is None else \
                f"Fieller [{b[0]:.3g}, {b[1]:.3g}]"
        return "" if self.ci95 is None else f"± {self.ci95:.3g}"


@dataclass(frozen=True)
class Moments:
    """What a mean's interval and the intervals below need of a sample: its mean, standard deviation
    (ddof 1) and size. From the values, or from a recorded mean, 95% half-width and n alone (the half-width
    is Student's t x sd / sqrt(n), so the sd comes back exactly)."""

    mean: float
    sd: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Moments:
        x = np.asarray(values, dtype=float)
        return cls(float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0, len(x))

    @classmethod
    def from_ci95(cls, mean: float, ci95: float, n: int) -> Moments:
        if n < 2:
            raise ValueError("a half-width needs at least two values")
        return cls(mean, ci95 / float(stats.t.ppf((1 + CONFIDENCE) / 2, n - 1)) * math.sqrt(n), n)


def _welch(a1: float, a2: float, nx: int, ny: int) -> float:
    """Welch-Satterthwaite degrees of freedom of two squared standard errors."""
    return (a1 + a2) ** 2 / (a1 * a1 / (nx - 1) + a2 * a2 / (ny - 1))


def ratio_of_moments(x: Moments, y: Moments) -> Ratio:
    """Ratio of means of two independent samples with Welch's degrees of freedom: the delta method's
    interval, or Fieller's where the denominator's g reaches FIELLER_G (fieller_of_moments).

    Var(R) ~ (s_x^2/n_x + R^2 s_y^2/n_y) / m_y^2: written this way (rather than with relative variances)
    it stays finite when the candidate's mean is zero, e.g. a retransmission rate of 0."""
    if x.n < 2 or y.n < 2:
        raise ValueError("need at least two values on each side for a confidence interval")
    if y.mean == 0:
        return Ratio(None, None, None)
    r = x.mean / y.mean
    a1 = x.sd * x.sd / x.n
    a2 = r * r * y.sd * y.sd / y.n
    if a1 + a2 == 0:
        # The candidate gave one value every time, and the ratio carries no spread from the reference (it is
        # constant too, or the candidate is 0): a zero width that is the measure's resolution (e.g. 0
        # retransmissions in every run), not certainty; unbounded where the reference's own interval reaches 0.
        if y.sd > 0 and fieller_g(y, float(stats.t.ppf((1 + CONFIDENCE) / 2, y.n - 1))) >= 1:
            return Ratio(r, None, float(y.n - 1), "fieller")
        return Ratio(r, 0.0, None, zero_spread=True)
    df = _welch(a1, a2, x.n, y.n)
    t = float(stats.t.ppf((1 + CONFIDENCE) / 2, df))
    if fieller_g(y, t) >= FIELLER_G:
        return fieller_of_moments(x, y, df)
    return Ratio(r, t * math.sqrt(a1 + a2) / abs(y.mean), df)


def fieller_g(y: Moments, t: float) -> float:
    """Fieller's g of a denominator: t^2 x its squared standard error over its squared mean."""
    return t * t * y.sd * y.sd / y.n / (y.mean * y.mean)


def fieller_of_moments(x: Moments, y: Moments, df: float | None = None) -> Ratio:
    """Fieller's 95% interval of mean(x) / mean(y) for independent samples (Fieller 1954): the ratios rho
    for which x - rho y is within Student's t of 0, i.e. the roots of
        (m_x - rho m_y)^2 = t^2 (v_x + rho^2 v_y),   v = sd^2 / n,
    with Welch's degrees of freedom unless given. Bounded when g < 1 (the denominator's own interval
    excludes 0); otherwise unbounded (low and high None)."""
    if x.n < 2 or y.n < 2:
        raise ValueError("need at least two values on each side for a confidence interval")
    if y.mean == 0:
        return Ratio(None, None, None, "fieller")
    r = x.mean / y.mean
    vx, vy = x.sd * x.sd / x.n, y.sd * y.sd / y.n
    if df is None:
        df = _welch(vx, r * r * vy, x.n, y.n) if vx + r * r * vy > 0 else float(min(x.n, y.n) - 1)
    t = float(stats.t.ppf((1 + CONFIDENCE) / 2, df))
    a = y.mean * y.mean - t * t * vy
    if a <= 0:
        return Ratio(r, None, df, "fieller")
    root = t * math.sqrt(vx * y.mean * y.mean + vy * x.mean * x.mean - t * t * vx * vy)
    low, high = (x.mean * y.mean - root) / a, (x.mean * y.mean + root) / a
    return Ratio(r, None, df, "fieller", low, high)


def ratio_ci95(x: Sequence[float], y: Sequence[float]) -> Ratio:
    """ratio_of_moments of two samples' values."""
    if len(x) < 2 or len(y) < 2:
        raise ValueError("need at least two values on each side for a confidence interval")
    return ratio_of_moments(Moments.of(x), Moments.of(y))


def diff_of_moments(x: Moments, y: Moments) -> tuple[float, float, float]:
    """mean(x) - mean(y) of two independent samples with its 95% Welch interval: (difference, low, high).
    (scipy's ttest_ind gives the interval itself only from 1.11; Debian 12 has 1.10.)"""
    if x.n < 2 or y.n < 2:
        raise ValueError("need at least two values on each side for a confidence interval")
    d = x.mean - y.mean
    a1, a2 = x.sd * x.sd / x.n, y.sd * y.sd / y.n
    if a1 + a2 == 0:
        # Welch's t is undefined without spread; the samples pin the difference exactly.
        return d, d, d
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, _welch(a1, a2, x.n, y.n))) * math.sqrt(a1 + a2)
    return d, d - half, d + half


def diff_of_ratios(x1: Moments, y1: Moments, x2: Moments, y2: Moments) -> tuple[float, float, float]:
    """mean(x1) / mean(y1) - mean(x2) / mean(y2) of four independent samples with its 95% interval by the
    delta method, Welch-Satterthwaite degrees of freedom over the four terms: (difference, low, high)."""
    if min(m.n for m in (x1, y1, x2, y2)) < 2:
        raise ValueError("need at least two values on each side for a confidence interval")
    if y1.mean == 0 or y2.mean == 0:
        raise ValueError("a reference mean is 0: no ratio")
    r1, r2 = x1.mean / y1.mean, x2.mean / y2.mean
    terms = [(x1.sd / y1.mean) ** 2 / x1.n, (r1 * y1.sd / y1.mean) ** 2 / y1.n,
             (x2.sd / y2.mean) ** 2 / x2.n, (r2 * y2.sd / y2.mean) ** 2 / y2.n]
    d = r1 - r2
    var = sum(terms)
    if var == 0:
        return d, d, d
    df = var * var / sum(t * t / (m.n - 1) for t, m in zip(terms, (x1, y1, x2, y2)))
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, df)) * math.sqrt(var)
    return d, d - half, d + half


def diff_ci95(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """diff_of_moments of two samples' values."""
    if len(x) < 2 or len(y) < 2:
        raise ValueError("need at least two values on each side for a confidence interval")
    return diff_of_moments(Moments.of(x), Moments.of(y))


def regression(x: Sequence[float], y: Sequence[float]) -> dict[str, float | None]:
    """Least-squares y = a + b x with R², the slope's two-sided p-value and the half-width of its 95%
    interval (Student's t, n - 2 degrees of freedom); None below three points or with x constant."""
    n = len(x)
    if n < 3 or len(set(x)) < 2:
        return {"slope": None, "intercept": None, "r2": None, "p": None, "slope_ci95": None, "n": n}
    fit = stats.linregress(x, y)
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, n - 2)) * float(fit.stderr)
    return {"slope": float(fit.slope), "intercept": float(fit.intercept), "r2": float(fit.rvalue) ** 2,
            "p": float(fit.pvalue), "slope_ci95": half, "n": n}


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    if len(x) != len(y) or len(x) < 2:
        raise ValueError("correlation needs two series of equal length, at least two points")
    if len(set(x)) < 2 or len(set(y)) < 2:
        raise ValueError("correlation undefined for a constant series")
    return float(stats.pearsonr(x, y)[0])


def pearson_ci95(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """Pearson's r with its 95% interval (Fisher's z; (-1, 1) with three points): (r, low, high)."""
    r = pearson(x, y)
    ci = stats.pearsonr(x, y).confidence_interval(CONFIDENCE)
    return r, float(ci.low), float(ci.high)


def mean_sem(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """(mean, standard error of the mean); the standard error is 0 with a single value."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        raise ValueError("no values")
    return float(x.mean()), float(stats.sem(x)) if len(x) > 1 else 0.0


def batch_effect_p(groups: Sequence[Sequence[float]]) -> float | None:
    """The p-value of a one-way ANOVA that the groups (one metric's repetitions, grouped by the invocation
    that ran them) share one mean; None where fewer than two groups have two values each, or no value varies."""
    usable = [list(g) for g in groups if len(g) >= 2]
    if len(usable) < 2 or all(np.ptp(g) == 0 for g in usable):
        return None
    p = float(stats.f_oneway(*usable).pvalue)
    return None if math.isnan(p) else p
