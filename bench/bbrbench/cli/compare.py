"""bbrbench compare: each algorithm alone on one emulated path."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..scenario import SCENARIO_DIR
from .common import add_delay_arg, add_json_arg, emit_outcome, load_scenario, need_root

HELP = "each algorithm alone on one emulated path, with repetitions: table, figures, HTML page"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("algos", nargs="*", metavar="ALGO",
                   help="congestion controls (default: cubic, bbr and every bbrkit algorithm); bbr is always added")
    p.add_argument("--reps", type=int, help="repetitions (default: the scenario's, 5; 3 with --profile quick)")
    p.add_argument("--profile", help="quick: 5 s runs, 3 repetitions")
    p.add_argument("--out", help="results directory (default results/compare-PROFILE, e.g. results/compare-quick); "
                                 "rerun to resume")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the compare path, e.g. --set bottleneck.rate_mbit=100")
    p.add_argument("--report-only", action="store_true", help="rebuild table, figures and page of --out")
    add_delay_arg(p)
    add_json_arg(p)
    # The path compare runs on: a scenario file like run's, which --set and --profile modify.
    p.set_defaults(func=run, scenario=str(SCENARIO_DIR / "compare.toml"))


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..experiments import compare
    from ..testbed import system
    _, raw = load_scenario(args)
    if args.report_only:
        if not args.out:
            raise UsageError("--report-only needs --out DIR")
        emit_outcome(args, compare.report(Path(args.out), args.delay), Path(args.out))
        return 0
    catalog = system.catalog()
    plan = compare.plan_runs(raw, catalog, args.algos, args.reps)
    need_root()
    # No timestamp: rerunning the same compare (compare.sh) resumes it, as reproduce does.
    out = Path(args.out) if args.out else Path.cwd() / "results" / f"compare-{args.profile or 'default'}"
    text = compare.run(plan, catalog, out, args.delay)
    emit_outcome(args, text, out, f"results: {out} (page: {out / compare.PAGE})")
    return 0
