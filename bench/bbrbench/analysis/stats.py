"""Statistics over repetitions, all from scipy.stats: Student's t intervals of means, a ratio and a
difference of two means with their intervals, least-squares regression and correlation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95


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
    """mean(x) / mean(y) with the half-width of its 95% CI; None where the reference mean is zero."""

    ratio: float | None
    ci95: float | None
    df: float | None

    @property
    def excludes_one(self) -> bool:
        return self.ratio is not None and self.ci95 is not None and abs(self.ratio - 1.0) > self.ci95


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
    """Ratio of means of two independent samples, CI by the delta method with Welch's degrees of freedom.

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
        return Ratio(r, 0.0, None)
    df = _welch(a1, a2, x.n, y.n)
    return Ratio(r, float(stats.t.ppf((1 + CONFIDENCE) / 2, df)) * math.sqrt(a1 + a2) / abs(y.mean), df)


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
