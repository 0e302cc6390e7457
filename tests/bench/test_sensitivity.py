"""The late-share limit's decision rule (docs/trust-sensitivity.md), on synthetic runs."""

from __future__ import annotations

from bbrbench.analysis.sensitivity import Run, decide

CURRENT = 0.001


def runs_at(level: float, late: float, jain: tuple[float, ...], share: float = 50.0, retrans: float = 1.0,
            configs: tuple[str, ...] = ("fifo", "fq_codel"), failures: tuple[str, ...] = ()) -> list[Run]:
    return [Run(c, level, late, {"jain_points": j, "share_rtt50_points": share + i * 0.1,
                                 "retrans_pct": retrans * (1 + 0.01 * i)}, failures)
            for c in configs for i, j in enumerate(jain)]


CLEAN = runs_at(0, 0.002, (99.0, 99.2, 99.1))


def test_levels_that_change_nothing_raise_the_limit_to_the_highest_share_measured() -> None:
    runs = CLEAN + runs_at(0.2, 0.005, (99.1, 99.0, 99.2)) + runs_at(0.5, 0.012, (99.2, 99.1, 99.0))
    result = decide(runs, CURRENT)
    assert result["limit"] == 0.012
    assert {r["verdict"] for r in result["rows"]} == {"no change"}


def test_a_level_that_changes_a_measure_stops_the_limit_below_it() -> None:
    runs = CLEAN + runs_at(0.2, 0.005, (99.1, 99.0, 99.2)) + runs_at(0.5, 0.012, (90.0, 90.2, 90.1))
    result = decide(runs, CURRENT)
    assert result["supported"]["jain_points"] == 0.005 and result["limit"] == 0.005
    assert any(r["verdict"] == "changes" and r["level"] == 0.5 for r in result["rows"])


def test_an_undecided_first_level_keeps_the_limit() -> None:
    runs = CLEAN + runs_at(0.2, 0.005, (95.0, 99.5, 98.0))
    result = decide(runs, CURRENT)
    assert result["limit"] == CURRENT
    assert [r["verdict"] for r in result["rows"] if r["measure"] == "jain_points"][0] == "undecided"


def test_one_configuration_alone_decides_against_raising() -> None:
    runs = (CLEAN + runs_at(0.2, 0.005, (99.1, 99.0, 99.2), configs=("fifo",))
            + runs_at(0.2, 0.005, (90.0, 90.1, 90.2), configs=("fq_codel",)))
    assert decide(runs, CURRENT)["limit"] == CURRENT


def test_retransmissions_compare_as_a_factor() -> None:
    runs = CLEAN + runs_at(0.2, 0.005, (99.1, 99.0, 99.2), retrans=1.5)
    result = decide(runs, CURRENT)
    row = next(r for r in result["rows"] if r["measure"] == "retrans_pct")
    assert row["verdict"] == "changes" and 1.4 < row["estimate"] < 1.6
    assert result["limit"] == CURRENT


def test_clean_runs_failing_another_check_keep_the_limit() -> None:
    clean = runs_at(0, 0.002, (99.0, 99.2, 99.1), failures=("forward thread busy 95% of the run",))
    runs = clean + runs_at(0.2, 0.005, (99.1, 99.0, 99.2))
    result = decide(runs, CURRENT)
    assert result["limit"] == CURRENT and result["clean_failures"]


def test_a_shift_within_the_margin_but_past_its_half_keeps_the_limit() -> None:
    runs = CLEAN + runs_at(0.2, 0.005, (96.0, 96.2, 96.1))
    result = decide(runs, CURRENT)
    assert result["limit"] == CURRENT
    assert next(r for r in result["rows"] if r["measure"] == "jain_points")["verdict"] == "undecided"
