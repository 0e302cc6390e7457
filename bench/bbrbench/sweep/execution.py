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
from ..analysis.report import summarize
from ..errors import HarnessError, NotRunnable, RunsInterrupted
from ..scenario import DEFAULT_DURATION_S, AlgoCatalog, validate
from ..testbed.runner import run
from .aggregation import aggregate
from .plans import Job, Plan, Point, open_plan
from .store import DONE_MARK, FAILED, NOT_RUNNABLE, pending, runs_done

log = logging.getLogger(__name__)


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
