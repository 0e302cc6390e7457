"""Reproduce the seed papers' experiments: run every scenario under bbrbench/scenarios/repro/ as a sweep
(one profile, resumable) and write a report that puts our numbers beside the papers'.

Layout of the output directory:
    meta.json                    profile; per invocation: command, git revision, start and end, kernel,
                                 CPU count and the machine's 1-minute load average while it ran
    <seed>/<experiment>/         one sweep directory per scenario file (see the sweep package)
    report.md, figures/*.png     the report (repro/report.py); summary.json its numbers

An experiment is named `<seed>/<file stem>` (e.g. seed000/table4.1); `--only` takes such names or a
whole seed. A second invocation with the same --out and profile resumes: finished repetitions are kept.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__, progress
from ..errors import HarnessError, RunsInterrupted
from ..provenance import git_revision
from ..scenario import SCENARIO_DIR, ScenarioError, prepare_raw
from .papers import SUFFIX as PAPER_SUFFIX

if TYPE_CHECKING:
    from ..sweep import Executor, Point

log = logging.getLogger(__name__)
REPRO_DIR = SCENARIO_DIR / "repro"
PROFILES = ("quick", "standard", "paper")
META = "meta.json"
LOAD_SAMPLE_INTERVAL_S = 10.0


@dataclass(frozen=True)
class Experiment:
    seed: str
    name: str
    path: Path

    @property
    def key(self) -> str:
        return f"{self.seed}/{self.name}"


def experiments(root: Path = REPRO_DIR) -> list[Experiment]:
    """Every scenario file (not the papers' data files beside them), ordered by seed then file name."""
    return [Experiment(seed=p.parent.name, name=p.stem, path=p)
            for p in sorted(root.glob("*/*.toml"), key=lambda p: (p.parent.name, p.stem))
            if not p.name.endswith(PAPER_SUFFIX)]


def select(all_: list[Experiment], only: Sequence[str]) -> list[Experiment]:
    """The experiments named by --only (seeds or seed/experiment), in catalogue order; all without --only."""
    if not only:
        return list(all_)
    wanted: set[str] = set()
    for spec in only:
        name = spec.strip().strip("/")
        hits = {e.key for e in all_ if e.key == name or e.seed == name}
        if not hits:
            known = ", ".join(sorted({e.seed for e in all_}))
            raise ScenarioError(f"--only {spec}: no such seed or experiment (seeds: {known}; "
                                f"experiments are SEED/FILE, e.g. {all_[0].key if all_ else 'seed000/table4.1'})")
        wanted |= hits
    return [e for e in all_ if e.key in wanted]


@dataclass
class LoadSampler:
    """The 1-minute load average sampled in a background thread, once at start, every interval_s and once
    at stop: other work on the machine during a reproduction shows in its record."""

    interval_s: float = LOAD_SAMPLE_INTERVAL_S
    read: Callable[[], float] = field(default=lambda: os.getloadavg()[0])
    # (seconds since start, load average)
    samples: list[tuple[float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _t0: float = 0.0

    def _sample(self) -> None:
        self.samples.append((round(time.monotonic() - self._t0, 1), self.read()))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="load-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()

    def record(self) -> dict[str, Any]:
        loads = [v for _, v in self.samples]
        return {"interval_s": self.interval_s, "min": min(loads), "mean": statistics.fmean(loads),
                "max": max(loads), "samples": [list(s) for s in self.samples]}


def _record(out: Path, profile: str, only: Sequence[str], command: str, repo: Path) -> dict[str, Any]:
    path = out / META
    meta: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {"profile": profile, "runs": []}
    if meta["profile"] != profile:
        raise HarnessError(f"{out} holds a {meta['profile']} reproduction; use another --out for {profile}")
    entry = {"command": command, "only": list(only), "version": __version__, "revision": git_revision(repo),
             "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "started_epoch": time.time(),
             "kernel": platform.release(), "cpus": os.cpu_count()}
    meta["runs"].append(entry)
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def _end(out: Path, meta: dict[str, Any], load: LoadSampler) -> None:
    """The invocation's end and load record, also when it failed or was interrupted."""
    entry = meta["runs"][-1]
    entry["load_1min"] = load.record()
    entry["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    entry["elapsed_s"] = round(time.time() - entry["started_epoch"], 1)
    (out / META).write_text(json.dumps(meta, indent=2) + "\n")


def plans(selected: list[Experiment], profile: str, reps: int | None = None) -> list[tuple[Experiment, Any]]:
    """Every selected scenario planned (validated point by point) before the first run starts; `reps`
    overrides the profile's repetitions."""
    from .. import sweep
    from ..testbed import system
    catalog = system.catalog()
    out = []
    for e in selected:
        raw = prepare_raw(e.path, profile, [])
        try:
            out.append((e, sweep.plan_runs(raw, catalog, [], reps)))
        except ScenarioError as exc:
            raise ScenarioError(f"{e.key}: {exc}") from None
    return out


def run_all(profile: str, only: Sequence[str], out: Path, repo: Path, command: str,
            executor: Executor | None = None, mix_hosts: bool = False, reps: int | None = None) -> Path:
    """Run the selected experiments into `out` and write the report. With `reps`, an experiment already
    there gets the repetitions it lacks (5 where 3 left an interval wider than the claim's effect)."""
    from .. import sweep
    from ..testbed import system
    selected = select(experiments(), only)
    planned = plans(selected, profile, reps)
    catalog = system.catalog()
    meta = _record(out, profile, only, command, repo)
    total = sum(len(p.points) * p.repetitions for _, p in planned)
    counter = progress.RunCounter([sweep.nominal_s(job) for e, p in planned
                                   for job in sweep.pending(p, out / e.seed / e.name)])
    log.info("reproduce: %d experiment(s), %d run(s), %d to do, about %s, profile %s, results in %s", len(planned),
             total, counter.total, counter.estimate(), profile, out)
    load = LoadSampler()
    load.start()
    try:
        for e, plan_ in planned:
            log.info("== %s", e.key)
            sweep.run_sweep(plan_, out / e.seed / e.name, catalog, executor, mix_hosts, counter, _prefixed(e.key))
    except KeyboardInterrupt:
        kept = sum(sweep.runs_done(p, out / e.seed / e.name) for e, p in planned)
        raise RunsInterrupted(kept, total, out) from None
    finally:
        load.stop()
        _end(out, meta, load)
    return report_only(out, mix_hosts)


def _prefixed(key: str) -> Callable[[Point], str]:
    """Progress lines name the experiment before the point."""
    return lambda point: f"{key} {point.label}"


def rebuild(summaries: Sequence[Path], out: Path, unchecked: Sequence[Path] = ()) -> Path:
    """The report rebuilt from earlier reports' summary.json files (report.write_report_from_summaries);
    `unchecked`: those of them that pooled runs before the report left out the ones that failed the trust
    check."""
    from .report import write_report_from_summaries
    for path in summaries:
        if not path.is_file():
            raise HarnessError(f"{path}: no such summary.json")
    for path in unchecked:
        if path not in summaries:
            raise HarnessError(f"{path}: --trust-unchecked names no --from-summary file")
    return write_report_from_summaries(summaries, out, unchecked)


def report_only(out: Path, mix_hosts: bool = False) -> Path:
    from .report import write_report
    if not (out / META).is_file():
        raise HarnessError(f"{out}: not a reproduction directory (no {META})")
    return write_report(out, mix_hosts)
