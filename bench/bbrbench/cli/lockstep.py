"""bbrbench lockstep: bbr1's core and the kernel's bbr, ACK by ACK."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_FAILED, default_out, emit, need_root

HELP = "bbr1's core against the kernel's bbr, ACK by ACK, on live traffic"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                   help="deep, shallow, flows, loss, policer, app_limited, idle, heavy_loss, rto, undo, "
                   "long_idle, probe_rtt_twice, cc_switch, fast, sub_ms (default: all)")
    p.add_argument("--seconds", type=float, default=12.0,
                   help="length of each scenario, or its own minimum where longer (default 12)")
    p.add_argument("--out", help="results directory (default results/lockstep-bbr1-TIME)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..experiments import lockstep
    need_root()
    out = Path(args.out) if args.out else default_out("lockstep", "bbr1")
    text, unexplained = lockstep.run(args.scenarios, args.seconds, out)
    emit(text)
    emit(f"results: {out}")
    return EXIT_FAILED if unexplained else 0
