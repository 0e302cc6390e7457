"""The submitting side of a Dask sweep: the connection, and the executor that places every run on a
healthy worker and takes its result in.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import provenance
from ..errors import HarnessError, UsageError
from ..scenario import AlgoCatalog
from ..sweep import Job, Outcome, nominal_s
from ..testbed.host import host_key, host_name, read_host
from .archive import unpack
from .certs import security
from .replies import health_report, one_line, run_reply
from .worker import RUN_STOP_TIMEOUT_S, health, remote_run

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 20
# A run may take RUN_TIMEOUT_FACTOR times its scenario's duration plus RUN_SETUP_S (namespaces, bbrctl,
# summary) before its host counts as hung; a slow, loaded host stays well inside.
RUN_TIMEOUT_FACTOR, RUN_SETUP_S = 2.0, 120.0
# The client's own deadline for a run's reply is past the worker's timeout by the worker's stopping the
# run (RUN_STOP_TIMEOUT_S) and this much for packing and transfer: a worker that cannot answer by then
# (stopped, wedged, its network gone) has its run given to another host.
REPLY_GRACE_S = 60.0
# The client's look at the scheduler for workers that joined or left, between results.
REFRESH_S = 2.0
# How often the client looks at its runs while waiting; a result is taken within this.
POLL_S = 0.1
# Runs left with no healthy worker for this long are lost (the command fails and says how to resume).
NO_WORKER_S = 60.0
# Written by the client into each run it takes in: which worker delivered it, for which try.
DELIVERY_FILE = "delivery.json"


def connect(address: str, certs: Path) -> Any:
    """A client of the scheduler at `address` (tls://HOST:PORT), or HarnessError in one line."""
    try:
        from distributed import Client
    except ImportError:
        raise HarnessError("--cluster needs Dask distributed: pip install 'bbrbench[cluster]'") from None
    if not address.startswith("tls://"):
        raise UsageError(f"--cluster {address}: the scheduler speaks TLS only; give tls://HOST:PORT")
    settings = security(certs)
    try:
        # msgpack only keeps Dask's Serialize path from unpickling what a worker sends; its ToPickle and
        # Pickled frames are unpickled regardless (docs/cluster.md: every member is trusted).
        return Client(address, security=settings, timeout=CONNECT_TIMEOUT_S, set_as_default=False,
                      deserializers=["msgpack"])
    except (OSError, TimeoutError) as exc:
        raise HarnessError(f"cluster: cannot connect to {address}: {str(exc).splitlines()[0]}") from None


def run_timeout_s(job: Job) -> float:
    """How long a run may take before its host counts as hung: its traffic time twice over, plus set-up."""
    return RUN_TIMEOUT_FACTOR * nominal_s(job) + RUN_SETUP_S


def reply_deadline_s(job: Job) -> float:
    """How long the client waits for a run's reply before giving the run to another host."""
    return run_timeout_s(job) + RUN_STOP_TIMEOUT_S + REPLY_GRACE_S


@dataclass
class Member:
    """A worker as the client sees it: its address and health() report."""
    address: str
    report: dict[str, Any]

    @property
    def host(self) -> str:
        return host_name(self.report)

    @property
    def label(self) -> str:
        return f"{self.report.get('hostname')} ({self.address})"

    @property
    def kind(self) -> tuple[str, str, str]:
        return host_key(self.report)


@dataclass
class Try:
    """A run out on a worker: which, since when, until when the client waits, and its nonce."""
    job: Job
    member: Member
    deadline: float
    nonce: str


@dataclass
class Ledger:
    """What the client keeps of a sweep's runs while it places them: runs per (point, host), hosts that
    cannot run a point (not runnable there, by point) or failed a run (by job), and tries per job."""
    placed: Counter[tuple[str, str]] = field(default_factory=Counter)
    excluded: dict[str, dict[str, str]] = field(default_factory=dict)
    failed_on: dict[int, dict[str, str]] = field(default_factory=dict)
    tries: Counter[int] = field(default_factory=Counter)

    def avoids(self, job: Job) -> dict[str, str]:
        return {**self.excluded.get(job.point.id, {}), **self.failed_on.get(id(job), {})}


def earlier_hosts(jobs: list[Job]) -> Counter[tuple[str, str]]:
    """Where the finished repetitions of these jobs' points ran (their host.json), so that a resumed sweep
    goes on spreading each point over the hosts from there."""
    placed: Counter[tuple[str, str]] = Counter()
    for point_dir in {job.run_dir.parent: job.point.id for job in jobs}.items():
        directory, point_id = point_dir
        for done in directory.glob("rep*/done"):
            with contextlib.suppress(HarnessError):
                if (record := read_host(done.parent)) is not None:
                    placed[(point_id, host_name(record))] += 1
    return placed


class DaskExecutor:
    """Runs on the healthy workers of a Dask scheduler, one at a time per host, each pinned by this client
    to the host it chose: each point's repetitions spread over the hosts (a free host takes the pending
    run of the point it has run least, counting the repetitions that finished before a resume), so that a
    host never stands in for a point. A worker is checked (health()) when first seen and given nothing if
    its report is malformed, it cannot run experiments, another worker on its host came first, or, unless
    mix_hosts, its kind of host (kernel, algorithm objects, CPUs) is not the first healthy worker's.

    A run whose worker dies, raises, does not answer by the run's deadline, fails, or answers with a
    malformed or damaged result goes to another host (one that has not failed it), up to `tries`; then it
    is lost, as is every run left when the scheduler goes away or no healthy worker is left. A worker that
    missed a deadline is given nothing more.

    A context manager: connecting and checking the workers on entry, before the caller changes anything,
    so that a refused client leaves no trace."""

    def __init__(self, address: str, certs: Path, tries: int, mix_hosts: bool = False) -> None:
        if tries < 1:
            raise UsageError(f"--tries: must be >= 1 (got {tries})")
        self.address, self.certs, self.tries, self.mix_hosts = address, certs, tries, mix_hosts
        self.client: Any = None
        self.members: dict[str, Member] = {}  # healthy, by address
        self.refused: set[str] = set()  # addresses given nothing
        self.submitted = provenance.record()

    def __enter__(self) -> DaskExecutor:
        self.client = connect(self.address, self.certs)
        try:
            self._refresh()
            if not self.members:
                raise HarnessError(f"cluster {self.address}: no worker can run experiments"
                                   + (" (see the warnings above)" if self.refused else " (none has joined)"))
        except BaseException:
            self.client.close()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.client.close()

    def _refresh(self) -> None:
        """Workers that joined are checked; those that left are dropped. HarnessError if the scheduler is
        unreachable."""
        try:
            info = self.client.sync(self.client.scheduler.identity)
        except Exception as exc:  # whatever the comm layer raises for a scheduler that went away
            raise HarnessError(f"the scheduler {self.address} went away ({type(exc).__name__})") from None
        present = set(info.get("workers", {}))
        for gone in set(self.members) - present:
            log.warning("cluster: worker %s left", self.members.pop(gone).label)
        self.refused &= present
        for address in sorted(present - set(self.members) - self.refused):
            try:
                report = health_report(self.client.run(health, workers=[address])[address])
            except HarnessError as exc:
                log.warning("cluster: worker %s refused: %s", address, exc)
                self.refused.add(address)
                continue
            except Exception as exc:  # a worker that left meanwhile, or cannot run the check
                log.warning("cluster: worker %s: health check failed (%s); not used", address, type(exc).__name__)
                self.refused.add(address)
                continue
            member = Member(address, report)
            why = "; ".join(report["problems"])
            if not why and (twin := next((m for m in self.members.values() if m.host == member.host), None)):
                why = f"the same host as worker {twin.address} (one worker per host)"
            first = next(iter(self.members.values()), None)
            if not why and first and member.kind != first.kind and not self.mix_hosts:
                why = (f"kernel {member.kind[0]}, {member.kind[1][:20]}, {member.kind[2]}, unlike "
                       f"{first.label}'s {first.kind[0]}, {first.kind[1][:20]}, {first.kind[2]} "
                       f"(--mix-hosts uses both, balanced)")
            if why:
                log.warning("cluster: worker %s refused: %s", member.label, why)
                self.refused.add(address)
            else:
                log.info("cluster: worker %s: kernel %s, %s CPUs", member.label, report.get("kernel"),
                         report.get("cpus"))
                self.members[address] = member

    def _pick(self, queue: list[Job], member: Member, ledger: Ledger) -> Job | None:
        """The queued run for this host: of the point it has run least (the queue's order breaks ties),
        among those it may take."""
        usable = [j for j in queue if member.host not in ledger.avoids(j)]
        return min(usable, key=lambda j: ledger.placed[(j.point.id, member.host)], default=None)

    def _submit(self, job: Job, member: Member) -> tuple[Any, Try]:
        nonce = os.urandom(16).hex()
        future = self.client.submit(remote_run, job.raw, {**self.submitted, "try": nonce}, run_timeout_s(job),
                                    nonce, key=f"bbrbench-{job.point.id}-rep{job.rep}-{nonce[:8]}",
                                    workers=[member.address], allow_other_workers=False, pure=False)
        log.debug("%s rep %d: to %s", job.point.label, job.rep + 1, member.label)
        return future, Try(job, member, time.monotonic() + reply_deadline_s(job), nonce)

    def execute(self, jobs: list[Job], catalog: AlgoCatalog) -> Iterator[tuple[Job, Outcome]]:
        queue = list(jobs)
        ledger = Ledger(placed=earlier_hosts(jobs))
        running: dict[Any, Try] = {}
        alone_since: float | None = None
        try:
            while queue or running:
                try:
                    self._refresh()
                except HarnessError as exc:
                    for job in [*queue, *(t.job for t in running.values())]:
                        yield job, Outcome("lost", str(exc))
                    queue.clear()
                    running.clear()
                    return
                now = time.monotonic()
                for future, out in list(running.items()):
                    why = (f"worker {out.member.label} left" if out.member.address not in self.members else
                           f"no reply from {out.member.label} by its deadline" if now > out.deadline else "")
                    if why:  # the run goes elsewhere; a worker past a deadline gets nothing more
                        del running[future]
                        future.cancel()
                        if now > out.deadline:
                            self.members.pop(out.member.address, None)
                            self.refused.add(out.member.address)
                        yield from self._retry(out, why, queue, ledger)
                busy = {t.member.address for t in running.values()}
                for member in list(self.members.values()):
                    chosen = None if member.address in busy else self._pick(queue, member, ledger)
                    if chosen is not None:
                        queue.remove(chosen)
                        ledger.placed[(chosen.point.id, member.host)] += 1
                        future, out = self._submit(chosen, member)
                        running[future] = out
                hosts = {m.host for m in self.members.values()}
                for job in [j for j in queue if hosts and hosts <= set(ledger.avoids(j))]:
                    queue.remove(job)
                    if failed := ledger.failed_on.get(id(job)):
                        yield job, Outcome("lost", "failed on every usable host: " + "; ".join(
                            f"{h}: {w}" for h, w in failed.items()))
                    else:
                        yield job, Outcome("not_runnable", "; ".join(f"{h}: {w}" for h, w in
                                                                     ledger.excluded[job.point.id].items()))
                if not running:
                    alone_since = alone_since or time.monotonic()
                    if queue and time.monotonic() - alone_since > NO_WORKER_S:
                        for job in queue:
                            yield job, Outcome("lost", f"no healthy worker for {NO_WORKER_S:.0f} s")
                        return
                    time.sleep(REFRESH_S if queue else 0)
                    continue
                alone_since = None
                waited = time.monotonic() + REFRESH_S
                while not (done := [f for f in running if f.done()]) and time.monotonic() < waited:
                    time.sleep(POLL_S)
                for future in done:
                    out = running.pop(future)
                    try:
                        result = future.result()
                    except Exception as exc:  # raised on the worker, cancelled, or lost with it
                        first = (str(exc).splitlines() or [""])[0][:200]
                        yield from self._retry(out, f"{type(exc).__name__} on {out.member.label}: {first!r}",
                                               queue, ledger)
                        continue
                    yield from self._take(out, result, queue, ledger)
        finally:
            # Ctrl-C or an error: nothing of this sweep stays queued on the cluster.
            self.client.cancel(list(running))

    def _retry(self, out: Try, why: str, queue: list[Job], ledger: Ledger) -> Iterator[tuple[Job, Outcome]]:
        job = out.job
        ledger.tries[id(job)] += 1
        if ledger.tries[id(job)] < self.tries:
            log.warning("%s rep %d: %s; trying again", job.point.label, job.rep + 1, why)
            queue.insert(0, job)
        else:
            yield job, Outcome("lost", f"{why} ({self.tries} tries)")

    def _take(self, out: Try, result: object, queue: list[Job], ledger: Ledger) -> Iterator[tuple[Job, Outcome]]:
        """A run's reply: taken in, or recorded as what it says; a malformed or damaged one, or a failure,
        gives the run to another host."""
        job, member = out.job, out.member
        try:
            status, message, tar = run_reply(result, out.nonce)
        except HarnessError as exc:
            yield from self._failed(out, f"from {member.label}: {exc}", queue, ledger)
            return
        log.debug("%s rep %d: %s on %s", job.point.label, job.rep + 1, status, member.label)
        if status == "not_runnable":
            # An answer about this host only: the run goes to another, and this host takes no more of it.
            ledger.excluded.setdefault(job.point.id, {})[member.host] = message
            ledger.placed[(job.point.id, member.host)] -= 1
            queue.insert(0, job)
            yield job, Outcome("not_runnable_on", message, host=one_line(member.report["hostname"], "hostname"))
        elif status == "done":
            assert tar is not None  # run_reply's
            try:
                unpack(tar, job.run_dir, job.raw, {**self.submitted, "try": out.nonce}, member.report)
            except HarnessError as exc:
                yield from self._failed(out, f"from {member.label}: {exc}", queue, ledger)
            else:
                delivery = {"worker": member.address, "host": member.host, "try": out.nonce,
                            "certificate": member.report.get("certificate")}
                (job.run_dir / DELIVERY_FILE).write_text(json.dumps(delivery, indent=2) + "\n")
                yield job, Outcome("done")
        else:  # failed or timeout: another host may run it
            yield from self._failed(out, f"{status} on {member.label}: {message}", queue, ledger)

    def _failed(self, out: Try, why: str, queue: list[Job], ledger: Ledger) -> Iterator[tuple[Job, Outcome]]:
        """The run failed on its host, or came back malformed: another host gets it, this one not again."""
        ledger.failed_on.setdefault(id(out.job), {})[out.member.host] = why
        yield from self._retry(out, why, queue, ledger)
