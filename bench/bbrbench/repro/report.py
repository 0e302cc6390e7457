"""The reproduction report: our sweep results beside the papers' numbers (the *.paper.toml data files), as Markdown with
PNG figures, plus summary.json with every number the report shows.

Inputs are the sweep directories `reproduce` wrote (plan.json and each repetition's summary.json); only
finished repetitions count. Means carry 95% confidence half-widths (Student's t) over repetitions. Each
claim's verdict follows the rule in claims.py, after a time-scale test: the runs must go on after their last
flow starts for at least the seconds the claim's data file asks (`needs_s`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from ..analysis import tables  # noqa: E402
from ..results import read_json  # noqa: E402
from . import queue, seed004  # noqa: E402
from .claims import MIN_N, Stat, verdict_line  # noqa: E402
from .papers import Spec, scalar, section_of, spec_for, specs  # noqa: E402
from .points import PointResult, after_last_start_s, load_experiment  # noqa: E402

DPI = 90
FIG_SIZE = (11, 3.4)
MAX_PLOTTED_MEASURES = 3
SMOKE_PROFILE = "quick"


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


@dataclass(frozen=True)
class Section:
    """A part of a seed's report that is not one experiment's table. It follows the seed's experiments, and
    its numbers go into summary.json under `key` when it has any. Experiments whose data file names the
    section (`section = KEY`) are rendered by it alone."""

    seed: str
    key: str
    render: Callable[[Path, Path, str], tuple[list[str], dict[str, Any]]]


SECTIONS = (
    Section("seed000", "seed000/queue", queue.section),
    Section("seed004", "seed004", seed004.section),
)


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
    # In the papers' order (the catalogue's), not the file names'.
    order = {s.key: s.order for s in specs()}
    for seed in seeds:
        lines += [f"## {seed}", ""]
        exp_dirs = [d for d in (out / seed).iterdir() if (d / "plan.json").is_file()]
        for exp_dir in sorted(exp_dirs, key=lambda d: (order.get(f"{seed}/{d.name}", len(order)), d.name)):
            key = f"{seed}/{exp_dir.name}"
            if section_of(key) is not None:
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
        for extra in (s for s in SECTIONS if s.seed == seed):
            section, js = extra.render(out, fig_dir, rel)
            lines += section
            if js:
                summary["experiments"][extra.key] = js
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
