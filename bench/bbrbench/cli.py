"""Command line: bbrbench compare | run | sweep | report | cleanup | check | model | reproduce | fidelity |
overhead | lockstep | delaybench | linkbench | cluster. Results go to stdout; diagnostics through logging to
stderr (-v, -q).
Building the parser imports nothing beyond the standard library (scripts/bbrbench-gen.py runs it with the
system's python3)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import provenance
from .errors import HarnessError, NotRunnable, RunsInterrupted, UsageError
from .scenario import SCENARIO_DIR, ScenarioError, find_scenario, parse_assignment, prepare_raw, validate

EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_NOT_RUNNABLE = 3
EXIT_INTERRUPTED = 130
log = logging.getLogger("bbrbench")
# Also in cluster.py, which the parser must not import (it is built with the standard library only).
DEFAULT_CERTS = Path.home() / ".config" / "bbrbench" / "cluster"


def _emit(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def _emit_json(doc: dict[str, Any]) -> None:
    """--json: the one document on stdout (as iperf3 -J), in place of every human line."""
    _emit(json.dumps(doc, indent=2, default=str))


def _result_doc(directory: Path, name: str, kind: str) -> dict[str, Any]:
    """A results file as --json prints it: its content, and where the results are."""
    from .results import read_json
    return {**read_json(directory / name, kind), "results_dir": str(directory.resolve())}


def _directory_doc(directory: Path) -> dict[str, Any]:
    """What `report --json` prints for a compare, sweep or run directory."""
    if (directory / "compare.json").is_file():
        return _result_doc(directory, "compare.json", "compare")
    if (directory / "plan.json").is_file():
        return _result_doc(directory, "sweep.json", "sweep")
    return _result_doc(directory, "summary.json", "summary")


def _default_out(kind: str, name: str) -> Path:
    return Path.cwd() / "results" / f"{kind}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def _need_root() -> None:
    if os.geteuid() != 0:
        raise HarnessError("must run as root (network namespaces, qdiscs)")


def _load(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    path = find_scenario(args.scenario)
    overrides = [parse_assignment(a) for a in args.overrides]
    return path, prepare_raw(path, args.profile, overrides)


@contextlib.contextmanager
def _executor(args: argparse.Namespace) -> Iterator[Any]:
    """Where a sweep's runs go: None (this host) or the Dask cluster of --cluster, connected."""
    if not args.cluster:
        yield None
        return
    from .cluster import DaskExecutor
    with DaskExecutor(args.cluster, Path(args.cluster_certs), args.tries) as executor:
        yield executor


def _need_root_here(args: argparse.Namespace) -> None:
    """Runs on this host need root; with --cluster the workers run them, and the client needs none."""
    if not args.cluster:
        _need_root()


def cmd_compare(args: argparse.Namespace) -> int:
    from .experiments import compare
    from .testbed import system
    _, raw = _load(args)
    if args.report_only:
        if not args.out:
            raise UsageError("--report-only needs --out DIR")
        text = compare.report(Path(args.out), args.delay)
        if args.json:
            _emit_json(_directory_doc(Path(args.out)))
        else:
            _emit(text)
        return 0
    catalog = system.catalog()
    plan = compare.plan(raw, catalog, args.algos, args.reps)
    _need_root()
    # No timestamp: rerunning the same compare (compare.sh) resumes it, as reproduce does.
    out = Path(args.out) if args.out else Path.cwd() / "results" / f"compare-{args.profile or 'default'}"
    text = compare.run(plan, catalog, out, args.delay)
    if args.json:
        _emit_json(_directory_doc(out))
    else:
        _emit(text)
        _emit(f"results: {out} (page: {out / compare.PAGE})")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .analysis.report import write_report
    from .testbed import runner, system
    _, raw = _load(args)
    catalog = system.catalog()
    scenario = validate(raw, catalog)
    _need_root()
    out = Path(args.out) if args.out else _default_out("run", scenario.name)
    runner.run(scenario, raw, out, catalog.bbrkit)
    text = write_report(out, plots=not args.no_plots)
    if args.json:
        _emit_json(_directory_doc(out))
    else:
        _emit(text)
        _emit(f"results: {out}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import sweep
    from .testbed import system
    path, raw = _load(args)
    grid = [parse_assignment(g) for g in args.grid]
    catalog = system.catalog()
    plan = sweep.plan(raw, catalog, grid, args.reps)
    _need_root_here(args)
    out = Path(args.out) if args.out else _default_out("sweep", str(raw.get("name", path.stem)))
    with _executor(args) as executor:
        _emit(sweep.run_sweep(plan, out, catalog, executor, args.mix_hosts))
    _emit(f"results: {out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if (directory / "compare.json").is_file():
        from .experiments import compare
        text = compare.report(directory, args.delay)
    elif (directory / "plan.json").is_file():
        from .sweep import aggregate
        text = aggregate(directory, args.mix_hosts)
    elif (directory / "scenario.json").is_file():
        from .analysis.report import write_report
        text = write_report(directory, plots=not args.no_plots)
    else:
        raise HarnessError(f"{directory}: not a run, sweep or compare results directory")
    if args.json:
        _emit_json(_directory_doc(directory))
    else:
        _emit(text)
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from .testbed.cleanup import cleanup_stale
    _need_root()
    removed = cleanup_stale(include_live=args.all)
    _emit(f"cleanup: removed {len(removed)} item(s)" if removed else "cleanup: nothing left behind")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .testbed import system
    _, raw = _load(args)
    scenario = validate(raw, system.catalog())
    _emit(json.dumps(scenario.to_dict(), indent=2))
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    from .analysis.sharemodel import ShareInputs, bbr_share
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
    _emit(json.dumps(result.__dict__, indent=2))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from .repro import reproduce
    from .testbed.procs import CHECKOUT_BUILD
    out = Path(args.out) if args.out else Path.cwd() / "results" / f"reproduce-{args.profile}"
    if args.from_summary:
        report = reproduce.rebuild([Path(p) for p in args.from_summary], out)
    elif args.report_only:
        report = reproduce.report_only(out, args.mix_hosts)
    else:
        # Planning validates every experiment's points; run_all plans again (a second of bbrctl queries).
        reproduce.plans(reproduce.select(reproduce.experiments(), args.only), args.profile, args.reps)
        _need_root_here(args)
        with _executor(args) as executor:
            report = reproduce.run_all(args.profile, args.only, out, CHECKOUT_BUILD.parent,
                                       provenance.command_line(), executor, args.mix_hosts,
                                       args.reps)
    _emit(f"report: {report}")
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    from .experiments import fidelity
    # The scenario is optional, so a first KEY=VALUE lands in its place: it is an override.
    if args.scenario and "=" in args.scenario:
        args.overrides, args.scenario = [args.scenario, *args.overrides], None
    args.scenario = args.scenario or str(fidelity.DEFAULT_SCENARIO)
    from .testbed import system
    _, raw = _load(args)
    catalog = system.catalog()
    plan = fidelity.plan(raw, catalog, args.reps)
    _need_root_here(args)
    out = Path(args.out) if args.out else _default_out("fidelity", str(raw.get("name", "fidelity")))
    with _executor(args) as executor:
        _emit(fidelity.run(plan, catalog, out, executor, args.mix_hosts))
    _emit(f"results: {out}")
    return 0


def cmd_overhead(args: argparse.Namespace) -> int:
    from .experiments import overhead
    if args.pool:
        _emit(overhead.pooled([Path(d) for d in args.pool]))
        return 0
    _need_root()
    out = Path(args.out) if args.out else _default_out("overhead", "veth")
    _emit(overhead.run(out, args.reps, args.seconds, args.algos, args.pin, not args.no_floor))
    _emit(f"results: {out}")
    return 0


def cmd_delaybench(args: argparse.Namespace) -> int:
    from .experiments import delaybench
    delaybench.check_args(args)
    _need_root()
    _emit(delaybench.run_benchmark(args))
    return 0


def cmd_linkbench(args: argparse.Namespace) -> int:
    from .experiments import linkbench
    linkbench.check_args(args)
    _need_root()
    _emit(linkbench.run_benchmark(args))
    return 0


def cmd_lockstep(args: argparse.Namespace) -> int:
    from .experiments import lockstep
    _need_root()
    out = Path(args.out) if args.out else _default_out("lockstep", "bbr1")
    text, unexplained = lockstep.run(args.scenarios, args.seconds, out)
    _emit(text)
    _emit(f"results: {out}")
    return EXIT_FAILED if unexplained else 0


def cmd_cluster_init(args: argparse.Namespace) -> int:
    import shlex

    from .cluster import init_certs, start_commands
    if not 0 < args.port < 65536:
        raise UsageError(f"--port: {args.port} is not a TCP port")
    if args.tries < 1:
        raise UsageError(f"--tries: must be >= 1 (got {args.tries})")
    certs = Path(args.certs)
    init_certs(certs, args.force)
    scheduler, worker, env = start_commands(certs.resolve(), args.host, args.port, args.tries)
    setting = " ".join(f"{k}={v}" for k, v in env.items())
    _emit(f"certificates: {certs} (copy this directory to every test host and to the submitting host)\n"
          f"scheduler:\n  {setting} {shlex.join(scheduler)}\n"
          f"worker (on each test host, as root, with bbrctl on PATH):\n  {shlex.join(worker)}\n"
          f"then: bbrbench sweep ... --cluster tls://{args.host}:{args.port} --cluster-certs {certs}")
    return 0


class _Version(argparse.Action):
    """--version, worked out only when asked for (it may run git)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> None:
        _emit(provenance.version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    verbosity = common.add_mutually_exclusive_group()
    # SUPPRESS: a subcommand's parser would otherwise reset what was given before the subcommand.
    verbosity.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                           help="debug messages too")
    verbosity.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                           help="warnings and errors only, no progress bars")

    parser = argparse.ArgumentParser(prog="bbrbench", parents=[common],
                                     description="Congestion-control testbed in network namespaces.")
    parser.add_argument("-V", "--version", action=_Version, help="print bbrbench's version (and git revision)")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        # A help string is %-formatted, a description is not: "95%%" in one is "95%" in the other.
        return sub.add_parser(name, help=help_, description=help_.replace("%%", "%"), parents=[common])

    def cluster_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--cluster", metavar="tls://HOST:PORT",
                       help="run on the test hosts of this Dask scheduler (bbrbench cluster init) instead of here")
        p.add_argument("--cluster-certs", default=os.environ.get("BBRBENCH_CLUSTER_CERTS", str(DEFAULT_CERTS)),
                       metavar="DIR", help="the certificates of cluster init (default $BBRBENCH_CLUSTER_CERTS or "
                       "~/.config/bbrbench/cluster)")
        p.add_argument("--tries", type=int, default=3,
                       help="with --cluster: tries of a run that ends abnormally before it counts as failed "
                       "(default 3; runs lost with their worker: the scheduler's allowed failures)")
        p.add_argument("--mix-hosts", action="store_true",
                       help="pool repetitions from hosts whose kernels or algorithm objects differ")

    def json_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true",
                       help="print one JSON document on stdout instead of the table (the results file with "
                            "results_dir; on failure {\"error\", \"exit_status\"})")

    def delay_arg(p: argparse.ArgumentParser) -> None:
        # The choices are compare.DELAY_STATS's keys (compare is not imported here: it needs numpy).
        p.add_argument("--delay", choices=("p95", "mean"), default="p95",
                       help="compare's throughput-delay figure: each run's 95th-percentile or mean queueing delay "
                            "(default p95, as Pantheon)")

    def scenario_args(p: argparse.ArgumentParser, optional: bool = False) -> None:
        p.add_argument("scenario", nargs="?" if optional else None,
                       help="scenario name in bbrbench/scenarios/ (e.g. mix, smoke) or a path to a TOML file")
        p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                       help="override scenario keys, e.g. bottleneck.rate_mbit=20 flows.0.algo=bbr flows.*.count=2")
        p.add_argument("--profile", help="apply the scenario's [profiles.NAME] overrides first")

    co = add("compare", "each algorithm alone on one emulated path, with repetitions: table, figures, HTML page")
    co.add_argument("algos", nargs="*", metavar="ALGO",
                    help="congestion controls (default: cubic, bbr and every bbrkit algorithm); bbr is always added")
    co.add_argument("--reps", type=int, help="repetitions (default: the scenario's, 5; 3 with --profile quick)")
    co.add_argument("--profile", help="quick: 5 s runs, 3 repetitions")
    co.add_argument("--out", help="results directory (default results/compare-PROFILE, e.g. results/compare-quick); "
                                  "rerun to resume")
    co.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="override a key of the compare path, e.g. --set bottleneck.rate_mbit=100")
    co.add_argument("--report-only", action="store_true", help="rebuild table, figures and page of --out")
    delay_arg(co)
    json_arg(co)
    # The path compare runs on: a scenario file like run's, which --set and --profile modify.
    co.set_defaults(func=cmd_compare, scenario=str(SCENARIO_DIR / "compare.toml"))

    run = add("run", "run one scenario")
    scenario_args(run)
    run.add_argument("--out", help="results directory (default results/run-NAME-TIME)")
    run.add_argument("--no-plots", action="store_true", help="table and summary only")
    json_arg(run)
    run.set_defaults(func=cmd_run)

    sw = add("sweep", "run a parameter grid with repetitions (resumable)")
    scenario_args(sw)
    sw.add_argument("--grid", action="append", default=[], metavar="KEY=[V1,V2]",
                    help="add a grid dimension (TOML array), e.g. --grid 'bottleneck.buffer_bdp=[0.5,2]'")
    sw.add_argument("--reps", type=int, help="repetitions per grid point (default sweep.repetitions or 1)")
    sw.add_argument("--out", help="sweep directory; rerun with the same --out to resume")
    cluster_args(sw)
    sw.set_defaults(func=cmd_sweep)

    rep = add("report", "recompute summary, table and plots of a run, sweep or compare directory")
    rep.add_argument("dir")
    rep.add_argument("--no-plots", action="store_true")
    rep.add_argument("--mix-hosts", action="store_true",
                     help="pool repetitions from hosts whose kernels or algorithm objects differ")
    delay_arg(rep)
    json_arg(rep)
    rep.set_defaults(func=cmd_report)

    cl = add("cleanup", "remove leftovers of crashed runs (namespaces, processes, attachments)")
    cl.add_argument("--all", action="store_true", help="also remove those of runs that look alive")
    cl.set_defaults(func=cmd_cleanup)

    ck = add("check", "validate a scenario and print it resolved")
    scenario_args(ck)
    ck.set_defaults(func=cmd_check)

    mo = add("model", "BBR's share against CUBIC by the Ware et al. model (seed 004)")
    mo.add_argument("--bbr", type=int, required=True, help="number of BBR flows")
    mo.add_argument("--queue-bdp", type=float, required=True, help="bottleneck buffer in BDPs")
    mo.add_argument("--rate-mbit", type=float, default=10.0)
    mo.add_argument("--rtt-ms", type=float, default=40.0)
    mo.add_argument("--duration-s", type=float, default=60.0)
    mo.add_argument("--packet-bytes", type=int, default=1514)
    mo.set_defaults(func=cmd_model)

    rp = add("reproduce", "run the seed papers' experiments (bbrbench/scenarios/repro) and report")
    rp.add_argument("--profile", choices=("quick", "standard", "paper"), default="quick",
                    help="quick: a smoke run, ~45 min, verdicts mostly 'not testable'; standard: every claim's "
                         "time scale, >= 3 repetitions, ~5 h (run it seed by seed with --only); paper: the "
                         "papers' durations and repetitions, days (default quick)")
    rp.add_argument("--only", action="append", default=[], metavar="SEED[/EXPERIMENT]",
                    help="run only these, e.g. --only seed000 --only seed002/testbed (repeatable)")
    rp.add_argument("--out", help="results directory (default results/reproduce-PROFILE); rerun to resume")
    rp.add_argument("--report-only", action="store_true", help="rebuild the report from --out without running")
    rp.add_argument("--from-summary", action="append", default=[], metavar="FILE",
                    help="rebuild the report into --out from reports' summary.json files alone, their runs not at "
                         "hand: claims decided again on the recorded means and intervals (repeatable; a later "
                         "file's experiments replace an earlier one's)")
    rp.add_argument("--reps", type=int, metavar="N",
                    help="repetitions per point instead of the profile's; on an existing --out only the missing "
                         "ones run (e.g. --only seed000/fig4.13 --reps 5 where 3 left a claim undecided)")
    cluster_args(rp)
    rp.set_defaults(func=cmd_reproduce)

    fi = add("fidelity", "bbr1 against the kernel's bbr: ratios with 95%% CIs (sweep, resumable)")
    scenario_args(fi, optional=True)
    fi.add_argument("--reps", type=int, help="repetitions per point (default the scenario's)")
    fi.add_argument("--out", help="sweep directory; rerun with the same --out to resume")
    cluster_args(fi)
    fi.set_defaults(func=cmd_fidelity)

    ov = add("overhead", "CPU per byte and ns per callback of bbr1 against the kernel's bbr and the struct_ops "
                         "floor (bbr_floor) over an unshaped veth")
    ov.add_argument("algos", nargs="*", metavar="ALGO",
                    help="bbrkit algorithms to measure besides bbr, bbr_floor and bbr1 (e.g. bbr3 bbr_acd)")
    ov.add_argument("--reps", type=int, default=5, help="runs per algorithm, rotating the order (default 5)")
    ov.add_argument("--pin", action="store_true", help="iperf3 client on CPU 0, server on CPU 1")
    ov.add_argument("--seconds", type=int, default=8, help="length of each iperf3 run (default 8)")
    ov.add_argument("--out", help="results directory (default results/overhead-veth-TIME)")
    ov.add_argument("--no-floor", action="store_true",
                    help="leave bbr_floor out: only bbr1 (and ALGOs) against bbr, a third more pairs per hour")
    ov.add_argument("--pool", nargs="+", metavar="DIR",
                    help="run nothing: one table over the repetitions of these results directories")
    ov.set_defaults(func=cmd_overhead)

    ls = add("lockstep", "bbr1's core against the kernel's bbr, ACK by ACK, on live traffic")
    ls.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                    help="deep, shallow, flows, loss, policer, app_limited, idle, heavy_loss, rto, undo, "
                    "long_idle, probe_rtt_twice, cc_switch, fast, sub_ms (default: all)")
    ls.add_argument("--seconds", type=float, default=12.0,
                    help="length of each scenario, or its own minimum where longer (default 12)")
    ls.add_argument("--out", help="results directory (default results/lockstep-bbr1-TIME)")
    ls.set_defaults(func=cmd_lockstep)

    cu = add("cluster", "a Dask cluster of test hosts for sweep, reproduce and fidelity --cluster")
    cu_sub = cu.add_subparsers(dest="cluster_command", required=True)
    ci = cu_sub.add_parser("init", parents=[common], help="write the TLS certificates and print the commands that "
                           "start a scheduler and a worker",
                           description="write the TLS certificates and print the commands that start a scheduler "
                           "and a worker")
    ci.add_argument("--certs", default=os.environ.get("BBRBENCH_CLUSTER_CERTS", str(DEFAULT_CERTS)), metavar="DIR",
                    help="where (default $BBRBENCH_CLUSTER_CERTS or ~/.config/bbrbench/cluster)")
    ci.add_argument("--host", default="127.0.0.1", help="address the scheduler listens on (default loopback)")
    ci.add_argument("--port", type=int, default=8786, help="the scheduler's port (default 8786)")
    ci.add_argument("--tries", type=int, default=3, help="tries of a run whose worker dies (default 3)")
    ci.add_argument("--force", action="store_true", help="replace existing certificates")
    ci.set_defaults(func=cmd_cluster_init)

    db = add("delaybench", "accuracy and capacity of the delay line (bbrkit-delay)")
    from .experiments.delaybench import add_arguments
    add_arguments(db)
    db.set_defaults(func=cmd_delaybench)

    lb = add("linkbench", "added delay and forwarding capacity of the link emulator (bbrkit-link)")
    from .experiments.linkbench import add_arguments as add_link_arguments
    add_link_arguments(lb)
    lb.set_defaults(func=cmd_linkbench)
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
            _emit_json({"error": "invalid command line (see stderr)", "exit_status": EXIT_INVALID})
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
        _emit_json({"error": what, "exit_status": status})
    return status
