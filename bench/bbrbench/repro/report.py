"""The reproduction report: our sweep results beside the papers' numbers (the *.paper.toml data files), as Markdown with
PNG figures, plus summary.json with every number the report shows.

Inputs are the sweep directories `reproduce` wrote (plan.json and each repetition's summary.json); only
finished repetitions count. Means carry 95% confidence half-widths (Student's t) over repetitions. Each
claim's verdict follows the rule in claims.py, after a time-scale test: the runs must go on after their last
flow starts for at least the seconds the claim's data file asks (`needs_s`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from ..analysis import tables
from ..analysis.sharemodel import l2_error, share_for_link  # noqa: E402
from ..analysis.stats import mean_ci95, pearson_ci95, regression  # noqa: E402
from ..experiments.sweep import DONE_MARK, NOT_RUNNABLE, metric_value, point_raw  # noqa: E402
from ..results import read_json
from ..scenario import time_after_last_start_s
from . import queue  # noqa: E402
from .claims import MIN_N, Outcome, Stat, Verdict, too_short
from .papers import Spec, scalar, seed004, spec_for, specs  # noqa: E402

# Payload bytes per full-sized segment (1500 MTU minus IPv4, TCP and timestamp option headers).
MSS_BYTES = 1448
DPI = 90
FIG_SIZE = (11, 3.4)
MAX_PLOTTED_MEASURES = 3
# Seed 004's path: 10 Mbit/s, 40 ms.
SEED004_RATE_MBIT = 10.0
SEED004_RTT_MS = 40.0
# "Does not affect the share": a correlation weaker than this in magnitude.
WEAK_CORRELATION = 0.5
SMOKE_PROFILE = "quick"


# ---------------------------------------------------------------- reading results


def value(summary: dict[str, Any], metric: str) -> float | None:
    """A sweep metric path, or one derived from the run's per-flow results:
    derived.retrans_packets / derived.sent_packets (full-sized segments), derived.throughput_mbps (bytes
    put on the wire over the active period), derived.share.LABEL (goodput share of flows whose label
    starts with LABEL)."""
    if not metric.startswith("derived."):
        return metric_value(summary, metric)
    name = metric.removeprefix("derived.")
    flows = summary.get("flows", [])
    if name in ("retrans_packets", "sent_packets"):
        field_ = "bytes_retrans" if name == "retrans_packets" else "bytes_sent"
        return sum(f.get(field_) or 0 for f in flows) / MSS_BYTES
    if name == "throughput_mbps":
        period = summary.get("total", {}).get("active_period_s")
        sent = sum(f.get("bytes_sent") or 0 for f in flows)
        return sent * 8 / period / 1e6 if period else None
    if name.startswith("share."):
        label = name.removeprefix("share.")
        total = sum(f.get("goodput_mbps") or 0.0 for f in flows)
        mine = sum(f.get("goodput_mbps") or 0.0 for f in flows if str(f.get("label", "")).startswith(label))
        return mine / total if total else None
    raise ValueError(f"unknown derived metric {metric!r}")


@dataclass
class PointResult:
    overrides: dict[str, Any]
    label: str
    status: str
    # Seconds the point's runs go on after their last flow starts.
    after_last_start_s: float
    summaries: list[dict[str, Any]] = field(default_factory=list)

    def stat(self, metric: str) -> Stat | None:
        values = [v for v in (value(s, metric) for s in self.summaries) if v is not None]
        if not values:
            return None
        m, ci = mean_ci95(values)
        return Stat(m, ci, len(values), tuple(values))


def load_experiment(directory: Path) -> list[PointResult]:
    plan = read_json(directory / "plan.json", "plan")
    points: list[PointResult] = []
    for p in plan["points"]:
        pdir = directory / "points" / p["id"]
        label = ", ".join(f"{k}={v}" for k, v in p["overrides"].items()) or "(base)"
        after_s = time_after_last_start_s(point_raw(plan["raw"], p["overrides"]))
        if (pdir / NOT_RUNNABLE).is_file():
            why = (pdir / NOT_RUNNABLE).read_text().strip()
            points.append(PointResult(p["overrides"], label, f"not runnable: {why}", after_s))
            continue
        summaries = [read_json(pdir / f"rep{r}" / "summary.json", "summary")
                     for r in range(plan["repetitions"]) if (pdir / f"rep{r}" / DONE_MARK).is_file()]
        points.append(PointResult(p["overrides"], label, f"{len(summaries)}/{plan['repetitions']} repetitions",
                                  after_s, summaries))
    return points


def after_last_start_s(points: list[PointResult]) -> float:
    """An experiment's run time after the last flow starts: its shortest point's, so that a claim over
    several points is tested only where every point ran long enough."""
    return min((p.after_last_start_s for p in points), default=0.0)


VERDICT_LABELS = {
    Outcome.HOLDS: "**holds** on Linux here",
    Outcome.FAILS: "**does not hold** on Linux here",
    Outcome.UNDECIDED: "**undecided** (a 95% interval straddles the claim's boundary)",
    Outcome.NOT_TESTABLE: "**not testable in this profile**",
    Outcome.TOO_FEW_RUNS: "**not decided**",
}


def verdict_line(claim: str, v: Verdict) -> str:
    head = VERDICT_LABELS[v.outcome]
    if v.outcome is Outcome.NOT_TESTABLE:
        return f"- {claim}: {head} ({v.text})."
    if v.outcome is Outcome.TOO_FEW_RUNS:
        head += f" (n = {v.min_n}, needs {MIN_N})"
    return f"- {claim}: {head}: {v.text}."


class Results:
    """One experiment's points arranged by the spec's series and x."""

    def __init__(self, spec: Spec, points: list[PointResult]) -> None:
        self.spec = spec
        self.points = points

    def series_of(self, p: PointResult) -> str:
        if self.spec.series_key and self.spec.series_key in p.overrides:
            return str(p.overrides[self.spec.series_key])
        return self.spec.default_series

    def x_of(self, p: PointResult) -> Any:
        xs = tuple(scalar(p.overrides.get(k)) for k in self.spec.x_keys)
        if not xs:
            return None
        return xs[0] if len(xs) == 1 else xs

    def find(self, series: str, x: Any) -> PointResult | None:
        return next((p for p in self.points if self.series_of(p) == series and self.x_of(p) == scalar(x)), None)

    def stat(self, series: str, x: Any, metric: str) -> Stat | None:
        p = self.find(series, x)
        return p.stat(metric) if p else None

    def xs(self, series: str) -> list[Any]:
        return [self.x_of(p) for p in self.points if self.series_of(p) == series and p.summaries]

    def x_name(self, x: Any) -> str:
        if x in self.spec.x_names:
            return self.spec.x_names[x]
        if isinstance(x, tuple):
            return ", ".join(str(v) for v in x if v is not None)
        return "" if x is None else str(x)


# ---------------------------------------------------------------- one experiment


def _paper(spec: Spec, series: str, x: Any, metric: str) -> str:
    for key in ((series, x, metric), (series, None, metric)):
        if key in spec.paper:
            v = spec.paper[key]
            return f"{v:g}" if isinstance(v, (int, float)) else v
    return "-"


def experiment_section(spec: Spec, points: list[PointResult], fig_dir: Path, rel: str,
                       setup: str = "") -> tuple[list[str], dict[str, Any]]:
    """One experiment's table, verdicts, figure and notes; setup is the scenario's own description in
    the profile that ran (scaling, run length, repetitions), so the notes need not depend on it."""
    res = Results(spec, points)
    lines = [f"### {spec.title}", ""]
    if setup:
        lines += [f"Run here: {setup}.", ""]
    js: dict[str, Any] = {"title": spec.title, "setup": setup, "points": [], "claims": []}
    header = ["series", spec.x_title or "x"]
    for m in spec.measures:
        header += [f"{m.title} paper", f"{m.title} ours"]
    header.append("status")
    body: list[list[str]] = []
    for p in points:
        series, x = res.series_of(p), res.x_of(p)
        row = [series or "-", res.x_name(x) or "-"]
        point_js: dict[str, Any] = {"series": series, "x": x, "overrides": p.overrides, "status": p.status,
                                    "metrics": {}}
        for m in spec.measures:
            s = p.stat(m.metric)
            row += [_paper(spec, series, x, m.metric), s.text(m.scale) if s else "-"]
            point_js["metrics"][m.metric] = s.to_json() if s else None
        row.append(p.status)
        body.append(row)
        js["points"].append(point_js)
    lines += [tables.markdown(header, body, labels=2), "",
              "(ours: mean ± 95% confidence half-width over n repetitions)", ""]
    run_s = after_last_start_s(points)
    js["after_last_start_s"] = run_s
    if spec.claims:
        lines += [f"Claims (runs go on for {run_s:g} s after their last flow starts):", ""]
        for c in spec.claims:
            v = c.judge(res, run_s)
            lines.append(verdict_line(c.text, v))
            js["claims"].append({"claim": c.text, "needs_s": c.needs_s, "why": c.why, "verdict": v.to_json()})
        lines.append("")
    figure = plot_experiment(res, fig_dir)
    if figure is not None:
        lines += [f"![{spec.title}]({rel}/{figure.name})", ""]
    if spec.notes:
        lines += [f"Differences: {spec.notes}", ""]
    return lines, js


def plot_experiment(res: Results, fig_dir: Path) -> Path | None:
    measured = [p for p in res.points if p.summaries]
    if not measured:
        return None
    measures = res.spec.measures[:MAX_PLOTTED_MEASURES]
    fig, axes = plt.subplots(1, len(measures), figsize=FIG_SIZE, squeeze=False)
    xs_all = list(dict.fromkeys(res.x_of(p) for p in measured))
    numeric = all(isinstance(x, (int, float)) for x in xs_all)
    series_names = list(dict.fromkeys(res.series_of(p) for p in measured))
    for ax, m in zip(axes[0], measures):
        for i, series in enumerate(series_names):
            pts = [p for p in measured if res.series_of(p) == series]
            xs, ys, es = [], [], []
            for p in pts:
                s = p.stat(m.metric)
                if s is None:
                    continue
                x = res.x_of(p)
                xs.append(x if numeric else xs_all.index(x))
                ys.append(s.mean * m.scale)
                es.append((s.ci95 or 0.0) * m.scale)
            if not xs:
                continue
            order = np.argsort(xs)
            color = f"C{i}"
            ax.errorbar(np.array(xs)[order], np.array(ys)[order], yerr=np.array(es)[order], marker="o",
                        capsize=3, color=color, label=f"{series or 'ours'} (ours)")
            paper_x, paper_y = [], []
            for x in dict.fromkeys(res.x_of(p) for p in pts):
                v = res.spec.paper.get((series, x, m.metric))
                if isinstance(v, (int, float)):
                    paper_x.append(x if numeric else xs_all.index(x))
                    paper_y.append(v)
            if paper_x:
                ax.scatter(paper_x, paper_y, marker="s", facecolors="none", edgecolors=color, s=60,
                           label=f"{series or 'paper'} (paper)")
        if numeric and len(xs_all) > 2 and min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 20:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(xs_all)))
            ax.set_xticklabels([res.x_name(x) for x in xs_all], rotation=15, fontsize=7)
        ax.set_xlabel(res.spec.x_title)
        ax.set_ylabel(m.title)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a measure none of the points has draws nothing to label
            ax.legend(fontsize=7)
    fig.suptitle(res.spec.title, fontsize=9)
    fig.tight_layout()
    path = fig_dir / (res.spec.key.replace("/", "_") + ".png")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- seed 004


def _share_points(out: Path, name: str) -> list[PointResult]:
    d = out / "seed004" / name
    return load_experiment(d) if (d / "plan.json").is_file() else []


def _duration(out: Path, name: str, p: PointResult) -> float:
    plan = read_json(out / "seed004" / name / "plan.json", "plan")
    return float(p.overrides.get("duration_s", plan["raw"].get("duration_s", 60)))


def seed004_section(out: Path, fig_dir: Path, rel: str) -> tuple[list[str], dict[str, Any]]:
    lines = ["### Seed 004: BBR's share against CUBIC, model vs measured", ""]
    js: dict[str, Any] = {}
    # (N, q in BDP) -> measured mean share, model share, CI
    rows: list[dict[str, Any]] = []
    for name in ("share", "share-long"):
        for p in _share_points(out, name):
            s = p.stat("algo.bbr.share")
            n = int(p.overrides.get("flows.0.count", 1))
            q = float(p.overrides.get("bottleneck.buffer_bdp", 1))
            model = share_for_link(n, q, SEED004_RATE_MBIT, SEED004_RTT_MS, _duration(out, name, p))
            rows.append({"n_bbr": n, "queue_bdp": q, "model": model, "measured": s.to_json() if s else None,
                         "status": p.status})
    rows.sort(key=lambda r: (r["n_bbr"], r["queue_bdp"]))
    js["share"] = rows
    share_rows = []
    for r in rows:
        m = r["measured"]
        measured = Stat(m["mean"], m["ci95"], m["n"]).text() if m else "-"
        share_rows.append([str(r["n_bbr"]), f"{r['queue_bdp']:g}", f"{r['model']:.3f}", measured, r["status"]])
    lines += [tables.markdown(["BBR flows", "queue (BDP)", "model share", "measured BBR share", "status"],
                              share_rows, labels=0),
              "", "Per-N L2 error between the model and the measured mean share, over the queue sizes run for "
              "that N (the seed's Table 2 beside ours). L2 grows with the number of queue sizes it sums over, so "
              "each side also gives the root mean square per queue size, L2 / sqrt(count), which compares "
              "unequal sets:", ""]
    paper = seed004("share")
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
    js["l2"] = {count: {"paper": paper_l2.get(count), "ours": o.l2, "ours_rms": o.rms, "queues_bdp": o.queues_bdp}
                for count, o in per_n.items()}
    queues = ", ".join(f"{q:g}" for q in paper_queues)
    lines += [tables.markdown(["BBR flows", f"paper L2 ({queues} BDP)", "paper RMS", "ours L2", "ours RMS",
                               "our queue sizes (BDP)"], l2_rows, labels=0), ""]
    if rows:
        fig = _plot_share(rows, fig_dir)
        lines += [f"![seed 004 model vs measured]({rel}/{fig.name})", ""]

    lines += ["CUBIC count (the model says it does not matter):", ""]
    cubic = _share_points(out, "cubic-count")
    cx, cy = [], []
    for p in cubic:
        for summary in p.summaries:
            v = value(summary, "algo.bbr.share")
            if v is not None:
                cx.append(float(p.overrides.get("flows.1.count", 1)))
                cy.append(v)
    reg = regression(cx, cy)
    corr: tuple[float, float, float] | None
    try:
        corr = pearson_ci95(cx, cy)
    except ValueError:
        corr = None
    js["cubic_count"] = {"pearson": corr[0] if corr else None, "pearson_ci95": corr[1:] if corr else None,
                         "regression": reg, "points": list(zip(cx, cy))}
    paper = seed004("cubic-count")
    r_text = "-" if corr is None else f"{corr[0]:.3g} (95% CI {corr[1]:.2g} to {corr[2]:.2g})"
    lines += [tables.markdown(["statistic", "paper", "ours"], [
        ["Pearson r (share vs CUBIC count)", paper["pearson"], r_text],
        ["single-factor regression slope per CUBIC flow", None, _f(reg["slope"])],
        ["R²", paper["r2"], _f(reg["r2"])],
        ["slope p-value", paper["slope_p"], _f(reg["p"])],
        ["runs", f"{paper['runs']} (all of dataset I)", str(reg["n"])]]), ""]
    for p in cubic:
        s = p.stat("algo.bbr.share")
        lines.append(f"- {p.label}: BBR share {s.text() if s else '-'} ({p.status})")
    run_s = after_last_start_s(cubic)
    verdict = cubic_count_verdict(corr, len(cx), too_short(paper["needs_s"], paper["why"], run_s))
    lines += ["", f"Runs go on for {run_s:g} s after their last flow starts.", "",
              verdict_line("The CUBIC count does not affect BBR's share", verdict), ""]
    js["cubic_count"].update(after_last_start_s=run_s, verdict=verdict.to_json())

    lines += ["Random loss (the seed's Table 4: sum of lossy minus loss-free share; one flow mix here, 9 + 9):", ""]
    loss_rows: list[list[Any]] = []
    loss = _share_points(out, "loss")
    paper_l1 = seed004("loss")["l1"]
    base = next((p.stat("algo.bbr.share") for p in loss if scalar(p.overrides.get("bottleneck.loss_pct")) == 0), None)
    loss_js = []
    for p in loss:
        pct = scalar(p.overrides.get("bottleneck.loss_pct"))
        if pct == 0:
            continue
        s = p.stat("algo.bbr.share")
        diff = s.mean - base.mean if s and base else None
        loss_js.append({"loss_pct": pct, "share": s.to_json() if s else None, "l1": diff})
        loss_rows.append([str(pct), paper_l1.get(pct), _f(diff), s.text() if s else None])
    lines += [tables.markdown(["loss %", "paper L1", "ours (share(loss) - share(0))", "measured share"], loss_rows,
                              labels=0)]
    lines += ["", f"Loss-free share: {base.text() if base else '-'}.", ""]
    js["loss"] = loss_js
    durations = sorted({_duration(out, name, p) for name in ("share", "share-long") for p in _share_points(out, name)})
    run_text = f"share runs of {_span(durations)} s (the paper: 60 s, 100 s at 16 BDP, 200 s at 32 BDP)" \
        if durations else "no share runs"
    lines += ["Differences: the seed ran a GENI testbed with Linux BBR of 2020 and tc netem; we run the kernel's "
              f"`bbr` (the paper's algorithm) through a userspace delay line on the ACK path and a tbf-shaped "
              f"FIFO, {run_text}, and a subset of BBR counts and queue sizes, so per-N errors sum over fewer "
              "queue sizes than the seed's seven. The model's d is taken as the run's duration.", ""]
    return lines, js


def _span(values: list[float]) -> str:
    return f"{values[0]:g}" if values[0] == values[-1] else f"{values[0]:g}-{values[-1]:g}"


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


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def _plot_share(rows: list[dict[str, Any]], fig_dir: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    grid = np.geomspace(0.25, 32, 60)
    for i, n in enumerate(sorted({r["n_bbr"] for r in rows})):
        color = f"C{i}"
        model = [share_for_link(n, q, SEED004_RATE_MBIT, SEED004_RTT_MS, 60.0) for q in grid]
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


# ---------------------------------------------------------------- the whole report


RULE = (
    "How a claim is judged. (1) Time scale: each claim's data file names the seconds of running after the last "
    "flow has started that the mechanism behind it needs (e.g. 3 PROBE_RTT periods: 30 s for BBRv1, 15 s for "
    "BBRv2/v3); where an experiment's shortest point runs for less, the claim is **not testable in this "
    f"profile**, whatever the numbers say. (2) Repetitions: every mean a claim uses needs n >= {MIN_N}; otherwise "
    "it is **not decided**. (3) Intervals: a comparison decides only when its 95% interval lies entirely on "
    "one side of the claim's boundary: Student's t for a single mean, the delta method with Welch's degrees "
    "of freedom for a ratio of two means, Welch's interval for a difference of two means. Inside: **holds**; "
    "wholly on the other side: **does not hold**; straddling it: **undecided**. (4) Several points (flow "
    "counts, buffers, rates) or conditions: the claim holds if every one holds, does not hold if any one "
    "decidedly fails, and otherwise stays undecided (or not decided, where a point lacks repetitions). Each "
    "verdict quotes the intervals that decided it."
)


def _load_text(load: dict[str, Any] | None) -> str:
    if not load or not load.get("samples"):
        return "not recorded"
    return f"{load['min']:.2f}-{load['mean']:.2f}-{load['max']:.2f} ({len(load['samples'])} samples)"


def header_lines(meta: dict[str, Any]) -> list[str]:
    """Title, smoke label for the quick profile, one line per invocation (command, revision, times, machine
    load) and the verdict rule."""
    profile = meta["profile"]
    smoke = profile == SMOKE_PROFILE
    title = "# Reproduction of the seed papers' experiments"
    lines = [f"{title}: smoke result ({profile} profile)" if smoke else title, ""]
    if smoke:
        lines += [f"**Smoke result**: the {profile} profile's short runs and few repetitions test that every "
                  "experiment runs and reports, not the papers' claims; its verdicts are mostly \"not testable\" "
                  "or \"not decided\" by design.", ""]
    lines += [f"Profile: **{profile}**. Produced by (machine load: 1-minute load average min-mean-max):", ""]
    for r in meta.get("runs", []):
        wall = f"{r['elapsed_s'] / 60:.1f} min" if "elapsed_s" in r else "-"
        machine = f", kernel {r['kernel']}, {r['cpus']} CPUs" if "kernel" in r else ""
        lines.append(f"- `{r['command']}` at revision `{r['revision']}`: {r['started']} - "
                     f"{r.get('finished', 'interrupted')}, wall time {wall}, load {_load_text(r.get('load_1min'))}"
                     f"{machine}")
    lines += ["", "Each table puts the paper's number (or its words, where it gives only a figure) beside ours "
              "(mean ± 95% confidence half-width over n repetitions; no interval with n = 1). BBRv2 is bbrkit's "
              "bbr2. Scaled runs say so in their notes.", "", RULE, ""]
    return lines


def write_report(out: Path, mix_hosts: bool = False) -> Path:
    """The report of a reproduction directory. Each experiment is aggregated first, as `bbrbench report`
    does, so that the report pools repetitions only where a sweep would: HarnessError where a point's
    repetitions come from hosts of different kernels or BPF objects, unless mix_hosts."""
    from ..experiments.sweep import aggregate
    for plan_file in sorted(out.glob("seed*/*/plan.json")):
        aggregate(plan_file.parent, mix_hosts)
    meta = json.loads((out / "meta.json").read_text())
    fig_dir = out / "figures"
    fig_dir.mkdir(exist_ok=True)
    rel = "figures"
    lines = header_lines(meta)
    summary: dict[str, Any] = {"meta": meta, "experiments": {}}
    seeds = sorted(d.name for d in out.iterdir() if d.is_dir() and d.name.startswith("seed"))
    for seed in seeds:
        lines += [f"## {seed}", ""]
        # In the papers' order (the catalogue's), not the file names'.
        order = {s.key: s.order for s in specs()}
        exp_dirs = [d for d in (out / seed).iterdir() if (d / "plan.json").is_file()]
        for exp_dir in sorted(exp_dirs, key=lambda d: (order.get(f"{seed}/{d.name}", len(order)), d.name)):
            key = f"{seed}/{exp_dir.name}"
            if seed == "seed004":
                continue
            spec = spec_for(key)
            points = load_experiment(exp_dir)
            if spec is None:
                lines += [f"### {key}", "", "(no paper numbers catalogued)", ""]
                continue
            setup = str(read_json(exp_dir / "plan.json", "plan")["raw"].get("description", ""))
            section, js = experiment_section(spec, points, fig_dir, rel, setup)
            lines += section
            summary["experiments"][key] = js
        if seed == "seed004":
            section, js = seed004_section(out, fig_dir, rel)
            lines += section
            summary["experiments"]["seed004"] = js
        if seed == "seed000":
            section, js = queue.section(out, fig_dir, rel)
            lines += section
            if js:
                summary["experiments"]["seed000/queue"] = js
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
