"""bbrbench compare's presentation: the table's columns, its rows (each metric against the reference
algorithm, bbr), the console and HTML table, the page's facts and its figures. experiments/compare.py plans
and runs the sweep and calls these on its directory.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..results import read_json
from ..scenario import Scenario
from ..testbed.host import with_loss_decisions
from . import pages, plots, tables
from .metrics import US_PER_MS
from .rundata import load_flows
from .stats import Ratio, ratio_ci95

# Every ratio is to this algorithm's mean in the same case.
REFERENCE = "bbr"
# The sweep overrides that name a point's algorithm and its case (flow count).
ALGO_KEY = "flows.0.algo"
CASE_KEY = "flows.0.count"


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
# What the sweep aggregates: the columns, nothing else (compare.toml names no metrics).
METRICS = [c.metric for c in COLUMNS]


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


def rows_against_reference(aggregated: dict[str, Any]) -> list[dict[str, Any]]:
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


def table(rows: list[dict[str, Any]], form: str = "text") -> str:
    """The table as console text, or as HTML where each cell whose ratio's interval excludes 1 is marked
    (class "sig", the interval in its tooltip) and each cell of a point with a run that failed bbrkit-link's
    trust check (class "untrusted", the runs and reasons in its tooltip): that run is not in the cell."""
    header = ["case", "algorithm", "runs"] + [c.title for c in COLUMNS]
    body = []
    for row in rows:
        # bbr2/bbr3: the loss-decision path their runs ran ("per-packet" or "ack-time"), when known.
        algo = with_loss_decisions(row["algo"], row.get("loss_decisions"))
        cells: list[str | tables.Marked | None] = [row["case"], algo, row["status"].split(" ", 1)[0]]
        for col in COLUMNS:
            stat = row["metrics"].get(col.metric)
            text = _format(stat, col)
            ratio = stat and stat["ratio_to_reference"]
            marks: list[pages.Mark] = []
            if form == "html" and _significant(ratio):
                ci = Ratio.from_json(ratio).interval_text()
                marks.append(("sig", f"ratio to {REFERENCE} {ratio['ratio']:.3f} {ci}: its 95% interval excludes 1"))
            if form == "html":
                marks += pages.untrusted_marks(row)
            cells.append(pages.cell(None if text is None else text + _ratio_text(ratio), marks))
        body.append(cells)
    render = tables.html if form == "html" else tables.text
    return render(header, body, labels=3)


def verdicts(rows: list[dict[str, Any]], runs_of: dict[str, list[Path]]) -> str:
    """The trust check's verdict per run (pages.verdicts), points named by case and algorithm."""
    return pages.verdicts([(f"{row['case']}, {row['algo']}", runs_of[row["point"]]) for row in rows])


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


def figures(out: Path, rows: list[dict[str, Any]], runs_of: dict[str, list[Path]], cases: dict[int, Scenario],
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
            runs = runs_of[row["point"]]
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
        runs = runs_of[row["point"]]
        if runs:
            title = f"{row['algo']}, {row['case']}: {runs[0].name} over time"
            made.append((title, plots.time_series(runs[0], fig_dir / f"timeseries-{row['algo']}.png", title)))
    return made


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


def describe(cases: dict[int, Scenario], repetitions: int, hosts: list[dict[str, Any]],
             doc: dict[str, Any]) -> list[str]:
    """The page's facts, each from the resolved scenario of each case's runs or from their host.json."""
    first = next(iter(cases.values()))
    facts = [_path_fact(first),
             f"Each run {first.duration_s:g} s; cases: {'; '.join(_case_fact(c, s) for c, s in cases.items())}. "
             f"{repetitions} repetitions, interleaved (every algorithm and case once, then the next round).",
             f"Table and figures cover the {window_text(cases)}."]
    host = pages.host_fact(hosts)
    if host:
        facts.append(host)
    if doc.get("started"):
        facts.append(f"{doc['started']} to {doc.get('finished', '(unfinished)')}.")
    return facts
