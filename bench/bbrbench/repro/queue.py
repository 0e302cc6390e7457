"""Seed 000's finding on Linux: where original BBR's multi-flow queue in a deep buffer comes from.

The paper's ns-3 BBR kept 2-6 flows at 2-2.5 x RTT_min in an 80 BDP buffer; Linux's bbr does not. From
the kernel bbr's own state in every ss sample (bw, min_rtt, cwnd gain, cwnd) of Figure 4.12's runs, the
flows' cwnd splits into the factors of analysis/queuegrowth.py, which say which mechanism inflates it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from ..analysis import tables  # noqa: E402
from ..analysis.queuegrowth import FACTORS, factor_series, queue_factors  # noqa: E402
from ..analysis.rundata import load_run  # noqa: E402
from ..analysis.stats import mean_ci95  # noqa: E402
from ..results import read_json  # noqa: E402
from .points import trusted_reps  # noqa: E402

EXPERIMENT = ("seed000", "fig4.12")
SERIES = "bbr"  # the kernel's own BBR, the paper's "original BBR"
# Start-up and the first PROBE_RTT after the last flow joins are left out of the window.
SETTLE_S = 10.0
US_PER_MS = 1000.0
FIGURE = "seed000_queue_factors.png"
# What the factors do not show: the cause. The ablation of 2026-11-26 tests it outside this report's runs;
# its data and report.md are in data/reproduction/ablation-fig4.12-2026-11-26, which the README cites.
WHY = ("the factors say which term of the cwnd is inflated (min_rtt with 6 flows), not why. The ablation of "
       "2026-11-26 (data/reproduction/ablation-fig4.12-2026-11-26/report.md, with its data) ran the same 6 flows "
       "started together, or 10 s apart (one min_rtt window), 3 runs each: in both, min_rtt stayed at the "
       "propagation RTT and the queue at what the cwnd gain and the kernel's allowance make, so the inflation "
       "comes from flows that start into the others' standing queue and never measure the empty path. Not "
       "tested: min_rtt pinned, and gaps between 3 and 10 s")
DPI = 90
TITLES = {"srtt": "RTT / RTT_min", "cwnd_bdp": "cwnd / BDP", "gain": "cwnd gain",
          "bandwidth": "sum bw / link", "min_rtt": "min_rtt / RTT_min", "allowance": "cwnd / target"}


def _runs(out: Path) -> list[tuple[int, list[Path]]]:
    """(flow count, finished repetition directories) of the kernel-bbr points, by flow count."""
    exp = out.joinpath(*EXPERIMENT)
    if not (exp / "plan.json").is_file():
        return []
    plan = read_json(exp / "plan.json", "plan")
    found = []
    for p in plan["points"]:
        if p["overrides"].get("flows.0.label") != SERIES:
            continue
        count = int(p["overrides"].get("flows.0.count", 0))
        found.append((count, trusted_reps(exp / "points" / p["id"], plan["repetitions"])))
    return sorted(found)


def _window(scenario: dict[str, Any]) -> tuple[float, float, float, float]:
    """(rate bit/s, propagation RTT us, window start s, window end s) of a run."""
    rate_bps = scenario["bottleneck"]["rate_mbit"] * 1e6
    sender = scenario["senders"][0]
    base_rtt_us = (sender["delay_fwd_ms"] + sender["delay_rev_ms"]) * US_PER_MS
    last_start = max(f["start_s"] for f in scenario["flows"])
    return rate_bps, base_rtt_us, last_start + SETTLE_S, float(scenario["duration_s"])


def collect(out: Path, fig_dir: Path) -> dict[str, Any]:
    """Per flow count, each factor's mean ± 95% CI over the repetitions (the section's summary.json entry),
    and the figure of one run; nothing when Figure 4.12 has no kernel-bbr runs with BBR state in their
    samples (results from before the sampler kept min_rtt)."""
    js: dict[str, Any] = {}
    example: tuple[int, Path] | None = None
    for count, reps in _runs(out):
        per_rep = []
        for rep in reps:
            meta, data, _ = load_run(rep)
            rate, base, t0, t1 = _window(meta["resolved"])
            f = queue_factors(data.flows, rate, base, t0, t1)
            if f is not None:
                per_rep.append(f.as_dict())
                example = (count, rep)
        if not per_rep:
            continue
        stats = {name: mean_ci95([r[name] for r in per_rep]) for name in FACTORS}
        js[str(count)] = {name: {"mean": m, "ci95": ci, "n": len(per_rep)} for name, (m, ci) in stats.items()}
    if example is not None:
        _plot(*example, fig_dir)
    return js


def render(js: dict[str, Any], fig_dir: Path, rel: str) -> tuple[list[str], dict[str, Any]]:
    """The section from its numbers (collect); nothing without them."""
    rows = [[count, str(factors[FACTORS[0]]["n"]),
             *(f"{f['mean']:.2f}" + ("" if f["ci95"] is None else f" ± {f['ci95']:.2f}")
               for f in (factors[name] for name in FACTORS))] for count, factors in js.items()]
    if not rows:
        return [], {}
    lines = ["### What Linux shows that the paper did not: where original BBR's queue comes from", "",
             "Figure 4.12's kernel-bbr runs, from the bbr state `ss` reports for every flow every 100 ms "
             f"(bw, min_rtt, cwnd gain, cwnd), from {SETTLE_S:g} s after the last flow starts to the end. "
             "The flows' summed cwnd over the path's true BDP factors exactly, at every instant, into "
             "cwnd gain x (sum of the flows' bw estimates / link rate) x (their min_rtt / propagation RTT) x "
             "(cwnd / the gain's target, the allowance the kernel adds: ACK-aggregation `extra_acked` and TSO "
             "quanta). Medians over the instants, then mean ± 95% CI over repetitions:", "",
             tables.markdown(["flows", "runs", *(TITLES[n] for n in FACTORS)], rows, labels=2), "",
             f"**Why: {WHY}**", ""]
    if (fig_dir / FIGURE).is_file():
        lines += [f"![where the queue comes from]({rel}/{FIGURE})", ""]
    return lines, js


def _plot(count: int, rep: Path, fig_dir: Path) -> Path:
    meta, data, _ = load_run(rep)
    rate, base, _, t1 = _window(meta["resolved"])
    series = factor_series(data.flows, rate, base, 0.0, t1)
    fig, ax = plt.subplots(figsize=(10, 3.6))
    if series is not None:
        for name in FACTORS:
            if name != "gain":
                ax.plot(series["t"], series[name], label=TITLES[name], linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=5)
    ax.set_title(f"Seed 000 Fig 4.12 set-up, kernel bbr, {count} flows ({rep.parent.name}/{rep.name})", fontsize=9)
    fig.tight_layout()
    path = fig_dir / FIGURE
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
