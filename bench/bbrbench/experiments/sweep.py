"""Sweeps: a scenario run over a grid of overrides with repetitions, aggregated to means and 95% CIs.

Directory layout:
    plan.json                     the base scenario, the points (overrides) and repetitions
    points/<id>/rep<k>/           one run directory per point and repetition; `done` marks it complete
    points/<id>/not_runnable.txt  why the point cannot run on this kernel
    sweep.json, sweep.csv         aggregated metrics; table.txt the console table

Rerunning with the same --out resumes: complete repetitions are kept, incomplete ones are redone, whichever
host ran them. The runs go through an executor: LocalExecutor here, one after another, or
cluster.DaskExecutor on a rack of test hosts; both leave the same layout. Each run directory holds
host.json, and repetitions from hosts whose kernels or algorithm objects differ are not pooled unless
mix_hosts says so.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import logging
import shutil
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm.contrib.logging import logging_redirect_tqdm

from .. import progress
from ..analysis import tables
from ..analysis.report import summarize
from ..analysis.stats import mean_ci95
from ..errors import HarnessError, NotRunnable, RunsInterrupted
from ..results import read_json, write_json
from ..scenario import (
    DEFAULT_DURATION_S,
    DEFAULT_SWEEP_METRICS,
    AlgoCatalog,
    ScenarioError,
    apply_override,
    strip_sweep,
    validate,
)
from ..testbed.host import host_key, read_host
from ..testbed.runner import run

log = logging.getLogger(__name__)
DONE_MARK = "done"
NOT_RUNNABLE = "not_runnable.txt"
FAILED = "failed.txt"


@dataclass
class Point:
    id: str
    overrides: dict[str, Any]

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.overrides.items()) or "(base)"


@dataclass
class Plan:
    name: str
    raw: dict[str, Any]
    points: list[Point]
    repetitions: int
    metrics: list[str]
    duration_s: float

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "raw": self.raw, "points": [asdict(p) for p in self.points],
                "repetitions": self.repetitions, "metrics": self.metrics, "duration_s": self.duration_s}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(name=data["name"], raw=data["raw"], points=[Point(**p) for p in data["points"]],
                   repetitions=data["repetitions"], metrics=data["metrics"], duration_s=data["duration_s"])


def load_plan(out: Path) -> Plan:
    return Plan.from_json(read_json(out / "plan.json", "plan"))


def point_id(overrides: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:10]


def point_raw(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    raw = strip_sweep(base)
    for key, value in overrides.items():
        apply_override(raw, key, value)
    return raw


def plan(raw: dict[str, Any], catalog: AlgoCatalog, cli_grid: list[tuple[str, Any]], reps: int | None) -> Plan:
    """Every point is validated here, before anything runs."""
    base = validate(raw, catalog)
    spec = base.sweep
    grid: dict[str, list[Any]] = dict(spec.grid) if spec else {}
    for key, values in cli_grid:
        grid[key] = values if isinstance(values, list) else [values]
        if not grid[key]:
            raise ScenarioError(f"--grid {key}: needs at least one value")
    cases = (spec.cases if spec and spec.cases else [{}])
    repetitions = reps if reps is not None else (spec.repetitions if spec else 1)
    if repetitions < 1:
        raise ScenarioError(f"--reps: must be >= 1 (got {repetitions})")
    points: list[Point] = []
    longest = base.duration_s
    for case in cases:
        for combo in itertools.product(*grid.values()):
            overrides = {**case, **dict(zip(grid.keys(), combo))}
            point = Point(id=point_id(overrides), overrides=overrides)
            if any(p.id == point.id for p in points):
                continue
            try:
                scenario = validate(point_raw(raw, overrides), catalog)
            except ScenarioError as exc:
                raise ScenarioError(f"sweep point ({point.label}): {exc}") from None
            longest = max(longest, scenario.duration_s)
            points.append(point)
    metrics = spec.metrics if spec else list(DEFAULT_SWEEP_METRICS)
    return Plan(name=base.name, raw=strip_sweep(raw), points=points, repetitions=repetitions, metrics=metrics,
                duration_s=longest)


def _open_plan(plan_: Plan, out: Path) -> None:
    path = out / "plan.json"
    if path.is_file():
        old = Plan.from_json(read_json(path, "plan"))
        if old.raw != plan_.raw or [p.id for p in old.points] != [p.id for p in plan_.points]:
            raise HarnessError(f"{out} holds a different sweep (scenario or grid changed); use another --out")
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, "plan", plan_.to_json())


@dataclass
class Job:
    """One repetition of one point: `raw` is the point's full scenario, `run_dir` where its results go."""
    rep: int
    point: Point
    raw: dict[str, Any]
    run_dir: Path


@dataclass
class Outcome:
    """done (run_dir holds the results), not_runnable (the point cannot run there) or failed."""
    status: str
    message: str = ""


class Executor(Protocol):
    def execute(self, jobs: list[Job], catalog: AlgoCatalog) -> Iterator[tuple[Job, Outcome]]:
        """Run the jobs, yielding each as it finishes, with its results directory filled in."""
        ...


class LocalExecutor:
    """On this host, one run after another, in the order given."""

    def execute(self, jobs: list[Job], catalog: AlgoCatalog) -> Iterator[tuple[Job, Outcome]]:
        not_runnable: dict[str, str] = {}
        for job in jobs:
            if job.point.id in not_runnable:
                yield job, Outcome("not_runnable", not_runnable[job.point.id])
                continue
            if job.run_dir.exists():
                shutil.rmtree(job.run_dir)
            try:
                run(validate(job.raw, catalog), job.raw, job.run_dir, catalog.bbrkit, show_progress=False)
                summarize(job.run_dir)
            except NotRunnable as exc:
                not_runnable[job.point.id] = str(exc)
                yield job, Outcome("not_runnable", str(exc))
            except HarnessError as exc:
                yield job, Outcome("failed", str(exc))
            else:
                yield job, Outcome("done")


def pending(plan_: Plan, out: Path) -> list[Job]:
    """The repetitions not done yet (nor of a point found not runnable), in rounds: every point once, then
    again, so that a drifting machine load spreads over all points alike."""
    return [Job(rep, point, point_raw(plan_.raw, point.overrides), out / "points" / point.id / f"rep{rep}")
            for rep in range(plan_.repetitions) for point in plan_.points
            if not (out / "points" / point.id / f"rep{rep}" / DONE_MARK).is_file()
            and not (out / "points" / point.id / NOT_RUNNABLE).is_file()]


def runs_done(plan_: Plan, out: Path) -> int:
    return sum((out / "points" / point.id / f"rep{rep}" / DONE_MARK).is_file()
               for rep in range(plan_.repetitions) for point in plan_.points)


def nominal_s(job: Job) -> float:
    """A run's length by its scenario (byte flows may end it sooner), for estimates."""
    return float(job.raw.get("duration_s", DEFAULT_DURATION_S))


def run_sweep(plan_: Plan, out: Path, catalog: AlgoCatalog, executor: Executor | None = None,
              mix_hosts: bool = False, counter: progress.RunCounter | None = None,
              describe: Callable[[Point], str] | None = None) -> str:
    """Run every repetition of every point not done yet (a resumed sweep skips finished ones), then
    aggregate. `counter` counts runs over several sweeps (reproduce; else this sweep's own); `describe`
    names a point in progress lines (default: its overrides). Off a terminal, where no bar shows, each
    finished run logs a line '[k/N] POINT, rep R done, ETA ...'. Ctrl-C or SIGTERM raise RunsInterrupted
    with what was kept."""
    _open_plan(plan_, out)
    todo = pending(plan_, out)
    total = plan_.repetitions * len(plan_.points)
    if counter is None:
        counter = progress.RunCounter([nominal_s(j) for j in todo])
        log.info("sweep %s: %d run(s), %d to do, about %s", plan_.name, total, len(todo), counter.estimate())
    else:
        log.info("sweep %s: %d run(s), %d to do", plan_.name, total, len(todo))
    name = describe or (lambda p: p.label)
    try:
        with progress.bar(total=len(todo), unit="run", desc=plan_.name) as bar, logging_redirect_tqdm():
            for job, outcome in (executor or LocalExecutor()).execute(todo, catalog):
                what = f"{name(job.point)}, rep {job.rep + 1}"
                bar.set_postfix_str(f"{what}/{plan_.repetitions}")
                point_dir = job.run_dir.parent
                if outcome.status == "done":
                    (job.run_dir / DONE_MARK).write_text("")
                elif outcome.status == "not_runnable":
                    point_dir.mkdir(parents=True, exist_ok=True)
                    (point_dir / NOT_RUNNABLE).write_text(f"{outcome.message}\n")
                    log.warning("%s: not runnable: %s", job.point.label, outcome.message)
                else:
                    job.run_dir.mkdir(parents=True, exist_ok=True)
                    (job.run_dir / FAILED).write_text(f"{outcome.message}\n")
                    log.warning("%s rep %d: failed: %s", job.point.label, job.rep + 1, outcome.message)
                line = counter.finished(f"{what} {outcome.status.replace('_', ' ')}", nominal_s(job))
                if bar.disable:
                    log.info("%s", line)
                bar.update()
    except KeyboardInterrupt:
        raise RunsInterrupted(runs_done(plan_, out), total, out) from None
    return aggregate(out, mix_hosts)


# ---------------------------------------------------------------- aggregation


def metric_value(summary: dict[str, Any], path: str) -> float | None:
    """'total.NAME', 'steady.NAME', 'algo.ALGO.NAME' or 'flow.LABEL.NAME' from a run's summary.json."""
    kind, _, rest = path.partition(".")
    value: Any = None
    if kind in ("total", "steady"):
        value = (summary.get(kind) or {}).get(rest)
    elif kind == "algo":
        algo, _, name = rest.rpartition(".")
        value = summary.get("by_algo", {}).get(algo, {}).get(name)
    elif kind == "flow":
        label, _, name = rest.rpartition(".")
        value = next((f.get(name) for f in summary.get("flows", []) if f.get("label") == label), None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _check_hosts(point: Point, hosts: list[dict[str, Any]], mix_hosts: bool) -> None:
    kinds = {host_key(h): h for h in hosts}
    if len(kinds) > 1 and not mix_hosts:
        which = "; ".join(f"{h.get('hostname')}: kernel {k[0]}, {k[1][:20]}" for k, h in kinds.items())
        raise HarnessError(f"point ({point.label}): repetitions ran on hosts whose kernels or algorithm objects "
                           f"differ ({which}); rerun them on one kind of host or pass --mix-hosts to pool them")


def aggregate(out: Path, mix_hosts: bool = False) -> str:
    """sweep.json, sweep.csv and table.txt from the finished runs. HarnessError when a point would pool
    repetitions from hosts of different kernels or algorithm objects, unless mix_hosts."""
    plan_ = load_plan(out)
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    all_hosts: dict[str, dict[str, Any]] = {}
    for point in plan_.points:
        point_dir = out / "points" / point.id
        row: dict[str, Any] = {"id": point.id, "overrides": point.overrides, "label": point.label, "metrics": {}}
        if (point_dir / NOT_RUNNABLE).is_file():
            row["status"] = "not runnable: " + (point_dir / NOT_RUNNABLE).read_text().strip()
            rows.append(row)
            continue
        summaries = []
        hosts: list[dict[str, Any]] = []
        for rep in range(plan_.repetitions):
            run_dir = point_dir / f"rep{rep}"
            if (run_dir / DONE_MARK).is_file():
                summaries.append(read_json(run_dir / "summary.json", "summary"))
                host = read_host(run_dir)
                if host is not None:
                    hosts.append(host)
                    all_hosts[str(host.get("hostname"))] = host
                runs.append({"point": point.id, "label": point.label, "rep": rep, "overrides": point.overrides,
                             "summary": summaries[-1], "host": host or {}})
        _check_hosts(point, hosts, mix_hosts)
        row["hosts"] = sorted({str(h.get("hostname")) for h in hosts})
        row["status"] = f"{len(summaries)}/{plan_.repetitions} repetitions"
        row["repetitions"] = len(summaries)
        for metric in plan_.metrics:
            values = [v for v in (metric_value(s, metric) for s in summaries) if v is not None]
            if values:
                m, ci = mean_ci95(values)
                row["metrics"][metric] = {"mean": m, "ci95": ci, "n": len(values), "values": values}
        rows.append(row)
    host_fields = ("kernel", "cpus", "bbrctl_version", "objects_sha256", "algorithms_sha256")
    hosts_summary = {name: {k: h.get(k) for k in host_fields} for name, h in sorted(all_hosts.items())}
    write_json(out / "sweep.json", "sweep", {"name": plan_.name, "metrics": plan_.metrics, "points": rows,
                                             "hosts": hosts_summary})
    keys = sorted({k for p in plan_.points for k in p.overrides})
    with (out / "sweep.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(keys + ["status"] + [f"{m}{s}" for m in plan_.metrics for s in ("_mean", "_ci95", "_n")])
        for row in rows:
            cells: list[Any] = [row["overrides"].get(k, "") for k in keys] + [row["status"]]
            for metric in plan_.metrics:
                stat = row["metrics"].get(metric)
                extra: list[Any] = ["", "", 0]
                if stat:
                    extra = [stat["mean"], "" if stat["ci95"] is None else stat["ci95"], stat["n"]]
                cells += extra
            writer.writerow(cells)
    _write_runs_csv(out, plan_, runs, keys)
    _link_labels(out, plan_)
    text = sweep_table(plan_, rows, hosts_summary)
    (out / "table.txt").write_text(text + "\n")
    return text


RUN_HOST_FIELDS = ("hostname", "kernel", "cpus", "bbrctl_version")


def _write_runs_csv(out: Path, plan_: Plan, runs: list[dict[str, Any]], keys: list[str]) -> None:
    """runs.csv: one row per finished run (tidy data for pandas or R), its point's overrides, every
    metric of the sweep and the host that ran it."""
    with (out / "runs.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["point", "label", "rep", *keys, *plan_.metrics, *(f"host_{f}" for f in RUN_HOST_FIELDS)])
        for r in runs:
            values = [metric_value(r["summary"], m) for m in plan_.metrics]
            writer.writerow([r["point"], r["label"], r["rep"], *(r["overrides"].get(k, "") for k in keys),
                             *("" if v is None else v for v in values),
                             *(r["host"].get(f, "") for f in RUN_HOST_FIELDS)])


LABEL_DIR = "by-label"
MAX_LABEL_CHARS = 120


def _link_labels(out: Path, plan_: Plan) -> None:
    """points/by-label/<label> -> ../<id>: the point directories under names a person can read (the ids
    stay the directories' names, which resumption and the reports rely on)."""
    links = out / "points" / LABEL_DIR
    links.mkdir(parents=True, exist_ok=True)
    for point in plan_.points:
        name = "".join(c if c.isalnum() or c in "._=,-" else "_" for c in point.label)[:MAX_LABEL_CHARS] or point.id
        link = links / name
        if not (out / "points" / point.id).is_dir():
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(Path("..") / point.id)


def sweep_table(plan_: Plan, rows: list[dict[str, Any]], hosts: dict[str, dict[str, Any]]) -> str:
    """The console table; a sweep whose runs came from more than one host names them per point and below."""
    mixed = len(hosts) > 1
    header = ["point"] + [m.split(".", 1)[1] for m in plan_.metrics] + ["status"] + (["hosts"] if mixed else [])
    body: list[list[str | None]] = []
    for row in rows:
        cells: list[str | None] = [row["label"]]
        for m in plan_.metrics:
            stat = row["metrics"].get(m)
            cells.append(None if stat is None else format_mean(stat["mean"], stat["ci95"]))
        cells.append(row["status"])
        if mixed:
            cells.append(", ".join(row.get("hosts", [])))
        body.append(cells)
    text = tables.text(header, body) + "\n(mean ± 95% confidence half-width over repetitions)"
    if mixed:
        text += "\nhosts: " + "; ".join(f"{name} (kernel {h['kernel']}, {h['cpus']} CPUs, {h['bbrctl_version']})"
                                        for name, h in hosts.items())
    return text


def format_mean(mean: float, ci95: float | None) -> str:
    return f"{mean:.3g}" if ci95 is None else f"{mean:.3g} ± {ci95:.2g}"
