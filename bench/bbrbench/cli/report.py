"""bbrbench report: recompute what a run, sweep or compare directory reports."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import HarnessError
from .common import add_delay_arg, add_json_arg, add_mix_hosts_arg, emit_outcome

HELP = "recompute summary, table and plots of a run, sweep or compare directory"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir")
    p.add_argument("--no-plots", action="store_true")
    add_mix_hosts_arg(p)
    add_delay_arg(p)
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if (directory / "compare.json").is_file():
        from ..experiments import compare
        text = compare.report(directory, args.delay)
    elif (directory / "plan.json").is_file():
        from ..sweep import aggregate
        text = aggregate(directory, args.mix_hosts)
    elif (directory / "scenario.json").is_file():
        from ..analysis.report import write_report
        text = write_report(directory, plots=not args.no_plots)
    else:
        raise HarnessError(f"{directory}: not a run, sweep or compare results directory")
    emit_outcome(args, text, directory)
    return 0
