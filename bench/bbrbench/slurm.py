"""Sweeps on a Slurm cluster: the pending repetitions go out as a job array, one repetition per task, each
task a whole node (--exclusive), running `bbrbench run` on data only: a scenario file in, a run directory
out, both in the sweep directory, which every node must see at the same path (docs/cluster.md, "Slurm").

The client stays on the submitting host: it writes each task's scenario, submits the array, watches the
tasks with squeue and takes each finished run into the sweep as the Dask client does (only the run it
asked for, by its scenario and the submitting command's record). A task that ends without a status (killed,
out of time, its node failed) is resubmitted up to `tries`, then lost, and the command fails; not runnable
on one node is an answer about that node, and the run is resubmitted to the others.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import provenance
from .cluster.archive import check_complete
from .cluster.client import run_timeout_s
from .cluster.replies import one_line
from .errors import HarnessError, UsageError
from .provenance import SUBMITTED_ENV
from .scenario import AlgoCatalog
from .sweep import Job, Outcome
from .sweep.store import accept_run
from .testbed.procs import command

log = logging.getLogger(__name__)

# Where a submission's task directories go, under the sweep directory.
SUBMISSIONS_DIR = "slurm"
# `bbrbench run` exit statuses (cli/common.py) that are answers about the run.
EXIT_FAILED, EXIT_INVALID, EXIT_NOT_RUNNABLE = 1, 2, 3
# squeue is one RPC to slurmctld; every second is light for it and quick enough for runs of seconds.
POLL_S = 1.0
# A task gone from squeue without a status file yet: a shared file system may show the file a little later.
STATUS_GRACE_S = 10.0
# squeue failing for this long (the controller gone) loses the runs still out; the command then fails.
UNREACHABLE_S = 60.0
# sbatch, squeue, sinfo and scancel answer in well under this unless the controller is unreachable.
COMMAND_TIMEOUT_S = 30.0
# The batch script of every task: the run as root (directly in a root job, else through the one sudo rule
# docs/cluster.md gives), then its exit status and node, written last so that a status means finished.
BATCH_SCRIPT = """#!/bin/sh
# One repetition of a bbrbench sweep per task of this job array.
task={submission}/task$SLURM_ARRAY_TASK_ID
if [ "$(id -u)" -eq 0 ]; then as_root=; else as_root="sudo -n"; fi
$as_root {bbrbench} -q run --no-plots --out "$task/run" "$task/scenario.json" 2>"$task/stderr"
echo "$? $SLURMD_NODENAME" >"$task/status.new" && mv "$task/status.new" "$task/status"
"""


def bbrbench_path() -> Path:
    """The bbrbench entry point the tasks run (the one beside this interpreter), which the sudo rule names."""
    return Path(sys.executable).parent / "bbrbench"


def _slurm(argv: list[str], env: dict[str, str] | None = None) -> str:
    """A Slurm command's output, or HarnessError in one line."""
    return command(argv, timeout=COMMAND_TIMEOUT_S, env=env).stdout


@dataclass
class Task:
    """A job of a submission: its task directory, and since when squeue no longer shows it."""
    job: Job
    directory: Path
    gone_since: float | None = None


@dataclass
class Submission:
    """One job array: its directory, Slurm's job id, and its unfinished tasks by array index."""
    directory: Path
    job_id: str = ""
    tasks: dict[int, Task] = field(default_factory=dict)


class SlurmExecutor:
    """Runs on the nodes Slurm gives, one repetition per job-array task and one task per node; Slurm
    chooses the nodes, and each run's host.json records which ran it, so the pooling checks of the
    aggregation (kinds of host, host sets, the host as a batch factor) apply as on Dask. `sbatch_args`
    go to sbatch as given (a partition, an account). A context manager: on entry it checks the
    controller answers, before the caller changes anything."""

    def __init__(self, tries: int, sbatch_args: list[str]) -> None:
        if tries < 1:
            raise UsageError(f"--tries: must be >= 1 (got {tries})")
        self.tries, self.sbatch_args = tries, sbatch_args
        self.submitted = provenance.record()
        self.active: list[str] = []  # job ids not known to be over, cancelled on the way out

    def __enter__(self) -> SlurmExecutor:
        self.nodes = set(_slurm(["sinfo", "-h", "-N", "-o", "%N"]).split())
        if not self.nodes:
            raise HarnessError("--slurm: the cluster has no nodes")
        return self

    def __exit__(self, *_exc: object) -> None:
        pass

    def _submit(self, jobs: list[Job], out: Path, exclude: set[str]) -> Submission:
        """One job array of these jobs (each on a node outside `exclude`), their scenarios written first."""
        root = out / SUBMISSIONS_DIR
        root.mkdir(exist_ok=True)
        submission = Submission(Path(tempfile.mkdtemp(prefix="submission-", dir=root)))
        for index, job in enumerate(jobs):
            task = submission.directory / f"task{index}"
            task.mkdir()
            (task / "scenario.json").write_text(json.dumps(job.raw))
            submission.tasks[index] = Task(job, task)
        script = submission.directory / "batch.sh"
        script.write_text(BATCH_SCRIPT.format(submission=shlex.quote(str(submission.directory)),
                                              bbrbench=shlex.quote(str(bbrbench_path()))))
        minutes = math.ceil(max(run_timeout_s(j) for j in jobs) / 60)
        argv = ["sbatch", "--parsable", f"--array=0-{len(jobs) - 1}", "--exclusive", "--nodes=1", "--ntasks=1",
                f"--time={minutes}", f"--job-name=bbrbench-{jobs[0].raw.get('name', 'sweep')}",
                f"--output={submission.directory}/task%a/slurm.log", f"--chdir={submission.directory}",
                *([f"--exclude={','.join(sorted(exclude))}"] if exclude else []), *self.sbatch_args, str(script)]
        try:
            answer = _slurm(argv, {**os.environ, SUBMITTED_ENV: json.dumps(self.submitted)})
        except HarnessError:
            shutil.rmtree(submission.directory)
            raise
        submission.job_id = answer.strip().split(";")[0]  # --parsable: JOBID or JOBID;CLUSTER
        self.active.append(submission.job_id)
        log.info("slurm: job %s, %d task(s)", submission.job_id, len(jobs))
        return submission

    def _queued(self) -> set[tuple[str, int]]:
        """(job id, array index) of this user's tasks squeue still shows (pending, running, completing); not
        `squeue -j`, which fails for a job the controller has forgotten."""
        queued = set()
        for line in _slurm(["squeue", "-h", "-r", "--me", "-o", "%F %K"]).splitlines():
            job_id, _, index = line.partition(" ")
            if index.strip().isdigit():
                queued.add((job_id, int(index)))
        return queued

    def execute(self, jobs: list[Job], catalog: AlgoCatalog) -> Iterator[tuple[Job, Outcome]]:
        if not jobs:
            return
        out = jobs[0].run_dir.parents[2]  # OUT/points/<id>/rep<k>
        tries: Counter[int] = Counter()
        excluded: dict[str, dict[str, str]] = {}  # point id -> node -> why it cannot run there
        failed_on: dict[int, dict[str, str]] = {}  # job -> node -> how the run failed there
        waiting: list[Submission] = []
        retry: list[Job] = list(jobs)
        unreachable_since: float | None = None
        try:
            while retry or waiting:
                # Jobs to (re)submit, one array per set of nodes to avoid; none where no node is left.
                groups: dict[frozenset[str], list[Job]] = {}
                for job in retry:
                    avoid = {**excluded.get(job.point.id, {}), **failed_on.get(id(job), {})}
                    if self.nodes <= set(avoid):
                        why = "; ".join(f"{n}: {w}" for n, w in avoid.items())
                        yield job, (Outcome("lost", f"failed on every node: {why}") if id(job) in failed_on
                                    else Outcome("not_runnable", why))
                    else:
                        groups.setdefault(frozenset(avoid), []).append(job)
                retry = []
                for exclude, group in groups.items():
                    waiting.append(self._submit(group, out, set(exclude)))
                time.sleep(POLL_S)
                try:
                    queued = self._queued()
                except HarnessError as exc:  # the controller busy or restarting: ask again, for a while
                    unreachable_since = unreachable_since or time.monotonic()
                    if time.monotonic() - unreachable_since < UNREACHABLE_S:
                        log.warning("%s; asking again", exc)
                        continue
                    for submission in waiting:
                        for task in submission.tasks.values():
                            yield task.job, Outcome("lost", f"{exc} for {UNREACHABLE_S:.0f} s")
                    return
                unreachable_since = None
                for submission in list(waiting):
                    for job, outcome in self._collect(submission, queued):
                        if outcome.status == "not_runnable_on":
                            excluded.setdefault(job.point.id, {})[outcome.host] = outcome.message
                            retry.append(job)
                        elif outcome.status == "failed":  # the run's own failure: another node may run it
                            failed_on.setdefault(id(job), {})[outcome.host] = outcome.message
                            outcome = Outcome("lost", f"failed on node {outcome.host}: {outcome.message}")
                        if outcome.status == "lost":
                            tries[id(job)] += 1
                            if tries[id(job)] < self.tries:
                                log.warning("%s rep %d: %s; trying again", job.point.label, job.rep + 1,
                                            outcome.message)
                                retry.append(job)
                                continue
                        yield job, outcome
                    if not submission.tasks:
                        waiting.remove(submission)
                        self.active.remove(submission.job_id)
                        shutil.rmtree(submission.directory, ignore_errors=True)
        finally:
            # Ctrl-C or an error: nothing of this sweep stays queued or running on the cluster.
            if self.active:
                subprocess.run(["scancel", *self.active], capture_output=True, timeout=COMMAND_TIMEOUT_S)

    def _collect(self, submission: Submission, queued: set[tuple[str, int]]) -> Iterator[tuple[Job, Outcome]]:
        """The finished tasks of a submission, each taken off it with its outcome."""
        now = time.monotonic()
        for index, task in list(submission.tasks.items()):
            status = task.directory / "status"
            if not status.is_file():
                if (submission.job_id, index) in queued:
                    continue
                task.gone_since = task.gone_since or now
                if now - task.gone_since < STATUS_GRACE_S:
                    continue
                del submission.tasks[index]
                # Kept for its slurm.log: the only trace of why it ended.
                kept = task.directory.rename(submission.directory.parent / f"lost-{submission.job_id}_{index}")
                yield task.job, Outcome("lost", f"task {submission.job_id}_{index} ended without a status "
                                                f"(cancelled, out of time or its node failed; see {kept}/slurm.log)")
                continue
            del submission.tasks[index]
            code_text, _, node = status.read_text().strip().partition(" ")
            stderr = (task.directory / "stderr").read_text(errors="replace") if (task.directory / "stderr").is_file() \
                else ""
            last = (stderr.strip().splitlines() or [""])[-1].removeprefix("bbrbench: ")
            message = "".join(c if c.isprintable() else "?" for c in last)
            code = int(code_text) if code_text.lstrip("-").isdigit() else None
            try:
                node = one_line(node, f"task {submission.job_id}_{index} node")
            except HarnessError as exc:
                yield task.job, Outcome("lost", str(exc))
                shutil.rmtree(task.directory, ignore_errors=True)
                continue
            if code == 0:
                try:
                    check_complete(task.directory / "run", None)
                    accept_run(task.directory / "run", task.job.run_dir, task.job.raw, self.submitted)
                except HarnessError as exc:
                    yield task.job, Outcome("lost", f"from node {node}: {exc}")
                else:
                    yield task.job, Outcome("done")
            elif code == EXIT_NOT_RUNNABLE:
                yield task.job, Outcome("not_runnable_on", message, host=node)
            elif code in (EXIT_FAILED, EXIT_INVALID):
                yield task.job, Outcome("failed", message, host=node)
            else:
                yield task.job, Outcome("lost", f"on node {node}: bbrbench run ended with status {code_text}: "
                                                f"{message}")
            shutil.rmtree(task.directory, ignore_errors=True)
