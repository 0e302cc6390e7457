"""bbrbench sweep: a parameter grid with repetitions."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..scenario import parse_assignment
from .common import add_cluster_args, add_scenario_args, default_out, emit, executor, load_scenario, need_root_here

HELP = "run a parameter grid with repetitions (resumable)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_args(p)
    p.add_argument("--grid", action="append", default=[], metavar="KEY=[V1,V2]",
                   help="add a grid dimension (TOML array), e.g. --grid 'bottleneck.buffer_bdp=[0.5,2]'")
    p.add_argument("--reps", type=int, help="repetitions per grid point (default sweep.repetitions or 1)")
    p.add_argument("--out", help="sweep directory; rerun with the same --out to resume")
    add_cluster_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import sweep
    from ..testbed import system
    path, raw = load_scenario(args)
    grid = [parse_assignment(g) for g in args.grid]
    catalog = system.catalog()
    plan = sweep.plan_runs(raw, catalog, grid, args.reps)
    need_root_here(args)
    out = Path(args.out) if args.out else default_out("sweep", str(raw.get("name", path.stem)))
    with executor(args) as where:
        emit(sweep.run_sweep(plan, out, catalog, where, args.mix_hosts))
    emit(f"results: {out}")
    return 0
