"""Running a sweep: the executor protocol (LocalExecutor here, cluster.DaskExecutor on a rack) and the
loop that runs every pending repetition, records its outcome and aggregates."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tqdm.contrib.logging import logging_redirect_tqdm

from .. import progress
from ..analysis.report import write_summary
from ..errors import HarnessError, NotRunnable, RunsInterrupted, RunsLost
from ..scenario import DEFAULT_DURATION_S, AlgoCatalog, validate
from ..testbed.runner import run
from .aggregation import aggregate
from .plans import Job, Plan, Point, open_plan
from .store import DONE_MARK, FAILED, NOT_RUNNABLE, NOT_RUNNABLE_ON, pending, runs_done

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """done (run_dir holds the results), not_runnable (the point cannot run: on this host, or on a cluster
    on none of its hosts), not_runnable_on (not on `host`, whose name it gives; the run goes to another),
    failed (the run's own failure, an answer), or lost (the executor lost it: a dead worker or scheduler,
    a hung run; the command then fails, and a rerun redoes it)."""
    status: str
    message: str = ""
    host: str = ""


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
                write_summary(job.run_dir)
            except NotRunnable as exc:
                not_runnable[job.point.id] = str(exc)
                yield job, Outcome("not_runnable", str(exc))
            except HarnessError as exc:
                yield job, Outcome("failed", str(exc))
            else:
                yield job, Outcome("done")


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
    open_plan(plan_, out)
    todo = pending(plan_, out)
    total = plan_.repetitions * len(plan_.points)
    if counter is None:
        counter = progress.RunCounter([nominal_s(j) for j in todo])
        log.info("sweep %s: %d run(s), %d to do, about %s", plan_.name, total, len(todo), counter.estimate())
    else:
        log.info("sweep %s: %d run(s), %d to do", plan_.name, total, len(todo))
    name = describe or (lambda p: p.label)
    lost: list[str] = []
    try:
        with progress.bar(total=len(todo), unit="run", desc=plan_.name) as bar, logging_redirect_tqdm():
            for job, outcome in (executor or LocalExecutor()).execute(todo, catalog):
                what = f"{name(job.point)}, rep {job.rep + 1}"
                bar.set_postfix_str(f"{what}/{plan_.repetitions}")
                point_dir = job.run_dir.parent
                if outcome.status == "not_runnable_on":
                    # One host cannot run it; the executor gives the run to another, so no progress yet.
                    point_dir.mkdir(parents=True, exist_ok=True)
                    with (point_dir / NOT_RUNNABLE_ON).open("a") as fh:
                        fh.write(f"{outcome.host}: {outcome.message}\n")
                    log.warning("%s: not runnable on %s: %s", job.point.label, outcome.host, outcome.message)
                    continue
                if outcome.status == "done":
                    (job.run_dir / DONE_MARK).write_text("")
                elif outcome.status == "not_runnable":
                    point_dir.mkdir(parents=True, exist_ok=True)
                    (point_dir / NOT_RUNNABLE).write_text(f"{outcome.message}\n")
                    log.warning("%s: not runnable: %s", job.point.label, outcome.message)
                else:
                    job.run_dir.mkdir(parents=True, exist_ok=True)
                    (job.run_dir / FAILED).write_text(f"{outcome.status}: {outcome.message}\n")
                    log.warning("%s rep %d: %s: %s", job.point.label, job.rep + 1, outcome.status, outcome.message)
                    if outcome.status == "lost":
                        lost.append(outcome.message)
                line = counter.finished(f"{what} {outcome.status.replace('_', ' ')}", nominal_s(job))
                if bar.disable:
                    log.info("%s", line)
                bar.update()
    except KeyboardInterrupt:
        raise RunsInterrupted(runs_done(plan_, out), total, out) from None
    text = aggregate(out, mix_hosts)
    if lost:
        log.info("%s", text)
        raise RunsLost(len(lost), total, out, lost[0])
    return text
