"""The link-vs-kernel tail-drop ablation of docs/link-benchmarks.md, decided by the rule written before the run:
per point, bbrkit-link minus the kernel's tbf + pfifo with its 95% Welch interval (a ratio's by the delta
method or Fieller's, bbrbench.analysis.stats); agrees inside the margin, differs outside it, else undecided.
Usage (bbrbench importable): python decide.py [runs.csv]"""
import csv
import sys
from pathlib import Path

from bbrbench.analysis.stats import Moments, diff_of_moments, ratio_of_moments

# The report's own margins: +-5 points for a share of a whole; x/÷ 1.25 for a rate, +-0.1 points near 0.
SHARE_POINTS, RATIO, NEAR_ZERO_POINTS = 5.0, 1.25, 0.1

rows = list(csv.DictReader(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("runs.csv")).open()))
groups: dict[tuple[str, float, str], list[dict[str, float]]] = {}
for r in rows:
    g10, g50 = float(r["flow.rtt10.goodput_mbps"]), float(r["flow.rtt50.goodput_mbps"])
    groups.setdefault((r["flows.*.algo"], float(r["bottleneck.buffer_bdp"]), r["bottleneck.emulator"]), []).append(
        {"Jain %": 100 * float(r["total.jain"]), "50 ms share %": 100 * g50 / (g10 + g50),
         "retrans %": 100 * float(r["total.retrans_rate"])})


def verdict(low: float, high: float, edge_low: float, edge_high: float) -> str:
    if edge_low <= low and high <= edge_high:
        return "agrees"
    return "differs" if high < edge_low or low > edge_high else "undecided"


print("| algo | buffer | measure | kernel | link | link vs kernel (95%) | margin | verdict |")
print("|---|---|---|---|---|---|---|---|")
for algo, bdp in sorted({(a, b) for a, b, _ in groups}):
    kernel, link = groups[(algo, bdp, "kernel")], groups[(algo, bdp, "bbrkit-link")]
    for measure in kernel[0]:
        k, li = Moments.of([x[measure] for x in kernel]), Moments.of([x[measure] for x in link])
        if measure == "retrans %" and k.mean > NEAR_ZERO_POINTS:
            r = ratio_of_moments(li, k)
            b = r.bounds
            v = "undecided" if b is None else verdict(b[0], b[1], 1 / RATIO, RATIO)
            shown = f"ratio {r.ratio:.3g} " + ("(unbounded)" if b is None else f"[{b[0]:.3g}, {b[1]:.3g}]")
            margin = f"x/÷ {RATIO:g}"
        else:
            edge = NEAR_ZERO_POINTS if measure == "retrans %" else SHARE_POINTS
            d, low, high = diff_of_moments(li, k)
            v, shown, margin = verdict(low, high, -edge, edge), f"{d:+.3g} [{low:+.3g}, {high:+.3g}]", f"±{edge:g} points"
        print(f"| {algo} | {bdp:g} BDP | {measure} | {k.mean:.3g} (sd {k.sd:.2g}) | {li.mean:.3g} (sd {li.sd:.2g}) "
              f"| {shown} | {margin} | {v} |")
late = [100 * int(r["late_wakeups"]) / int(r["out_pkts"]) for r in rows if r["late_wakeups"]]
print(f"\nbbrkit-link runs: departures over 200 us late {min(late):.2f}-{max(late):.2f}%; "
      f"{sum(r['trusted'] == '0' for r in rows)} of {len(rows)} runs failed the trust check")
