"""bbrbench cluster: the certificate authority of a Dask cluster of test hosts (init, add-host, add-user,
revoke) and its scheduler and workers."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..errors import UsageError
from .common import CERTS_DEFAULT, emit, verbosity_parser

HELP = "a Dask cluster of test hosts for sweep, reproduce and fidelity --cluster"
CA_DEFAULT = str(Path.home() / ".config" / "bbrbench" / "cluster-ca")
COMMANDS = {
    "init": "make the certificate authority (its key stays here) and print how to set up the cluster",
    "add-host": "issue a host's certificate (scheduler or worker; its names/addresses as SANs)",
    "add-user": "issue a user's certificate (submits sweeps; client use only)",
    "revoke": "revoke a host's or user's certificate (then copy crl.pem to every member)",
    "scheduler": "run the scheduler (needs a host certificate)",
    "worker": "run a worker on this test host, as root (needs a host certificate)",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="cluster_command", required=True)
    cmd = {name: sub.add_parser(name, parents=[verbosity_parser()], help=text, description=text)
           for name, text in COMMANDS.items()}
    for name in ("init", "add-host", "add-user", "revoke"):
        cmd[name].add_argument("--ca", default=CA_DEFAULT, metavar="DIR",
                               help="the authority's directory (default ~/.config/bbrbench/cluster-ca)")
    for name in ("add-host", "add-user", "revoke"):
        cmd[name].add_argument("name", help="the host's or user's name")
    for name in ("add-host", "add-user"):
        cmd[name].add_argument("--out", required=True, metavar="DIR", help="a new directory for the certificate")
    cmd["add-host"].add_argument("--address", action="append", required=True,
                                 help="a name or IP address the host is reached at (repeatable)")
    init = cmd["init"]
    init.add_argument("--host", default="127.0.0.1", help="address the scheduler listens on (default loopback)")
    init.add_argument("--port", type=int, default=8786, help="the scheduler's port (default 8786)")
    init.add_argument("--force", action="store_true", help="replace an existing authority")
    for name in ("scheduler", "worker"):
        cmd[name].add_argument("--certs", default=CERTS_DEFAULT, metavar="DIR",
                               help="this host's certificate directory (cluster add-host)")
        cmd[name].add_argument("--host", default="127.0.0.1",
                               help="the address to listen on, one of the certificate's (default loopback)")
    cmd["scheduler"].add_argument("--port", type=int, default=8786, help="the port (default 8786)")
    cmd["worker"].add_argument("scheduler", metavar="tls://HOST:PORT", help="the scheduler")
    for c in cmd.values():
        c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import cluster
    command = args.cluster_command
    if command == "init":
        if not 0 < args.port < 65536:
            raise UsageError(f"--port: {args.port} is not a TCP port")
        until = cluster.init_ca(Path(args.ca), args.force)
        scheduler, worker = cluster.start_commands(Path("DIR"), args.host, args.port)
        me = "bbrbench cluster"
        emit(f"authority: {args.ca} (valid until {until}; keep ca-key.pem here, never on a test host)\n"
             f"certificates (each into a new directory DIR, then copied to that host or user only):\n"
             f"  {me} add-host scheduler --address {args.host} --ca {shlex.quote(args.ca)} --out DIR\n"
             f"  {me} add-host HOST --address HOST_ADDRESS --ca {shlex.quote(args.ca)} --out DIR     (each test host)\n"
             f"  {me} add-user $USER --ca {shlex.quote(args.ca)} --out DIR\n"
             f"scheduler:\n  {shlex.join(scheduler)}\n"
             f"worker (on each test host, as root, with bbrctl on PATH; --host HOST_ADDRESS):\n  {shlex.join(worker)}\n"
             f"then: bbrbench sweep ... --cluster tls://{args.host}:{args.port} --cluster-certs DIR")
    elif command in ("add-host", "add-user"):
        until = cluster.issue(Path(args.ca), args.name, Path(args.out),
                              args.address if command == "add-host" else None)
        emit(f"{args.name}: certificate in {args.out}, valid until {until}")
    elif command == "revoke":
        cluster.revoke(Path(args.ca), args.name)
        emit(f"{args.name}: revoked; copy {Path(args.ca) / cluster.CRL_FILE} into every member's certificate "
             f"directory and restart the scheduler and workers")
    elif command == "scheduler":
        cluster.serve_scheduler(Path(args.certs), args.host, args.port, Path(CA_DEFAULT), lambda until: emit(
            f"scheduler on tls://{args.host}:{args.port}, certificate valid until {until}"))
    else:
        cluster.serve_worker(args.scheduler, Path(args.certs), args.host)
    return 0
