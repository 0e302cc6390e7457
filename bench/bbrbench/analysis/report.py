"""A run's summary (summary.json) and console table (table.txt), computed from its results directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results import TCP_COUNTERS, write_json
from . import tables, trust
from .metrics import compute
from .rundata import load_run, trace_by_flow

# An algorithm's own event counters in its trace records: each flow's last value is its run's count.
TRACE_COUNTERS = ("acd_halvings",)
# An algorithm's own state in its trace records, averaged per flow over the records from the last flow's
# start on (NAME_mean): what it did while every flow competed.
TRACE_MEANS = ("rtt_gain",)


def write_summary(run_dir: Path) -> dict[str, Any]:
    meta, data, events_doc = load_run(run_dir)
    summary = compute(data)
    scenario = meta["resolved"]
    summary["scenario"] = scenario["name"]
    summary["bottleneck_rate_mbit"] = scenario["bottleneck"]["rate_mbit"]
    summary["skipped"] = scenario.get("skipped", [])
    summary["emulation"] = {k: v for k, v in events_doc.get("emulation", {}).items() if k != "qdisc"}
    link, delay_lines = summary["emulation"].get("link"), summary["emulation"].get("delay_lines")
    if summary["emulation"].get("delay_mechanism") == "delayline" and not delay_lines:
        # A run from before the delay lines' counters were kept recorded none: each line is not checked.
        delay_lines = [{"sender": s["name"]} for s in scenario["senders"] if s["delay_fwd_ms"] + s["delay_rev_ms"] > 0]
    if link or delay_lines:
        total, bottleneck = summary["total"], scenario["bottleneck"]
        rtts = [f["base_rtt_ms"] for f in summary["flows"] if f.get("base_rtt_ms") is not None]
        summary["trust"] = trust.assess(link or None, {
            "rate_mbit": None if bottleneck.get("rate_trace") else bottleneck["rate_mbit"],
            "goodput_mbps": total.get("goodput_mbps"), "queue_busy_share": total.get("queue_busy_share"),
            "base_rtt_ms": min(rtts, default=None)}, delay_lines)
    summary["sampler_errors"] = events_doc.get("sampler_errors", [])
    # The senders' TCP counters summed (runs from before they were kept have none).
    counters = events_doc.get("tcp_counters", {}).values()
    summary["tcp"] = {name: sum(c.get(name, 0) for c in counters) for name in TCP_COUNTERS} if counters else {}
    trace = trace_by_flow(run_dir, scenario, events_doc)
    last_start = max((f["start_s"] for f in scenario["flows"]), default=0.0)
    for f, spec in zip(summary["flows"], scenario["flows"]):
        records = trace.get(spec["index"], [])
        f["trace_records"] = len(records)
        for name in TRACE_COUNTERS:
            if records and name in records[-1]:
                f[name] = records[-1][name]
        for name in TRACE_MEANS:
            competing = [r[name] for r in records if r["t_s"] >= last_start and isinstance(r.get(name), (int, float))]
            if competing:
                f[f"{name}_mean"] = sum(competing) / len(competing)
    for name in TRACE_COUNTERS:
        counted = [f[name] for f in summary["flows"] if name in f]
        if counted:
            summary["total"][name] = sum(counted)
    write_json(run_dir / "summary.json", "summary", summary)
    return summary


def table(summary: dict[str, Any]) -> str:
    cols = [("flow", "label", 0, 1.0), ("cc", "algo", 0, 1.0), ("goodput Mb/s", "goodput_mbps", 2, 1.0),
            ("thruput Mb/s", "throughput_mbps", 2, 1.0), ("retrans %", "retrans_rate", 3, 100.0),
            ("RTT mean ms", "rtt_ms_mean", 1, 1.0), ("RTT p95 ms", "rtt_ms_p95", 1, 1.0),
            ("RTT p99 ms", "rtt_ms_p99", 1, 1.0), ("qdelay ms", "queueing_delay_ms_mean", 1, 1.0),
            ("cwnd", "cwnd_mean", 0, 1.0), ("FCT s", "fct_s", 2, 1.0)]
    t = summary["total"]
    total_row = {"label": "total", "algo": "", "goodput_mbps": t.get("goodput_mbps"),
                 "retrans_rate": t.get("retrans_rate"), "rtt_ms_mean": t.get("rtt_ms_mean"),
                 "rtt_ms_p95": t.get("rtt_ms_p95"), "rtt_ms_p99": t.get("rtt_ms_p99"),
                 "queueing_delay_ms_mean": t.get("queueing_delay_ms_mean"), "fct_s": t.get("fct_mean_s")}
    rows = [[tables.num(f.get(key), d, scale) for _, key, d, scale in cols] for f in [*summary["flows"], total_row]]
    lines = [tables.text([c[0] for c in cols], rows, labels=2), ""]
    lines.append(f"link {summary['bottleneck_rate_mbit']:g} Mbit/s  "
                 f"utilisation {tables.num(t.get('utilisation'), 1, 100) or '-'} %  "
                 f"Jain {tables.num(t.get('jain'), 3) or '-'}  "
                 f"convergence {tables.num(t.get('convergence_time_s'), 1) or '-'} s  "
                 f"queue mean {tables.num(t.get('queue_backlog_packets_mean'), 1) or '-'} pkt "
                 f"(max {tables.num(t.get('queue_backlog_packets_max')) or '-'}, occupancy "
                 f"{tables.num(t.get('queue_occupancy_mean'), 1, 100) or '-'} %)  "
                 f"qdelay {tables.num(t.get('queue_delay_mean_ms'), 1) or '-'} ms  "
                 f"drops {tables.num(t.get('queue_drops')) or '-'}")
    lines += [f"UNTRUSTED RUN (trust check): {why}" for why in summary.get("trust", {}).get("failed", [])]
    lines += [f"note: {note}" for note in summary.get("skipped", [])]
    lines += [f"warning: {err}" for err in summary.get("sampler_errors", [])]
    lines += [f"warning: flow {f['label']}: iperf3: {f['error']}" for f in summary["flows"] if f.get("error")]
    return "\n".join(lines)


def write_report(run_dir: Path, plots: bool = True) -> str:
    summary = write_summary(run_dir)
    text = table(summary)
    (run_dir / "table.txt").write_text(text + "\n")
    if plots:
        from .plots import plot_run
        plot_run(run_dir)
    return text
