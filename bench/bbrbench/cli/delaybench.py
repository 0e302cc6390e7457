"""bbrbench delaybench: the delay line's accuracy and capacity."""

from __future__ import annotations

import argparse

from ..experiments import delaybench
from .common import emit, need_root

HELP = "accuracy and capacity of the delay line (bbrkit-delay)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    delaybench.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    delaybench.check_args(args)
    need_root()
    emit(delaybench.run_benchmark(args))
    return 0
