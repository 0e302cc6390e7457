"""What the command modules share: exit statuses, output on stdout, the scenario and cluster arguments,
and the checks before a run. The standard library only, as every command module's add_arguments."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..scenario import find_scenario, parse_assignment, prepare_raw

EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_NOT_RUNNABLE = 3
EXIT_INTERRUPTED = 130
# Also in cluster.py, which the parser must not import (it is built with the standard library only).
DEFAULT_CERTS = Path.home() / ".config" / "bbrbench" / "cluster"
CERTS_DEFAULT = os.environ.get("BBRBENCH_CLUSTER_CERTS", str(DEFAULT_CERTS))


def emit(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def emit_json(doc: dict[str, Any]) -> None:
    """--json: the one document on stdout (as iperf3 -J), in place of every human line."""
    emit(json.dumps(doc, indent=2, default=str))


def directory_doc(directory: Path) -> dict[str, Any]:
    """What --json prints for a compare, sweep or run directory: its results file, and where it is."""
    from ..results import read_json
    if (directory / "compare.json").is_file():
        name, kind = "compare.json", "compare"
    elif (directory / "plan.json").is_file():
        name, kind = "sweep.json", "sweep"
    else:
        name, kind = "summary.json", "summary"
    return {**read_json(directory / name, kind), "results_dir": str(directory.resolve())}


def emit_outcome(args: argparse.Namespace, text: str, directory: Path, footer: str | None = None) -> None:
    """A command's table (and a footer line saying where its results are), or under --json its results file."""
    if args.json:
        emit_json(directory_doc(directory))
        return
    emit(text)
    if footer:
        emit(footer)


def default_out(kind: str, name: str) -> Path:
    return Path.cwd() / "results" / f"{kind}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def need_root() -> None:
    if os.geteuid() != 0:
        raise HarnessError("must run as root (network namespaces, qdiscs)")


def need_root_here(args: argparse.Namespace) -> None:
    """Runs on this host need root; with --cluster or --slurm other hosts run them, and the client needs
    none."""
    if not (args.cluster or args.slurm):
        need_root()


def load_scenario(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The scenario of args.scenario with its --profile and KEY=VALUE overrides applied, not yet validated."""
    path = find_scenario(args.scenario)
    overrides = [parse_assignment(a) for a in args.overrides]
    return path, prepare_raw(path, args.profile, overrides)


@contextlib.contextmanager
def executor(args: argparse.Namespace) -> Iterator[Any]:
    """Where a sweep's runs go: None (this host), the Dask cluster of --cluster, connected, or Slurm."""
    if args.slurm:
        from ..slurm import SlurmExecutor
        with SlurmExecutor(args.tries, args.sbatch_arg) as slurm:
            yield slurm
        return
    if not args.cluster:
        yield None
        return
    from ..cluster import DaskExecutor
    with DaskExecutor(args.cluster, Path(args.cluster_certs), args.tries, args.mix_hosts) as connected:
        yield connected


def verbosity_parser() -> argparse.ArgumentParser:
    """-v/-q, a parent of the top-level parser and of every command's."""
    common = argparse.ArgumentParser(add_help=False)
    verbosity = common.add_mutually_exclusive_group()
    # SUPPRESS: a subcommand's parser would otherwise reset what was given before the subcommand.
    verbosity.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                           help="debug messages too")
    verbosity.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                           help="warnings and errors only, no progress bars")
    return common


def add_scenario_args(p: argparse.ArgumentParser, optional: bool = False) -> None:
    p.add_argument("scenario", nargs="?" if optional else None,
                   help="scenario name in bbrbench/scenarios/ (e.g. mix, smoke) or a path to a TOML file")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="override scenario keys, e.g. bottleneck.rate_mbit=20 flows.0.algo=bbr flows.*.count=2")
    p.add_argument("--profile", help="apply the scenario's [profiles.NAME] overrides first")


def add_cluster_args(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--cluster", metavar="tls://HOST:PORT",
                       help="run on the test hosts of this Dask scheduler (bbrbench cluster scheduler) instead of "
                            "here")
    where.add_argument("--slurm", action="store_true",
                       help="run each repetition as a task of a Slurm job array (--out on a path every node "
                            "shares; docs/cluster.md)")
    p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="with --slurm: pass ARG to sbatch, e.g. --sbatch-arg=--partition=net (repeatable)")
    p.add_argument("--cluster-certs", default=CERTS_DEFAULT,
                   metavar="DIR", help="your certificate from cluster add-user (default $BBRBENCH_CLUSTER_CERTS or "
                   "~/.config/bbrbench/cluster)")
    p.add_argument("--tries", type=int, default=3,
                   help="with --cluster or --slurm: tries of a run whose worker or task dies or that ends "
                   "abnormally, each on a "
                   "free host, before it counts as lost (default 3)")
    add_mix_hosts_arg(p)


def add_mix_hosts_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mix-hosts", action="store_true",
                   help="pool repetitions from hosts whose kernels or algorithm objects differ, or a dirty "
                        "tree's with other invocations'")


def add_json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout instead of the table (the results file with "
                        "results_dir; on failure {\"error\", \"exit_status\"})")


def add_delay_arg(p: argparse.ArgumentParser) -> None:
    # The choices are analysis/comparison.DELAY_STATS's keys (compare is not imported here: it needs numpy).
    p.add_argument("--delay", choices=("p95", "mean"), default="p95",
                   help="compare's throughput-delay figure: each run's 95th-percentile or mean queueing delay "
                        "(default p95, as Pantheon)")
