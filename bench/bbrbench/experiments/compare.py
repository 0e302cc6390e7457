"""bbrbench compare: each algorithm alone on the same emulated path, with repetitions, set against the
kernel's bbr.

The path and the cases (one flow; two flows 2 s apart) are scenarios/compare.toml; the algorithm is a
sweep grid dimension over flows.0.algo, so runs interleave (every algorithm and case once, then the next
repetition) and a drifting machine load spreads over all algorithms alike, and an interrupted compare
resumes like any sweep. Per case and algorithm the table gives each metric's mean with its 95% interval
and the ratio of means to bbr (delta-method interval, Fieller's where bbr's own mean is uncertain; '*' where
it excludes 1, '?' where it is unbounded, '=' where no repetition on either side varied). Writes compare.json,
table.txt, compare.html and plots/ into the sweep directory.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from .. import provenance, sweep
from ..analysis import html
from ..analysis.comparison import (
    ALGO_KEY,
    CASE_KEY,
    DEFAULT_DELAY,
    METRICS,
    REFERENCE,
    case_name,
    describe,
    figures,
    legend,
    rows_against_reference,
    table,
    verdicts,
    window_text,
)
from ..analysis.report import write_summary
from ..errors import HarnessError, UsageError
from ..results import read_json, write_json
from ..scenario import SCENARIO_DIR, AlgoCatalog, Scenario, validate
from ..testbed.host import NOT_RECORDED, loss_decisions, read_host

log = logging.getLogger(__name__)
SCENARIO = SCENARIO_DIR / "compare.toml"
RESULT_FILE = "compare.json"
PAGE = "compare.html"
KERNEL_ALGOS = ("cubic", "bbr")


def default_algos(catalog: AlgoCatalog) -> list[str]:
    """cubic and bbr from the kernel, then every bbrkit algorithm bbrctl offers."""
    return [a for a in KERNEL_ALGOS if a in catalog.kernel] + sorted(catalog.bbrkit)


def choose_algos(requested: list[str], catalog: AlgoCatalog) -> list[str]:
    """The algorithms to run, each once, bbr always among them (every ratio is to it)."""
    algos = list(dict.fromkeys(requested or default_algos(catalog)))
    unknown = [a for a in algos if not catalog.known(a)]
    if unknown:
        raise UsageError(f"compare: unknown congestion control {', '.join(unknown)} (available: {catalog.describe()})")
    if not catalog.known(REFERENCE):
        raise HarnessError(f"compare: the kernel has no {REFERENCE}, the reference of every ratio")
    if REFERENCE not in algos:
        algos.insert(0, REFERENCE)
    return algos


def report(out: Path, delay: str = DEFAULT_DELAY) -> str:
    """Recompute the summary, table, figures and page of a finished or partial compare directory. Every
    run's summary is computed again from its raw samples and the sweep aggregated over the columns' metrics,
    so a directory an older bbrbench made (whole-run metrics, other columns) reports as a new one does."""
    plan_ = sweep.load_plan(out)
    for point in plan_.points:
        for run_dir in sweep.done_runs(out, point.id):
            write_summary(run_dir)
    if plan_.metrics != METRICS:
        plan_.metrics = METRICS
        write_json(out / "plan.json", "plan", plan_.to_json())
    sweep.aggregate(out)
    aggregated = read_json(out / "sweep.json", "sweep")
    rows = rows_against_reference(aggregated)
    name_loss_decisions(out, rows)
    cases = resolved_cases(plan_)
    previous = read_json(out / RESULT_FILE, "compare") if (out / RESULT_FILE).is_file() else {}
    doc = {**{k: v for k, v in previous.items() if k != "format"}, "reference": REFERENCE,
           "repetitions": plan_.repetitions, "scenario": plan_.raw, "window": window_text(cases), "rows": rows}
    write_json(out / RESULT_FILE, "compare", doc)
    runs_of = {row["point"]: sweep.done_runs(out, row["point"]) for row in rows}
    text = table(rows) + "\n" + legend(cases)
    (out / "table.txt").write_text(text + "\n")
    html.write_page(out / PAGE, "bbrbench compare", describe(cases, plan_.repetitions, run_hosts(out, rows), doc),
                    table(rows, "html") + verdicts(rows, runs_of), legend(cases),
                    figures(out, rows, runs_of, cases, delay))
    return text


def resolved_cases(plan_: sweep.Plan) -> dict[int, Scenario]:
    """Each case's scenario as its runs got it (profile, --set overrides and defaults applied), by flow
    count. Resolved again from the plan rather than from a run directory, so that a compare none of whose
    runs finished still describes its path; every algorithm counts as known (the plan was validated
    against the real list when it was made)."""
    algos = frozenset(str(p.overrides[ALGO_KEY]) for p in plan_.points)
    catalog = AlgoCatalog(kernel=frozenset(), bbrkit=algos)
    cases: dict[int, Scenario] = {}
    for point in plan_.points:
        count = int(point.overrides.get(CASE_KEY, 1))
        if count not in cases:
            cases[count] = validate(sweep.point_raw(plan_.raw, point.overrides), catalog)
    return dict(sorted(cases.items()))


def name_loss_decisions(out: Path, rows: list[dict[str, Any]]) -> None:
    """Each bbr2/bbr3 row gets the loss-decision path its runs ran, from their host.json (bbrctl list's
    features.loss_decisions while attached): "per-packet", "ack-time", or both joined by "/"."""
    for row in rows:
        paths = {loss_decisions(h, row["algo"])
                 for run_dir in sweep.done_runs(out, row["point"]) if (h := read_host(run_dir)) is not None}
        named = sorted(p for p in paths if p is not None and p != NOT_RECORDED)
        if named:
            row["loss_decisions"] = "/".join(named)


def run_hosts(out: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for row in rows for run_dir in sweep.done_runs(out, row["point"])
            if (h := read_host(run_dir)) is not None]


def plan_runs(raw: dict[str, Any], catalog: AlgoCatalog, requested: list[str], reps: int | None) -> sweep.Plan:
    """The compare's sweep, every point validated: called before anything needs root or runs."""
    algos = choose_algos(requested, catalog)
    raw = {**raw, "sweep": {**raw.get("sweep", {}), "metrics": METRICS}}
    plan_ = sweep.plan_runs(raw, catalog, [(ALGO_KEY, algos)], reps)
    if plan_.repetitions < 2:
        raise UsageError("--reps: compare needs at least 2 repetitions for its intervals")
    return plan_


def point_name(point: sweep.Point) -> str:
    """'bbr_acd, 2 flows': how progress lines name a point."""
    return f"{point.overrides[ALGO_KEY]}, {case_name(int(point.overrides.get(CASE_KEY, 1)))}"


def algorithms(plan_: sweep.Plan) -> list[str]:
    return list(dict.fromkeys(str(p.overrides[ALGO_KEY]) for p in plan_.points))


def run(plan_: sweep.Plan, catalog: AlgoCatalog, out: Path, delay: str = DEFAULT_DELAY) -> str:
    algos = algorithms(plan_)
    log.info("compare: %s, %d repetition(s), results in %s", ", ".join(algos), plan_.repetitions, out)
    previous = read_json(out / RESULT_FILE, "compare") if (out / RESULT_FILE).is_file() else {}
    invocation = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), **provenance.record()}
    sweep.run_sweep(plan_, out, catalog, describe=point_name)
    invocation["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    # A resumed compare keeps the earlier invocations: its runs came from all of them.
    invocations = [*previous.get("invocations", []), invocation]
    write_json(out / RESULT_FILE, "compare", {
        "algorithms": algos, "started": previous.get("started", invocation["started"]),
        "finished": invocation["finished"], "invocations": invocations})
    return report(out, delay)
