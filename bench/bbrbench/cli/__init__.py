"""Command line: bbrbench compare | run | sweep | report | cleanup | check | model | reproduce | fidelity |
overhead | lockstep | cluster | delaybench | linkbench | rollout | conformance, one module each (HELP,
add_arguments, run), in the order of COMMANDS. Results go to stdout; diagnostics through logging to stderr (-v, -q).
Building the parser imports nothing beyond the standard library (scripts/bbrbench-gen.py runs it with the
system's python3): a command module imports what its run needs when it runs."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import provenance
from ..errors import HarnessError, NotRunnable, RunsInterrupted, RunsLost, UsageError
from ..scenario import ScenarioError
from . import (
    check,
    cleanup,
    cluster,
    compare,
    conformance,
    delaybench,
    fidelity,
    linkbench,
    lockstep,
    model,
    overhead,
    report,
    reproduce,
    rollout,
    run,
    sweep,
)
from .common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_NOT_RUNNABLE, emit, emit_json, verbosity_parser

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_NOT_RUNNABLE", "build_parser", "main"]

# The subcommands in the order --help, the man page and the completion list them.
COMMANDS = {"compare": compare, "run": run, "sweep": sweep, "report": report, "cleanup": cleanup, "check": check,
            "model": model, "reproduce": reproduce, "fidelity": fidelity, "overhead": overhead,
            "lockstep": lockstep, "cluster": cluster, "delaybench": delaybench, "linkbench": linkbench,
            "rollout": rollout, "conformance": conformance}
log = logging.getLogger("bbrbench")


class _Version(argparse.Action):
    """--version, worked out only when asked for (it may run git)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> None:
        emit(provenance.version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    common = verbosity_parser()
    parser = argparse.ArgumentParser(prog="bbrbench", parents=[common],
                                     description="Congestion-control testbed in network namespaces.")
    parser.add_argument("-V", "--version", action=_Version, help="print bbrbench's version (and git revision)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        # A help string is %-formatted, a description is not: "95%%" in one is "95%" in the other.
        command = sub.add_parser(name, help=module.HELP, description=module.HELP.replace("%%", "%"),
                                 parents=[common])
        module.add_arguments(command)
    return parser


def _setup_logging(args: argparse.Namespace) -> None:
    verbose, quiet = getattr(args, "verbose", False), getattr(args, "quiet", False)
    if verbose and quiet:
        raise UsageError("-v and -q exclude each other")
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s" if level > logging.DEBUG
                                           else "%(asctime)s %(name)s: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


def _resume_command(argv: list[str], out: Path) -> str:
    """The command line that resumes an interrupted experiment: the same one, with --out."""
    given = any(a == "--out" or a.startswith("--out=") for a in argv)
    return shlex.join(["bbrbench", *argv, *([] if given else ["--out", str(out)])])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    provenance.set_command(argv)
    parser = build_parser()
    try:
        # Overrides may come after options (run smoke --out D KEY=VALUE): argparse leaves those over as extras.
        args, extras = parser.parse_known_args(argv)
        stray = [e for e in extras if e.startswith("-") or "=" not in e or not hasattr(args, "overrides")]
        if stray:
            parser.error(f"unrecognized arguments: {' '.join(stray)}")
    except SystemExit as exc:
        # argparse has said what is wrong on stderr; --json still gets its one document.
        if exc.code == EXIT_INVALID and "--json" in argv:
            emit_json({"error": "invalid command line (see stderr)", "exit_status": EXIT_INVALID})
        raise
    if extras:
        args.overrides = list(args.overrides) + extras
    try:
        _setup_logging(args)
        return int(args.func(args))
    except UsageError as exc:
        return _failed(args, EXIT_INVALID, str(exc))
    except ScenarioError as exc:
        return _failed(args, EXIT_INVALID, f"invalid scenario: {exc}")
    except NotRunnable as exc:
        return _failed(args, EXIT_NOT_RUNNABLE, f"not runnable on this kernel: {exc}")
    except RunsLost as exc:
        return _failed(args, EXIT_FAILED, f"{exc}; resume with {_resume_command(argv, exc.out)}", "error: ")
    except HarnessError as exc:
        return _failed(args, EXIT_FAILED, str(exc), "error: ")
    except RunsInterrupted as exc:
        return _failed(args, EXIT_INTERRUPTED, f"interrupted; kept {exc.kept}/{exc.total} runs in {exc.out}; resume "
                       f"with {_resume_command(argv, exc.out)}")
    except KeyboardInterrupt:
        # The run's namespaces, processes and bbrkit attachments are gone; what it wrote stays.
        return _failed(args, EXIT_INTERRUPTED, "interrupted; test network removed, results written so far kept")


def _failed(args: argparse.Namespace, status: int, what: str, label: str = "") -> int:
    """One line on stderr, 'bbrbench: LABELWHAT'; under --json also {"error": WHAT} as stdout's document."""
    log.error("bbrbench: %s%s", label, what)
    if getattr(args, "json", False):
        emit_json({"error": what, "exit_status": status})
    return status
