"""PNG figures (matplotlib, Agg backend: no display needed): one run's series, and compare's pictures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
from matplotlib.patches import Ellipse as MplEllipse  # noqa: E402

from .metrics import US_PER_MS, window_rates_bps  # noqa: E402
from .rundata import load_run, trace_by_flow  # noqa: E402
from .stats import interval_ellipse95  # noqa: E402

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


def throughput_delay(points: dict[str, list[tuple[float, float]]], path: Path, title: str) -> Path:
    """Pantheon's picture: each repetition a point (x: mean queueing delay, y: goodput), each algorithm's
    mean with an ellipse spanning the 95% intervals of both means (the table's). The delay axis runs right
    to left so that better (more throughput, less delay) is up and to the right."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for i, (algo, xy) in enumerate(points.items()):
        if not xy:
            continue
        color = f"C{i % 10}"
        xs, ys = [p[0] for p in xy], [p[1] for p in xy]
        ax.scatter(xs, ys, color=color, s=14, alpha=0.5)
        ax.scatter([float(np.mean(xs))], [float(np.mean(ys))], color=color, s=50, marker="o", edgecolors="black",
                   linewidths=0.6, label=algo, zorder=3)
        region = interval_ellipse95(xs, ys)
        if region is not None:
            ax.add_patch(MplEllipse((region.x, region.y), region.width, region.height, angle=region.angle_deg,
                                    facecolor=color, alpha=0.15, edgecolor=color))
        ax.annotate(algo, (float(np.mean(xs)), float(np.mean(ys))), textcoords="offset points", xytext=(6, 4),
                    fontsize=8)
    ax.invert_xaxis()
    ax.set_xlabel("mean queueing delay (ms), RTT minus base RTT; better to the right")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def time_series(run_dir: Path, path: Path, title: str) -> Path:
    """One run's per-flow throughput, RTT, cwnd and pacing gain, stacked on one time axis."""
    meta, data, events_doc = load_run(run_dir)
    scenario = meta["resolved"]
    labels = {f["index"]: f["label"] for f in scenario["flows"]}
    fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    for idx, series in sorted(data.flows.items()):
        label = labels.get(idx, str(idx))
        if len(series.t) >= 2:
            edges = np.arange(series.t[0], series.t[-1] + 1e-9, THROUGHPUT_BIN_S)
            if len(edges) >= 2:
                rates = window_rates_bps(series.t, series.col("bytes_acked"), edges) / 1e6
                axes[0].step(edges[:-1], rates, where="post", label=label, linewidth=1)
        axes[1].plot(series.t, series.col("srtt_us") / US_PER_MS, label=label, linewidth=1)
        axes[2].plot(series.t, series.col("cwnd"), label=label, linewidth=1)
    axes[0].axhline(scenario["bottleneck"]["rate_mbit"], color="grey", linestyle="--", linewidth=0.8)
    gains = _pacing_gains(run_dir, scenario, events_doc, data)
    for label, (t, g) in gains.items():
        axes[3].step(t, g, where="post", label=label, linewidth=1)
    if not gains:
        axes[3].text(0.5, 0.5, "no pacing gain: not a BBR algorithm, or no bbrctl trace", ha="center",
                     va="center", transform=axes[3].transAxes, fontsize=9)
    for ax, unit in zip(axes, (f"Mbit/s ({THROUGHPUT_BIN_S:g} s bins)", "smoothed RTT (ms)", "cwnd (packets)",
                               "pacing gain")):
        ax.set_ylabel(unit, fontsize=8)
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
