"""Fidelity benchmark: bbrkit's bbr1 against the kernel's bbr, the reference it ports.

Runs a sweep whose grid has `flows.0.algo = ["bbr", "bbr1"]` as one dimension (by default
bbrbench/scenarios/bench/fidelity.toml) through the ordinary sweep machinery, then pairs every bbr1 point
with its bbr twin (same overrides otherwise) and reports, per metric, the ratio of the means bbr1/bbr with
a 95% confidence interval. Runs with a failed flow and samples taken with another congestion control are
reported, never silently redone or counted.
Writes fidelity.json into the sweep directory.
"""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..analysis import tables
from ..analysis.stats import Ratio, ratio_ci95
from ..errors import HarnessError
from ..results import read_json, write_json
from ..scenario import SCENARIO_DIR, AlgoCatalog
from ..sweep import DONE_MARK, Executor, Plan

DEFAULT_SCENARIO = SCENARIO_DIR / "bench" / "fidelity.toml"
ALGO_KEY = "flows.0.algo"
REFERENCE = "bbr"
CANDIDATE = "bbr1"
RESULT_FILE = "fidelity.json"


def compare(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """Pair each candidate point of an aggregated sweep (sweep.json) with its reference twin."""
    points = sweep["points"]

    def others(p: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in p["overrides"].items() if k != ALGO_KEY}

    rows: list[dict[str, Any]] = []
    for cand in (p for p in points if p["overrides"].get(ALGO_KEY) == CANDIDATE):
        ref = next((p for p in points if p["overrides"].get(ALGO_KEY) == REFERENCE and others(p) == others(cand)),
                   None)
        if ref is None:
            raise HarnessError(f"sweep point {cand['label']}: no {REFERENCE} twin with the same settings")
        metrics: dict[str, Any] = {}
        for metric in sweep["metrics"]:
            c = cand["metrics"].get(metric)
            r = ref["metrics"].get(metric)
            if not c or not r or c["n"] < 2 or r["n"] < 2:
                continue
            metrics[metric] = {CANDIDATE: {"mean": c["mean"], "ci95": c["ci95"], "n": c["n"]},
                               REFERENCE: {"mean": r["mean"], "ci95": r["ci95"], "n": r["n"]},
                               **asdict(ratio_ci95(c["values"], r["values"]))}
        rows.append({"settings": others(cand), "metrics": metrics})
    return rows


def wrong_cc_samples(out: Path, sweep: dict[str, Any]) -> dict[str, int]:
    """Per point, the ss samples whose congestion control is not the point's algorithm: a guard that every
    number attributed to bbr1 was measured with bbr1 (a detach from outside the harness would show here)."""
    found: dict[str, int] = {}
    for point in sweep["points"]:
        algo = point["overrides"].get(ALGO_KEY)
        wrong = 0
        for run_dir in sorted((out / "points" / point["id"]).glob("rep*")):
            flows_csv = run_dir / "raw" / "flows.csv"
            if (run_dir / DONE_MARK).is_file() and flows_csv.is_file():
                with flows_csv.open(newline="") as fh:
                    wrong += sum(1 for row in csv.DictReader(fh) if row["algo"] != algo)
        found[point["label"]] = wrong
    return found


def failed_flow_runs(out: Path) -> list[Path]:
    """Completed runs in which a flow reported an error (e.g. `unable to set TCP_CONGESTION`): their
    metrics are missing, so the report names them."""
    bad: list[Path] = []
    for done in sorted(out.glob(f"points/*/rep*/{DONE_MARK}")):
        summary = read_json(done.parent / "summary.json", "summary")
        if any(f.get("error") for f in summary.get("flows", [])):
            bad.append(done.parent)
    return bad


def format_ratio(stat: dict[str, Any]) -> str:
    if stat["ratio"] is None:
        return f"n/a ({REFERENCE} 0)"
    r = Ratio.from_json(stat)
    ci = f" {r.interval_text()}" if r.interval_text() else ""
    # '*': the interval excludes 1, i.e. bbr1 differs from bbr at the 5% level.
    star = " *" if r.excludes_one else ""
    return f"{stat['ratio']:.3f}{ci}{star}"


def table(rows: list[dict[str, Any]], metrics: Sequence[str]) -> str:
    header = ["settings"] + [m.split(".", 1)[1] for m in metrics]
    body: list[list[str | None]] = []
    for row in rows:
        cells: list[str | None] = [", ".join(f"{k}={v}" for k, v in row["settings"].items())]
        body.append(cells + [format_ratio(row["metrics"][m]) if m in row["metrics"] else None for m in metrics])
    return (tables.text(header, body)
            + f"\n({CANDIDATE}/{REFERENCE} ratio of means ± 95% CI half-width; * = CI excludes 1)")


def loadavg() -> list[float]:
    return [float(v) for v in Path("/proc/loadavg").read_text().split()[:3]]


def plan_runs(raw: dict[str, Any], catalog: AlgoCatalog, reps: int | None) -> Plan:
    """The sweep, every point validated: called before anything needs root or runs."""
    from .. import sweep
    for algo in (REFERENCE, CANDIDATE):
        if algo not in catalog.kernel | catalog.bbrkit:
            raise HarnessError(f"{algo}: not available here (kernel module or `make` for bbrctl)")
    plan_ = sweep.plan_runs(raw, catalog, [], reps)
    if not any(ALGO_KEY in p.overrides for p in plan_.points):
        raise HarnessError(f"the scenario's sweep grid must vary {ALGO_KEY} over [{REFERENCE}, {CANDIDATE}]")
    return plan_


def run(plan_: Plan, catalog: AlgoCatalog, out: Path, executor: Executor | None = None,
        mix_hosts: bool = False) -> str:
    """Run (or resume) the sweep into `out`, then write fidelity.json and return the ratio table."""
    from .. import sweep
    load_before = loadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    sweep.run_sweep(plan_, out, catalog, executor, mix_hosts)
    failed = [str(p.relative_to(out)) for p in failed_flow_runs(out)]
    aggregated = read_json(out / "sweep.json", "sweep")
    rows = compare(aggregated)
    wrong = wrong_cc_samples(out, aggregated)
    text = table(rows, plan_.metrics)
    if failed:
        text += "\nWARNING: runs with a failed flow (their metrics are missing): " + ", ".join(failed)
    if any(wrong.values()):
        text += "\nWARNING: samples with another congestion control: " + "; ".join(
            f"{label}: {n}" for label, n in wrong.items() if n)
    write_json(out / RESULT_FILE, "fidelity", {
        "reference": REFERENCE, "candidate": CANDIDATE, "repetitions": plan_.repetitions,
        "started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "kernel": os.uname().release,
        "loadavg_before": load_before, "loadavg_after": loadavg(), "wrong_cc_samples": wrong,
        "runs_with_flow_errors": failed,
        "rows": rows})
    return text
