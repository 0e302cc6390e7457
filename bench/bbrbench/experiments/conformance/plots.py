"""A run's plot: rates above (with the link's rate), windows below, the background coloured by phase, the
trigger and every undo marked."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .model import Case, key_of, rate_bits, runs
from .twin import trigger_time

# A colour of its own for every phase (v1's PROBE_BW, a gain cycle without sub-states, included).
PHASE_COLOURS = {"STARTUP": "#f4cccc", "DRAIN": "#fce5cd", "DOWN": "#d9ead3", "CRUISE": "#e6e6e6",
                 "REFILL": "#cfe2f3", "UP": "#d9d2e9", "PROBE_RTT": "#fff2cc", "PROBE_BW": "#d0e0e3"}
PLOT_DPI = 80  # 512 x 288 pixels: each plot a few tens of kB, committed under docs/


def link_steps(case: Case, trigger_at_s: float | None) -> list[tuple[float, float]]:
    """(from s, Mbit/s) of the bottleneck's rate: the case's steps, or its one rate and a trigger's cut."""
    if case.rate_steps:
        return list(case.rate_steps)
    if case.runner == "real":
        return [(0.0, float(case.path["bottleneck"].get("rate_mbit", 0)))]
    mbit = (rate_bits(case.twin["rate"]) or 0) / 1e6
    cut = case.trigger.get("rate_rel")
    return [(0.0, mbit)] + ([(trigger_at_s, mbit * cut)] if cut and trigger_at_s is not None else [])


def plot(case: Case, algo: str, records: list[dict[str, Any]], out: Path, trigger_at_s: float | None = None) -> None:
    """Rates (link, max_bw, pacing, bw_shortterm) above, windows (cwnd, inflight, inflight_longterm) below,
    the background coloured by phase; a line where the trigger came and where each undo did."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    t = [r["t_s"] for r in records]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(6.4, 3.6), dpi=PLOT_DPI)
    for p, a, b in runs(records):
        for ax in (top, bottom):
            ax.axvspan(t[a], t[min(b, len(t) - 1)], color=PHASE_COLOURS.get(p, "#eeeeee"), lw=0)
    steps = link_steps(case, trigger_at_s)
    top.step([s for s, _ in steps] + [t[-1]], [m for _, m in steps] + [steps[-1][1]], where="post",
             color="black", lw=0.8, ls=":", label="link rate")
    top.step(t, [r.get("max_bw_bps", r["bw_bps"]) / 1e6 for r in records], where="post", label="max_bw")
    top.step(t, [r["pacing_rate_bps"] / 1e6 for r in records], where="post", label="pacing rate", alpha=0.7)
    short = key_of(records, "bw_shortterm_bps")
    if short and any(r[short] for r in records):  # bbr1 reports 0: it has no bw_shortterm
        top.step(t, [math.nan if r[short] is None else r[short] / 1e6 for r in records], where="post",
                 label="bw_shortterm")
    top.set_ylabel("Mbit/s")
    bottom.step(t, [r["cwnd"] for r in records], where="post", label="cwnd")
    bottom.step(t, [r["inflight"] for r in records], where="post", label="inflight", alpha=0.7)
    longterm = key_of(records, "inflight_longterm")
    if longterm and any(r[longterm] for r in records):
        bottom.step(t, [math.nan if r[longterm] is None else r[longterm] for r in records], where="post",
                    label="inflight_longterm")
    for ax in (top, bottom):
        if trigger_at_s is not None:
            ax.axvline(trigger_at_s, color="#cc0000", lw=1.0, label="trigger" if ax is top else None)
        for k, r in enumerate(x for x in records if x["event"] == "undo"):
            ax.axvline(r["t_s"], color="#0000cc", lw=1.0, ls="--", label="undo" if ax is top and not k else None)
    top.legend(fontsize=6, loc="upper right")
    bottom.set_ylabel("packets")
    bottom.set_xlabel("s since the run's start")
    bottom.legend(fontsize=6, loc="upper right")
    present = list(dict.fromkeys(p for p, _, _ in runs(records)))
    fig.legend(handles=[Patch(facecolor=PHASE_COLOURS.get(p, "#eeeeee"), edgecolor="#999999", label=p)
                        for p in present], fontsize=6, loc="lower left", ncol=len(present), frameon=False)
    fig.suptitle(f"{case.id} {case.title} — {algo}", fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(out)
    plt.close(fig)


def draw(out: Path, case: Case, algo: str, runner: str, records: list[dict[str, Any]]) -> str:
    """The run's plot in out/plots; its path relative to out."""
    name = f"{case.id}-{algo}-{runner}"
    png = out / "plots" / f"{name}.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    plot(case, algo, records, png, trigger_time(out / "runs" / name, case))
    return str(png.relative_to(out))
