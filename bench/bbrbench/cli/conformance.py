"""bbrbench conformance: the BBR draft's example test cases (Appendix A) on bbr3, bbr2, bbr1, bbr_draft."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import default_out, emit, need_root

HELP = ("the BBR draft's test cases (draft-ietf-ccwg-bbr-06 Appendix A, A.1-A.22) on real transfers and the "
        "twin, checked against each algorithm's own state; exit 1 when a case fails")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("algos", nargs="*", metavar="ALGO", help="bbr3, bbr2, bbr1, bbr_draft (default: all four)")
    p.add_argument("--case", action="append", default=[], metavar="A.N", help="only this case (repeatable)")
    p.add_argument("--runner", choices=("real", "twin", "both"), default="both",
                   help="the cases of this runner only (default both: each case on its own runner)")
    p.add_argument("--out", help="results directory; outcomes already there are kept unless rerun "
                   "(default results/conformance-TIME)")
    p.add_argument("--markdown", metavar="FILE", help="also write the Markdown report (docs/conformance.md)")
    p.add_argument("--doc", action="store_true",
                   help="every case on every algorithm into a new results directory, then docs/conformance.md "
                   "and its plots (data/conformance/); needs a clean checkout")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: the checks again on the records kept in --out, table and --markdown")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..experiments import conformance
    algos = args.algos or list(conformance.ALGOS)
    if args.report_only:
        if not args.out:
            raise UsageError("--report-only needs --out")
        out = Path(args.out)
        cases = conformance.select(conformance.load_cases(), args.case)
        outcomes = conformance.reevaluate(out, cases)
    else:
        if args.doc:
            if args.case or args.algos or args.out or args.markdown:
                raise UsageError("--doc runs every case on every algorithm into a new directory: no ALGO, --case, "
                                 "--out or --markdown")
            conformance.require_clean_checkout()
        out = Path(args.out) if args.out else default_out("conformance", "bbr")
        cases = conformance.plan(algos, args.case)
        if any(c.runner == "real" for c in cases) and args.runner != "twin":
            need_root()
        outcomes = conformance.run(algos, cases, args.runner, out)
    emit(conformance.table(outcomes, cases))
    if args.doc:
        conformance.write_doc(out, cases, conformance.doc_path())
    if args.markdown:
        conformance.write_markdown(Path(args.markdown),
                                   conformance.markdown(conformance.read_results(out / "conformance.json"), cases))
    emit(f"results: {out}")
    return conformance.exit_status(outcomes)
