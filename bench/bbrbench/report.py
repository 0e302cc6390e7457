"""A run's results directory: load the raw samples, compute the summary, write summary.json and the table.

Layout of a run directory:
    scenario.json        resolved scenario, the raw scenario after overrides, system facts
    raw/flows.csv        ss samples (one row per flow per interval)
    raw/queue.csv        bottleneck qdisc samples
    raw/trace.jsonl      bbrctl trace records (runs with bbrkit algorithms)
    raw/events.json      t0, flow launch/exit times, emulation statistics
    raw/iperf3/          iperf3 client and server JSON reports
    summary.json         metrics (see metrics.py)
    table.txt            the console table
    plots/*.png          figures
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from .metrics import FlowSeries, RunData, RunInfo, compute
from .sampling import FLOW_FIELDS, QUEUE_FIELDS
from .traffic import flow_result, read_iperf_json


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def load_flows(path: Path) -> dict[int, FlowSeries]:
    rows: dict[int, list[dict[str, str]]] = {}
    if path.is_file():
        with path.open() as fh:
            for row in csv.DictReader(fh):
                rows.setdefault(int(row["flow"]), []).append(row)
    numeric = [f for f in FLOW_FIELDS if f not in ("t_s", "flow", "algo")]
    out: dict[int, FlowSeries] = {}
    for flow, items in rows.items():
        t = np.array([_float(r["t_s"]) for r in items])
        cols = {name: np.array([_float(r.get(name) or "") for r in items]) for name in numeric}
        out[flow] = FlowSeries(t=t, columns=cols)
    return out


def load_queue(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        return {}
    with path.open() as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        rows = [r for r in reader if len(r) == len(QUEUE_FIELDS)]
    if header != QUEUE_FIELDS or not rows:
        return {}
    arr = np.array([[_float(v) for v in r] for r in rows])
    return {name: arr[:, i] for i, name in enumerate(QUEUE_FIELDS)}


def load_trace(path: Path, t0_ns: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    if not path.is_file():
        return records
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("t_ns"), int):
            rec["t_s"] = (rec["t_ns"] - t0_ns) / 1e9
            records.append(rec)
    return records


def load_run(run_dir: Path) -> tuple[dict[str, Any], RunData, dict[str, Any]]:
    meta = json.loads((run_dir / "scenario.json").read_text())
    scenario = meta["resolved"]
    raw = run_dir / "raw"
    events_doc = json.loads((raw / "events.json").read_text()) if (raw / "events.json").is_file() else {}
    events = {e["flow"]: e for e in events_doc.get("flows", [])}
    iperf = {f["index"]: flow_result(read_iperf_json(raw / "iperf3" / f"client-{f['index']}.json"),
                                     read_iperf_json(raw / "iperf3" / f"server-{f['index']}.json"))
             for f in scenario["flows"]}
    data = RunData(info=RunInfo.from_scenario(scenario), flows=load_flows(raw / "flows.csv"),
                   queue=load_queue(raw / "queue.csv"), events=events, iperf=iperf)
    return meta, data, events_doc


def trace_by_flow(run_dir: Path, scenario: dict[str, Any], events_doc: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """bbrctl trace records matched to flows by the client port (sport on the sender side)."""
    records = load_trace(run_dir / "raw" / "trace.jsonl", int(events_doc.get("t0_ns", 0)))
    port_to_flow = {f["client_port"]: f["index"] for f in scenario["flows"]}
    out: dict[int, list[dict[str, Any]]] = {}
    for rec in records:
        flow = port_to_flow.get(rec.get("sport"))
        if flow is not None:
            out.setdefault(flow, []).append(rec)
    return out


def summarize(run_dir: Path) -> dict[str, Any]:
    meta, data, events_doc = load_run(run_dir)
    summary = compute(data)
    scenario = meta["resolved"]
    summary["scenario"] = scenario["name"]
    summary["bottleneck_rate_mbit"] = scenario["bottleneck"]["rate_mbit"]
    summary["skipped"] = scenario.get("skipped", [])
    summary["emulation"] = {k: v for k, v in events_doc.get("emulation", {}).items() if k != "qdisc"}
    summary["sampler_errors"] = events_doc.get("sampler_errors", [])
    trace = trace_by_flow(run_dir, scenario, events_doc)
    for f, spec in zip(summary["flows"], scenario["flows"]):
        f["trace_records"] = len(trace.get(spec["index"], []))
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(summary: dict[str, Any]) -> str:
    cols = [("flow", "label", 0), ("cc", "algo", 0), ("goodput Mb/s", "goodput_mbps", 2),
            ("thruput Mb/s", "throughput_mbps", 2), ("retrans %", "retrans_pct", 3), ("RTT mean ms", "rtt_ms_mean", 1),
            ("RTT p95 ms", "rtt_ms_p95", 1), ("RTT p99 ms", "rtt_ms_p99", 1), ("qdelay ms", "queueing_delay_ms_mean", 1),
            ("cwnd", "cwnd_mean", 0), ("FCT s", "fct_s", 2)]
    rows = []
    for f in summary["flows"]:
        row = dict(f)
        row["retrans_pct"] = f["retrans_rate"] * 100 if f.get("retrans_rate") is not None else None
        rows.append([_fmt(row.get(key), d) for _, key, d in cols])
    t = summary["total"]
    total_row = {"label": "total", "algo": "", "goodput_mbps": t.get("goodput_mbps"),
                 "retrans_pct": t["retrans_rate"] * 100 if t.get("retrans_rate") is not None else None,
                 "rtt_ms_mean": t.get("rtt_ms_mean"), "rtt_ms_p95": t.get("rtt_ms_p95"),
                 "rtt_ms_p99": t.get("rtt_ms_p99"), "queueing_delay_ms_mean": t.get("queueing_delay_ms_mean"),
                 "fct_s": t.get("fct_mean_s")}
    rows.append([_fmt(total_row.get(key), d) for _, key, d in cols])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, (h, _, _) in enumerate(cols)]
    lines = ["  ".join(h.rjust(w) for (h, _, _), w in zip(cols, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in rows]
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    util = t.get("utilisation")
    lines.append("")
    lines.append(f"link {summary['bottleneck_rate_mbit']:g} Mbit/s  utilisation {_fmt(util * 100 if util is not None else None, 1)} %"
                 f"  Jain {_fmt(t.get('jain'), 3)}  convergence {_fmt(t.get('convergence_time_s'), 1)} s"
                 f"  queue mean {_fmt(t.get('queue_backlog_packets_mean'), 1)} pkt"
                 f" (max {_fmt(t.get('queue_backlog_packets_max'))}, occupancy "
                 f"{_fmt(t['queue_occupancy_mean'] * 100 if t.get('queue_occupancy_mean') is not None else None, 1)} %)"
                 f"  qdelay {_fmt(t.get('queue_delay_mean_ms'), 1)} ms  drops {_fmt(t.get('queue_drops'))}")
    for note in summary.get("skipped", []):
        lines.append(f"note: {note}")
    for err in summary.get("sampler_errors", []):
        lines.append(f"warning: {err}")
    for f in summary["flows"]:
        if f.get("error"):
            lines.append(f"warning: flow {f['label']}: iperf3: {f['error']}")
    return "\n".join(lines)


def write_report(run_dir: Path, plots: bool = True) -> str:
    summary = summarize(run_dir)
    text = table(summary)
    (run_dir / "table.txt").write_text(text + "\n")
    if plots:
        from .plots import plot_run
        plot_run(run_dir)
    return text
