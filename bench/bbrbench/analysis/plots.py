"""Figures drawn on the canvas module's matplotlib: one run's series as PNGs, and compare's pictures as PNG
and SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from . import mmlog
from .canvas import DPI, FIG_SIZE, plt, save
from .metrics import US_PER_MS, window_rates_bps
from .rundata import load_run, trace_by_flow
from .stats import mean_sem

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

    sojourn = _link_sojourn(run_dir, events_doc)
    if sojourn is not None:
        t, mean_ms, max_ms, marks = sojourn
        fig, ax = plt.subplots(figsize=FIG_SIZE)
        ax.plot(t, max_ms, linewidth=0.6, alpha=0.6, label="max per interval")
        ax.plot(t, mean_ms, linewidth=0.9, label="mean per interval")
        if marks.any():
            twin = ax.twinx()
            twin.plot(t, marks, color="black", linewidth=0.8, alpha=0.6)
            twin.set_ylabel("cumulative CE marks")
        path = out / "sojourn.png"
        _finish(ax, path, f"{name}: sojourn time at the bottleneck (bbrkit-link)", "ms", 2)
        written.append(path)

    gains = _pacing_gains(run_dir, scenario, events_doc, data)
    if gains:
        fig, ax = plt.subplots(figsize=FIG_SIZE)
        for label, (t, g) in gains.items():
            ax.step(t, g, where="post", label=label, linewidth=1)
        path = out / "pacing_gain.png"
        _finish(ax, path, f"{name}: pacing gain (bbrctl trace; kernel bbr from ss)", "gain", len(gains))
        written.append(path)

    for direction in ("forward", "reverse"):
        log = run_dir / "raw" / f"link-{direction}.mm"
        if log.is_file():
            written.append(mmlog.plot(log, out / f"link_{direction}.png",
                                      f"{name}: bbrkit-link {direction} (mm-link log)"))
    return written


def _link_sojourn(run_dir: Path, events_doc: dict[str, Any]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """bbrkit-link's per-interval sojourn (raw/link.csv) on the run's clock, or None without the link."""
    path = run_dir / "raw" / "link.csv"
    if not path.is_file() or "t0_ns" not in events_doc:
        return None
    rows = np.genfromtxt(path, delimiter=",", names=True)
    if rows.size < 2:
        return None
    t = rows["t_mono_s"] - events_doc["t0_ns"] / 1e9
    keep = t >= 0
    return (t[keep], rows["sojourn_mean_us"][keep] / 1000, rows["sojourn_max_us"][keep] / 1000,
            rows["marks"][keep] - rows["marks"][keep][0] if keep.any() else rows["marks"][keep])


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


# Where a label may sit beside its mark, in points, tried in this order (Pantheon's plots label each mark).
LABEL_OFFSETS = [(6, 4), (6, -12), (-6, 4), (-6, -12), (6, 14), (6, -22), (-6, 14), (-6, -22), (6, 24), (6, -32),
                 (-6, 24), (-6, -32), (18, -4), (-18, -4), (6, 34), (6, -42)]


def _overlaps(box: Bbox, others: list[Bbox]) -> bool:
    return any(box.overlaps(o) for o in others)


def place_labels(ax: Any, anchors: list[tuple[str, float, float]]) -> list[Any]:
    """One text per (label, x, y), each at the first offset of LABEL_OFFSETS where it overlaps no label
    placed before it and stays inside the axes: greedy, so the first comers keep the nearest places."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    placed: list[Bbox] = []
    texts = []
    for label, x, y in anchors:
        text = ax.annotate(label, (x, y), textcoords="offset points", xytext=LABEL_OFFSETS[0], fontsize=8,
                           ha="left", va="bottom")
        for dx, dy in LABEL_OFFSETS:
            text.xyann = (dx, dy)
            text.set_ha("left" if dx >= 0 else "right")
            box = text.get_window_extent(renderer)
            if not _overlaps(box, placed) and inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1):
                break
        placed.append(text.get_window_extent(renderer))
        texts.append(text)
    return texts


def _clipped_error(mean: float, err: float, low: float, high: float) -> tuple[float, float]:
    """An error bar's lower and upper lengths around `mean`, cut to the physical range [low, high]."""
    return max(0.0, mean - max(low, mean - err)), max(0.0, min(high, mean + err) - mean)


def throughput_delay_figure(points: dict[str, list[tuple[float, float]]], title: str, delay_label: str,
                            rate_mbit: float) -> Figure:
    """Pantheon's picture: each repetition a small dot (x: a delay statistic of the run, y: goodput), each
    algorithm's mean a labelled mark with standard-error crosses. Standard errors, not 95% intervals: with
    three repetitions t(0.975, 2) = 4.3 makes the intervals so wide that they swamp the marks (the table
    holds the intervals). Delays are at least 0 and goodput at most the link rate, so the crosses are cut
    there and the axes start at 0. The delay axis runs right to left: better is up and to the right."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    anchors: list[tuple[str, float, float]] = []
    most_delay = 0.0
    for i, (algo, xy) in enumerate(points.items()):
        if not xy:
            continue
        color = f"C{i % 10}"
        # A run's delay statistic can dip below 0 by the delay line's jitter: physically it is 0.
        xs = np.maximum(0.0, [p[0] for p in xy])
        ys = np.array([p[1] for p in xy])
        ax.scatter(xs, ys, color=color, s=10, alpha=0.45, linewidths=0)
        mx, sx = mean_sem(xs)
        my, sy = mean_sem(ys)
        xerr = np.array([_clipped_error(mx, sx, 0.0, np.inf)]).T
        yerr = np.array([_clipped_error(my, sy, 0.0, rate_mbit)]).T
        ax.errorbar([mx], [my], xerr=xerr, yerr=yerr, fmt="o", color=color, markersize=7, markeredgecolor="black",
                    markeredgewidth=0.6, elinewidth=1.2, capsize=3, label=algo, zorder=3)
        anchors.append((algo, mx, my))
        most_delay = max(most_delay, float(xs.max()), mx + sx)
    ax.set_xlim(most_delay * 1.08 + 0.5, 0.0)
    low, high = ax.get_ylim()
    ax.set_ylim(max(0.0, low), min(high, rate_mbit * 1.02))
    ax.set_xlabel(f"{delay_label} (ms), RTT minus base RTT; better to the right")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    place_labels(ax, anchors)
    return fig


def throughput_delay(points: dict[str, list[tuple[float, float]]], path: Path, title: str, delay_label: str,
                     rate_mbit: float) -> Path:
    return save(throughput_delay_figure(points, title, delay_label, rate_mbit), path)


def rtt_cdf(samples: dict[str, np.ndarray], path: Path, title: str) -> Path:
    """flent's RTT CDF: per algorithm the fraction of RTT samples at or below each RTT."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, (algo, rtt) in enumerate(samples.items()):
        x = np.sort(rtt[np.isfinite(rtt)])
        if len(x):
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=f"C{i % 10}", label=algo, linewidth=1.2)
    ax.set_xlim(left=0.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("smoothed RTT (ms, ss)")
    ax.set_ylabel("fraction of samples")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return save(fig, path)


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
