"""Runs that never reach equilibrium are right-censored at the run's end, not dropped, and a verdict that
censored repetitions could have produced does not stand."""
from __future__ import annotations

from typing import Any

from bbrbench.repro import claims, quantities
from bbrbench.repro.claims import Outcome, Rule, Stat
from bbrbench.repro.points import PointResult

RUN_S = 76.0
KEY = "censored.total.convergence_time_s"


def point(times: list[float | None]) -> PointResult:
    return PointResult({}, "p", "done", RUN_S, [{"total": {"convergence_time_s": t}} for t in times])


def test_a_run_without_equilibrium_counts_at_the_runs_end() -> None:
    s = point([10.0, None, 20.0]).stat(KEY)
    assert s is not None and s.values == (10.0, RUN_S, 20.0) and s.censored == 1 and s.n == 3
    assert "1 censored" in s.text()
    dropped = point([10.0, None, 20.0]).stat("total.convergence_time_s")
    assert dropped is not None and dropped.n == 2 and dropped.censored == 0
    # The count travels through summary.json.
    assert Stat(**s.to_json()).censored == 1


class Lookup:
    def __init__(self, acd: list[float | None], bbr: list[float | None]) -> None:
        self.points = {"bbr_acd": point(acd), "bbr": point(bbr)}

    def stat(self, series: str, _x: Any, metric: str) -> Stat | None:
        return self.points[series].stat(metric)

    def xs(self, _series: str) -> list[Any]:
        return ["#3"]

    def x_name(self, x: Any) -> str:
        return str(x)

    def paper(self, *_args: Any) -> float | None:
        return None


def decided(acd: list[float | None], bbr: list[float | None]) -> Outcome:
    (est,) = quantities.acd_equilibrium(Lookup(acd, bbr))
    return claims.decide(est, Rule(at_most=-5.0), RUN_S).outcome


def test_censored_runs_cannot_carry_the_verdict_they_favour() -> None:
    assert decided([5.0, 6.0, 7.0], [70.0, 71.0, 72.0]) is Outcome.HOLDS
    # BBR censored: its true times are longer still, so the "holds" stands.
    assert decided([5.0, 6.0, 7.0], [70.0, None, 72.0]) is Outcome.HOLDS
    # BBR-ACD censored: counted at 76 s it is already far slower than BBR, a "does not hold" that its true,
    # longer times only confirm.
    assert decided([70.0, None, 72.0], [10.0, 11.0, 12.0]) is Outcome.FAILS
    # BBR censored where BBR-ACD is no faster: BBR's true times may be longer, so no "does not hold".
    assert decided([76.0, 76.0, 76.0], [70.0, 71.0, 72.0]) is Outcome.FAILS
    assert decided([76.0, 76.0, 76.0], [70.0, None, 72.0]) is Outcome.UNDECIDED
