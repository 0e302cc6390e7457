"""The late-share limit's decision rule (docs/trust-sensitivity.md), on synthetic runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bbrbench.analysis.sensitivity import CLAIM_CONFIGURATIONS, Run, configuration_name, decide, decide_by_measure
from bbrbench.scenario import parse_assignment, prepare_raw
from bbrbench.sweep import plan_runs
from bbrbench.testbed import system

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


# The second rule: a limit per measure, at the configurations its claims read.

NEAR, FAR = ("exp", {"aqm": "fq_codel", "bdp": 1}), ("exp", {"aqm": "fq_codel", "bdp": 100})
CONFIGS = {"total.jain": (NEAR, FAR), "total.retrans_rate": (NEAR,)}


def measured(configuration: tuple[str, dict[str, object]], level: float, lates: tuple[float, ...],
             jain: tuple[float, ...], retrans: float = 1.0, failures: tuple[str, ...] = ()) -> list[Run]:
    name = configuration_name(*configuration)
    return [Run(name, level, late, {"jain_points": j, "retrans_pct": retrans * (1 + 0.01 * i)}, failures)
            for i, (late, j) in enumerate(zip(lates, jain))]


def steady(configuration: tuple[str, dict[str, object]]) -> list[Run]:
    """Clean, 0.5% and 1.5% levels whose Jain stays within 0.2 points and whose retransmissions do not move."""
    return (measured(configuration, 0, (0.003, 0.004, 0.005), (99.0, 99.2, 99.1))
            + measured(configuration, 0.5, (0.021, 0.019, 0.020), (99.1, 99.0, 99.2))
            + measured(configuration, 1.5, (0.057, 0.049, 0.055), (99.2, 99.1, 99.0)))


def test_a_measure_within_half_its_margin_gets_the_lowest_late_share_of_the_highest_level() -> None:
    result = decide_by_measure(steady(NEAR) + steady(FAR), CURRENT, CONFIGS)
    assert result["total.jain"]["limit"] == 0.049
    assert result["total.retrans_rate"]["limit"] == 0.049
    assert {r["verdict"] for r in result["total.jain"]["rows"]} == {"no change"}
    assert len(result["total.jain"]["rows"]) == 4  # two configurations at two levels


def test_a_measure_undecided_at_the_lowest_level_stays_at_the_current_limit() -> None:
    wide = [r for r in steady(FAR) if r.level != 0.5] + measured(FAR, 0.5, (0.02, 0.02, 0.02), (95.0, 99.5, 98.0))
    result = decide_by_measure(steady(NEAR) + wide, CURRENT, CONFIGS)
    assert result["total.jain"]["limit"] == CURRENT
    assert "undecided at stall 0.5%" in result["total.jain"]["reason"]
    # The retransmission rate's claims do not read FAR: its limit is not held back by it.
    assert result["total.retrans_rate"]["limit"] == 0.049


def test_a_change_in_one_configuration_keeps_the_limit_though_the_others_hold() -> None:
    changed = [r for r in steady(FAR) if r.level != 0.5] + measured(FAR, 0.5, (0.02, 0.02, 0.02), (90.0, 90.2, 90.1))
    result = decide_by_measure(steady(NEAR) + changed, CURRENT, CONFIGS)
    assert result["total.jain"]["limit"] == CURRENT
    assert [r["verdict"] for r in result["total.jain"]["rows"]] == ["no change", "changes"]


def test_a_change_at_a_higher_level_keeps_the_limit_of_the_level_below() -> None:
    changed = [r for r in steady(FAR) if r.level != 1.5] + measured(FAR, 1.5, (0.05, 0.05, 0.05), (90.0, 90.2, 90.1))
    result = decide_by_measure(steady(NEAR) + changed, CURRENT, CONFIGS)
    assert result["total.jain"]["limit"] == 0.019


def test_runs_failing_another_check_are_left_out_and_too_few_left_is_undecided() -> None:
    cpu = [r for r in steady(NEAR) if r.level != 0.5] + measured(
        NEAR, 0.5, (0.02, 0.02, 0.02), (99.1, 99.0, 99.2), failures=("forward thread busy 95% of the run",))
    result = decide_by_measure(cpu + steady(FAR), CURRENT, CONFIGS)
    assert result["total.jain"]["limit"] == CURRENT
    first = result["total.jain"]["rows"][0]
    assert (first["config"], first["verdict"], first["n"]) == (configuration_name(*NEAR), "undecided", 0)


def test_a_configuration_without_runs_is_undecided() -> None:
    result = decide_by_measure(steady(NEAR), CURRENT, CONFIGS)
    assert result["total.jain"]["limit"] == CURRENT
    assert result["total.retrans_rate"]["limit"] == 0.049


def test_the_claims_configurations_are_the_undecided_claims_points() -> None:
    """Jain's index at the 4 FQ-CoDel points of fig14-15-fqcodel and the 4 FQ-CoDel and CAKE points of fig21;
    the retransmission rate at the former only (docs/trust-sensitivity.md, second experiment)."""
    jain = {configuration_name(*c) for c in CLAIM_CONFIGURATIONS["total.jain"]}
    retrans = {configuration_name(*c) for c in CLAIM_CONFIGURATIONS["total.retrans_rate"]}
    assert len(jain) == 8 and len(retrans) == 4 and retrans < jain
    assert "fig21: bottleneck.aqm=cake, bottleneck.buffer_bdp=100" in jain
    assert ("fig14-15-fqcodel: bottleneck.aqm=fq_codel, bottleneck.buffer_bdp=0.5, flows.*.algo=bbr2") in retrans


DOC = Path(__file__).resolve().parents[2] / "docs" / "trust-sensitivity.md"


def test_the_pre_registered_sweeps_plan_the_rules_configurations_in_72_runs() -> None:
    """The commands the second experiment's design gives, planned (nothing run): every configuration the rule
    judges, each at the clean and both stalled levels, n = 3."""
    catalog = system.catalog()
    if "bbr2" not in catalog.bbrkit:
        pytest.skip("bbrctl not built (make): the scenarios use bbrkit's algorithms")
    design = DOC.read_text().partition("## Second experiment")[2].replace("\\\n", " ")
    planned, runs = set(), 0
    for command in re.findall(r"bbrbench -q sweep .*?--out \S+", design):
        argv = shlex.split(command)[3:]
        grid = [argv[i + 1] for i, a in enumerate(argv) if a == "--grid"]
        values = [a for i, a in enumerate(argv[3:], 3) if "=" in a and argv[i - 1] != "--grid"]
        raw = prepare_raw(DOC.parents[1] / argv[0], argv[argv.index("--profile") + 1],
                          [parse_assignment(v) for v in values])
        plan = plan_runs(raw, catalog, [parse_assignment(g) for g in grid], int(argv[argv.index("--reps") + 1]))
        runs += len(plan.points) * plan.repetitions
        assert {p.overrides["bottleneck.stall.percent"] for p in plan.points} == {0, 0.5, 1.5}
        planned |= {configuration_name(plan.name, {k: v for k, v in p.overrides.items()
                                                   if k != "bottleneck.stall.percent"}) for p in plan.points}
    assert planned == {configuration_name(*c) for cs in CLAIM_CONFIGURATIONS.values() for c in cs}
    assert runs == 72
