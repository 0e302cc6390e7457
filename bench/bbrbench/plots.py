"""PNG figures of one run (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from .metrics import window_rates_bps  # noqa: E402
from .report import load_run, trace_by_flow  # noqa: E402

FIG_SIZE = (10, 4.5)
DPI = 110
# Beyond this many flows a legend hides the data.
MAX_LEGEND = 12
THROUGHPUT_BIN_S = 0.5


def _finish(ax: Any, path: Path, title: str, ylabel: str, nlines: int) -> None:
    ax.set_title(title)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if 0 < nlines <= MAX_LEGEND:
        ax.legend(fontsize=8, loc="best")
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=DPI)
    plt.close(ax.figure)


def plot_run(run_dir: Path) -> list[Path]:
    meta, data, events_doc = load_run(run_dir)
    scenario = meta["resolved"]
    out = run_dir / "plots"
    out.mkdir(exist_ok=True)
    labels = {f["index"]: f"{f['label']}" for f in scenario["flows"]}
    written: list[Path] = []
    name = scenario["name"]

    fig, ax = plt.subplots(figsize=FIG_SIZE)
    for idx, series in sorted(data.flows.items()):
        if len(series.t) < 2:
            continue
        edges = np.arange(series.t[0], series.t[-1] + 1e-9, THROUGHPUT_BIN_S)
        if len(edges) < 2:
            continue
        rates = window_rates_bps(series.t, series.col("bytes_acked"), edges) / 1e6
        ax.step(edges[:-1], rates, where="post", label=labels.get(idx, str(idx)))
    ax.axhline(scenario["bottleneck"]["rate_mbit"], color="grey", linestyle="--", linewidth=0.8)
    path = out / "throughput.png"
    _finish(ax, path, f"{name}: per-flow delivery rate ({THROUGHPUT_BIN_S:g} s bins)", "Mbit/s", len(data.flows))
    written.append(path)

    for column, fname, title, unit in (("srtt_us", "rtt.png", "smoothed RTT (ss)", "us"),
                                      ("cwnd", "cwnd.png", "congestion window (ss)", "packets")):
        fig, ax = plt.subplots(figsize=FIG_SIZE)
        for idx, series in sorted(data.flows.items()):
            ax.plot(series.t, series.col(column), label=labels.get(idx, str(idx)), linewidth=1)
        path = out / fname
        _finish(ax, path, f"{name}: {title}", unit, len(data.flows))
        written.append(path)

    if data.queue:
        fig, ax = plt.subplots(figsize=FIG_SIZE)
        ax.plot(data.queue["t_s"], data.queue["backlog_packets"], linewidth=0.8, label="backlog")
        limit = scenario["bottleneck"]["buffer_packets"]
        if limit:
            ax.axhline(limit, color="red", linestyle="--", linewidth=0.8, label="limit")
        drops = data.queue["drops"] - data.queue["drops"][0]
        twin = ax.twinx()
        twin.plot(data.queue["t_s"], drops, color="black", linewidth=0.8, alpha=0.6)
        twin.set_ylabel("cumulative drops")
        path = out / "queue.png"
        _finish(ax, path, f"{name}: bottleneck queue", "packets", 2)
        written.append(path)

    gains = _pacing_gains(run_dir, scenario, events_doc, data)
    if gains:
        fig, ax = plt.subplots(figsize=FIG_SIZE)
        for label, (t, g) in gains.items():
            ax.step(t, g, where="post", label=label, linewidth=1)
        path = out / "pacing_gain.png"
        _finish(ax, path, f"{name}: pacing gain (bbrctl trace; kernel bbr from ss)", "gain", len(gains))
        written.append(path)
    return written


def _pacing_gains(run_dir: Path, scenario: dict[str, Any], events_doc: dict[str, Any],
                  data: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    gains: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for idx, records in trace_by_flow(run_dir, scenario, events_doc).items():
        t = np.array([r["t_s"] for r in records if "pacing_gain" in r])
        g = np.array([r["pacing_gain"] for r in records if "pacing_gain" in r])
        if len(t):
            gains[scenario["flows"][idx]["label"]] = (t, g)
    for idx, series in data.flows.items():
        g = series.col("pacing_gain")
        if np.isfinite(g).any():
            gains[f"{scenario['flows'][idx]['label']} (kernel)"] = (series.t, g)
    return gains
