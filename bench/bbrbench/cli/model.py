"""bbrbench model: seed 004's bandwidth-share model, no traffic."""

from __future__ import annotations

import argparse
import json

from ..errors import UsageError
from .common import emit

HELP = "BBR's share against CUBIC by the Ware et al. model (seed 004)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bbr", type=int, required=True, help="number of BBR flows")
    p.add_argument("--queue-bdp", type=float, required=True, help="bottleneck buffer in BDPs")
    p.add_argument("--rate-mbit", type=float, default=10.0)
    p.add_argument("--rtt-ms", type=float, default=40.0)
    p.add_argument("--duration-s", type=float, default=60.0)
    p.add_argument("--packet-bytes", type=int, default=1514)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis.sharemodel import ShareInputs, bbr_share
    # Checked here, flag by flag: the model's own check speaks in the paper's symbols (N, q, c, l, d).
    if args.bbr < 1:
        raise UsageError(f"--bbr: must be >= 1 (got {args.bbr})")
    for flag in ("queue_bdp", "rate_mbit", "rtt_ms", "duration_s", "packet_bytes"):
        if not getattr(args, flag) > 0:
            raise UsageError(f"--{flag.replace('_', '-')}: must be > 0 (got {getattr(args, flag)})")
    rate_pps = args.rate_mbit * 1e6 / 8 / args.packet_bytes
    bdp_packets = rate_pps * args.rtt_ms / 1e3
    result = bbr_share(ShareInputs(n_bbr=args.bbr, queue_packets=args.queue_bdp * bdp_packets, capacity_pps=rate_pps,
                                   base_rtt_s=args.rtt_ms / 1e3, duration_s=args.duration_s))
    emit(json.dumps(result.__dict__, indent=2))
    return 0
