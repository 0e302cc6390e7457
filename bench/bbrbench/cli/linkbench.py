"""bbrbench linkbench: the link emulator's added delay and capacity."""

from __future__ import annotations

import argparse

from ..experiments import linkbench
from .common import emit, need_root

HELP = "added delay and forwarding capacity of the link emulator (bbrkit-link)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    linkbench.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    linkbench.check_args(args)
    need_root()
    emit(linkbench.run_benchmark(args))
    return 0
