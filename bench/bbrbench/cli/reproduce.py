"""bbrbench reproduce: the seed papers' experiments and their report."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import provenance
from .common import add_cluster_args, emit, executor, need_root_here

HELP = "run the seed papers' experiments (bbrbench/scenarios/repro) and report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", choices=("quick", "standard", "paper"), default="quick",
                   help="quick: a smoke run, ~45 min, verdicts mostly 'not testable'; standard: every claim's "
                        "time scale, >= 3 repetitions, ~5 h (run it seed by seed with --only); paper: the "
                        "papers' durations and repetitions, days (default quick)")
    p.add_argument("--only", action="append", default=[], metavar="SEED[/EXPERIMENT]",
                   help="run only these, e.g. --only seed000 --only seed002/testbed (repeatable)")
    p.add_argument("--out", help="results directory (default results/reproduce-PROFILE); rerun to resume")
    p.add_argument("--report-only", action="store_true", help="rebuild the report from --out without running")
    p.add_argument("--from-summary", action="append", default=[], metavar="FILE",
                   help="rebuild the report into --out from reports' summary.json files alone, their runs not at "
                        "hand: claims decided again on the recorded means and intervals (repeatable; a later "
                        "file's experiments replace an earlier one's, seed 004's section only in the parts it "
                        "ran)")
    p.add_argument("--trust-unchecked", action="append", default=[], metavar="FILE",
                   help="one of the --from-summary files that pooled runs before reproduce left out those that "
                        "failed the trust check: its points, and every claim over them, are marked not "
                        "trust-checked (repeatable)")
    p.add_argument("--readme", metavar="FILE",
                   help="with --from-summary or --report-only: also rewrite FILE's generated overview of the claims "
                        "(docs/reproduction/README.md) from the report's summary.json")
    p.add_argument("--reps", type=int, metavar="N",
                   help="repetitions per point instead of the profile's; on an existing --out only the missing "
                        "ones run (e.g. --only seed000/fig4.13 --reps 5 where 3 left a claim undecided)")
    add_cluster_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..repro import reproduce
    from ..testbed.procs import CHECKOUT_BUILD
    out = Path(args.out) if args.out else Path.cwd() / "results" / f"reproduce-{args.profile}"
    if args.from_summary:
        report = reproduce.rebuild([Path(p) for p in args.from_summary], out,
                                   [Path(p) for p in args.trust_unchecked])
    elif args.report_only:
        report = reproduce.report_only(out, args.mix_hosts)
    else:
        # Planning validates every experiment's points; run_all plans again (a second of bbrctl queries).
        reproduce.plans(reproduce.select(reproduce.experiments(), args.only), args.profile, args.reps)
        need_root_here(args)
        with executor(args) as where:
            report = reproduce.run_all(args.profile, args.only, out, CHECKOUT_BUILD.parent,
                                       provenance.command_line(), where, args.mix_hosts, args.reps)
    if args.readme:
        from ..repro.readme import write_readme_overview
        write_readme_overview(Path(args.readme), report.parent / "summary.json")
    emit(f"report: {report}")
    return 0
