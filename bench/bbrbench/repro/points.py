"""Our side of the reproduction: a sweep directory's finished repetitions, read back point by point, and
the measures the report derives from a run's summary (packet counts, bytes on the wire, a label's share).
A point can also come back from a report's own summary.json (each measure's mean, half-width and n),
which is all that ratios and differences need (claims.Stat)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..analysis import trust
from ..analysis.stats import mean_ci95
from ..results import read_json
from ..scenario import ScenarioError, prepare_raw, time_after_last_start_s
from ..sweep import DONE_MARK, NOT_RUNNABLE, metric_value, point_raw, repetitions_status, trust_failures
from ..testbed.host import LOSS_DECISION_ALGOS, NOT_RECORDED, loss_decisions, read_host
from .claims import Stat
from .papers import REPRO_DIR

# A metric's prefix for the time to an event that a run may end before (points.PointResult.stat).
CENSORED = "censored."
# Payload bytes per full-sized segment (1500 MTU minus IPv4, TCP and timestamp option headers).
MSS_BYTES = 1448


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


class Point(Protocol):
    """One sweep point as the report reads it."""

    overrides: dict[str, Any]
    label: str
    status: str
    # Seconds the point's runs go on after their last flow starts.
    after_last_start_s: float
    # Repetitions the trust check failed, left out of every measure: {"rep": r, "failed": [why]}.
    untrusted: list[dict[str, Any]]
    # The loss-decision path of each of its bbr2, bbr3 and bbr_draft algorithms, as its runs recorded it.
    loss_decisions: dict[str, str]

    @property
    def measured(self) -> bool: ...

    def stat(self, metric: str) -> Stat | None: ...


# A recorded point's status mark: its runs were pooled before the report left out those that failed the trust
# check (`bbrbench reproduce --trust-unchecked`).
TRUST_UNCHECKED = "not trust-checked"


def label_of(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in overrides.items()) or "(base)"


@dataclass(frozen=True)
class LateRun:
    """A repetition whose only failed trust check is the late share: left out of every measure but one whose own
    late-share limit (trust.LATE_SHARE_LIMIT_BY_MEASURE) its late share is within."""

    rep: int
    late_share: float
    summary: dict[str, Any]


@dataclass
class PointResult:
    """A point from its runs' summaries."""

    overrides: dict[str, Any]
    label: str
    status: str
    # Seconds the point's runs go on after their last flow starts.
    after_last_start_s: float
    summaries: list[dict[str, Any]] = field(default_factory=list)
    untrusted: list[dict[str, Any]] = field(default_factory=list)
    loss_decisions: dict[str, str] = field(default_factory=dict)
    # The untrusted repetitions that failed the late share alone.
    late_only: list[LateRun] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return bool(self.summaries)

    def stat(self, metric: str) -> Stat | None:
        """The metric over the trusted repetitions that have it, and those that failed the late share alone
        within the metric's own late-share limit. 'censored.METRIC', for the time to an event: a repetition
        without it (the run ended first) counts at the run's end after the last flow started, right-censored."""
        limit = trust.late_share_limit(metric)
        late = [r for r in self.late_only if limit is not None and r.late_share <= limit]
        runs = [(None, s) for s in self.summaries] + [(r.rep, r.summary) for r in late]
        if metric.startswith(CENSORED):
            raw = [(rep, value(s, metric.removeprefix(CENSORED))) for rep, s in runs]
            found = [(rep, self.after_last_start_s if v is None else v) for rep, v in raw]
            censored = [v for _, v in raw].count(None)
        else:
            found = [(rep, v) for rep, v in ((rep, value(s, metric)) for rep, s in runs) if v is not None]
            censored = 0
        if not found:
            return None
        values = [v for _, v in found]
        late_reps = tuple(rep for rep, _ in found if rep is not None)
        m, ci = mean_ci95(values)
        return Stat(m, ci, len(values), tuple(values), censored, late_reps=late_reps,
                    late_limit=limit if late_reps else None)


@dataclass
class RecordedPoint:
    """A point from a report's summary.json: the measures that report showed, as mean, half-width, n and (in
    summaries written since they carry them) every repetition's value. A measure it did not show is not
    measured here."""

    overrides: dict[str, Any]
    label: str
    status: str
    after_last_start_s: float
    stats: dict[str, Stat]
    untrusted: list[dict[str, Any]] = field(default_factory=list)
    loss_decisions: dict[str, str] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        """As PointResult's: some measure draws on a trusted repetition."""
        return any(s.n > len(s.late_reps) for s in self.stats.values())

    def stat(self, metric: str) -> Stat | None:
        return self.stats.get(metric)

    @classmethod
    def from_json(cls, p: dict[str, Any], after_last_start_s: float,
                  raw: dict[str, Any] | None = None) -> RecordedPoint:
        """raw: the experiment's scenario, which names the algorithms of a point whose summary predates the
        loss-decision paths (each of them "not recorded")."""
        stats = {m: Stat(s["mean"], s["ci95"], s["n"], tuple(s.get("values", ())), s.get("censored", 0),
                         late_reps=tuple(s.get("late_reps", ())), late_limit=s.get("late_limit"))
                 for m, s in p["metrics"].items() if s}
        paths = p.get("loss_decisions") or {a: NOT_RECORDED for a in deciding_algos(raw, p["overrides"])}
        return cls(p["overrides"], label_of(p["overrides"]), p["status"], after_last_start_s, stats,
                   p.get("untrusted_runs", []), paths)


# What the report says at a point for each repetition a measure used under its own lateness limit.
LATE_USE = "used for {title} under its measured lateness limit of {limit:.2%}, docs/trust-sensitivity.md"


def late_uses(p: Point, measures: Sequence[tuple[str, str]]) -> dict[int, str]:
    """Each of a point's repetitions that a measure (metric, title) used under its own lateness limit, though
    the trust check failed it on the late share: what for."""
    uses: dict[int, list[str]] = {}
    for metric, title in measures:
        if (s := p.stat(metric)) is not None:
            for rep in s.late_reps:
                uses.setdefault(rep, []).append(LATE_USE.format(title=title, limit=s.late_limit))
    return {rep: " and ".join(why) + "; left out of every other measure" for rep, why in uses.items()}


def untrusted_lines(points: Sequence[Point], measures: Sequence[tuple[str, str]]) -> list[str]:
    """The report's list of the runs the trust check failed at an experiment's points: those left out of every
    figure and verdict, then those a measure (metric, title) used under its own lateness limit, and what for."""
    uses = [late_uses(p, measures) for p in points]
    lines: list[str] = []
    if left_out := [(p.label, u) for p, used in zip(points, uses) for u in p.untrusted if u["rep"] not in used]:
        lines += [f"Left out of every figure and verdict: {len(left_out)} run(s) that failed the trust check "
                  "(analysis/trust.py; its limits and their reasons are in bench/link/README.md, "
                  "\"Trust check\"):", ""]
        lines += [f"- {label}, rep {u['rep']}: {'; '.join(u['failed'])}" for label, u in left_out]
        lines.append("")
    if late := [(p.label, u, used[u["rep"]]) for p, used in zip(points, uses) for u in p.untrusted if u["rep"] in used]:
        lines += ["Used for one measure alone: run(s) whose only failed trust check is the late share, within that "
                  "measure's own limit:", ""]
        lines += [f"- {label}, rep {u['rep']}: {'; '.join(u['failed'])}; {why}" for label, u, why in late]
        lines.append("")
    return lines


def shown(p: Point, metrics: Sequence[str]) -> bool:
    """A point with a value to show for one of the metrics: trusted runs, or runs one of them used under its
    own lateness limit."""
    return p.measured or any((s := p.stat(m)) is not None and s.late_reps for m in metrics)


def deciding_algos(raw: dict[str, Any] | None, overrides: dict[str, Any]) -> list[str]:
    """The algorithms of a point's flows that make loss decisions (bbr2, bbr3, bbr_draft); none where the
    scenario is not known or no longer takes the point's overrides."""
    if raw is None:
        return []
    try:
        flows = point_raw(raw, overrides).get("flows", [])
    except ScenarioError:
        return []
    return sorted({f["algo"] for f in flows if isinstance(f, dict) and f.get("algo") in LOSS_DECISION_ALGOS})


def scenario_raw(key: str, profile: str) -> dict[str, Any] | None:
    """An experiment's scenario (seed/name) in a profile, as this revision's scenario file has it."""
    path = REPRO_DIR / f"{key}.toml"
    try:
        return prepare_raw(path, profile, []) if path.is_file() else None
    except ScenarioError:
        return None


def run_paths(raw: dict[str, Any], overrides: dict[str, Any], reps: Sequence[Path]) -> dict[str, str]:
    """Each loss-deciding algorithm's path over a point's repetitions, from their host.json: "per-packet",
    "ack-time", both joined by "/" where the repetitions differ, or "not recorded"."""
    if not reps:
        return {}
    return {a: "/".join(sorted({loss_decisions(read_host(rep), a) or NOT_RECORDED for rep in reps}))
            for a in deciding_algos(raw, overrides)}


def paths_of(points: Sequence[Point]) -> dict[str, str]:
    """The loss-decision path of each bbr2, bbr3 or bbr_draft algorithm over points' runs, paths joined by
    "/" where they differ; empty where none ran such an algorithm."""
    found: dict[str, set[str]] = {}
    for p in points:
        for algo, path in p.loss_decisions.items():
            found.setdefault(algo, set()).update(path.split("/"))
    return {a: "/".join(sorted(found[a])) for a in sorted(found)}


def _finished(point_dir: Path, repetitions: int) -> Iterator[tuple[int, Path, dict[str, Any]]]:
    """A point's finished repetitions: number, directory, summary."""
    for r in range(repetitions):
        rep = point_dir / f"rep{r}"
        if (rep / DONE_MARK).is_file():
            yield r, rep, read_json(rep / "summary.json", "summary")


def trusted_reps(point_dir: Path, repetitions: int) -> list[Path]:
    """A point's finished repetitions that the trust check did not fail (or that ran without it):
    the only ones a measure, a time series or a figure reads."""
    return [rep for _, rep, summary in _finished(point_dir, repetitions) if trust_failures(summary) is None]


def load_experiment(directory: Path) -> list[PointResult]:
    plan = read_json(directory / "plan.json", "plan")
    points: list[PointResult] = []
    for p in plan["points"]:
        pdir = directory / "points" / p["id"]
        label = label_of(p["overrides"])
        after_s = time_after_last_start_s(point_raw(plan["raw"], p["overrides"]))
        if (pdir / NOT_RUNNABLE).is_file():
            why = (pdir / NOT_RUNNABLE).read_text().strip()
            points.append(PointResult(p["overrides"], label, f"not runnable: {why}", after_s))
            continue
        summaries, untrusted, read, late_only = [], [], [], []
        for r, rep, summary in _finished(pdir, plan["repetitions"]):
            if (failed := trust_failures(summary)) is None:
                summaries.append(summary)
                read.append(rep)
                continue
            untrusted.append({"rep": r, "failed": failed})
            if (share := trust.late_only_share(summary["trust"])) is not None:
                late_only.append(LateRun(r, share, summary))
                if any(share <= t.limit for t in trust.LATE_SHARE_LIMIT_BY_MEASURE.values()):
                    read.append(rep)  # some measure reads it: its loss-decision path counts
        status = repetitions_status(len(summaries), plan["repetitions"], len(untrusted))
        points.append(PointResult(p["overrides"], label, status, after_s, summaries, untrusted,
                                  run_paths(plan["raw"], p["overrides"], read), late_only))
    return points


def after_last_start_s(points: Sequence[Point]) -> float:
    """An experiment's run time after the last flow starts: its shortest point's, so that a claim over
    several points is tested only where every point ran long enough."""
    return min((p.after_last_start_s for p in points), default=0.0)
