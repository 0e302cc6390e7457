"""Seed 004's section of the report: Ware et al.'s model of BBR's share against CUBIC beside the measured
share (the seed's Table 2), the CUBIC-count test (its Table 3) and the random-loss shift (its Table 4).
Its experiments (share, share-long, cubic-count, loss) have no table of the generic kind: their data files
name this section, and the numbers they hold are the seed's. `collect` reads the runs into the section's
summary.json entry; `render` writes the section from such an entry, so a report rebuilds from its own
summary.json too."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
from scipy.stats import t as student_t  # noqa: E402

from ..analysis import tables  # noqa: E402
from ..analysis.sharemodel import l2_error, share_for_link  # noqa: E402
from ..analysis.stats import Moments, diff_of_moments, mean_ci95, pearson_ci95, regression  # noqa: E402
from ..results import read_json  # noqa: E402
from .claims import (  # noqa: E402
    MIN_N,
    Estimate,
    Interval,
    Outcome,
    Rule,
    Stat,
    Verdict,
    decide,
    decide_all,
    diff,
    too_short,
    verdict_line,
)
from .papers import scalar, section_data  # noqa: E402
from .points import PointResult, after_last_start_s, load_experiment, value  # noqa: E402

SEED = "seed004"
DPI = 90
# Seed 004's path: 10 Mbit/s, 40 ms.
RATE_MBIT = 10.0
RTT_MS = 40.0
SHARE = "algo.bbr.share"
# The loss claims' runs are 60 s with every flow at the start: their needs_s is met by the plan (the CUBIC
# count's section checks the same), so their decision takes the run length as given.
SETTLED_S = 60.0


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


def collect_share(out: Path) -> list[dict[str, Any]]:
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


def _rms_terms(rows: list[dict[str, Any]], n: int) -> tuple[float, list[tuple[float, int]]] | None:
    """One BBR count's RMS error between model and measured mean share over its queue sizes, with the
    delta method's variance terms (one per queue size: (error / (count x RMS))^2 x the mean's squared
    standard error) and their degrees of freedom; None without an interval at every queue size."""
    mine = [r for r in rows if r["n_bbr"] == n and r["measured"]]
    if not mine or any(r["measured"]["n"] < 2 for r in mine):
        return None
    errors = [r["measured"]["mean"] - r["model"] for r in mine]
    rms = math.sqrt(sum(e * e for e in errors) / len(errors))
    if rms == 0:
        return None
    terms = []
    for r, e in zip(mine, errors):
        m = Moments.from_ci95(r["measured"]["mean"], r["measured"]["ci95"] or 0.0, r["measured"]["n"])
        terms.append(((e / (len(errors) * rms)) ** 2 * m.sd * m.sd / m.n, m.n - 1))
    return rms, terms


def best_fit_estimates(rows: list[dict[str, Any]], best: int) -> list[Estimate]:
    """Each other BBR count's RMS error less `best`'s: positive where `best` fits better. The interval is
    Student's t at the Welch-Satterthwaite degrees of freedom of the delta method's terms."""
    mine = _rms_terms(rows, best)
    found = []
    for n in sorted({r["n_bbr"] for r in rows} - {best}):
        label = f"RMS error at {n} BBR flows less at {best}"
        other = _rms_terms(rows, n)
        if mine is None or other is None:
            found.append(Estimate(label, Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured", 0)))
            continue
        terms = other[1] + mine[1]
        var = sum(t for t, _ in terms)
        df = var * var / sum(t * t / k for t, k in terms) if var > 0 else 1.0
        half = float(student_t.ppf(0.975, df)) * math.sqrt(var)
        found.append(Estimate(label, Interval("difference", other[0] - mine[0], half, "delta method over the "
                                              "queue sizes' means"), None))
    return found


def claim_notes(c: dict[str, Any]) -> list[str]:
    """Below a claim's verdict line, as the experiments' claims have them: its margin, its verdict under the
    second margin family, the margin written after the data, the fragile mark, the n declared for its next
    run."""
    v, w = c["verdict"], c.get("wide")
    lines = [f"  (Decided {c['rule']}: {c['margin']}.)"]
    if w and (w["rule"] != c["rule"] or w["verdict"]["outcome"] != v["outcome"]):
        same = ("the same" if w["verdict"]["outcome"] == v["outcome"]
                else f"**{w['verdict']['outcome']}** (differs: depends on the margin)")
        lines.append(f"  (Second margins, {w['rule']}: {same}.)")
    if c.get("post_hoc"):
        lines.append(f"  (Post-hoc: {c['post_hoc']}.)")
    if v.get("fragile"):
        lines.append(f"  (Fragile: {v['fragile']}.)")
    if c.get("n"):
        lines.append(f"  (n declared for the next run: {c['n']}.)")
    return lines


def table2_claim(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The data file's claim that the model fits one BBR count best, decided on our RMS errors."""
    claim = next(iter(section_data(f"{SEED}/share").get("claims", [])), None)
    if claim is None or not rows:
        return None
    rule = Rule.from_data(claim)
    estimates = best_fit_estimates(rows, int(claim["best_n"]))
    v = decide_all(estimates, rule, SETTLED_S)
    w = decide_all(estimates, rule.widened(), SETTLED_S)
    return {"claim": claim["text"], "experiment": f"{SEED}/share", "also": [f"{SEED}/share-long"], "n": claim.get("n"),
            "line": verdict_line(claim["text"], v), "verdict": v.to_json(), "rule": rule.describe(),
            "margin": claim["margin"], "post_hoc": claim["post_hoc"],
            "wide": {"rule": rule.widened().describe(), "verdict": w.to_json()}}


def headline_claim(rows: list[dict[str, Any]], cubic: dict[str, Any]) -> dict[str, Any] | None:
    """The paper's headline, that the queue size and the number of BBR flows dominate BBR's share: the span of
    our measured share over the grid of BBR counts and queue sizes (its highest mean less its lowest, Welch's
    interval) less the change over the CUBIC counts run (the regression's slope times their range)."""
    claim = next((c for c in section_data(f"{SEED}/share").get("claims", []) if c.get("headline")), None)
    measured = [r for r in rows if r["measured"] and r["measured"]["n"] >= MIN_N and r["measured"]["ci95"]]
    reg = cubic.get("regression") or {}
    counts = [x for x, _ in cubic.get("points", [])]
    if claim is None or len(measured) < 2 or reg.get("slope_ci95") is None or len(set(counts)) < 2:
        return None
    hi, lo = (max(measured, key=lambda r: r["measured"]["mean"]), min(measured, key=lambda r: r["measured"]["mean"]))
    span, low, _ = diff_of_moments(*(Moments.from_ci95(r["measured"]["mean"], r["measured"]["ci95"],
                                                       r["measured"]["n"]) for r in (hi, lo)))
    cubic_range = max(counts) - min(counts)
    cubic_span, cubic_half = abs(reg["slope"]) * cubic_range, reg["slope_ci95"] * cubic_range
    half = math.hypot(span - low, cubic_half)
    label = (f"share span over BBR count x queue ({hi['n_bbr']} BBR, {hi['queue_bdp']:g} BDP to {lo['n_bbr']} BBR, "
             f"{lo['queue_bdp']:g} BDP) less the change over {cubic_range:g} more CUBIC flows ({cubic_span:.3g})")
    n = min(min(r["measured"]["n"] for r in (hi, lo)), int(reg["n"]))
    est = Estimate(label, Interval("difference", span - cubic_span, half, f"n = {n}"))
    rule = Rule.from_data(claim)
    v, w = decide(est, rule, SETTLED_S), decide(est, rule.widened(), SETTLED_S)
    return {"claim": claim["text"], "experiment": f"{SEED}/share", "also": [f"{SEED}/cubic-count"],
            "n": claim.get("n"), "line": verdict_line(claim["text"], v), "verdict": v.to_json(),
            "rule": rule.describe(), "margin": claim["margin"], "post_hoc": claim["post_hoc"],
            "wide": {"rule": rule.widened().describe(), "verdict": w.to_json()}}


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
    lines += [tables.markdown(["BBR flows", f"paper L2 ({paper['ref']}; {queues} BDP)", "paper RMS", "ours L2",
                               "ours RMS", "our queue sizes (BDP)"], l2_rows, labels=0), ""]
    if (best := table2_claim(rows)) is not None:
        lines += [best["line"], *claim_notes(best), ""]
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


def _mean_of(flows: list[dict[str, Any]], algo: str, field: str) -> float | None:
    found = [f[field] for f in flows if f.get("algo") == algo and f.get(field) is not None]
    return sum(found) / len(found) if found else None


# Why the CUBIC count matters, per run: (title, how a run's summary gives it, scale shown).
MECHANISM: tuple[tuple[str, Callable[[dict[str, Any]], float | None], float], ...] = (
    ("cwnd per BBR flow", lambda s: _mean_of(s.get("flows", []), "bbr", "cwnd_mean"), 1.0),
    ("cwnd per CUBIC flow", lambda s: _mean_of(s.get("flows", []), "cubic", "cwnd_mean"), 1.0),
    ("summed CUBIC / BBR cwnd", lambda s: _cwnd_ratio(s.get("flows", [])), 1.0),
    ("queue occupancy %", lambda s: value(s, "total.queue_occupancy_mean"), 100.0),
    ("drops per run", lambda s: value(s, "total.queue_drops"), 1.0),
    ("BBR share %", lambda s: value(s, SHARE), 100.0),
)


def _cwnd_ratio(flows: list[dict[str, Any]]) -> float | None:
    sums = {a: sum(f.get("cwnd_mean") or 0.0 for f in flows if f.get("algo") == a) for a in ("bbr", "cubic")}
    return sums["cubic"] / sums["bbr"] if sums["bbr"] else None


def collect_cubic_count(out: Path) -> dict[str, Any]:
    """(CUBIC count, BBR share) of every run, each run's mechanism measures by CUBIC count, and how long
    the runs go on after their last flow starts."""
    cubic = _points(out, "cubic-count")
    points = [(float(p.overrides.get("flows.1.count", 1)), v) for p in cubic for summary in p.summaries
              if (v := value(summary, SHARE)) is not None]
    mechanism: dict[str, dict[str, list[float]]] = {}
    for p in cubic:
        count = str(p.overrides.get("flows.1.count", 1))
        for summary in p.summaries:
            for title, measure, _ in MECHANISM:
                if (v := measure(summary)) is not None:
                    mechanism.setdefault(count, {}).setdefault(title, []).append(v)
    return {"points": points, "after_last_start_s": after_last_start_s(cubic), "mechanism": mechanism}


def mechanism_part(mechanism: dict[str, dict[str, list[float]]]) -> list[str]:
    """Why more CUBIC flows take more from BBR, from every run: mean ± 95% CI over the repetitions."""
    if not mechanism:
        return []
    rows = []
    for count in sorted(mechanism, key=float):
        cells = [count]
        for title, _, scale in MECHANISM:
            values = [v * scale for v in mechanism[count].get(title, [])]
            cells.append(Stat(*mean_ci95(values), len(values)).text() if values else "-")
        rows.append(cells)
    return ["Why the CUBIC count matters (each run's flows' mean cwnd in packets, the queue's occupancy and drops; "
            "mean ± 95% CI over the repetitions): BBR's flows keep the cwnd their model gives whatever the count, "
            "while CUBIC's summed cwnd grows with it, and BBR's share follows the cwnd ratio.", "",
            tables.markdown(["CUBIC flows", *(t for t, _, _ in MECHANISM)], rows, labels=1), ""]


def cubic_count_verdict(reg: dict[str, Any], span: float, short: Verdict | None,
                        margin_key: str = "effect_margin") -> Verdict:
    """"The CUBIC count does not affect the share", decided on the regression slope: its effect over the
    CUBIC counts run (slope x span, with the slope's 95% interval) holds inside +- the data file's
    effect_margin (or its second family's, wide_effect_margin) and does not hold wholly outside it."""
    if short is not None:
        return short
    runs = int(reg["n"])
    if runs < MIN_N:
        return Verdict(Outcome.TOO_FEW_RUNS, f"{runs} runs over the CUBIC counts", runs)
    if reg["slope"] is None:
        return Verdict(Outcome.UNDECIDED, "slope undefined: the CUBIC count does not vary")
    margin = float(section_data(f"{SEED}/cubic-count")[margin_key])
    effect, half = reg["slope"] * span, reg["slope_ci95"] * span
    iv = (f"slope {reg['slope']:.3g} ± {reg['slope_ci95']:.2g} per CUBIC flow (95% CI, n = {runs} runs), "
          f"over the {span:g} flows run {effect:.3g} ± {half:.2g}")
    if -margin <= effect - half and effect + half <= margin:
        return Verdict(Outcome.HOLDS, f"{iv}, inside ±{margin:g}")
    if effect + half < -margin or effect - half > margin:
        return Verdict(Outcome.FAILS, f"{iv}, outside ±{margin:g}")
    return Verdict(Outcome.UNDECIDED, f"{iv}, straddles ±{margin:g}")


def cubic_count_part(js: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The regression of BBR's share on the CUBIC count (and Pearson r) over every run, with the verdict."""
    lines = ["CUBIC count (the model says it does not matter):", ""]
    points = [(float(x), float(y)) for x, y in js["points"]]
    cx, cy = [x for x, _ in points], [y for _, y in points]
    reg = regression(cx, cy)
    corr: tuple[float, float, float] | None
    try:
        corr = pearson_ci95(cx, cy)
    except ValueError:
        corr = None
    paper = section_data(f"{SEED}/cubic-count")
    r_text = "-" if corr is None else f"{corr[0]:.3g} (95% CI {corr[1]:.2g} to {corr[2]:.2g})"
    slope = "-" if reg["slope"] is None else f"{reg['slope']:.3g} ± {reg['slope_ci95']:.2g}"
    lines += [tables.markdown(["statistic", f"paper ({paper['ref']})", "ours"], [
        ["Pearson r (share vs CUBIC count)", paper["pearson"], r_text],
        ["single-factor regression slope per CUBIC flow (95% CI)", None, slope],
        ["R²", paper["r2"], _f(reg["r2"])],
        ["slope p-value", paper["slope_p"], _f(reg["p"])],
        ["runs", f"{paper['runs']}: all of dataset I, every BBR count and queue size pooled",
         f"{reg['n']}: one cell, 5 BBR flows in 4 BDP"]]), ""]
    for count in sorted(set(cx)):
        shares = [y for x, y in points if x == count]
        m, ci = mean_ci95(shares)
        lines.append(f"- {count:g} CUBIC flows: BBR share {Stat(m, ci, len(shares)).text()}")
    run_s = float(js["after_last_start_s"])
    span = max(cx) - min(cx) if cx else 0.0
    short = too_short(paper["needs_s"], paper["why"], run_s)
    verdict = cubic_count_verdict(reg, span, short)
    over = "of BBR's share over the CUBIC counts run"
    wide = {"rule": f"inside ±{paper['wide_effect_margin']:g} {over}",
            "verdict": cubic_count_verdict(reg, span, short, "wide_effect_margin").to_json()}
    claim = {"claim": paper["text"], "experiment": f"{SEED}/cubic-count", "verdict": verdict.to_json(),
             "rule": f"inside ±{paper['effect_margin']:g} {over}", "wide": wide, "n": paper.get("n"),
             "margin": paper["margin"]}
    lines += ["", *mechanism_part(js.get("mechanism", {})),
              f"Runs go on for {run_s:g} s after their last flow starts.", "",
              verdict_line(paper["text"], verdict), *claim_notes(claim), ""]
    out = {"pearson": corr[0] if corr else None, "pearson_ci95": corr[1:] if corr else None, "regression": reg,
           "points": points, "after_last_start_s": run_s, "verdict": verdict.to_json(), "claim": claim,
           "mechanism": js.get("mechanism", {})}
    return lines, out


# ---------------------------------------------------------------- random loss


def collect_loss(out: Path) -> dict[str, Any]:
    """BBR's share per random-loss rate, and without loss."""
    loss = _points(out, "loss")
    shares = {scalar(p.overrides.get("bottleneck.loss_pct")): p.stat(SHARE) for p in loss}
    base = shares.pop(0, None)
    return {"loss": [{"loss_pct": pct, "share": s.to_json() if s else None} for pct, s in shares.items()],
            "loss_free": base.to_json() if base else None}


def loss_part(js: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """BBR's share with random loss minus the loss-free share, beside the seed's Table 4 (whose L1 sums
    the shifts of its four flow mixes: a quarter of it is the mean shift per mix)."""
    lines = ["Random loss (the seed's Table 4 sums lossy minus loss-free share over its four flow mixes of 9 and 13 "
             "BBR and CUBIC flows; a quarter of it is the mean per mix; ours is one mix, 9 + 9):", ""]
    paper = section_data(f"{SEED}/loss")
    paper_l1 = paper["l1"]
    base = js.get("loss_free")
    rows: list[list[Any]] = []
    out = []
    for e in js["loss"]:
        s = Stat(**e["share"]) if e["share"] else None
        diff = s.mean - base["mean"] if s and base else e.get("l1")
        out.append({"loss_pct": e["loss_pct"], "share": e["share"], "l1": diff})
        p = paper_l1.get(scalar(e["loss_pct"]))
        rows.append([str(e["loss_pct"]), p, None if p is None else f"{p / 4:.3g}", _f(diff), s.text() if s else None])
    lines += [tables.markdown(["loss %", f"paper L1 ({paper['ref']}; 4 mixes)", "paper per mix",
                               "ours (share(loss) - share(0))", "measured share"], rows, labels=0), ""]
    if base:
        lines += [f"Loss-free share: {Stat(**base).text()}.", ""]
    verdicts = loss_claims(js)
    for c in verdicts:
        lines += [c["line"], *claim_notes(c)]
    if verdicts:
        lines.append("")
    return lines, [*out, *({k: v for k, v in c.items() if k != "line"} for c in verdicts)]


def loss_claims(js: dict[str, Any]) -> list[dict[str, Any]]:
    """The loss data file's claims on the shift (lossy less loss-free share), each by its rule and the
    second margin family's."""
    base = js.get("loss_free")
    found = []
    for claim in section_data(f"{SEED}/loss").get("claims", []):
        entry = next((e for e in js["loss"] if scalar(e["loss_pct"]) == scalar(claim["loss_pct"])), None)
        label = f"{claim['loss_pct']:g}% loss, BBR share less the loss-free share"
        if entry is None or not entry["share"] or not base:
            est = Estimate(label, Verdict(Outcome.TOO_FEW_RUNS, f"{label}: not measured", 0))
        else:
            lk = _ShiftLookup(Stat(**entry["share"]), Stat(**base))
            est = Estimate(label, diff(lk, label, ("", 1, SHARE), ("", 0, SHARE)))
        rule = Rule.from_data(claim)
        v, w = decide(est, rule, SETTLED_S), decide(est, rule.widened(), SETTLED_S)
        found.append({"claim": claim["text"], "experiment": f"{SEED}/loss", "n": claim.get("n"),
                      "line": verdict_line(claim["text"], v), "verdict": v.to_json(),
                      "rule": rule.describe(), "margin": claim["margin"], "post_hoc": claim["post_hoc"],
                      "wide": {"rule": rule.widened().describe(), "verdict": w.to_json()}})
    return found


class _ShiftLookup:
    """The two shares a shift compares, as the claims' Lookup reads them: x 1 lossy, x 0 loss-free."""

    def __init__(self, lossy: Stat, free: Stat) -> None:
        self.shares = {1: lossy, 0: free}

    def stat(self, series: str, x: Any, metric: str) -> Stat | None:
        return self.shares.get(x)

    def xs(self, series: str) -> list[Any]:
        return [1, 0]

    def x_name(self, x: Any) -> str:
        return str(x)

    def paper(self, series: str, x: Any, metric: str) -> float | None:
        return None


def run_here(js: dict[str, Any]) -> str:
    """What ran, from the section's own numbers (BBR counts, queue sizes, CUBIC counts, loss rates, n)."""
    rows = [r for r in js["share"] if r["measured"]]
    ns = sorted({r["measured"]["n"] for r in rows} | {e["share"]["n"] for e in js["loss"] if e["share"]})
    counts = sorted({int(x) for x, _ in js["cubic_count"]["points"]})
    reps = "-" if not ns else f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    return (f"Run here: share with {', '.join(str(n) for n in sorted({r['n_bbr'] for r in rows}))} BBR flows against "
            f"one CUBIC flow in {', '.join(f'{q:g}' for q in sorted({r['queue_bdp'] for r in rows}))} BDP; 5 BBR "
            f"flows against {', '.join(str(c) for c in counts)} CUBIC flows in 4 BDP; 9 + 9 flows at "
            f"{', '.join(str(e['loss_pct']) for e in js['loss'])}% random loss and without; {reps} repetitions "
            "per point.")


def differences(durations: list[float]) -> list[str]:
    run_text = f"share runs of {_span(durations)} s (the paper: 60 s, 100 s at 16 BDP, 200 s at 32 BDP)" \
        if durations else "share runs of 60 s, 100 s at 16 BDP"
    return ["Differences: the seed ran a GENI testbed with Linux BBR of 2020 and tc netem; we run the kernel's "
            f"`bbr` (the paper's algorithm) through a userspace delay line on the ACK path and a tbf-shaped "
            f"FIFO, {run_text}, and a subset of BBR counts and queue sizes, so per-N errors sum over fewer "
            "queue sizes than the seed's seven. The model's d is taken as the run's duration.", ""]


def collect(out: Path, fig_dir: Path) -> dict[str, Any]:
    """The section's numbers from the runs (fig_dir unused: its figure is drawn from the numbers)."""
    durations = sorted({_duration(out, name, p) for name in ("share", "share-long") for p in _points(out, name)})
    return {"share": collect_share(out), "durations_s": durations, "cubic_count": collect_cubic_count(out),
            **collect_loss(out)}


def parts(js: dict[str, Any]) -> dict[str, str]:
    """The parts a summary's section holds, each with the experiment whose runs give it: what a later summary
    of that experiment replaces (merge_recorded)."""
    held = (("share", js["share"], "share"), ("cubic_count", js["cubic_count"]["points"], "cubic-count"),
            ("loss", js["loss"] or js.get("loss_free"), "loss"))
    return {name: f"{SEED}/{experiment}" for name, present, experiment in held if present}


def merge_recorded(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """Two summaries' seed 004 sections as one: the section draws on four experiments, and a later
    summary of some of them (`--only seed004/cubic-count`) replaces only the parts those ran."""
    merged = dict(earlier)
    if later["share"]:
        merged.update(share=later["share"], l2=later["l2"], durations_s=later.get("durations_s", []))
    if later["cubic_count"]["points"]:
        merged.update(cubic_count=later["cubic_count"], claims=later["claims"])
    if later["loss"] or later.get("loss_free"):
        merged.update(loss=later["loss"], loss_free=later.get("loss_free"))
    return merged


def render(js: dict[str, Any], fig_dir: Path, rel: str) -> tuple[list[str], dict[str, Any]]:
    """The section from its numbers; its summary.json entry (the numbers and what the section derives)."""
    rows = js["share"]
    share_lines, l2 = share_part(rows, fig_dir, rel)
    cubic_lines, cubic = cubic_count_part(js["cubic_count"])
    loss_lines, loss = loss_part(js)
    lines = ["### Seed 004: BBR's share against CUBIC, model vs measured", "", run_here(js), "", *share_lines,
             *cubic_lines, *loss_lines, *differences(js.get("durations_s", []))]
    claim = cubic["claim"]
    shifts = [c for c in loss if "claim" in c]
    best = table2_claim(rows)
    headline = headline_claim(rows, cubic)
    if headline is not None:
        lines += [headline["line"], *claim_notes(headline), ""]
    shifts = [*({k: v for k, v in c.items() if k != "line"} for c in (best, headline) if c), *shifts]
    return lines, {"share": rows, "l2": l2, "cubic_count": cubic, "loss": [e for e in loss if "claim" not in e],
                   "loss_free": js.get("loss_free"), "durations_s": js.get("durations_s", []),
                   "claims": [claim, *shifts]}
