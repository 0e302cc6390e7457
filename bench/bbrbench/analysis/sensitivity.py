"""How much link lateness changes an outcome: the decision rules of docs/trust-sensitivity.md applied to
sweeps over injected stall levels. Each run's measured late share (its trust check's late_wakeups_share) is
the x axis; each measure's change against the clean runs is a Welch 95% interval, judged against half the
claims' margin. The first rule (decide) asks for one limit every measure supports; the second
(decide_by_measure) gives each of the undecided claims' measures a limit of its own, at the configurations
those claims read. `python -m bbrbench.analysis.sensitivity SWEEP_DIR...` prints the table and the limit
the runs support (`--by-measure`: the limit of each measure)."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .stats import diff_ci95
from .trust import THRESHOLDS


@dataclass(frozen=True)
class Measure:
    name: str
    margin: float  # the claims' margin: points, or a factor when log_scale
    log_scale: bool  # compared as a ratio on the log of per-run values (when every run has some)
    zero_tolerance: float = 0.0  # in points, when a ratio has no meaning (a run with none)


# The claims' measures and margins (fig14-15-fqcodel.paper.toml), in the units the rule states.
MEASURES = (
    Measure("jain_points", 5.0, False),
    Measure("share_rtt50_points", 5.0, False),
    Measure("retrans_pct", 1.25, True, zero_tolerance=0.05),
)
# A lateness that cannot move a value across a claim's margin by itself: half of it.
HALF = 0.5
# Trust-check failures the rule does not excuse in clean runs: everything but the lateness being measured.
LATENESS_FAILURES = ("departures over 200 us late", "frames over 1 ms in the socket buffer")


@dataclass(frozen=True)
class Run:
    config: str  # the configuration (e.g. the AQM)
    level: float  # the stall probability set, % (0: clean)
    late_share: float  # measured: departures over 200 us late, per departure
    values: dict[str, float]
    other_failures: tuple[str, ...]  # trust failures that are not lateness


def totals_of(summary: dict[str, Any]) -> dict[str, float]:
    """The measures every run has, from its summary.json: Jain's index in points, retransmissions in %."""
    total = summary["total"]
    return {"jain_points": 100 * total["jain"], "retrans_pct": 100 * total["retrans_rate"]}


def measures_of(summary: dict[str, Any]) -> dict[str, float]:
    """The first rule's measures from one run's summary.json (two flows labelled rtt10 and rtt50)."""
    flows = {f["label"]: f for f in summary["flows"]}
    g10, g50 = flows["rtt10"]["goodput_mbps"], flows["rtt50"]["goodput_mbps"]
    return {**totals_of(summary), "share_rtt50_points": 100 * g50 / (g10 + g50)}


def verdict(measure: Measure, level: Sequence[float], clean: Sequence[float]) -> tuple[str, float, float, float]:
    """('no change' | 'changes' | 'undecided', estimate, low, high) of level against clean, in the measure's
    units: points, or a factor for a log-scale measure."""
    as_ratio = measure.log_scale and min(*level, *clean) > 0
    if as_ratio:
        d, lo, hi = diff_ci95([math.log(v) for v in level], [math.log(v) for v in clean])
        bound = math.log(measure.margin)
    else:
        d, lo, hi = diff_ci95(level, clean)
        bound = measure.zero_tolerance / HALF if measure.log_scale else measure.margin
    shown = (math.exp(d), math.exp(lo), math.exp(hi)) if as_ratio else (d, lo, hi)
    if -HALF * bound <= lo and hi <= HALF * bound:
        return "no change", *shown
    if abs(d) > bound:
        return "changes", *shown
    return "undecided", *shown


def decide(runs: Sequence[Run], current_limit: float) -> dict[str, Any]:
    """The rule: per measure, the highest late share up to which every level in every configuration does not
    change it; the limit is the smallest over the measures, never above what the runs measured, and never
    raised when clean runs failed a trust check other than lateness."""
    configs = sorted({r.config for r in runs})
    levels = sorted({r.level for r in runs if r.level > 0})
    rows: list[dict[str, Any]] = []
    supported: dict[str, float] = {}
    for m in MEASURES:
        limit = current_limit
        for level in levels:
            at_level = [r for r in runs if r.level == level]
            outcomes = []
            for config in configs:
                here = [r.values[m.name] for r in at_level if r.config == config]
                clean = [r.values[m.name] for r in runs if r.config == config and r.level == 0]
                if len(here) < 2 or len(clean) < 2:
                    outcomes.append("undecided")
                    continue
                v, est, lo, hi = verdict(m, here, clean)
                outcomes.append(v)
                rows.append({"measure": m.name, "config": config, "level": level, "verdict": v,
                             "estimate": est, "low": lo, "high": hi,
                             "late_share_max": max(r.late_share for r in at_level if r.config == config)})
            if any(o != "no change" for o in outcomes):
                break
            limit = max(limit, max(r.late_share for r in at_level))
        supported[m.name] = limit
    blocked = sorted({f for r in runs if r.level == 0 for f in r.other_failures})
    measured_max = max((r.late_share for r in runs), default=0.0)
    limit = min(min(supported.values()), max(measured_max, current_limit))
    if blocked:
        limit = current_limit
    return {"rows": rows, "supported": supported, "limit": limit, "current_limit": current_limit,
            "clean_failures": blocked}


def _runs_of(sweep_dir: Path) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every finished run of a sweep (trusted or not: lateness is what is measured): the sweep's scenario
    name, the run's grid values and its summary."""
    plan = json.loads((sweep_dir / "sweep.json").read_text())
    for point in plan["points"]:
        for summary_path in sorted((sweep_dir / "points" / point["id"]).glob("rep*/summary.json")):
            yield plan["name"], point["overrides"], json.loads(summary_path.read_text())


def _run(config: str, level: Any, summary: dict[str, Any], values: dict[str, float]) -> Run:
    trust = summary.get("trust") or {}
    failures = tuple(f for f in trust.get("failed", []) if not f.startswith(LATENESS_FAILURES))
    return Run(config, float(level or 0), float(trust.get("checks", {}).get("late_wakeups_share", 0.0)), values,
               failures)


def load(sweep_dir: Path, config_key: str, level_key: str) -> list[Run]:
    """The first rule's runs, with their grid values."""
    return [_run(str(overrides[config_key]), overrides.get(level_key), summary, measures_of(summary))
            for _, overrides, summary in _runs_of(sweep_dir)]


# ---------------------------------------------------------------- the second rule: a limit per measure

# A configuration a claim reads: its sweep's scenario name and the grid values of its point (the level aside).
Configuration = tuple[str, dict[str, Any]]


def configuration_name(scenario: str, overrides: Mapping[str, Any]) -> str:
    return f"{scenario}: " + ", ".join(f"{k}={v}" for k, v in sorted(overrides.items()))


def _grid(scenario: str, grid: Mapping[str, Sequence[Any]]) -> tuple[Configuration, ...]:
    return tuple((scenario, dict(zip(grid, values))) for values in itertools.product(*grid.values()))


# The undecided claims' configurations (docs/trust-sensitivity.md, "Second experiment"): Fig 14(c, d)'s and
# Fig 15's FQ-CoDel points, and Fig 21's FQ-CoDel and CAKE points, at the standard profile.
FIG14_15_FQCODEL = _grid("fig14-15-fqcodel", {"bottleneck.aqm": ["fq_codel"], "bottleneck.buffer_bdp": [0.5, 5],
                                              "flows.*.algo": ["bbr1", "bbr2"]})
FIG21_AQMS = _grid("fig21", {"bottleneck.aqm": ["fq_codel", "cake"], "bottleneck.buffer_bdp": [1, 100]})
# Per report metric (its key in trust.LATE_SHARE_LIMIT_BY_MEASURE), every configuration its claims read:
# Jain's index for the Fig 14(c, d) and the two Fig 21 fairness claims, the retransmission rate for Fig 15's.
CLAIM_CONFIGURATIONS: dict[str, tuple[Configuration, ...]] = {
    "total.jain": FIG14_15_FQCODEL + FIG21_AQMS,
    "total.retrans_rate": FIG14_15_FQCODEL,
}
# Each report metric's measure in the rule's units, with the claims' margin (MEASURES).
MEASURE_OF_METRIC = {"total.jain": "jain_points", "total.retrans_rate": "retrans_pct"}
# Runs a comparison needs on each side: the n of the design; fewer left is undecided, never "no effect".
MIN_RUNS = 3


def load_by_measure(sweep_dirs: Sequence[Path], level_key: str) -> list[Run]:
    """The second rule's runs from its sweeps, each named by its configuration (configuration_name)."""
    return [_run(configuration_name(name, {k: v for k, v in overrides.items() if k != level_key}),
                 overrides.get(level_key), summary, totals_of(summary))
            for sweep_dir in sweep_dirs for name, overrides, summary in _runs_of(sweep_dir)]


def _decide_measure(measure: Measure, runs: Sequence[Run], configs: Sequence[str],
                    current_limit: float) -> dict[str, Any]:
    """One measure's limit: the lowest late share measured at the highest level that, with every lower one,
    does not change it in any of configs; current_limit when the lowest level already does not hold."""
    usable = [r for r in runs if r.config in configs and not r.other_failures]
    levels = sorted({r.level for r in runs if r.config in configs and r.level > 0})
    rows: list[dict[str, Any]] = []
    limit, held_to, stopped = current_limit, "", "no stalled runs at its configurations"
    for level in levels:
        failed = None
        for config in configs:
            here = [r for r in usable if r.config == config and r.level == level]
            clean = [r for r in usable if r.config == config and r.level == 0]
            row: dict[str, Any] = {"config": config, "level": level, "n": len(here), "n_clean": len(clean)}
            if min(len(here), len(clean)) < MIN_RUNS:
                row["verdict"] = "undecided"
            else:
                v, est, lo, hi = verdict(measure, [r.values[measure.name] for r in here],
                                         [r.values[measure.name] for r in clean])
                row.update({"verdict": v, "estimate": est, "low": lo, "high": hi,
                            "late_share_min": min(r.late_share for r in here)})
            rows.append(row)
            if failed is None and row["verdict"] != "no change":
                failed = row
        if failed is not None:
            stopped = (f"{failed['verdict']} at stall {level:g}% in {failed['config']} (n = {failed['n']}, "
                       f"{failed['n_clean']} clean)")
            break
        limit = max(limit, min(r.late_share for r in usable if r.config in configs and r.level == level))
        held_to, stopped = (f"no change up to stall {level:g}% in all {len(configs)} configurations, the lowest "
                            f"late share measured there {limit:.2%}"), ""
    reason = "; ".join(part for part in (held_to, stopped) if part) + f": limit {limit:.2%}"
    return {"limit": limit, "reason": reason, "rows": rows}


def decide_by_measure(runs: Sequence[Run], current_limit: float,
                      configurations: Mapping[str, Sequence[Configuration]] = CLAIM_CONFIGURATIONS
                      ) -> dict[str, dict[str, Any]]:
    """The second rule: per report metric, its late-share limit (never below current_limit, never above a late
    share its runs measured), why, and each configuration's verdict at each level."""
    by_name = {m.name: m for m in MEASURES}
    return {metric: _decide_measure(by_name[MEASURE_OF_METRIC[metric]], runs,
                                    [configuration_name(*c) for c in configs], current_limit)
            for metric, configs in configurations.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bbrbench.analysis.sensitivity", description=__doc__)
    parser.add_argument("sweep_dirs", type=Path, nargs="+")
    parser.add_argument("--config-key", default="bottleneck.aqm",
                        help="the grid key naming a configuration (the first rule)")
    parser.add_argument("--level-key", required=True, help="the grid key holding the stall level")
    parser.add_argument("--by-measure", action="store_true",
                        help="the second rule: a limit per measure at the claims' configurations")
    args = parser.parse_args(argv)
    current = THRESHOLDS["late_share"].limit
    try:
        if args.by_measure:
            result: dict[str, Any] = decide_by_measure(load_by_measure(args.sweep_dirs, args.level_key), current)
        else:
            runs = [r for d in args.sweep_dirs for r in load(d, args.config_key, args.level_key)]
            result = decide(runs, current)
    except (OSError, KeyError, ValueError) as e:
        print(f"sensitivity: {' '.join(map(str, args.sweep_dirs))}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
