"""bbrbench fidelity: bbr1 against the kernel's bbr, as ratios."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_cluster_args, add_scenario_args, default_out, emit, executor, load_scenario, need_root_here

HELP = "bbr1 against the kernel's bbr: ratios with 95%% CIs (sweep, resumable)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_args(p, optional=True)
    p.add_argument("--reps", type=int, help="repetitions per point (default the scenario's)")
    p.add_argument("--out", help="sweep directory; rerun with the same --out to resume")
    add_cluster_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..experiments import fidelity
    from ..testbed import system
    # The scenario is optional, so a first KEY=VALUE lands in its place: it is an override.
    if args.scenario and "=" in args.scenario:
        args.overrides, args.scenario = [args.scenario, *args.overrides], None
    args.scenario = args.scenario or str(fidelity.DEFAULT_SCENARIO)
    _, raw = load_scenario(args)
    catalog = system.catalog()
    plan = fidelity.plan_runs(raw, catalog, args.reps)
    need_root_here(args)
    out = Path(args.out) if args.out else default_out("fidelity", str(raw.get("name", "fidelity")))
    with executor(args) as where:
        emit(fidelity.run(plan, catalog, out, where, args.mix_hosts))
    emit(f"results: {out}")
    return 0
