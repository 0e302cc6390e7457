"""Reading one run's results directory back: the scenario, ss and qdisc samples, bbrctl trace records,
iperf3 reports and flow events, as arrays for the metrics and the plots.

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

from ..results import FLOW_FIELDS, QUEUE_FIELDS, read_json
from .metrics import FlowSeries, RunData, RunInfo


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
    meta = read_json(run_dir / "scenario.json", "run")
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


def trace_by_flow(run_dir: Path, scenario: dict[str, Any],
                  events_doc: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """bbrctl trace records matched to flows by the client port (sport on the sender side)."""
    records = load_trace(run_dir / "raw" / "trace.jsonl", int(events_doc.get("t0_ns", 0)))
    port_to_flow = {f["client_port"]: f["index"] for f in scenario["flows"]}
    out: dict[int, list[dict[str, Any]]] = {}
    for rec in records:
        flow = port_to_flow.get(rec.get("sport"))
        if flow is not None:
            out.setdefault(flow, []).append(rec)
    return out


def read_iperf_json(path: Path) -> dict[str, Any] | None:
    """iperf3 -J output, or None when the file is missing or cut short (a killed process)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def flow_result(client: dict[str, Any] | None, server: dict[str, Any] | None) -> dict[str, Any]:
    """The figures the metrics need from one flow's iperf3 client and server reports."""
    out: dict[str, Any] = {"error": None, "sent_bytes": None, "received_bytes": None, "received_seconds": None,
                           "retransmits": None}
    for report in (client, server):
        if report and report.get("error"):
            out["error"] = str(report["error"])
    if client:
        sent = client.get("end", {}).get("sum_sent", {})
        out["sent_bytes"] = sent.get("bytes")
        out["retransmits"] = sent.get("retransmits")
    if server:
        received = server.get("end", {}).get("sum_received", {})
        out["received_bytes"] = received.get("bytes")
        out["received_seconds"] = received.get("seconds")
    return out
