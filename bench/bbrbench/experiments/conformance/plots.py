"""A run's plot: rates above, windows below, the background coloured by phase."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .model import Case, key_of, runs

PHASE_COLOURS = {"STARTUP": "#f4cccc", "DRAIN": "#fce5cd", "DOWN": "#d9ead3", "CRUISE": "#ffffff",
                 "REFILL": "#cfe2f3", "UP": "#d9d2e9", "PROBE_RTT": "#fff2cc", "PROBE_BW": "#ffffff"}


def plot(case: Case, algo: str, records: list[dict[str, Any]], out: Path) -> None:
    """Rates (bw, pacing, bw_shortterm) above, windows (cwnd, inflight, inflight_longterm) below, the
    background coloured by phase."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    t = [r["t_s"] for r in records]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(6.4, 3.6), dpi=100)
    for p, a, b in runs(records):
        for ax in (top, bottom):
            ax.axvspan(t[a], t[min(b, len(t) - 1)], color=PHASE_COLOURS.get(p, "#eeeeee"), lw=0)
    top.step(t, [r.get("max_bw_bps", r["bw_bps"]) / 1e6 for r in records], where="post", label="max_bw")
    top.step(t, [r["pacing_rate_bps"] / 1e6 for r in records], where="post", label="pacing rate", alpha=0.7)
    short = key_of(records, "bw_shortterm_bps")
    if short and any(r[short] for r in records):  # bbr1 reports 0: it has no bw_shortterm
        top.step(t, [math.nan if r[short] is None else r[short] / 1e6 for r in records], where="post",
                 label="bw_shortterm")
    top.set_ylabel("Mbit/s")
    top.legend(fontsize=6, loc="upper right")
    bottom.step(t, [r["cwnd"] for r in records], where="post", label="cwnd")
    bottom.step(t, [r["inflight"] for r in records], where="post", label="inflight", alpha=0.7)
    longterm = key_of(records, "inflight_longterm")
    if longterm and any(r[longterm] for r in records):
        bottom.step(t, [math.nan if r[longterm] is None else r[longterm] for r in records], where="post",
                    label="inflight_longterm")
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
    png = out / "plots" / f"{case.id}-{algo}-{runner}.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    plot(case, algo, records, png)
    return str(png.relative_to(out))
