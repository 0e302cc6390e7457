"""Means with 95% confidence intervals (Student's t) over repetitions."""

from __future__ import annotations

import math
from typing import Sequence

# Two-sided 95% quantiles t(0.975, df) for the degrees of freedom that sweeps use; between table entries
# the next smaller df is taken, which widens the interval slightly rather than narrowing it.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101,
        19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052,
        28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}
Z975 = 1.960


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("need at least one degree of freedom")
    if df > max(T975):
        return Z975
    return T975[max(k for k in T975 if k <= df)]


def mean_ci95(values: Sequence[float]) -> tuple[float, float | None]:
    """(mean, half-width of the 95% CI); the half-width is None with a single value."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    m = sum(values) / n
    if n == 1:
        return m, None
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    return m, t975(n - 1) * sd / math.sqrt(n)
