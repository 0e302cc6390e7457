"""bbrbench run: one scenario."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .common import (
    add_json_arg,
    add_scenario_args,
    default_out,
    emit_outcome,
    load_scenario,
    need_root,
)

HELP = "run one scenario"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_args(p)
    p.add_argument("--out", help="results directory (default results/run-NAME-TIME)")
    p.add_argument("--no-plots", action="store_true", help="table and summary only")
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis.report import write_report
    from ..scenario import validate
    from ..testbed import runner, system
    _, raw = load_scenario(args)
    catalog = system.catalog()
    scenario = validate(raw, catalog)
    need_root()
    out = Path(args.out) if args.out else default_out("run", scenario.name)
    runner.run(scenario, raw, out, catalog.bbrkit)
    text = write_report(out, plots=not args.no_plots)
    give_back(out)
    emit_outcome(args, text, out, f"results: {out}")
    return 0


def give_back(out: Path) -> None:
    """Run through sudo (a Slurm task's one rule, docs/cluster.md), the results belong to whoever ran sudo,
    whose sweep then takes them in as its own files."""
    uid = os.environ.get("SUDO_UID", "")
    if os.geteuid() != 0 or not uid.isdigit():
        return
    gid = int(os.environ.get("SUDO_GID", uid))
    for path in [out, *out.rglob("*")]:
        os.chown(path, int(uid), gid, follow_symlinks=False)
