"""Command line: bbrbench run | sweep | report | cleanup | check | model | reproduce | fidelity | overhead |
lockstep."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .procs import HarnessError, NotRunnable
from .scenario import ScenarioError, find_scenario, parse_assignment, prepare_raw, validate

REPO_ROOT = Path(__file__).resolve().parents[2]
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_NOT_RUNNABLE = 3
EXIT_INTERRUPTED = 130


def _default_out(kind: str, name: str) -> Path:
    return REPO_ROOT / "results" / f"{kind}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def _need_root() -> None:
    if os.geteuid() != 0:
        raise HarnessError("must run as root (network namespaces, qdiscs)")


def _load(args: argparse.Namespace) -> tuple[Path, dict[str, Any], list[tuple[str, Any]]]:
    path = find_scenario(args.scenario)
    overrides = [parse_assignment(a) for a in args.overrides]
    return path, prepare_raw(path, args.profile, overrides), overrides


def cmd_run(args: argparse.Namespace) -> int:
    from . import runner, system
    path, raw, _ = _load(args)
    catalog = system.catalog()
    scenario = validate(raw, catalog)
    _need_root()
    out = Path(args.out) if args.out else _default_out("run", scenario.name)
    table = runner.run(scenario, raw, out, catalog.bbrkit, quiet=args.quiet)
    print(table)
    print(f"results: {out}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import sweep, system
    path, raw, _ = _load(args)
    grid = [parse_assignment(g) for g in args.grid]
    catalog = system.catalog()
    plan = sweep.plan(raw, catalog, grid, args.reps)
    _need_root()
    out = Path(args.out) if args.out else _default_out("sweep", str(raw.get("name", path.stem)))
    text = sweep.run_sweep(plan, out, catalog, quiet=args.quiet)
    print(text)
    print(f"results: {out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if (directory / "sweep.json").is_file() or (directory / "plan.json").is_file():
        from .sweep import aggregate
        print(aggregate(directory))
    elif (directory / "scenario.json").is_file():
        from .report import write_report
        print(write_report(directory, plots=not args.no_plots))
    else:
        raise HarnessError(f"{directory}: not a run or sweep results directory")
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from .runner import cleanup_stale
    _need_root()
    removed = cleanup_stale(include_live=args.all)
    print(f"cleanup: removed {len(removed)} item(s)" if removed else "cleanup: nothing left behind")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from . import system
    _, raw, _ = _load(args)
    scenario = validate(raw, system.catalog())
    print(json.dumps(scenario.to_dict(), indent=2))
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    from .sharemodel import ShareInputs, bbr_share
    rate_pps = args.rate_mbit * 1e6 / 8 / args.packet_bytes
    bdp_packets = rate_pps * args.rtt_ms / 1e3
    inputs = ShareInputs(n_bbr=args.bbr, queue_packets=args.queue_bdp * bdp_packets, capacity_pps=rate_pps,
                         base_rtt_s=args.rtt_ms / 1e3, duration_s=args.duration_s)
    result = bbr_share(inputs)
    print(json.dumps(result.__dict__, indent=2))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from . import reproduce
    out = Path(args.out) if args.out else REPO_ROOT / "results" / f"reproduce-{args.profile}"
    if args.report_only:
        report = reproduce.report_only(out)
    else:
        _need_root()
        report = reproduce.run_all(args.profile, args.only, out, REPO_ROOT, reproduce.command_line(sys.argv[1:]))
    print(f"report: {report}")
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    from . import fidelity
    args.scenario = args.scenario or str(fidelity.DEFAULT_SCENARIO)
    _, raw, _ = _load(args)
    _need_root()
    out = Path(args.out) if args.out else _default_out("fidelity", str(raw.get("name", "fidelity")))
    print(fidelity.run(raw, out, args.reps, quiet=args.quiet))
    print(f"results: {out}")
    return 0


def cmd_overhead(args: argparse.Namespace) -> int:
    from . import overhead
    _need_root()
    out = Path(args.out) if args.out else _default_out("overhead", "veth")
    print(overhead.run(out, args.reps, args.seconds))
    print(f"results: {out}")
    return 0


def cmd_lockstep(args: argparse.Namespace) -> int:
    from . import lockstep
    _need_root()
    out = Path(args.out) if args.out else _default_out("lockstep", "bbr1")
    text, unexplained = lockstep.run(args.scenarios, args.seconds, out)
    print(text)
    print(f"results: {out}")
    return EXIT_FAILED if unexplained else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bbrbench", description="Congestion-control testbed in network namespaces.")
    sub = parser.add_subparsers(dest="command", required=True)

    def scenario_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("scenario", help="scenario name in bench/scenarios/ or a path to a TOML file")
        p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                       help="override scenario keys, e.g. bottleneck.rate_mbit=20 flows.0.algo=bbr flows.*.count=2")
        p.add_argument("--profile", help="apply the scenario's [profiles.NAME] overrides first")

    run = sub.add_parser("run", help="run one scenario")
    scenario_args(run)
    run.add_argument("--out", help="results directory (default results/run-NAME-TIME)")
    run.add_argument("--quiet", action="store_true", help="no progress line")
    run.set_defaults(func=cmd_run)

    sw = sub.add_parser("sweep", help="run a parameter grid with repetitions (resumable)")
    scenario_args(sw)
    sw.add_argument("--grid", action="append", default=[], metavar="KEY=[V1,V2]",
                    help="add a grid dimension (TOML array), e.g. --grid 'bottleneck.buffer_bdp=[0.5,2]'")
    sw.add_argument("--reps", type=int, help="repetitions per grid point (default sweep.repetitions or 1)")
    sw.add_argument("--out", help="sweep directory; rerun with the same --out to resume")
    sw.add_argument("--quiet", action="store_true")
    sw.set_defaults(func=cmd_sweep)

    rep = sub.add_parser("report", help="recompute summary, table and plots of a run or sweep directory")
    rep.add_argument("dir")
    rep.add_argument("--no-plots", action="store_true")
    rep.set_defaults(func=cmd_report)

    cl = sub.add_parser("cleanup", help="remove leftovers of crashed runs (namespaces, processes, attachments)")
    cl.add_argument("--all", action="store_true", help="also remove those of runs that look alive")
    cl.set_defaults(func=cmd_cleanup)

    ck = sub.add_parser("check", help="validate a scenario and print it resolved")
    scenario_args(ck)
    ck.set_defaults(func=cmd_check)

    mo = sub.add_parser("model", help="BBR's share against CUBIC by the Ware et al. model (seed 004)")
    mo.add_argument("--bbr", type=int, required=True, help="number of BBR flows")
    mo.add_argument("--queue-bdp", type=float, required=True, help="bottleneck buffer in BDPs")
    mo.add_argument("--rate-mbit", type=float, default=10.0)
    mo.add_argument("--rtt-ms", type=float, default=40.0)
    mo.add_argument("--duration-s", type=float, default=60.0)
    mo.add_argument("--packet-bytes", type=int, default=1514)
    mo.set_defaults(func=cmd_model)

    rp = sub.add_parser("reproduce", help="run the seed papers' experiments (bench/scenarios/repro) and report")
    rp.add_argument("--profile", choices=("quick", "paper"), default="quick")
    rp.add_argument("--only", action="append", default=[], metavar="SEED[/EXPERIMENT]",
                    help="run only these, e.g. --only seed000 --only seed002/testbed (repeatable)")
    rp.add_argument("--out", help="results directory (default results/reproduce-PROFILE); rerun to resume")
    rp.add_argument("--report-only", action="store_true", help="rebuild the report from --out without running")
    rp.set_defaults(func=cmd_reproduce)

    fi = sub.add_parser("fidelity", help="bbr1 against the kernel's bbr: ratios with 95%% CIs (sweep, resumable)")
    fi.add_argument("scenario", nargs="?", help="sweep scenario varying flows.0.algo over [bbr, bbr1] "
                    "(default bench/scenarios/bench/fidelity.toml)")
    fi.add_argument("overrides", nargs="*", metavar="KEY=VALUE")
    fi.add_argument("--profile")
    fi.add_argument("--reps", type=int, help="repetitions per point (default the scenario's)")
    fi.add_argument("--out", help="sweep directory; rerun with the same --out to resume")
    fi.add_argument("--quiet", action="store_true")
    fi.set_defaults(func=cmd_fidelity)

    ov = sub.add_parser("overhead", help="CPU per byte of bbr1 against the kernel's bbr over an unshaped veth")
    ov.add_argument("--reps", type=int, default=5, help="runs per algorithm, alternating (default 5)")
    ov.add_argument("--seconds", type=int, default=8, help="length of each iperf3 run (default 8)")
    ov.add_argument("--out", help="results directory (default results/overhead-veth-TIME)")
    ov.set_defaults(func=cmd_overhead)

    ls = sub.add_parser("lockstep", help="bbr1's core against the kernel's bbr, ACK by ACK, on live traffic")
    ls.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                    help="deep, shallow, flows, loss, policer, app_limited, idle, heavy_loss (default: all)")
    ls.add_argument("--seconds", type=float, default=12.0, help="length of each scenario (default 12)")
    ls.add_argument("--out", help="results directory (default results/lockstep-bbr1-TIME)")
    ls.set_defaults(func=cmd_lockstep)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    # Overrides may come after options (run smoke --out D KEY=VALUE): argparse leaves those over as extras.
    args, extras = parser.parse_known_args(argv)
    stray = [e for e in extras if e.startswith("-") or "=" not in e or not hasattr(args, "overrides")]
    if stray:
        parser.error(f"unrecognized arguments: {' '.join(stray)}")
    if extras:
        args.overrides = list(args.overrides) + extras
    try:
        return int(args.func(args))
    except ScenarioError as exc:
        print(f"bbrbench: invalid scenario: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except NotRunnable as exc:
        print(f"bbrbench: not runnable on this kernel: {exc}", file=sys.stderr)
        return EXIT_NOT_RUNNABLE
    except HarnessError as exc:
        print(f"bbrbench: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("bbrbench: interrupted; everything removed", file=sys.stderr)
        return EXIT_INTERRUPTED
