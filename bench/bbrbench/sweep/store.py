"""What a sweep directory holds run by run: the marks a run leaves (done, not runnable, failed), what is
still pending, and the by-label links."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..results import read_json
from .plans import Job, Plan, point_raw

DONE_MARK = "done"
NOT_RUNNABLE = "not_runnable.txt"
# On a cluster, 'HOST: why' per host that could not run the point (the point ran on the others).
NOT_RUNNABLE_ON = "not_runnable_on.txt"
FAILED = "failed.txt"


def pending(plan_: Plan, out: Path) -> list[Job]:
    """The repetitions not done yet (nor of a point found not runnable), in rounds: every point once, then
    again, so that a drifting machine load spreads over all points alike."""
    return [Job(rep, point, point_raw(plan_.raw, point.overrides), out / "points" / point.id / f"rep{rep}")
            for rep in range(plan_.repetitions) for point in plan_.points
            if not (out / "points" / point.id / f"rep{rep}" / DONE_MARK).is_file()
            and not (out / "points" / point.id / NOT_RUNNABLE).is_file()]


def done_runs(out: Path, point_id: str) -> list[Path]:
    """A point's finished run directories, in repetition order."""
    return [d for d in sorted((out / "points" / point_id).glob("rep*")) if (d / DONE_MARK).is_file()]


def accept_run(staged: Path, run_dir: Path, raw: dict[str, Any], submitted: dict[str, Any]) -> None:
    """A run made elsewhere (a cluster worker's, a Slurm task's), staged at `staged`, moved to run_dir only
    if it is the run asked for: its scenario.json holds this job's scenario and the submitting command's
    record. Whatever was at run_dir (an unfinished earlier try) is replaced only then; a refused run is
    removed, and HarnessError says why."""
    try:
        scenario = read_json(staged / "scenario.json", "run")
        if scenario.get("raw") != raw or scenario.get("submitted_by") != submitted:
            raise HarnessError("the result is not of the run asked for (its scenario or submitting command differ)")
    except HarnessError as exc:
        shutil.rmtree(staged, ignore_errors=True)
        raise HarnessError(f"{run_dir}: {exc}") from None
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    staged.rename(run_dir)


def runs_done(plan_: Plan, out: Path) -> int:
    return sum((out / "points" / point.id / f"rep{rep}" / DONE_MARK).is_file()
               for rep in range(plan_.repetitions) for point in plan_.points)


LABEL_DIR = "by-label"
MAX_LABEL_CHARS = 120


def link_labels(out: Path, plan_: Plan) -> None:
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
