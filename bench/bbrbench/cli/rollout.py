"""bbrbench rollout: compare a policy rule's arms from `bbrctl export` and revert to the holdback when a guard
is breached."""

from __future__ import annotations

import argparse
import json
import logging
import time
import urllib.request
from typing import Any

from ..errors import HarnessError, UsageError
from .common import emit, emit_json

HELP = ("compare a bbrctl policy rule's arms from bbrctl export's metrics over a window; revert the rule to its "
        "holdback when a guard is breached")
log = logging.getLogger("bbrbench")
SCRAPE_TIMEOUT_S = 10.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rule", help="the policy rule (bbrctl policy list)")
    p.add_argument("--url", default="http://127.0.0.1:9563/metrics", help="bbrctl export's /metrics")
    p.add_argument("--window", type=float, default=600.0, help="seconds to watch (default 600)")
    p.add_argument("--interval", type=float, default=15.0, help="seconds between scrapes (default 15)")
    p.add_argument("--guard", action="append", default=[], metavar="NAME=MARGIN",
                   help="stalls=D or retrans=D (candidate minus holdback), goodput=F or rtt=F (ratio off 1 "
                        "by more than F); breached when the 95%% interval is wholly past it "
                        "(default: stalls=0.05 retrans=0.01)")
    p.add_argument("--min-intervals", type=int, default=3,
                   help="intervals of each arm before a guard may act (default 3)")
    p.add_argument("--no-revert", action="store_true", help="report a breach without reverting")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)


def _scrape(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as r:
            return str(r.read().decode())
    except OSError as e:
        raise HarnessError(f"rollout: cannot scrape {url}: {e}") from None


def run(args: argparse.Namespace) -> int:
    from ..analysis.rollout import Comparison, check_guards, parse_guards, parse_scrape
    from ..testbed.system import bbrctl

    try:
        guards = parse_guards(args.guard or ["stalls=0.05", "retrans=0.01"])
    except ValueError as e:
        raise UsageError(f"rollout: {e}") from None
    if args.interval <= 0 or args.window < args.interval or args.min_intervals < 2:
        raise UsageError("rollout: need --interval > 0, --window >= --interval and --min-intervals >= 2")
    start = time.monotonic()
    prev = parse_scrape(_scrape(args.url), args.rule, 0.0)
    if not prev.arms or prev.holdback is None:
        raise HarnessError(f"rollout: {args.url} has no series of rule '{args.rule}' (bbrctl policy list)")
    comparison = Comparison(prev.holdback)
    breach = None
    while time.monotonic() - start + args.interval <= args.window + 1e-9:
        time.sleep(max(0.0, prev.t + args.interval - (time.monotonic() - start)))
        cur = parse_scrape(_scrape(args.url), args.rule, time.monotonic() - start)
        comparison.add(prev, cur)
        prev = cur
        breach = check_guards(comparison, guards, args.min_intervals)
        log.info("rollout: t=%.0f s, %s", cur.t, breach.describe() if breach else "no guard breached")
        if breach:
            break
    reverted = False
    if breach and not args.no_revert:
        bbrctl("policy", "revert", args.rule)
        reverted = True
    doc: dict[str, Any] = {"rule": args.rule, "holdback": comparison.holdback, "guards": guards,
                           "elapsed_s": round(prev.t, 3), "summary": comparison.summary(),
                           "breach": breach.__dict__ if breach else None, "reverted": reverted}
    if args.json:
        emit_json(doc)
    else:
        for arm, metrics in sorted(doc["summary"].items()):
            cells = [f"{k} {v['mean']:.4g} ± {v['ci95'] or 0:.2g} (n={v['n']})" for k, v in sorted(metrics.items())]
            emit(f"{arm}{' (holdback)' if arm == comparison.holdback else ''}: " + ", ".join(cells))
        emit(f"{breach.describe()}; " + (f"rule {args.rule} reverted to {comparison.holdback}" if reverted
                                        else "not reverted (--no-revert)") if breach
             else f"no guard breached in {prev.t:.0f} s")
    log.debug("%s", json.dumps(doc, default=str))
    return 0
