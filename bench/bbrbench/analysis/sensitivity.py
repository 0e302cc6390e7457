"""How much link lateness changes an outcome: the decision rule of docs/trust-sensitivity.md applied to a
sweep over injected stall levels. Each run's measured late share (its trust check's late_wakeups_share) is
the x axis; each measure's change against the clean runs is a Welch 95% interval, judged against half the
claims' margin. `python -m bbrbench.analysis.sensitivity SWEEP_DIR` prints the table and the limit the runs
support."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
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


def measures_of(summary: dict[str, Any]) -> dict[str, float]:
    """The rule's measures from one run's summary.json (two flows labelled rtt10 and rtt50)."""
    flows = {f["label"]: f for f in summary["flows"]}
    g10, g50 = flows["rtt10"]["goodput_mbps"], flows["rtt50"]["goodput_mbps"]
    total = summary["total"]
    return {"jain_points": 100 * total["jain"], "share_rtt50_points": 100 * g50 / (g10 + g50),
            "retrans_pct": 100 * total["retrans_rate"]}


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


def load(sweep_dir: Path, config_key: str, level_key: str) -> list[Run]:
    """Every run of a sweep (trusted or not: lateness is what is measured) with its grid values."""
    plan = json.loads((sweep_dir / "sweep.json").read_text())
    runs = []
    for point in plan["points"]:
        overrides = point["overrides"]
        for summary_path in sorted((sweep_dir / "points" / point["id"]).glob("rep*/summary.json")):
            summary = json.loads(summary_path.read_text())
            trust = summary.get("trust") or {}
            failures = tuple(f for f in trust.get("failed", []) if not f.startswith(LATENESS_FAILURES))
            runs.append(Run(str(overrides[config_key]), float(overrides.get(level_key) or 0),
                            float(trust.get("checks", {}).get("late_wakeups_share", 0.0)),
                            measures_of(summary), failures))
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bbrbench.analysis.sensitivity", description=__doc__)
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--config-key", default="bottleneck.aqm", help="the grid key naming a configuration")
    parser.add_argument("--level-key", required=True, help="the grid key holding the stall level")
    args = parser.parse_args(argv)
    try:
        runs = load(args.sweep_dir, args.config_key, args.level_key)
    except (OSError, KeyError, ValueError) as e:
        print(f"sensitivity: {args.sweep_dir}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(decide(runs, THRESHOLDS["late_share"].limit), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
