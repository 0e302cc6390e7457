"""bbrbench overhead: what the BPF programs cost per byte and per callback."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import default_out, emit, need_root

HELP = ("CPU per byte and ns per callback of bbr1 against the kernel's bbr and the struct_ops floor (bbr_floor) "
        "over an unshaped veth")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("algos", nargs="*", metavar="ALGO",
                   help="bbrkit algorithms to measure besides bbr, bbr_floor and bbr1 (e.g. bbr3 bbr_acd)")
    p.add_argument("--reps", type=int, default=5, help="runs per algorithm, rotating the order (default 5)")
    p.add_argument("--pin", action="store_true", help="iperf3 client on CPU 0, server on CPU 1")
    p.add_argument("--seconds", type=int, default=8, help="length of each iperf3 run (default 8)")
    p.add_argument("--out", help="results directory (default results/overhead-veth-TIME)")
    p.add_argument("--no-floor", action="store_true",
                   help="leave bbr_floor out: only bbr1 (and ALGOs) against bbr, a third more pairs per hour")
    p.add_argument("--pool", nargs="+", metavar="DIR",
                   help="run nothing: one table over the repetitions of these results directories")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..experiments import overhead
    if args.pool:
        emit(overhead.pooled([Path(d) for d in args.pool]))
        return 0
    need_root()
    out = Path(args.out) if args.out else default_out("overhead", "veth")
    emit(overhead.run(out, args.reps, args.seconds, args.algos, args.pin, not args.no_floor))
    emit(f"results: {out}")
    return 0
