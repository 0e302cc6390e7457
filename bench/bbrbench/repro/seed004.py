"""Seed 004's section of the report: Ware et al.'s model of BBR's share against CUBIC beside the measured
share (the seed's Table 2), the CUBIC-count test (its Table 3) and the random-loss shift (its Table 4).
Its experiments (share, share-long, cubic-count, loss) have no table of the generic kind: their data files
name this section, and the numbers they hold are the seed's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from ..analysis import tables  # noqa: E402
from ..analysis.sharemodel import l2_error, share_for_link  # noqa: E402
from ..analysis.stats import pearson_ci95, regression  # noqa: E402
from ..results import read_json  # noqa: E402
from .claims import MIN_N, Outcome, Stat, Verdict, too_short, verdict_line  # noqa: E402
from .papers import scalar, section_data  # noqa: E402
from .points import PointResult, after_last_start_s, load_experiment, value  # noqa: E402

SEED = "seed004"
DPI = 90
# Seed 004's path: 10 Mbit/s, 40 ms.
RATE_MBIT = 10.0
RTT_MS = 40.0
SHARE = "algo.bbr.share"
# "Does not affect the share": a correlation weaker than this in magnitude.
WEAK_CORRELATION = 0.5


def _points(out: Path, name: str) -> list[PointResult]:
    d = out / SEED / name
    return load_experiment(d) if (d / "plan.json").is_file() else []


def _duration(out: Path, name: str, p: PointResult) -> float:
    plan = read_json(out / SEED / name / "plan.json", "plan")
    return float(p.overrides.get("duration_s", plan["raw"].get("duration_s", 60)))


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def _span(values: list[float]) -> str:
    return f"{values[0]:g}" if values[0] == values[-1] else f"{values[0]:g}-{values[-1]:g}"


# ---------------------------------------------------------------- the model against the measured share


def share_rows(out: Path) -> list[dict[str, Any]]:
    """(BBR count, queue in BDP, model share, measured share, status) of every share point, by N then q."""
    rows: list[dict[str, Any]] = []
    for name in ("share", "share-long"):
        for p in _points(out, name):
            s = p.stat(SHARE)
            n = int(p.overrides.get("flows.0.count", 1))
            q = float(p.overrides.get("bottleneck.buffer_bdp", 1))
            model = share_for_link(n, q, RATE_MBIT, RTT_MS, _duration(out, name, p))
            rows.append({"n_bbr": n, "queue_bdp": q, "model": model, "measured": s.to_json() if s else None,
                         "status": p.status})
    rows.sort(key=lambda r: (r["n_bbr"], r["queue_bdp"]))
    return rows


@dataclass(frozen=True)
class PerN:
    """One BBR count's L2 error between model and measured mean shares over the queue sizes run for it."""

    l2: float
    queues_bdp: list[float]

    @property
    def rms(self) -> float:
        return self.l2 / math.sqrt(len(self.queues_bdp))


def per_n_l2(rows: list[dict[str, Any]]) -> dict[int, PerN]:
    """Seed 004's Table 2 for our rows (n_bbr, queue_bdp, model, measured): one L2 error per BBR count."""
    out: dict[int, PerN] = {}
    for n in sorted({r["n_bbr"] for r in rows}):
        mine = [r for r in rows if r["n_bbr"] == n and r["measured"]]
        if mine:
            out[n] = PerN(l2_error([r["model"] for r in mine], [r["measured"]["mean"] for r in mine]),
                          [r["queue_bdp"] for r in mine])
    return out


def share_part(rows: list[dict[str, Any]], fig_dir: Path, rel: str) -> tuple[list[str], dict[int, Any]]:
    """The model and measured share per (N, q), the per-N L2 table beside the seed's Table 2, the figure."""
    share_table = []
    for r in rows:
        m = r["measured"]
        measured = Stat(m["mean"], m["ci95"], m["n"]).text() if m else "-"
        share_table.append([str(r["n_bbr"]), f"{r['queue_bdp']:g}", f"{r['model']:.3f}", measured, r["status"]])
    lines = [tables.markdown(["BBR flows", "queue (BDP)", "model share", "measured BBR share", "status"],
                             share_table, labels=0),
             "", "Per-N L2 error between the model and the measured mean share, over the queue sizes run for "
             "that N (the seed's Table 2 beside ours). L2 grows with the number of queue sizes it sums over, so "
             "each side also gives the root mean square per queue size, L2 / sqrt(count), which compares "
             "unequal sets:", ""]
    paper = section_data(f"{SEED}/share")
    paper_l2, paper_queues = paper["l2"], paper["queues_bdp"]
    paper_sqrt_k = math.sqrt(len(paper_queues))
    per_n = per_n_l2(rows)
    l2_rows: list[list[Any]] = []
    for count in sorted(set(paper_l2) | set(per_n)):
        p_l2 = paper_l2.get(count)
        p_cells = ["-", "-"] if p_l2 is None else [f"{p_l2:.3f}", f"{p_l2 / paper_sqrt_k:.3f}"]
        if count in per_n:
            o = per_n[count]
            o_cells = [f"{o.l2:.3f}", f"{o.rms:.3f}", ", ".join(f"{q:g}" for q in o.queues_bdp)]
        else:
            o_cells = ["not run in this profile", "-", "-"]
        l2_rows.append([str(count)] + p_cells + o_cells)
    js = {count: {"paper": paper_l2.get(count), "ours": o.l2, "ours_rms": o.rms, "queues_bdp": o.queues_bdp}
          for count, o in per_n.items()}
    queues = ", ".join(f"{q:g}" for q in paper_queues)
    lines += [tables.markdown(["BBR flows", f"paper L2 ({queues} BDP)", "paper RMS", "ours L2", "ours RMS",
                               "our queue sizes (BDP)"], l2_rows, labels=0), ""]
    if rows:
        fig = _plot_share(rows, fig_dir)
        lines += [f"![seed 004 model vs measured]({rel}/{fig.name})", ""]
    return lines, js


def _plot_share(rows: list[dict[str, Any]], fig_dir: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    grid = np.geomspace(0.25, 32, 60)
    for i, n in enumerate(sorted({r["n_bbr"] for r in rows})):
        color = f"C{i}"
        model = [share_for_link(n, q, RATE_MBIT, RTT_MS, 60.0) for q in grid]
        ax.plot(grid, model, color=color, linestyle="--", label=f"model, N={n}")
        mine = [r for r in rows if r["n_bbr"] == n and r["measured"]]
        ax.errorbar([r["queue_bdp"] for r in mine], [r["measured"]["mean"] for r in mine],
                    yerr=[r["measured"]["ci95"] or 0 for r in mine], color=color, marker="o", linestyle="none",
                    capsize=3, label=f"measured, N={n}")
    ax.set_xscale("log")
    ax.set_xlabel("queue (BDP)")
    ax.set_ylabel("BBR share of goodput")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Seed 004: Ware et al. model vs measured (10 Mbit/s, 40 ms, 1 CUBIC flow)", fontsize=9)
    fig.tight_layout()
    path = fig_dir / "seed004_share.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- the CUBIC count


def cubic_count_verdict(corr: tuple[float, float, float] | None, runs: int, short: Verdict | None) -> Verdict:
    """"The CUBIC count does not affect the share": holds when r's 95% interval lies inside
    (-WEAK_CORRELATION, WEAK_CORRELATION), does not hold when it lies wholly beyond one of them."""
    if short is not None:
        return short
    if runs < MIN_N:
        return Verdict(Outcome.TOO_FEW_RUNS, f"{runs} runs over the CUBIC counts", runs)
    if corr is None:
        return Verdict(Outcome.UNDECIDED, "Pearson r undefined: the CUBIC count or the share does not vary")
    r, low, high = corr
    iv = f"Pearson r {r:.2f}, 95% CI {low:.2f} to {high:.2f} (n = {runs} runs)"
    if -WEAK_CORRELATION < low and high < WEAK_CORRELATION:
        return Verdict(Outcome.HOLDS, f"{iv}, inside ±{WEAK_CORRELATION:g}")
    if low >= WEAK_CORRELATION or high <= -WEAK_CORRELATION:
        return Verdict(Outcome.FAILS, f"{iv}, beyond ±{WEAK_CORRELATION:g}")
    return Verdict(Outcome.UNDECIDED, f"{iv}, straddles ±{WEAK_CORRELATION:g}")


def cubic_count_part(out: Path) -> tuple[list[str], dict[str, Any]]:
    """Pearson r and the single-factor regression of BBR's share on the CUBIC count, over every run."""
    lines = ["CUBIC count (the model says it does not matter):", ""]
    cubic = _points(out, "cubic-count")
    cx, cy = [], []
    for p in cubic:
        for summary in p.summaries:
            v = value(summary, SHARE)
            if v is not None:
                cx.append(float(p.overrides.get("flows.1.count", 1)))
                cy.append(v)
    reg = regression(cx, cy)
    corr: tuple[float, float, float] | None
    try:
        corr = pearson_ci95(cx, cy)
    except ValueError:
        corr = None
    js: dict[str, Any] = {"pearson": corr[0] if corr else None, "pearson_ci95": corr[1:] if corr else None,
                          "regression": reg, "points": list(zip(cx, cy))}
    paper = section_data(f"{SEED}/cubic-count")
    r_text = "-" if corr is None else f"{corr[0]:.3g} (95% CI {corr[1]:.2g} to {corr[2]:.2g})"
    lines += [tables.markdown(["statistic", "paper", "ours"], [
        ["Pearson r (share vs CUBIC count)", paper["pearson"], r_text],
        ["single-factor regression slope per CUBIC flow", None, _f(reg["slope"])],
        ["R²", paper["r2"], _f(reg["r2"])],
        ["slope p-value", paper["slope_p"], _f(reg["p"])],
        ["runs", f"{paper['runs']} (all of dataset I)", str(reg["n"])]]), ""]
    for p in cubic:
        s = p.stat(SHARE)
        lines.append(f"- {p.label}: BBR share {s.text() if s else '-'} ({p.status})")
    run_s = after_last_start_s(cubic)
    verdict = cubic_count_verdict(corr, len(cx), too_short(paper["needs_s"], paper["why"], run_s))
    lines += ["", f"Runs go on for {run_s:g} s after their last flow starts.", "",
              verdict_line("The CUBIC count does not affect BBR's share", verdict), ""]
    js.update(after_last_start_s=run_s, verdict=verdict.to_json())
    return lines, js


# ---------------------------------------------------------------- random loss


def loss_part(out: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """BBR's share with random loss minus the loss-free share, beside the seed's Table 4."""
    lines = ["Random loss (the seed's Table 4: sum of lossy minus loss-free share; one flow mix here, 9 + 9):", ""]
    loss_rows: list[list[Any]] = []
    loss = _points(out, "loss")
    paper_l1 = section_data(f"{SEED}/loss")["l1"]
    base = next((p.stat(SHARE) for p in loss if scalar(p.overrides.get("bottleneck.loss_pct")) == 0), None)
    js = []
    for p in loss:
        pct = scalar(p.overrides.get("bottleneck.loss_pct"))
        if pct == 0:
            continue
        s = p.stat(SHARE)
        diff = s.mean - base.mean if s and base else None
        js.append({"loss_pct": pct, "share": s.to_json() if s else None, "l1": diff})
        loss_rows.append([str(pct), paper_l1.get(pct), _f(diff), s.text() if s else None])
    lines += [tables.markdown(["loss %", "paper L1", "ours (share(loss) - share(0))", "measured share"], loss_rows,
                              labels=0)]
    lines += ["", f"Loss-free share: {base.text() if base else '-'}.", ""]
    return lines, js


def differences(out: Path) -> list[str]:
    durations = sorted({_duration(out, name, p) for name in ("share", "share-long") for p in _points(out, name)})
    run_text = f"share runs of {_span(durations)} s (the paper: 60 s, 100 s at 16 BDP, 200 s at 32 BDP)" \
        if durations else "no share runs"
    return ["Differences: the seed ran a GENI testbed with Linux BBR of 2020 and tc netem; we run the kernel's "
            f"`bbr` (the paper's algorithm) through a userspace delay line on the ACK path and a tbf-shaped "
            f"FIFO, {run_text}, and a subset of BBR counts and queue sizes, so per-N errors sum over fewer "
            "queue sizes than the seed's seven. The model's d is taken as the run's duration.", ""]


def section(out: Path, fig_dir: Path, rel: str) -> tuple[list[str], dict[str, Any]]:
    rows = share_rows(out)
    share_lines, l2 = share_part(rows, fig_dir, rel)
    cubic_lines, cubic = cubic_count_part(out)
    loss_lines, loss = loss_part(out)
    lines = ["### Seed 004: BBR's share against CUBIC, model vs measured", "", *share_lines, *cubic_lines,
             *loss_lines, *differences(out)]
    return lines, {"share": rows, "l2": l2, "cubic_count": cubic, "loss": loss}
