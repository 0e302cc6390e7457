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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import provenance, sweep
from ..analysis import html, plots, tables
from ..analysis.metrics import US_PER_MS
from ..analysis.report import summarize
from ..analysis.rundata import load_flows
from ..analysis.stats import Ratio, ratio_ci95
from ..errors import HarnessError, UsageError
from ..results import read_json, write_json
from ..scenario import SCENARIO_DIR, AlgoCatalog, Scenario, validate
from ..testbed.host import read_host

log = logging.getLogger(__name__)
SCENARIO = SCENARIO_DIR / "compare.toml"
REFERENCE = "bbr"
ALGO_KEY = "flows.0.algo"
CASE_KEY = "flows.0.count"
RESULT_FILE = "compare.json"
PAGE = "compare.html"
KERNEL_ALGOS = ("cubic", "bbr")


@dataclass(frozen=True)
class Column:
    metric: str
    title: str
    scale: float
    digits: int
    # Jain's index of a single flow is 1 by definition: shown only where flows share the path.
    needs_two_flows: bool = False


# Every column is over the steady-state window (metrics.steady: start-up left out), which is what lets
# three short repetitions decide: a BBR flow's STARTUP queue, present in some runs' first second and not
# in others', made the whole-run RTT of the same algorithm scatter by tens of milliseconds.
COLUMNS = [
    Column("steady.goodput_mbps", "goodput Mbit/s", 1.0, 1),
    Column("steady.utilisation", "utilisation %", 100.0, 1),
    Column("steady.rtt_ms_mean", "RTT mean ms", 1.0, 1),
    Column("steady.rtt_ms_p95", "RTT p95 ms", 1.0, 1),
    Column("steady.queueing_delay_ms_mean", "queueing delay ms", 1.0, 1),
    Column("steady.retrans_rate", "retrans %", 100.0, 2),
    Column("steady.jain", "Jain", 1.0, 3, needs_two_flows=True),
]


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


def case_name(count: int) -> str:
    return "1 flow" if count == 1 else f"{count} flows"


def _format(stat: dict[str, Any] | None, col: Column) -> str | None:
    if stat is None:
        return None
    mean = stat["mean"] * col.scale
    return f"{mean:.{col.digits}f}" if stat["ci95"] is None else \
        f"{mean:.{col.digits}f} ± {stat['ci95'] * col.scale:.{col.digits}f}"


def _mark(r: Ratio) -> str:
    """'*' the interval excludes 1; '?' it is unbounded (bbr's mean could be 0); '=' no repetition varied,
    so a zero-width interval is the measure's resolution and says nothing of certainty."""
    if r.zero_spread:
        return "="
    if r.bounds is None:
        return "?"
    return "*" if r.excludes_one else ""


def _ratio_text(ratio: dict[str, Any] | None) -> str:
    if ratio is None or ratio["ratio"] is None:
        return ""
    return f" ({ratio['ratio']:.2f}{_mark(Ratio.from_json(ratio))})"


def _significant(ratio: dict[str, Any] | None) -> bool:
    return ratio is not None and Ratio.from_json(ratio).excludes_one


def summarise(aggregated: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per case and algorithm from sweep.json: each metric's statistics and its ratio to bbr."""
    points = aggregated["points"]
    rows: list[dict[str, Any]] = []
    for point in points:
        algo = point["overrides"][ALGO_KEY]
        count = int(point["overrides"].get(CASE_KEY, 1))
        ref = next((p for p in points if p["overrides"][ALGO_KEY] == REFERENCE
                    and int(p["overrides"].get(CASE_KEY, 1)) == count), None)
        metrics: dict[str, Any] = {}
        for col in COLUMNS:
            stat = point["metrics"].get(col.metric)
            if stat is None or (col.needs_two_flows and count < 2):
                continue
            ref_stat = ref["metrics"].get(col.metric) if ref else None
            ratio = None
            if algo != REFERENCE and ref_stat and stat["n"] >= 2 and ref_stat["n"] >= 2:
                ratio = asdict(ratio_ci95(stat["values"], ref_stat["values"]))
            metrics[col.metric] = {**stat, "ratio_to_reference": ratio}
        rows.append({"case": case_name(count), "flows": count, "algo": algo, "status": point["status"],
                     "point": point["id"], "metrics": metrics, "untrusted_runs": point.get("untrusted_runs", [])})
    rows.sort(key=lambda r: (r["flows"], r["algo"] != REFERENCE))
    return rows


def _untrusted_text(runs: list[dict[str, Any]]) -> str:
    return (f"{len(runs)} run(s) of this point failed bbrkit-link's trust check and are left out: "
            + "; ".join(f"rep {r['rep']}: {', '.join(r['failed'])}" for r in runs))


def table(rows: list[dict[str, Any]], form: str = "text") -> str:
    """The table as console text, or as HTML where each cell whose ratio's interval excludes 1 is marked
    (class "sig", the interval in its tooltip) and each cell of a point with a run that failed bbrkit-link's
    trust check (class "untrusted", the runs and reasons in its tooltip): that run is not in the cell."""
    header = ["case", "algorithm", "runs"] + [c.title for c in COLUMNS]
    body = []
    for row in rows:
        cells: list[str | tables.Marked | None] = [row["case"], row["algo"], row["status"].split(" ", 1)[0]]
        for col in COLUMNS:
            stat = row["metrics"].get(col.metric)
            text = _format(stat, col)
            ratio = stat and stat["ratio_to_reference"]
            marks = []
            if form == "html" and text is not None and _significant(ratio):
                ci = Ratio.from_json(ratio).interval_text()
                marks.append(("sig", f"ratio to {REFERENCE} {ratio['ratio']:.3f} {ci}: its 95% interval excludes 1"))
            if form == "html" and text is not None and row["untrusted_runs"]:
                marks.append(("untrusted", _untrusted_text(row["untrusted_runs"])))
            if text is None:
                cells.append(None)
            elif marks:
                cells.append(tables.Marked(text + _ratio_text(ratio), " ".join(c for c, _ in marks),
                                           "; ".join(t for _, t in marks)))
            else:
                cells.append(text + _ratio_text(ratio))
        body.append(cells)
    render = tables.html if form == "html" else tables.text
    return render(header, body, labels=3)


def verdicts(out: Path, plan_: sweep.Plan) -> str:
    """The trust check's verdict per run (an HTML table), untrusted rows marked; empty when no run went through
    bbrkit-link."""
    body: list[list[str | tables.Marked | None]] = []
    for point in plan_.points:
        for run_dir in _done_runs(out, point.id):
            trust = read_json(run_dir / "summary.json", "summary").get("trust")
            if trust is None:
                continue
            verdict: str | tables.Marked = "trusted"
            if not trust["ok"]:
                verdict = tables.Marked("UNTRUSTED: " + "; ".join(trust["failed"]), "untrusted",
                                        "left out of the table above")
            body.append([point_name(point), run_dir.name, verdict])
    if not body:
        return ""
    return ("<h2>bbrkit-link trust check, per run</h2>"
            + tables.html(["point", "run", "verdict"], body, labels=3))


def window_text(cases: dict[int, Scenario]) -> str:
    """Which part of each run the table and figures cover, from the resolved scenarios: 'steady state: from
    1 s after the last flow's start to the end of the run (1 flow: 1-6 s; 2 flows: 3-6 s)'."""
    spans = []
    for count, scenario in cases.items():
        last_start = max(f.start_s for f in scenario.flows)
        spans.append(f"{case_name(count)}: {last_start + scenario.metrics.warmup_s:g}-{scenario.duration_s:g} s")
    warmups = sorted({s.metrics.warmup_s for s in cases.values()})
    return (f"steady state: from {' / '.join(f'{w:g}' for w in warmups)} s after the last flow's start to the end "
            f"of the run ({'; '.join(spans)})")


def legend(cases: dict[int, Scenario]) -> str:
    return (f"Over the {window_text(cases)}. Mean ± 95% confidence half-width over repetitions; (x) ratio of means "
            f"to {REFERENCE} with '*' where its 95% interval excludes 1 (on the page also highlighted), '?' where it "
            f"is unbounded (Fieller's, {REFERENCE}'s mean uncertain), '=' where no repetition varied (no interval, "
            f"not certainty). Queueing "
            f"delay: RTT minus the path's base RTT.")


def _done_runs(out: Path, point: str) -> list[Path]:
    return [d for d in sorted((out / "points" / point).glob("rep*")) if (d / sweep.DONE_MARK).is_file()]


# The delay statistic of the throughput-delay picture (--delay): key of the summary's steady section and
# axis words.
DELAY_STATS = {"p95": ("queueing_delay_ms_p95", "95th-percentile queueing delay"),
               "mean": ("queueing_delay_ms_mean", "mean queueing delay")}
DEFAULT_DELAY = "p95"


def _rtt_samples_ms(run_dirs: list[Path]) -> np.ndarray:
    """Every flow's smoothed RTT samples of these runs inside each run's steady-state window, pooled."""
    parts = []
    for run_dir in run_dirs:
        window = read_json(run_dir / "summary.json", "summary").get("steady", {}).get("window_s")
        if window is None:
            continue
        for series in load_flows(run_dir / "raw" / "flows.csv").values():
            inside = (series.t >= window[0]) & (series.t <= window[1])
            parts.append(series.col("srtt_us")[inside] / US_PER_MS)
    return np.concatenate(parts) if parts else np.array([])


def figures(out: Path, rows: list[dict[str, Any]], cases: dict[int, Scenario],
            delay: str = DEFAULT_DELAY) -> list[tuple[str, Path]]:
    """Per case the throughput/delay picture and the RTT CDF; per algorithm the time series of its first
    finished run of the largest case."""
    key, words = DELAY_STATS[delay]
    fig_dir = out / "plots"
    fig_dir.mkdir(exist_ok=True)
    made: list[tuple[str, Path]] = []
    for count, scenario in cases.items():
        case = case_name(count)
        points: dict[str, list[tuple[float, float]]] = {}
        rtts: dict[str, np.ndarray] = {}
        for row in (r for r in rows if r["flows"] == count):
            pairs = []
            runs = _done_runs(out, row["point"])
            for run_dir in runs:
                steady = read_json(run_dir / "summary.json", "summary").get("steady", {})
                if steady.get(key) is not None and steady.get("goodput_mbps") is not None:
                    pairs.append((steady[key], steady["goodput_mbps"]))
            points[row["algo"]] = pairs
            rtts[row["algo"]] = _rtt_samples_ms(runs)
        title = f"Throughput and {words}, {case} (runs as dots; means with standard-error crosses)"
        made.append((title, plots.throughput_delay(points, fig_dir / f"throughput-delay-{count}flow.png", title,
                                                   words, scenario.bottleneck.rate_mbit)))
        title = f"RTT distribution, {case} (every flow's ss samples of every run)"
        made.append((title, plots.rtt_cdf(rtts, fig_dir / f"rtt-cdf-{count}flow.png", title)))
    largest = max((r["flows"] for r in rows), default=1)
    for row in (r for r in rows if r["flows"] == largest):
        runs = _done_runs(out, row["point"])
        if runs:
            title = f"{row['algo']}, {row['case']}: {runs[0].name} over time"
            made.append((title, plots.time_series(runs[0], fig_dir / f"timeseries-{row['algo']}.png", title)))
    return made


def report(out: Path, delay: str = DEFAULT_DELAY) -> str:
    """Recompute the summary, table, figures and page of a finished or partial compare directory. Every
    run's summary is computed again from its raw samples and the sweep aggregated over the columns' metrics,
    so a directory an older bbrbench made (whole-run metrics) reports as a new one does."""
    plan_ = sweep.load_plan(out)
    for point in plan_.points:
        for run_dir in _done_runs(out, point.id):
            summarize(run_dir)
    metrics = [c.metric for c in COLUMNS]
    if plan_.metrics != metrics:
        plan_.metrics = metrics
        write_json(out / "plan.json", "plan", plan_.to_json())
    sweep.aggregate(out)
    aggregated = read_json(out / "sweep.json", "sweep")
    rows = summarise(aggregated)
    cases = resolved_cases(plan_)
    previous = read_json(out / RESULT_FILE, "compare") if (out / RESULT_FILE).is_file() else {}
    doc = {**{k: v for k, v in previous.items() if k != "format"}, "reference": REFERENCE,
           "repetitions": plan_.repetitions, "scenario": plan_.raw, "window": window_text(cases), "rows": rows}
    write_json(out / RESULT_FILE, "compare", doc)
    text = table(rows) + "\n" + legend(cases)
    (out / "table.txt").write_text(text + "\n")
    html.write_page(out / PAGE, "bbrbench compare", describe(plan_, run_hosts(out, rows), doc),
                    table(rows, "html") + verdicts(out, plan_), legend(cases), figures(out, rows, cases, delay))
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


def _path_fact(scenario: Scenario) -> str:
    b = scenario.bottleneck
    rtts = sorted({s.rtt_ms for s in scenario.senders if any(f.sender == s.name for f in scenario.flows)})
    queue = "FIFO" if b.aqm == "fifo" else b.aqm
    size = f"{b.buffer_packets} packets" if b.buffer_packets is not None else f"{b.buffer_bytes} bytes"
    if b.bdp_bytes > 0:
        size += f" ({b.limit_bytes / b.bdp_bytes:.2g} BDP at {b.bdp_rtt_ms:g} ms)"
    fact = (f"Path: {b.rate_mbit:g} Mbit/s {b.shaper} bottleneck, base RTT "
            f"{' / '.join(f'{r:g}' for r in rtts)} ms, {queue} of {size}")
    if b.loss_pct:
        fact += f", {b.loss_pct:g}% random loss"
    if b.mtu != 1500:
        fact += f", MTU {b.mtu}"
    return fact + "."


def _case_fact(count: int, scenario: Scenario) -> str:
    starts = [f.start_s for f in scenario.flows]
    if len(starts) < 2:
        return case_name(count)
    offsets = sorted({s - starts[0] for s in starts[1:]})
    if len(starts) == 2:
        return f"{case_name(count)}, the second starting {offsets[0]:g} s after the first"
    return f"{case_name(count)}, starting at {', '.join(f'{s:g}' for s in starts)} s"


def _host_fact(hosts: list[dict[str, Any]]) -> str | None:
    """Which machines ran the runs (host.json): kernel, CPUs, and the measured 1-minute load average."""
    if not hosts:
        return None
    kinds = sorted({f"{h.get('hostname')} (kernel {h.get('kernel')}, {h.get('cpus')} CPUs)" for h in hosts})
    loads = [float(v) for h in hosts for v in (h.get("loadavg_start", [None])[0], h.get("loadavg_end", [None])[0])
             if isinstance(v, (int, float))]
    fact = f"Ran on {'; '.join(kinds)}"
    if loads:
        fact += f"; 1-minute load average at the runs' starts and ends {min(loads):.2f} to {max(loads):.2f}"
    return fact + "."


def run_hosts(out: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for row in rows for run_dir in _done_runs(out, row["point"]) if (h := read_host(run_dir)) is not None]


def describe(plan_: sweep.Plan, hosts: list[dict[str, Any]], doc: dict[str, Any]) -> list[str]:
    """The page's facts, each from the resolved scenario of the runs or from their host.json."""
    cases = resolved_cases(plan_)
    first = next(iter(cases.values()))
    facts = [_path_fact(first),
             f"Each run {first.duration_s:g} s; cases: {'; '.join(_case_fact(c, s) for c, s in cases.items())}. "
             f"{plan_.repetitions} repetitions, interleaved (every algorithm and case once, then the next round).",
             f"Table and figures cover the {window_text(cases)}."]
    host = _host_fact(hosts)
    if host:
        facts.append(host)
    if doc.get("started"):
        facts.append(f"{doc['started']} to {doc.get('finished', '(unfinished)')}.")
    return facts


def plan(raw: dict[str, Any], catalog: AlgoCatalog, requested: list[str], reps: int | None) -> sweep.Plan:
    """The compare's sweep, every point validated: called before anything needs root or runs."""
    algos = choose_algos(requested, catalog)
    plan_ = sweep.plan(raw, catalog, [(ALGO_KEY, algos)], reps)
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
