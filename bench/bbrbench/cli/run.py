"""bbrbench run: one scenario."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import (
    add_json_arg,
    add_scenario_args,
    default_out,
    emit,
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
    from ..sudo import staged_run, sudo_user
    from ..testbed import runner, system

    def run_in(out: Path | None) -> tuple[str, Path]:
        _, raw = load_scenario(args)
        catalog = system.catalog()
        scenario = validate(raw, catalog)
        need_root()
        out = out or default_out("run", scenario.name)
        runner.run(scenario, raw, out, catalog.bbrkit)
        return write_report(out, plots=not args.no_plots), out

    if user := sudo_user():  # a Slurm task through the one sudo rule: made for that user, handed over
        def staged(scenario: Path, out: Path) -> None:
            args.scenario = str(scenario)
            run_in(out)
        staged_run(args, user, staged)
        emit(f"results: {args.out}")
        return 0
    text, out = run_in(Path(args.out) if args.out else None)
    emit_outcome(args, text, out, f"results: {out}")
    return 0
