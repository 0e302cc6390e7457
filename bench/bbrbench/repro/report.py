"""The reproduction report: our sweep results beside the papers' numbers (the *.paper.toml data files), as Markdown with
PNG figures, plus summary.json with every number the report shows.

Inputs are the sweep directories `reproduce` wrote (plan.json and each repetition's summary.json); only
finished repetitions count. Means carry 95% confidence half-widths (Student's t) over repetitions. Each
claim's verdict follows the rule in claims.py, after a time-scale test: the runs must go on after their last
flow starts for at least the seconds the claim's data file asks (`needs_s`).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from ..analysis import tables, trust  # noqa: E402
from ..errors import HarnessError  # noqa: E402
from ..results import read_json  # noqa: E402
from ..testbed.host import with_loss_decisions  # noqa: E402
from . import queue, seed004, timeseries  # noqa: E402
from .claims import MIN_N, Outcome, Stat, verdict_line  # noqa: E402
from .papers import Claim, Spec, coverage, scalar, section_of, spec_for, specs  # noqa: E402
from .points import (  # noqa: E402
    TRUST_UNCHECKED,
    Point,
    RecordedPoint,
    after_last_start_s,
    load_experiment,
    paths_of,
    scenario_raw,
    shown,
    untrusted_lines,
)

DPI = 90
FIG_SIZE = (11, 3.4)
MAX_PLOTTED_MEASURES = 3
LEGEND_COLUMNS = 4
PERCENT = 100.0
SMOKE_PROFILE = "quick"


class Results:
    """One experiment's points arranged by the spec's series and x."""

    def __init__(self, spec: Spec, points: Sequence[Point]) -> None:
        self.spec = spec
        self.points = points
        # The points a claim's quantity asked for since the last look (some it may then leave out).
        self.read: list[Point] = []
        # The metrics any claim read, by point (its id): the summary records those the table does not show
        # too, so that a report rebuilt from it decides the same way.
        self.claim_metrics: dict[int, set[str]] = {}

    def series_of(self, p: Point) -> str:
        if self.spec.series_key and self.spec.series_key in p.overrides:
            return str(p.overrides[self.spec.series_key])
        return self.spec.default_series

    def x_of(self, p: Point) -> Any:
        xs = tuple(scalar(p.overrides.get(k)) for k in self.spec.x_keys)
        if not xs:
            return None
        return xs[0] if len(xs) == 1 else xs

    def find(self, series: str, x: Any) -> Point | None:
        return next((p for p in self.points if self.series_of(p) == series and self.x_of(p) == scalar(x)), None)

    def stat(self, series: str, x: Any, metric: str) -> Stat | None:
        """The point's measure, with the runs the trust check left out and the checks they failed; for a
        point whose every run the trust check failed, a Stat of no repetitions that says so (claims._few), not
        a measure missing from the record."""
        p = self.find(series, x)
        if p is None:
            return None
        self.read.append(p)
        self.claim_metrics.setdefault(id(p), set()).add(metric)
        found = p.stat(metric)
        # Runs the metric used under its own lateness limit are in its n, not left out.
        rest = [u for u in p.untrusted if found is None or u["rep"] not in found.late_reps]
        if not rest:
            return found
        checks = tuple(dict.fromkeys(trust.check_of(why) for u in rest for why in u["failed"]))
        if found is None and not p.measured:
            return Stat(float("nan"), None, 0, untrusted=len(rest), failed_checks=checks)
        return None if found is None else replace(found, untrusted=len(rest), failed_checks=checks)

    def xs(self, series: str) -> list[Any]:
        """The series' points a claim covers: the measured ones, and those whose every run the trust check
        left out (not measured there), so that a claim over every point cannot hold on the others alone."""
        return [self.x_of(p) for p in self.points if self.series_of(p) == series and (p.measured or p.untrusted)]

    def paper(self, series: str, x: Any, metric: str) -> float | None:
        key = _paper_key(self.spec, series, scalar(x), metric)
        v = None if key is None else self.spec.paper[key]
        return float(v) if isinstance(v, (int, float)) else None

    def x_name(self, x: Any) -> str:
        if x in self.spec.x_names:
            return self.spec.x_names[x]
        values = x if isinstance(x, tuple) else (x,)
        if self.spec.x_format and None not in values:
            return self.spec.x_format.format(*values)
        if isinstance(x, tuple):
            return ", ".join(str(v) for v in x if v is not None)
        return "" if x is None else str(x)


# ---------------------------------------------------------------- one experiment


def _paper_key(spec: Spec, series: str, x: Any, metric: str) -> tuple[str, Any, str] | None:
    """The paper's entry for a point: its own, else the series' figure-wide one."""
    return next((k for k in ((series, x, metric), (series, None, metric)) if k in spec.paper), None)


def _paper(spec: Spec, series: str, x: Any, metric: str) -> str:
    """The paper's number or words for a table cell, with where it says so."""
    key = _paper_key(spec, series, x, metric)
    if key is None:
        return "-"
    v = spec.paper[key]
    return f"{v:g} ({spec.refs[key]})" if isinstance(v, (int, float)) else f"{v} ({spec.refs[key]})"


def run_here(setup: str, points: Sequence[Point], measures: Sequence[str]) -> str:
    """The set-up as run: the profile's description without its repetition count, which --reps can change,
    and the repetitions the table's means are actually over."""
    ns = sorted({max((s.n for s in (p.stat(m) for m in measures) if s), default=0) for p in points} - {0})
    text = re.sub(r",? \d+ repetitions?(?=[);,]|$)", "", setup)
    if not ns:
        return text
    reps = f"{ns[0]} repetitions" if len(ns) == 1 else f"{ns[0]}-{ns[-1]} repetitions"
    return f"{text}; the table's means are over {reps} per point"


def _row_names(res: Results) -> list[str]:
    """Each point's x as the table shows it; where two points of a series would show the same, the
    overrides that tell them apart are added."""
    names = [res.x_name(res.x_of(p)) or "-" for p in res.points]
    shown = list(names)
    for i, p in enumerate(res.points):
        twins = [q for j, q in enumerate(res.points)
                 if j != i and names[j] == names[i] and res.series_of(q) == res.series_of(p)]
        if twins:
            differ = [f"{k}={v}" for k, v in p.overrides.items() if any(q.overrides.get(k) != v for q in twins)]
            shown[i] = f"{names[i]} ({', '.join(differ)})"
    return shown


class Joined:
    """A claim's view of its experiment and the one its data file names in `with`: a point's measure from the
    first that has it (the two experiments' series do not overlap)."""

    def __init__(self, first: Results, second: Results) -> None:
        self.first, self.second = first, second

    def stat(self, series: str, x: Any, metric: str) -> Stat | None:
        return self.first.stat(series, x, metric) or self.second.stat(series, x, metric)

    def xs(self, series: str) -> list[Any]:
        return list(dict.fromkeys(self.first.xs(series) + self.second.xs(series)))

    def x_name(self, x: Any) -> str:
        return self.first.x_name(x)

    def paper(self, series: str, x: Any, metric: str) -> float | None:
        return self.first.paper(series, x, metric)


def claim_lines(c: Claim, lk: Any, run_s: float) -> tuple[list[str], dict[str, Any]]:
    """A claim's verdict line, then its margin, its verdict under the second margin family, and what the
    data file says of it (scaling, a margin written after the data, a hedge, the n declared for its next run)."""
    v = c.judge(lk, run_s)
    wide = c.rule.widened()
    w = c.judge(lk, run_s, wide)
    lines = [verdict_line(c.text, v), f"  (Decided {c.rule.describe()}: {c.margin}.)"]
    if wide != c.rule or w.outcome is not v.outcome:
        same = "the same" if w.outcome is v.outcome else f"**{w.outcome.value}** (differs: depends on the margin)"
        lines.append(f"  (Second margins, {wide.describe()}: {same}.)")
    notes = [("Scaled", c.scaled), ("Post-hoc", c.post_hoc), ("Repeated looks", c.looks), ("Unproven", c.hedge)]
    lines += [f"  ({label}: {text}.)" for label, text in notes if text]
    if v.fragile:
        lines.append(f"  (Fragile: {v.fragile}.)")
    if c.n is not None:
        lines.append(f"  (n declared for the next run: {c.n}.)")
    js = {"claim": c.text, "needs_s": c.needs_s, "why": c.why, "rule": c.rule.describe(), "margin": c.margin,
          "verdict": v.to_json(), "wide": {"rule": wide.describe(), "verdict": w.to_json()},
          **{k: val for k, val in (("n", c.n), ("scaled", c.scaled), ("post_hoc", c.post_hoc), ("looks", c.looks),
                                   ("hedge", c.hedge)) if val}}
    return lines, js


def experiment_section(spec: Spec, points: Sequence[Point], fig_dir: Path, rel: str,
                       setup: str = "", others: dict[str, Results] | None = None) -> tuple[list[str], dict[str, Any]]:
    """One experiment's table, verdicts, figure and notes; setup is the scenario's own description in
    the profile that ran (scaling, run length), so the notes need not depend on it. `others`: the report's
    other experiments, for a claim that also reads one (`with`)."""
    res = Results(spec, points)
    lines = [f"### {spec.title}", ""]
    if setup:
        lines += [f"Run here: {run_here(setup, points, [m.metric for m in spec.measures])}.", ""]
    js: dict[str, Any] = {"title": spec.title, "setup": setup, "points": [], "claims": []}
    header = ["series", spec.x_title or "x"]
    for m in spec.measures:
        header += [f"{m.title} paper", f"{m.title} ours"]
    header.append("status")
    body: list[list[str]] = []
    for p, name in zip(points, _row_names(res)):
        series, x = res.series_of(p), res.x_of(p)
        row = [series or "-", name]
        point_js: dict[str, Any] = {"series": series, "x": x, "overrides": p.overrides, "status": p.status,
                                    "metrics": {}}
        for m in spec.measures:
            s = p.stat(m.metric)
            row += [_paper(spec, series, x, m.metric), s.text(m.scale) if s else "-"]
            point_js["metrics"][m.metric] = s.to_json() if s else None
        row.append(p.status)
        body.append(row)
        if p.untrusted:
            point_js["untrusted_runs"] = p.untrusted
        if p.loss_decisions:
            point_js["loss_decisions"] = p.loss_decisions
        js["points"].append(point_js)
    lines += [tables.markdown(header, body, labels=2), "",
              "(ours: mean ± 95% confidence half-width over n repetitions)", ""]
    lines += untrusted_lines(points, [(m.metric, m.title) for m in spec.measures])
    run_s = after_last_start_s(points)
    js["after_last_start_s"] = run_s
    if spec.claims:
        lines += [f"Claims (runs go on for {run_s:g} s after their last flow starts):", ""]
        for c in spec.claims:
            other = (others or {}).get(c.with_)
            looked = [r for r in (res, other) if r is not None]
            for r in looked:
                r.read = []
            claim_text, claim_js = claim_lines(c, Joined(res, other) if other else res, run_s)
            # The loss-decision path of each bbr2, bbr3 or bbr_draft run the verdict reads.
            if paths := paths_of([p for r in looked for p in r.read]):
                claim_js["loss_decisions"] = paths
                claim_text.append(f"  (Loss decisions: {', '.join(with_loss_decisions(*ap) for ap in paths.items())}.)")
            if any(TRUST_UNCHECKED in p.status for r in looked for p in r.read):
                claim_js["trust_unchecked"] = True
                claim_text.append(f"  (Runs {TRUST_UNCHECKED}: pooled before the report left out runs that failed "
                                  "the trust check; some of them may have.)")
            lines += claim_text
            js["claims"].append(claim_js)
        lines.append("")
    for p, point_js in zip(points, js["points"]):
        recorded = point_js["metrics"]
        for metric in sorted(res.claim_metrics.get(id(p), set()) - recorded.keys()):
            if (read := p.stat(metric)) is not None:
                recorded[metric] = read.to_json()
    figure = plot_experiment(res, fig_dir)
    if figure is not None:
        lines += [f"![{spec.title}]({rel}/{figure.name})", ""]
    if spec.notes:
        lines += [f"Differences: {spec.notes}", ""]
    return lines, js


def plot_experiment(res: Results, fig_dir: Path) -> Path | None:
    """Ours (mean and 95% interval) beside the paper's: its numbers as open squares, its words as the range
    they state. Numeric x on a line per series; categorical x (set-ups, tuples) as markers alone, since a
    line between categories means nothing. The legend sits below the panels, over no marker."""
    measured = [p for p in res.points if shown(p, [m.metric for m in res.spec.measures])]
    if not measured:
        return None
    measures = [m for m in res.spec.measures if any(p.stat(m.metric) for p in measured)][:MAX_PLOTTED_MEASURES]
    if not measures:
        return None
    fig, axes = plt.subplots(1, len(measures), figsize=FIG_SIZE, squeeze=False)
    xs_all = list(dict.fromkeys(res.x_of(p) for p in measured))
    # One x value is a category too: an axis around it would only show the axis.
    numeric = len(xs_all) > 1 and all(isinstance(x, (int, float)) for x in xs_all)
    series_names = list(dict.fromkeys(res.series_of(p) for p in measured))
    legend: dict[str, Any] = {}
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
            name = series or "ours"
            # Intervals cut to the physical bounds, as the verdicts' are: no measure is negative, none in %
            # exceeds 100.
            y, e = np.array(ys)[order], np.array(es)[order]
            yerr = [np.minimum(e, y), np.minimum(e, 100 - y) if m.scale == PERCENT else e]
            legend.setdefault(f"{name} (ours)", ax.errorbar(
                np.array(xs)[order], y, yerr=yerr, marker="o", capsize=3, color=color,
                linestyle="-" if numeric else "none"))
            if not m.paper_comparable:
                continue
            for x in dict.fromkeys(res.x_of(p) for p in pts):
                key = _paper_key(res.spec, series, x, m.metric)
                px = x if numeric else xs_all.index(x)
                if key is None:
                    continue
                v = res.spec.paper[key]
                if isinstance(v, (int, float)):
                    legend.setdefault(f"{name} (paper)", ax.scatter(
                        [px], [v], marker="s", facecolors="none", edgecolors=color, s=60))
                elif key in res.spec.ranges:
                    lo, hi = res.spec.ranges[key]
                    legend.setdefault(f"{name} (paper, range in words)", ax.vlines(
                        px, lo, hi, colors=color, linestyles="dotted", linewidth=4, alpha=0.5))
        if numeric and len(xs_all) > 2 and min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 20:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(xs_all)))
            ax.set_xticklabels([res.x_name(x) for x in xs_all], rotation=15, fontsize=7)
            ax.set_xlim(-0.5, len(xs_all) - 0.5)
        ax.set_xlabel(res.spec.x_title)
        ax.set_ylabel(m.title)
        ax.grid(True, alpha=0.3)
    fig.suptitle(res.spec.title, fontsize=9)
    rows = -(-len(legend) // LEGEND_COLUMNS)
    fig.tight_layout(rect=(0, 0.04 + 0.05 * rows, 1, 1))
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=LEGEND_COLUMNS, fontsize=7,
               frameon=False)
    path = fig_dir / (res.spec.key.replace("/", "_") + ".png")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- the whole report


RULE = (
    "How a claim is judged. Each claim states the paper's number (or words) with where it says so, and is "
    "decided at that magnitude by a margin its data file wrote before the runs it decides. (1) Time scale: "
    "each claim names the seconds of running after the last flow has started that the mechanism behind it "
    "needs (e.g. 3 PROBE_RTT periods: 30 s for BBRv1, 15 s for BBRv2/v3); where an experiment's shortest "
    "point runs for less, the claim is **not testable in this profile**, whatever the numbers say. "
    f"(2) Repetitions: every mean a claim uses needs n >= {MIN_N}; otherwise it is **not decided**. "
    "(3) Intervals: 95%, Student's t for a single mean, the delta method with Welch's degrees of freedom for a "
    "ratio of two means (Fieller's interval where the denominator's mean is uncertain, Fieller's g >= 0.05; "
    "unbounded, so undecided, where the denominator's own interval reaches 0), Welch's interval for a "
    "difference; cut to the quantity's physical bounds (a share "
    "lies in 0-100%, times and ratios of them are not negative). An interval of zero width (every repetition "
    "gave the same value) is the measure's resolution, not certainty: the verdict says so and counts as "
    "fragile. Each verdict says whether it uses the whole run or the steady state (from 1 s after the last "
    "flow starts), chosen by what the paper's number measures. A time to an event the run may end before "
    "(seed 002's equilibrium) counts at the run's end "
    "when the event never came (right-censored, a lower bound, the count shown), and a verdict such "
    "repetitions could have produced is **undecided**. Repetitions of several invocations pool only when they "
    "ran on one kind of host and none from a dirty tree, and each measure is tested for a batch effect between "
    "them (one-way ANOVA, p < 0.01 reported); a run whose bbrkit-link or delay line failed the trust check "
    "(analysis/trust.py) is never pooled, and is listed under its experiment's table; a run recorded before "
    "the delay lines reported their lateness is not checked for them (not reported: neither passed nor "
    f"failed), and a point pooled before runs were left out says so (\"{TRUST_UNCHECKED}\"), as does every "
    "claim over it. (4) Margins, the same "
    "rule for every claim: a number the paper calls 'about' or prints is held "
    "to x/÷ 1.25 (no paper gives its own spread; a quarter is more than rounding and less than the factors "
    "their conclusions rest on); a share of a whole (utilisation, share, Jain's index) to +- 5 points; a range "
    "the paper states, to its ends widened by half a unit of their last digit; a bound it states, as stated; "
    "a direction it gives without a size ('lower', 'helps to reduce'), to a change beyond those margins. "
    "(5) Decision: inside the band around the paper's magnitude (or wholly beyond a bound or minimum effect): "
    "**holds**; wholly outside it (or short of it): **does not hold**, so a missing effect fails and a far "
    "larger one is not the paper's; otherwise **undecided**; two means that are both exactly 0 (nothing "
    "happened on either side) compare to nothing: **undecided**. (6) Several points, each distinct point counted "
    "once: the claim holds if every one holds (an intersection-union test: its family-wise error is each "
    "verdict's 5%, no correction needed); it does not hold if one point fails after Holm's step-down "
    "correction over the claim's m points (the strongest failure must stand at 5% / m, the next at 5% / (m - 1), "
    "...; an interval at another level is the 95% one widened by Student's t quantiles at n - 1 degrees of "
    "freedom, which is conservative); a failure Holm does not keep is undecided; otherwise the claim stays "
    "undecided (or not decided, where a point lacks repetitions). Each verdict quotes the intervals that "
    "decided it, and each claim its margin and why. (7) Every claim is decided again under a second margin "
    "family (x/÷ 1.5, +- 10 points; stated bounds as stated), shown where it moves the margin; a decided "
    "verdict within one interval width "
    "of its edge is marked fragile, with the n that would decide it with 80% power at the spread the runs "
    "showed; both are listed at the end (Robustness), the fragile ones with the "
    "command that reruns them. A claim whose margin or scope was written after its data were seen says so "
    "(post-hoc) at its verdict; a scaled set-up (a smaller rate, or runs shorter than the paper's) says its "
    "factor, and one that cannot decide the claim makes it **not testable**. A bound the set-up meets for "
    "any algorithm **cannot fail**: it is counted apart from the claims that hold. A claim whose repetitions "
    "were raised after a look had left it undecided says so (repeated looks): its verdict carries no "
    "correction for the looks, and a fresh run at a fixed n is what decides it."
)


def _load_text(load: dict[str, Any] | None) -> str:
    if not load or not load.get("samples"):
        return "not recorded"
    return f"{load['min']:.2f}-{load['mean']:.2f}-{load['max']:.2f} ({len(load['samples'])} samples)"


def header_lines(meta: dict[str, Any]) -> list[str]:
    """Title and the smoke label for the quick profile: what a reader needs before the overview."""
    profile = meta["profile"]
    smoke = profile == SMOKE_PROFILE
    title = "# Reproduction of the seed papers' experiments"
    lines = [f"{title}: smoke result ({profile} profile)" if smoke else title, ""]
    if smoke:
        lines += [f"**Smoke result**: the {profile} profile's short runs and few repetitions test that every "
                  "experiment runs and reports, not the papers' claims; its verdicts are mostly \"not testable\" "
                  "or \"not decided\" by design.", ""]
    return lines + [f"Profile: **{profile}**. The overview first, then each experiment, the verdicts a rerun or "
                    "the margin could move (Robustness), and last the invocations that produced the numbers "
                    "(Provenance).", ""]


def rule_lines() -> list[str]:
    return ["## How the claims are judged", "",
            "Each table puts the paper's number (or its words, where it gives only a figure) beside ours "
            "(mean ± 95% confidence half-width over n repetitions; no interval with n = 1). BBRv2 is bbrkit's "
            "bbr2. Scaled runs say so in their notes.", "", RULE, ""]


def provenance_lines(meta: dict[str, Any]) -> list[str]:
    """One line per invocation (command, revision, times, machine load), and the summaries a rebuild read."""
    lines = ["## Provenance", "", "Produced by (machine load: 1-minute load average min-mean-max; a revision "
             "ending in -dirty ran with uncommitted changes, and its note says which):", ""]
    for r in meta.get("runs", []):
        wall = f"{r['elapsed_s'] / 60:.1f} min" if "elapsed_s" in r else "-"
        machine = f", kernel {r['kernel']}, {r['cpus']} CPUs" if "kernel" in r else ""
        note = f". {r['note']}" if "note" in r else ""
        lines.append(f"- `{r['command']}` at revision `{r['revision']}`: {r['started']} - "
                     f"{r.get('finished', 'no end recorded')}, wall time {wall}, load {_load_text(r.get('load_1min'))}"
                     f"{machine}{note}")
    if meta.get("rebuilt_from"):
        lines += ["", f"**Rebuilt from {', '.join(f'`{p}`' for p in meta['rebuilt_from'])}**, without the runs "
                  "(`bbrbench reproduce --from-summary`): every table from the recorded means, 95% half-widths and n, "
                  "and every claim decided again on them (a ratio's or difference's interval needs no more; "
                  "claims.Stat). The claims and their margins are the data files of this revision; a claim written "
                  "after the runs that decide it says so at its verdict (post-hoc). A claim on a measure or a point "
                  "the recorded report did not show is **not decided** here (\"not measured\")."]
    return lines + [""]


@dataclass(frozen=True)
class Section:
    """A part of a seed's report that is not one experiment's table. It follows the seed's experiments;
    `collect` reads its numbers from the runs (and may draw what only the runs show), `render` writes it
    from those numbers, which go into summary.json under `key` when there are any, so that the report
    rebuilds from its summary.json. Experiments whose data file names the section (`section = KEY`) are
    rendered by it alone."""

    seed: str
    key: str
    collect: Callable[[Path, Path], dict[str, Any]]
    render: Callable[[dict[str, Any], Path, str], tuple[list[str], dict[str, Any]]]


SECTIONS = (
    Section("seed000", "seed000/queue", queue.collect, queue.render),
    Section("seed000", "seed000/timeseries", functools.partial(timeseries.collect_seed, "seed000"), timeseries.render),
    Section("seed002", "seed002/timeseries", functools.partial(timeseries.collect_seed, "seed002"), timeseries.render),
    Section("seed004", "seed004", seed004.collect, seed004.render),
)


def verdict_counts(claims: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many claims have each outcome, in Outcome's order, leaving out the outcomes none has."""
    counts = {o.value: sum(c["verdict"]["outcome"] == o.value for c in claims) for o in Outcome}
    return {o: n for o, n in counts.items() if n}


def _counts_text(claims: Sequence[dict[str, Any]]) -> str:
    return ", ".join(f"{o} {n}" for o, n in verdict_counts(claims).items()) or "no claim"


def rerun_command(profile: str, keys: Sequence[str], n: int) -> str:
    """The invocation that reruns experiments from scratch at n repetitions, into a directory of its own."""
    only = " ".join(f"--only {k}" for k in keys)
    out = f"results/rerun-{keys[0].replace('/', '-')}"
    return f"bbrbench -q reproduce --profile {profile} {only} --reps {n} --out {out}"


def index_rows(summary: dict[str, Any], seed: str) -> list[list[str]]:
    """Per table and figure of a seed paper: the verdicts of the claims that cite it, the folders their numbers
    come from, the command that reruns the experiments behind them, and what is not reproduced, and why.
    Every claim of the summary falls in one row (tests/bench/test_repro_docs.py keeps it so)."""
    experiments, sources = summary["experiments"], summary.get("sources", {})
    rows = []
    for c in (c for c in coverage() if c.seed == seed):
        run = [k for k in c.experiments if k in experiments]
        found = [(k, cl) for k in run for cl in experiments[k].get("claims", []) if c.holds(cl["claim"])]
        keys = list(dict.fromkeys(k2 for k, cl in found for k2 in [cl.get("experiment", k), *cl.get("also", [])]))
        folders: list[str] = []
        for k in run:
            parts = sources.get(k, {}).values()
            # A section drawn from several experiments: only the parts of the experiments its claims read.
            held = [part for part in parts if part.get("experiment") in keys]
            folders += [part["folder"] for part in (held or parts)]
        ns = [int(cl.get("n") or 0) for _, cl in found]
        command = f"`{rerun_command(summary['meta']['profile'], keys, max([MIN_N, *ns]))}`" if keys else "-"
        rows.append([c.item, _counts_text([cl for _, cl in found]) if run else "not reproduced",
                     ", ".join(f"`{f}/`" for f in dict.fromkeys(folders)) or "-", command, c.not_reproduced or "-"])
    return rows


def overview_lines(summary: dict[str, Any]) -> list[str]:
    """Per seed, the counts of verdicts, then each table and figure (index_rows, from
    scenarios/repro/coverage.toml)."""
    lines = ["## Overview", "", "Each table and figure of the seed papers: the verdicts of the claims on it (each "
             "claim counted once, at the figure its words cite), the data folder its numbers come from, the "
             "command that reruns it, and what of it is not reproduced here, and why.", ""]
    experiments = summary["experiments"]
    header = ["table / figure", "verdicts", "data", "rerun", "not reproduced: why"]
    for seed in dict.fromkeys(c.seed for c in coverage()):
        claims = [cl for k, js in experiments.items() if k.partition("/")[0] == seed and isinstance(js, dict)
                  for cl in js.get("claims", [])]
        lines += [f"### {seed}", "", f"All claims: {_counts_text(claims)}.", "",
                  tables.markdown(header, index_rows(summary, seed), labels=5), ""]
    return lines


@dataclass(frozen=True)
class Experiment:
    """One experiment as the report writes it: its points from the runs or from a summary.json, the
    profile's description of its set-up."""

    key: str
    spec: Spec | None
    points: Sequence[Point]
    setup: str
    # Per point label, the measures whose pooled invocations differ (sweep aggregation's batch test): p-values.
    batch_effects: dict[str, dict[str, float]] = field(default_factory=dict)


def covers(run: dict[str, Any], key: str) -> bool:
    """Whether an invocation (a meta.json run) ran experiment or section `key` (SEED/NAME or SEED): its
    --only names it, its seed, one of the seed's experiments (for a section named by its seed), or nothing."""
    only = run.get("only") or []
    seed = key.partition("/")[0]
    # A section named by its seed (seed004) draws on that seed's experiments.
    return not only or any(o.strip("/") in (key, seed) or key.startswith(f"{o.strip('/')}/")
                           or ("/" not in key and o.startswith(f"{key}/")) for o in only)


def invocation(run: dict[str, Any]) -> dict[str, Any]:
    """What a merged summary keeps of an invocation for each experiment it produced."""
    return {k: run[k] for k in ("command", "revision", "started", "finished") if k in run}


def invocation_lines(runs: Sequence[dict[str, Any]]) -> list[str]:
    if not runs:
        return []
    return ["Produced by " + "; ".join(f"`{r['command']}` at `{r['revision'][:12]}`, {r['started']}" for r in runs)
            + ".", ""]


# One section's numbers: from the runs (Section.collect) or from a summary.json.
SectionNumbers = Callable[["Section"], dict[str, Any] | None]


def _write(out: Path, meta: dict[str, Any], seeds: Sequence[str], experiments: Sequence[Experiment],
           numbers: SectionNumbers, invocations: dict[str, list[dict[str, Any]]], sources: Sources) -> Path:
    fig_dir = out / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    rel = "figures"
    lines: list[str] = []
    summary: dict[str, Any] = {"meta": meta, "experiments": {}, "invocations": invocations, "sources": sources}
    # In the papers' order (the catalogue's), not the file names'.
    order = {s.key: s.order for s in specs()}
    every = {e.key: Results(e.spec, e.points) for e in experiments if e.spec is not None}
    for seed in seeds:
        lines += [f"## {seed}", ""]
        mine = [e for e in experiments if e.key.partition("/")[0] == seed]
        for e in sorted(mine, key=lambda e: (order.get(e.key, len(order)), e.key)):
            if e.spec is None:
                lines += [f"### {e.key}", "", "(no paper numbers catalogued)", ""]
                continue
            section, js = experiment_section(e.spec, e.points, fig_dir, rel, e.setup, every)
            section[2:2] = invocation_lines(invocations.get(e.key, []))
            lines += section
            if e.batch_effects:
                js["batch_effects"] = e.batch_effects
                lines += ["Batch effects: the invocations pooled here differ (one-way ANOVA) at "
                          + "; ".join(f"{label}: {m} p = {p:.2g}" for label, found in e.batch_effects.items()
                                      for m, p in found.items()) + ".", ""]
            summary["experiments"][e.key] = js
        for extra in (s for s in SECTIONS if s.seed == seed):
            found = numbers(extra)
            if found is None:
                continue
            section, js = extra.render(found, fig_dir, rel)
            if section:
                section[2:2] = invocation_lines(invocations.get(extra.key, []))
            lines += section
            if js:
                summary["experiments"][extra.key] = js
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    path = out / "report.md"
    path.write_text("\n".join(header_lines(meta) + overview_lines(summary) + rule_lines() + lines
                              + robustness_lines(summary["experiments"], meta["profile"], invocations)
                              + provenance_lines(meta)) + "\n")
    return path


def rerun_of(key: str, also: set[str], n: int, runs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The invocation that reran experiment `key` as Robustness prescribes, if the newest of those behind it
    is one: its --only names exactly `key` and the experiments its claims draw on (`also`), at --reps n or
    more, into a `rerun*` directory (a new --out runs from scratch; an existing one resumes and runs nothing)."""
    def option(args: list[str], name: str) -> list[str]:
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]
    behind = [(r, shlex.split(r["command"])) for r in runs]
    behind = [(r, args) for r, args in behind if covers({"only": option(args, "--only")}, key)]
    if not behind:
        return None
    newest, args = max(behind, key=lambda b: b[0]["started"])
    reps = [int(r) for r in option(args, "--reps") if r.isdigit()]
    out = option(args, "--out")
    rerun = ({o.strip("/") for o in option(args, "--only")} == {key, *also} and bool(reps) and reps[-1] >= n
             and bool(out) and Path(out[-1]).name.startswith("rerun"))
    return newest if rerun else None


def robustness_lines(experiments: dict[str, Any], profile: str,
                     invocations: dict[str, list[dict[str, Any]]] | None = None) -> list[str]:
    """The decided verdicts a rerun could move (fragile: within one interval width of the edge that decided
    them, or on a zero-width interval) with the command that reruns each experiment from scratch at the n its
    claims declare (else the n they were decided on), or the invocation that already did, and the verdicts
    that differ under the second margins."""
    invocations = invocations or {}
    fragile: dict[str, list[str]] = {}
    differ = []
    ns: dict[str, list[int]] = {}
    # Experiments a section's claim draws on besides its own (seed 004's share-long beside share).
    also: dict[str, set[str]] = {}
    # The invocations behind each claim's experiment (a section's claim: its section's).
    behind: dict[str, list[dict[str, Any]]] = {}
    for key, js in experiments.items():
        for c in js.get("claims", []) if isinstance(js, dict) else []:
            v = c["verdict"]
            # A section's claim names the experiment that decides it.
            where = c.get("experiment", key)
            ns.setdefault(where, []).append(int(c.get("n") or 0))
            also.setdefault(where, set()).update(c.get("also", []))
            behind.setdefault(where, invocations.get(where) or invocations.get(key, []))
            if v.get("fragile"):
                fragile.setdefault(where, []).append(f"{c['claim']}: {v['outcome']} ({v['fragile']})")
            w = c.get("wide", {}).get("verdict")
            if w and w["outcome"] != v["outcome"]:
                differ.append(f"- {key}: {c['claim']}: {v['outcome']}; under {c['wide']['rule']}: {w['outcome']}")
    lines = ["## Robustness", "", "### Fragile decided verdicts", "",
             "A decided verdict (holds, does not hold) is fragile when its interval lies within one of its own widths "
             "of the edge that decided it, or has zero width (every repetition gave the same value: the measure's "
             "resolution, not certainty). An experiment with a fragile verdict is rerun once from scratch at the same "
             "n, into a directory of its own (results/rerun...), on a quiet machine. Where that rerun is the "
             "experiment's newest invocation, its verdicts stand, fragile or not: a further run would be one more "
             "look at the same question. The others show the command to run, and their verdicts stand as "
             "provisional until then.", ""]
    for key, found in fragile.items():
        points = experiments.get(key, {}).get("points", [])
        recorded = max((m["n"] for p in points for m in p["metrics"].values() if m), default=MIN_N)
        n = max(ns.get(key, []) + [recorded])
        done = rerun_of(key, also.get(key, set()), n, behind.get(key, []))
        if done:
            lines += [f"- {key}: rerun from scratch at n {n} by `{done['command']}`, {done['started']}; "
                      "its verdicts stand"]
        else:
            lines += [f"- {key}: to be rerun: `{rerun_command(profile, [key, *sorted(also.get(key, set()))], n)}`"]
        lines += [f"  - {f}" for f in found]
    if not fragile:
        lines.append("- none")
    lines += ["", "### Verdicts that depend on the margin", "",
              "Each claim is decided again under the second margin family (x/÷ 1.5 for 'about', +- 10 points for "
              "shares; bounds and ranges the papers state stay as stated); these verdicts differ:", ""]
    lines += differ or ["- none"]
    return lines + [""]


def write_report(out: Path, mix_hosts: bool = False) -> Path:
    """The report of a reproduction directory. Each experiment is aggregated first, as `bbrbench report`
    does, so that the report pools repetitions only where a sweep would: HarnessError where a point's
    repetitions come from hosts of different kernels or BPF objects, unless mix_hosts."""
    from ..sweep import aggregate
    for plan_file in sorted(out.glob("seed*/*/plan.json")):
        aggregate(plan_file.parent, mix_hosts)
    meta = json.loads((out / "meta.json").read_text())
    seeds = sorted(d.name for d in out.iterdir() if d.is_dir() and d.name.startswith("seed"))
    experiments = []
    for plan in sorted(out.glob("seed*/*/plan.json")):
        key = f"{plan.parent.parent.name}/{plan.parent.name}"
        if section_of(key) is None:
            rows = read_json(plan.parent / "sweep.json", "sweep")["points"]
            experiments.append(Experiment(key, spec_for(key), load_experiment(plan.parent),
                                          str(read_json(plan, "plan")["raw"].get("description", "")),
                                          {r["label"]: r["batch_effects"] for r in rows if "batch_effects" in r}))
    (out / "figures").mkdir(exist_ok=True)
    keys = [e.key for e in experiments] + [s.key for s in SECTIONS]
    invocations = {k: [invocation(r) for r in meta.get("runs", []) if covers(r, k)] for k in keys}
    sources = {k: {"": {"folder": str(out), "runs": runs}} for k, runs in invocations.items()}
    return _write(out, meta, seeds, experiments, lambda section: section.collect(out, out / "figures"), invocations,
                  sources)


# Sections drawn from several experiments: a later summary of some of them replaces only their parts; each
# names its parts and the experiment behind each.
_SECTION_MERGES: dict[str, tuple[Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]],
                                 Callable[[dict[str, Any]], dict[str, str]]]] = {
    seed004.SEED: (seed004.merge_recorded, seed004.parts),
    "seed000/timeseries": (timeseries.merge_recorded, timeseries.parts),
    "seed002/timeseries": (timeseries.merge_recorded, timeseries.parts)}

# Where an experiment's (or a section part's) numbers come from: the folder of the summary.json that gave
# them, and the invocations behind them. Key "" for an experiment; a section's part otherwise.
Sources = dict[str, dict[str, dict[str, Any]]]


def write_report_from_summaries(summaries: Sequence[Path], out: Path, unchecked: Sequence[Path] = ()) -> Path:
    """A report rebuilt from earlier reports' summary.json files alone, where their runs are not at hand:
    every table from the recorded means, half-widths and n, every claim decided again by today's data
    files (ratios and differences need no more, claims.Stat), each section rendered from its recorded
    numbers. A later file's experiment replaces an earlier one's (seed 004's section part by part:
    seed004.merge_recorded; the time series figure by figure); each experiment and part keeps the folder
    and the invocations that gave it, so that a section cites only the runs whose numbers it shows.
    Measures an earlier report did not show are not measured here, and figures only the runs can draw are
    copied from beside the inputs. The points of an `unchecked` input, pooled before the report left out runs
    that failed the trust check, carry TRUST_UNCHECKED in their status, so that a rebuild keeps it."""
    metas: list[dict[str, Any]] = []
    recorded: dict[str, Any] = {}
    sources: Sources = {}
    for path in summaries:
        d = json.loads(path.read_text())
        metas.append(d["meta"])
        folder = str(path.parent)

        def runs_of(key: str, d: dict[str, Any] = d) -> list[dict[str, Any]]:
            # Those its summary keeps for it, else those of that summary's meta whose --only covers it.
            return d.get("invocations", {}).get(key) or [invocation(r) for r in d["meta"]["runs"] if covers(r, key)]

        for key, js in d["experiments"].items():
            for p in js.get("points", []) if path in unchecked else []:
                p["status"] += "" if TRUST_UNCHECKED in p["status"] else f" ({TRUST_UNCHECKED})"
            section = _SECTION_MERGES.get(key)
            # A rebuilt summary names its sources; an original one is its own.
            given = d.get("sources", {}).get(key) if d["meta"].get("rebuilt_from") else None
            if section is None:
                sources[key] = {"": given[""] if given else {"folder": folder, "runs": runs_of(key)}}
                recorded[key] = js
                continue
            merge, parts_of = section
            parts = given or {name: {"folder": folder, "runs": runs_of(experiment), "experiment": experiment}
                              for name, experiment in parts_of(js).items()}
            recorded[key] = merge(recorded[key], js) if key in recorded else js
            sources[key] = {**sources.get(key, {}), **parts}
    # Each invocation once, in the order they ran.
    invocations = {key: sorted({(r["command"], r["started"]): r for part in found.values() for r in part["runs"]}
                               .values(), key=lambda r: str(r["started"])) for key, found in sources.items()}
    profiles = {m["profile"] for m in metas}
    if len(profiles) != 1:
        raise HarnessError(f"summaries of different profiles ({', '.join(sorted(profiles))}) do not make one report")
    # An invocation once, however many of the inputs list it (a rebuilt summary lists its inputs').
    runs = list({(r["command"], r["started"]): r for m in metas for r in m["runs"]}.values())
    meta = {"profile": profiles.pop(), "runs": runs, "rebuilt_from": [str(p) for p in summaries]}
    fig_dir = out / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    for path in summaries:
        for fig in sorted((path.parent / "figures").glob("*.png")):
            if fig.resolve() != (fig_dir / fig.name).resolve():
                shutil.copyfile(fig, fig_dir / fig.name)
    experiments = [Experiment(key, spec,
                              [RecordedPoint.from_json(p, js["after_last_start_s"], raw) for p in js["points"]],
                              js.get("setup", ""), js.get("batch_effects", {}))
                   for key, js in recorded.items() if (spec := spec_for(key)) is not None
                   for raw in [scenario_raw(key, meta["profile"])]]
    seeds = sorted({k.partition("/")[0] for k in recorded})
    return _write(out, meta, seeds, experiments, lambda section: recorded.get(section.key), invocations, sources)
