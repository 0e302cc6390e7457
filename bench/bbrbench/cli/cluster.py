"""bbrbench cluster init: the certificates and commands of a Dask cluster of test hosts."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..errors import UsageError
from .common import CERTS_DEFAULT, emit, verbosity_parser

HELP = "a Dask cluster of test hosts for sweep, reproduce and fidelity --cluster"
INIT_HELP = "write the TLS certificates and print the commands that start a scheduler and a worker"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="cluster_command", required=True)
    init = sub.add_parser("init", parents=[verbosity_parser()], help=INIT_HELP, description=INIT_HELP)
    init.add_argument("--certs", default=CERTS_DEFAULT, metavar="DIR",
                      help="where (default $BBRBENCH_CLUSTER_CERTS or ~/.config/bbrbench/cluster)")
    init.add_argument("--host", default="127.0.0.1", help="address the scheduler listens on (default loopback)")
    init.add_argument("--port", type=int, default=8786, help="the scheduler's port (default 8786)")
    init.add_argument("--tries", type=int, default=3, help="tries of a run whose worker dies (default 3)")
    init.add_argument("--force", action="store_true", help="replace existing certificates")
    init.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    from ..cluster import init_certs, start_commands
    if not 0 < args.port < 65536:
        raise UsageError(f"--port: {args.port} is not a TCP port")
    if args.tries < 1:
        raise UsageError(f"--tries: must be >= 1 (got {args.tries})")
    certs = Path(args.certs)
    init_certs(certs, args.force)
    scheduler, worker, env = start_commands(certs.resolve(), args.host, args.port, args.tries)
    setting = " ".join(f"{k}={v}" for k, v in env.items())
    emit(f"certificates: {certs} (copy this directory to every test host and to the submitting host)\n"
         f"scheduler:\n  {setting} {shlex.join(scheduler)}\n"
         f"worker (on each test host, as root, with bbrctl on PATH):\n  {shlex.join(worker)}\n"
         f"then: bbrbench sweep ... --cluster tls://{args.host}:{args.port} --cluster-certs {certs}")
    return 0
