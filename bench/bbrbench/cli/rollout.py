"""bbrbench rollout: compare a policy rule's arms from `bbrctl export` (one host) or a Prometheus server (a
fleet), promote the candidate through ramp steps while its guards pass, and revert the rule to its holdback
when a guard is breached. The exit status says which (EXIT_*), and --log writes every step as JSON lines."""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import re
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import IO, Any

from ..errors import HarnessError, UsageError
from .common import emit, emit_json

# Exit statuses beside bbrbench's own (0 done, 1 failed, 2 usage, 3 not runnable, 130 interrupted).
EXIT_PASSED = 0
EXIT_REVERTED = 4
EXIT_INCONCLUSIVE = 5
OUTCOMES = {"passed": EXIT_PASSED, "breached": EXIT_REVERTED, "undecided": EXIT_INCONCLUSIVE}

HELP = ("compare a bbrctl policy rule's arms from bbrctl export or Prometheus, promote the candidate through "
        f"--ramp steps while every guard passes, revert to the holdback when one is breached; exit {EXIT_PASSED} "
        f"passed, {EXIT_REVERTED} breached (reverted unless --no-revert), {EXIT_INCONCLUSIVE} inconclusive "
        "(left at the current step)")
log = logging.getLogger("bbrbench")
SCRAPE_TIMEOUT_S = 10.0
# The keys of `bbrctl policy show --json` a ramp step carries over when it writes the rule's weights anew;
# a rule with any other key is refused rather than rewritten without it.
# At this share the holdback gets no new connection, so a step there is applied, not watched.
FULL_SHARE_PCT = 100.0
RULE_KEYS = {"name", "slot", "priority", "cgroup", "lport", "rport", "dst", "fallback", "holdback", "arms"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rule", help="the policy rule (bbrctl policy list)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--url", default="http://127.0.0.1:9563/metrics", help="bbrctl export's /metrics")
    source.add_argument("--prometheus", metavar="URL",
                        help="a Prometheus server (e.g. http://prom:9090): the rule's series summed over every "
                             "host it scrapes, through its query API")
    p.add_argument("--window", type=float, default=600.0, help="seconds to watch each step (default 600)")
    p.add_argument("--interval", type=float, default=15.0, help="seconds between scrapes (default 15)")
    p.add_argument("--guard", action="append", default=[], metavar="NAME=MARGIN",
                   help="stalls=D or retrans=D (candidate minus holdback), goodput=F or rtt=F (ratio off 1 "
                        "by more than F); breached when the 95%% interval is wholly past it, passed when wholly "
                        "within (default: stalls=0.05 retrans=0.01)")
    p.add_argument("--min-intervals", type=int, default=3,
                   help="intervals of each arm before a guard may act (default 3)")
    p.add_argument("--ramp", metavar="PCT,...",
                   help="the candidate's share of new connections at each step, e.g. 1,10,50,100: each step is "
                        "watched for --window and promoted only when every guard passed (needs one candidate arm); "
                        "100 follows a passed step unwatched (no holdback is left to compare with)")
    p.add_argument("--no-revert", action="store_true", help="report a breach without reverting")
    p.add_argument("--migrate", action="store_true",
                   help="on revert, also move the rule's established connections (bbrctl policy migrate)")
    p.add_argument("--log", metavar="FILE", help="append every step as one JSON object per line ('-': stderr)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)


def parse_ramp(text: str) -> list[float]:
    """'1,10,50,100' into increasing percentages in (0, 100]; a UsageError names the bad one."""
    steps: list[float] = []
    for part in text.split(","):
        try:
            pct = float(part)
        except ValueError:
            raise UsageError(f"rollout: --ramp step '{part}' is not a number") from None
        if not 0 < pct <= 100 or (steps and pct <= steps[-1]):
            raise UsageError(f"rollout: --ramp step '{part}' must be above the one before and in (0, 100]")
        steps.append(pct)
    if steps[0] == FULL_SHARE_PCT:
        raise UsageError("rollout: --ramp step '100' needs a step below it: at 100% there is no holdback to judge by")
    return steps


class StepLog:
    """--log: one JSON object per line, each with its UTC time, flushed as written."""

    def __init__(self, out: IO[str] | None) -> None:
        self.out = out

    def __call__(self, event: str, **fields: Any) -> None:
        if self.out is None:
            return
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        self.out.write(json.dumps({"time": stamp, "event": event, **fields}, default=str) + "\n")
        self.out.flush()


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as r:
            return str(r.read().decode())
    except OSError as e:
        raise HarnessError(f"rollout: cannot read {url}: {e}") from None


def reader(args: argparse.Namespace) -> Callable[[float], Any]:
    """The source as t -> Scrape: the exporter's text, or the Prometheus query API's sums over the fleet."""
    from ..analysis.rollout import parse_query, parse_scrape, query

    if not args.prometheus:
        return lambda t: parse_scrape(_get(args.url), args.rule, t)
    api = args.prometheus.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": query(args.rule)})

    def read(t: float) -> Any:
        try:
            return parse_query(json.loads(_get(api)), t)
        except ValueError as e:
            raise HarnessError(f"rollout: {args.prometheus} answered no usable vector: {e}") from None
    return read


def rule_doc(rule: str) -> dict[str, Any]:
    from ..testbed.system import bbrctl

    rules = json.loads(bbrctl("policy", "show", rule, "--json")).get("rules", [])
    if not rules:
        raise HarnessError(f"rollout: rule '{rule}' not found (bbrctl policy list)")
    return dict(rules[0])


def set_share(rule: str, pct: float) -> None:
    """Writes the rule anew with the candidate at pct% and the holdback at the rest, every other key kept."""
    from ..testbed.system import bbrctl

    doc = rule_doc(rule)
    unknown = set(doc) - RULE_KEYS
    if unknown:
        raise HarnessError(f"rollout: rule '{rule}' has keys a ramp step cannot carry over: "
                           f"{', '.join(sorted(unknown))}")
    hold = doc["holdback"]
    cand = [a["algo"] for a in doc["arms"] if a["algo"] != hold]
    kv = [f"arms={cand[0]}:{pct:g},{hold}:{100 - pct:g}", f"holdback={hold}", f"priority={doc['priority']}"]
    kv += [f"{k}={doc[k]}" for k in ("cgroup", "lport", "rport") if doc.get(k) is not None]
    kv += [f"dst={','.join(doc['dst'])}"] if doc.get("dst") else []
    kv += ["fallback=yes"] if doc.get("fallback") else []
    bbrctl("policy", "add", rule, "replace=yes", *kv)


def has_migrate() -> bool:
    """Whether this bbrctl has `policy migrate`: its policy --help lists the verb (read-only, unlike trying it)."""
    from ..testbed.system import bbrctl

    return re.search(r"^\s+migrate\b", bbrctl("policy", "--help", check=False), re.M) is not None


def watch(args: argparse.Namespace, read: Callable[[float], Any], guards: dict[str, float],
          step_log: StepLog) -> tuple[Any, Any, float]:
    """One step: scrape every --interval for --window seconds, stopping at the first breach.
    (comparison, verdict, elapsed seconds)."""
    from ..analysis.rollout import Comparison, check_guards

    start = time.monotonic()
    prev = read(0.0)
    if not prev.arms or prev.holdback is None:
        raise HarnessError(f"rollout: no series of rule '{args.rule}' at the source (bbrctl policy list)")
    comparison = Comparison(prev.holdback)
    verdict = check_guards(comparison, guards, args.min_intervals)
    while time.monotonic() - start + args.interval <= args.window + 1e-9:
        time.sleep(max(0.0, prev.t + args.interval - (time.monotonic() - start)))
        cur = read(time.monotonic() - start)
        comparison.add(prev, cur)
        prev = cur
        verdict = check_guards(comparison, guards, args.min_intervals)
        step_log("check", t_s=round(cur.t, 3), outcome=verdict.outcome,
                 checks=[c.__dict__ for c in verdict.checks])
        log.info("rollout: t=%.0f s, %s", cur.t, verdict.breach.describe() if verdict.breach else verdict.outcome)
        if verdict.breach:
            break
    return comparison, verdict, prev.t


def run(args: argparse.Namespace) -> int:
    from ..analysis.rollout import parse_guards
    from ..testbed.system import bbrctl

    try:
        guards = parse_guards(args.guard or ["stalls=0.05", "retrans=0.01"])
    except ValueError as e:
        raise UsageError(f"rollout: {e}") from None
    if args.interval <= 0 or args.window < args.interval or args.min_intervals < 2:
        raise UsageError("rollout: need --interval > 0, --window >= --interval and --min-intervals >= 2")
    ramp = parse_ramp(args.ramp) if args.ramp else []
    if args.migrate and not has_migrate():
        raise UsageError("rollout: --migrate needs `bbrctl policy migrate`, which this bbrctl does not have")
    if ramp and len(rule_doc(args.rule)["arms"]) != 2:
        raise UsageError(f"rollout: --ramp needs rule '{args.rule}' to have two arms, a candidate and the holdback")
    out = None if not args.log else sys.stderr if args.log == "-" else open(args.log, "a", encoding="utf-8")
    step_log = StepLog(out)
    try:
        step_log("start", rule=args.rule, guards=guards, ramp=ramp, window_s=args.window,
                 source=args.prometheus or args.url)
        doc = _rollout(args, guards, ramp, step_log, bbrctl)
        step_log("end", outcome=doc["outcome"], reverted=doc["reverted"], step=doc["step"])
    finally:
        if out is not None and out is not sys.stderr:
            out.close()
    if args.json:
        emit_json(doc)
    else:
        for arm, metrics in sorted(doc["summary"].items()):
            cells = [f"{k} {v['mean']:.4g} ± {v['ci95'] or 0:.2g} (n={v['n']})" for k, v in sorted(metrics.items())]
            emit(f"{arm}{' (holdback)' if arm == doc['holdback'] else ''}: " + ", ".join(cells))
        emit(doc["verdict"])
    return OUTCOMES[doc["outcome"]]


def _rollout(args: argparse.Namespace, guards: dict[str, float], ramp: list[float], step_log: StepLog,
             bbrctl: Callable[..., str]) -> dict[str, Any]:
    read = reader(args)
    steps: list[float | None] = list(ramp) or [None]
    doc: dict[str, Any] = {}
    for i, pct in enumerate(steps):
        if pct is not None:
            set_share(args.rule, pct)
            step_log("step", share_pct=pct)
        if pct == FULL_SHARE_PCT:
            # The holdback gets no new connection: nothing to compare with. The step before passed.
            doc["step"] = pct
            doc["verdict"] += f"; promoted to {pct:g}%"
            return doc
        comparison, verdict, elapsed = watch(args, read, guards, step_log)
        outcome = verdict.outcome
        doc = {"rule": args.rule, "holdback": comparison.holdback, "guards": guards, "step": pct,
               "elapsed_s": round(elapsed, 3), "summary": comparison.summary(),
               "checks": [c.__dict__ for c in verdict.checks], "outcome": outcome, "reverted": False,
               "migrated": False}
        if verdict.breach:
            doc["breach"] = verdict.breach.__dict__
            if args.no_revert:
                doc["verdict"] = f"{verdict.breach.describe()}; not reverted (--no-revert)"
                return doc
            bbrctl("policy", "revert", args.rule)
            doc["reverted"] = True
            step_log("revert", rule=args.rule, holdback=comparison.holdback, breach=verdict.breach.__dict__)
            if args.migrate:
                bbrctl("policy", "migrate", args.rule)
                doc["migrated"] = True
                step_log("migrate", rule=args.rule)
            doc["verdict"] = f"{verdict.breach.describe()}; rule {args.rule} reverted to {comparison.holdback}"
            return doc
        if outcome != "passed":
            open_checks = [c.describe() for c in verdict.checks if c.decision != "passed"] or ["no candidate arm"]
            doc["verdict"] = f"inconclusive after {elapsed:.0f} s" + (f" at {pct:g}%" if pct is not None else "") + \
                ": " + "; ".join(open_checks)
            return doc
        if i + 1 < len(steps):
            step_log("promote", share_pct=steps[i + 1])
        doc["verdict"] = f"every guard passed in {elapsed:.0f} s" + (f" at {pct:g}%" if pct is not None else "")
    return doc
