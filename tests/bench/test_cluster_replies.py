"""What the Dask client accepts from workers, with the scheduler and workers replaced by a scripted client
(no network, no root): malformed replies and health reports refused in one line and the run redone
elsewhere, a deadline per run, failed runs retried on another host, a nonce per try, the host record
checked against the delivering worker; and the bounds of a result's archive, the worker's lock directory
and the scheduler's refusal to run beside the authority's key."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bbrbench.cluster import archive, client, servers, worker
from bbrbench.cluster.archive import pack, unpack
from bbrbench.errors import HarnessError, RunsLost
from bbrbench.results import write_json
from bbrbench.scenario import AlgoCatalog
from bbrbench.sweep import DONE_MARK, Job, Plan, Point, run_sweep
from benchutil import run_cli

pytest.importorskip("distributed", reason="the cluster extra: pip install 'bbrbench[cluster]'")

RAW = {"name": "s", "duration_s": 1}


def report(host: str, **changes: Any) -> dict[str, Any]:
    return {"hostname": host, "machine_id": host, "kernel": "6.1", "cpus": 2, "objects_sha256": "o",
            "bbrctl_version": "bbrctl 1", "problems": [], **changes}


def run_archive(tmp: Path, submitted: dict[str, Any], host: str, files: tuple[str, ...] = ("summary", "host")) -> bytes:
    """A packed run directory as a worker's `bbrbench run` leaves it (or with only some of its files)."""
    run = tmp / f"made-{os.urandom(4).hex()}"
    run.mkdir()
    write_json(run / "scenario.json", "run", {"raw": RAW, "submitted_by": submitted})
    if "summary" in files:
        write_json(run / "summary.json", "summary", {"total": {"goodput_mbps": 10.0}})
    if "host" in files:
        write_json(run / "host.json", "host", {"hostname": host, "machine_id": host})
    return pack(run)


class Future:
    def __init__(self, answer: Callable[[], object] | None) -> None:
        self.answer = answer  # None: never done (a stopped worker)

    def done(self) -> bool:
        return self.answer is not None

    def result(self) -> object:
        assert self.answer is not None
        return self.answer()

    def cancel(self) -> None:
        pass


class Scheduler:
    def __init__(self, workers: dict[str, object]) -> None:
        self.workers = workers

    def identity(self) -> dict[str, Any]:
        return {"workers": dict.fromkeys(self.workers)}


class ScriptedClient:
    """Dask's client as the executor uses it: workers by address with their health reports, and per
    worker a function that answers a submitted run (given its args) or None for a worker that never does."""

    def __init__(self, reports: dict[str, object], answer: dict[str, Callable[..., object] | None]) -> None:
        self.scheduler = Scheduler(reports)
        self.reports, self.answer = reports, answer
        self.submitted: list[str] = []

    def sync(self, fn: Callable[[], object]) -> object:
        return fn()

    def run(self, _fn: object, workers: list[str]) -> dict[str, object]:
        return {workers[0]: self.reports[workers[0]]}

    def submit(self, _fn: object, raw: dict[str, Any], submitted: dict[str, Any], _timeout: float, nonce: str,
               *, workers: list[str], **_kw: object) -> Future:
        self.submitted.append(workers[0])
        answer = self.answer[workers[0]]
        return Future(None if answer is None else lambda: answer(submitted, nonce))

    def cancel(self, _futures: object) -> None:
        pass


def executor(fake: ScriptedClient, tries: int = 3) -> client.DaskExecutor:
    ex = client.DaskExecutor("tls://127.0.0.1:1", Path("certs"), tries)
    ex.client = fake
    ex.submitted = {"command": "bbrbench sweep s", "revision": "r"}
    ex._refresh()
    return ex


def jobs(out: Path, reps: int = 1) -> list[Job]:
    return [Job(rep, Point("p0", {}), RAW, out / "points" / "p0" / f"rep{rep}") for rep in range(reps)]


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's waits shortened: no worker to wait for, refresh at once."""
    monkeypatch.setattr(client, "REFRESH_S", 0.05)
    monkeypatch.setattr(client, "NO_WORKER_S", 0.5)


def done(tmp: Path, host: str) -> Callable[..., object]:
    return lambda submitted, nonce: {"status": "done", "message": "", "nonce": nonce,
                                     "tar": run_archive(tmp, submitted, host)}


def outcomes(ex: client.DaskExecutor, todo: list[Job]) -> list[tuple[int, str, str]]:
    return [(job.rep, o.status, o.message) for job, o in ex.execute(todo, AlgoCatalog.__new__(AlgoCatalog))]


@pytest.mark.parametrize("bad, why", [
    (lambda tmp, s, n: {"status": "done", "message": "", "nonce": n}, "done without an archive"),
    (lambda tmp, s, n: {"status": "done", "message": "", "nonce": n,
                        "tar": run_archive(tmp, s, "a", files=())}, "summary.json"),
    (lambda tmp, s, n: {"status": "done", "message": "", "nonce": n,
                        "tar": run_archive(tmp, s, "a", files=("summary",))}, "host.json"),
    (lambda tmp, s, n: {"status": "done", "message": "", "nonce": n, "tar": run_archive(tmp, s, "b")},
     "not the host that delivered it"),
    (lambda tmp, s, n: {"status": "done", "message": "", "nonce": "0" * 32, "tar": run_archive(tmp, s, "a")},
     "nonce differs"),
    (lambda tmp, s, n: {"status": "done", "message": "", "nonce": n,
                        "tar": run_archive(tmp, {**s, "try": "0" * 32}, "a")}, "not of the run asked for"),
    (lambda tmp, s, n: {"status": "not_runnable", "message": "no qdisc\nb: injected", "nonce": n},
     "control characters"),
    (lambda tmp, s, n: ["done"], "not a mapping"),
])
def test_a_bad_reply_is_refused_and_its_run_redone_elsewhere(tmp_path: Path, quick: None, bad: Callable[..., object],
                                                            why: str) -> None:
    """Host a answers badly; the run is redone on host b and taken from there. With one try only, it is
    lost with a one-line reason naming what was wrong (and the sweep's resume redoes it)."""
    todo = jobs(tmp_path / "out")
    single = executor(ScriptedClient({"tls://a": report("a")}, {"tls://a": lambda s, n: bad(tmp_path, s, n)}), tries=1)
    [(rep, status, message)] = outcomes(single, todo)
    assert status == "lost" and why in message and "\n" not in message, message
    assert not (todo[0].run_dir / DONE_MARK).exists() and not todo[0].run_dir.exists()
    both = executor(ScriptedClient({"tls://a": report("a"), "tls://b": report("b")},
                                   {"tls://a": lambda s, n: bad(tmp_path, s, n), "tls://b": done(tmp_path, "b")}))
    results = outcomes(both, jobs(tmp_path / "out2", reps=2))
    assert sorted(s for _, s, _ in results) == ["done", "done"], results
    delivered = [json.loads((tmp_path / "out2" / "points" / "p0" / f"rep{r}" / client.DELIVERY_FILE).read_text())
                 for r in range(2)]
    assert {d["worker"] for d in delivered} == {"tls://b"} and len({d["try"] for d in delivered}) == 2


@pytest.mark.parametrize("health, why", [
    ("not a report", "not a mapping"),
    (report("a", hostname="a\nb"), "control characters"),
    (report("a", problems="none"), "problems: not a list"),
    (report("a", cpus="2"), "cpus: not a number"),
])
def test_a_malformed_health_report_refuses_the_worker(health: object, why: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    ex = executor(ScriptedClient({"tls://a": health, "tls://b": report("b")}, {}))
    assert list(ex.members) == ["tls://b"] and ex.refused == {"tls://a"}
    assert any(why in r.getMessage() and "tls://a" in r.getMessage() for r in caplog.records)


def test_a_worker_that_never_answers_loses_its_run_to_another_host(tmp_path: Path, quick: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker stopped mid-run (SIGSTOP) never answers: at the run's deadline the client gives it to
    another host and the stopped worker gets nothing more."""
    monkeypatch.setattr(client, "reply_deadline_s", lambda _job: 0.3)
    fake = ScriptedClient({"tls://a": report("a"), "tls://b": report("b")}, {"tls://a": None, "tls://b": None})
    ex = executor(fake)
    ex.members.pop("tls://b")  # a takes the run first
    fake.answer["tls://b"] = done(tmp_path, "b")
    fake.scheduler.workers = {"tls://a": None}
    start = time.monotonic()
    todo = jobs(tmp_path / "out")

    def b_joins() -> Iterator[tuple[Job, Any]]:
        fake.scheduler.workers["tls://b"] = None
        yield from ex.execute(todo, AlgoCatalog.__new__(AlgoCatalog))

    results = [(j.rep, o.status) for j, o in b_joins()]
    assert results == [(0, "done")] and time.monotonic() - start < 10
    assert fake.submitted == ["tls://a", "tls://b"] and "tls://a" in ex.refused


def test_failed_runs_go_to_another_host_and_missing_ones_fail_the_sweep(tmp_path: Path, quick: None) -> None:
    failing = {"status": "failed", "message": "iperf3 exited 1"}
    fake = ScriptedClient({"tls://a": report("a"), "tls://b": report("b")},
                          {"tls://a": lambda s, n: {**failing, "nonce": n}, "tls://b": done(tmp_path, "b")})
    results = outcomes(executor(fake), jobs(tmp_path / "out", reps=2))
    assert sorted(s for _, s, _ in results) == ["done", "done"]
    # Every host fails it: lost, and the sweep exits non-zero with what it kept.
    plan = Plan(name="s", raw=RAW, points=[Point("p0", {})], repetitions=2, metrics=["total.goodput_mbps"],
                duration_s=1)
    only_a = executor(ScriptedClient({"tls://a": report("a")}, {"tls://a": lambda s, n: {**failing, "nonce": n}}))
    every = "2/2 runs lost \\(failed on every usable host: a: failed on a \\(tls://a\\): iperf3 exited 1"
    with pytest.raises(RunsLost, match=every):
        run_sweep(plan, tmp_path / "sweep", AlgoCatalog.__new__(AlgoCatalog), only_a)


def test_a_resume_goes_on_from_where_earlier_repetitions_ran(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for rep in range(2):
        run_dir = out / "points" / "p0" / f"rep{rep}"
        run_dir.mkdir(parents=True)
        write_json(run_dir / "host.json", "host", {"hostname": "a", "machine_id": "a"})
        (run_dir / DONE_MARK).write_text("")
    todo = [Job(2, Point("p0", {}), RAW, out / "points" / "p0" / "rep2")]
    ledger = client.Ledger(placed=client.earlier_hosts(todo))
    assert ledger.placed == {("p0", "a"): 2}
    ex = client.DaskExecutor.__new__(client.DaskExecutor)
    members = [client.Member("tls://a", report("a")), client.Member("tls://b", report("b"))]
    assert ex._pick(todo, members[1], ledger) is todo[0]  # b takes it, having run the point least


def sparse_tar(tmp_path: Path, form: str) -> bytes:
    """A sparse member (GNU's or pax's): a few hundred bytes of archive standing for a 64 MiB file."""
    (tmp_path / "src").mkdir()
    with (tmp_path / "src" / "summary.json").open("wb") as fh:
        fh.truncate(64 << 20)
    subprocess.run(["tar", "--sparse", f"--format={form}", "-czf", str(tmp_path / "s.tgz"), "-C", str(tmp_path / "src"),
                    "."], check=True)
    return (tmp_path / "s.tgz").read_bytes()


@pytest.mark.parametrize("form", ["gnu", "pax"])
def test_a_sparse_member_is_refused(tmp_path: Path, form: str) -> None:
    data = sparse_tar(tmp_path, form)
    assert len(data) < 1024
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert any(m.type == tarfile.GNUTYPE_SPARSE or m.sparse is not None for m in tar)
    with pytest.raises(HarnessError, match="only plain files"):
        unpack(data, tmp_path / "run", RAW, {})
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.part").exists()


def test_the_bytes_written_are_capped_whatever_the_headers_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two members of 600 bytes under a cap of 1000 written bytes (the stream itself is under the cap
    the decompression enforces): the second is refused."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in ("a", "b"):
            info = tarfile.TarInfo(name)
            info.size = 600
            tar.addfile(info, io.BytesIO(b"x" * 600))
    monkeypatch.setattr(archive, "RESULT_MAX_BYTES", 1000)
    monkeypatch.setattr(archive, "_gunzip", lambda data: data)  # the stream's own cap is tested elsewhere
    with pytest.raises(HarnessError, match="larger than"):
        archive.extract_new(buffer.getvalue(), tmp_path / "x")
    assert (tmp_path / "x" / "a").stat().st_size == 600 and not (tmp_path / "x" / "b").exists()


def test_the_lock_directory_is_root_only_and_the_lock_no_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "_LOCK_PROBLEM", "")
    monkeypatch.setattr(worker, "_lock_fds", [])
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)  # as /run/lock is
    monkeypatch.setattr(worker, "LOCK_DIR", shared)
    worker._lock_host()
    assert "only it can write to" in worker._LOCK_PROBLEM and not list(shared.iterdir())
    # A link planted where the lock file goes is not followed: the file it names stays as it was.
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    monkeypatch.setattr(worker, "LOCK_DIR", own)
    monkeypatch.setattr(worker, "_LOCK_PROBLEM", "")
    worker._lock_path().symlink_to(victim)
    worker._lock_host()
    assert "cannot open the host lock" in worker._LOCK_PROBLEM and victim.read_text() == "keep\n"
    assert not worker._lock_fds


def test_the_scheduler_never_runs_beside_the_authoritys_key(tmp_path: Path) -> None:
    from bbrbench.cluster.certs import init_ca, issue
    init_ca(tmp_path / "ca")
    issue(tmp_path / "ca", "scheduler", tmp_path / "sched", ["127.0.0.1"])
    assert servers.ca_key_problem(tmp_path / "sched", tmp_path / "elsewhere") == ""
    assert "authority's key" in servers.ca_key_problem(tmp_path / "sched", tmp_path / "ca")
    assert "authority's key" in servers.ca_key_problem(tmp_path / "ca", tmp_path / "elsewhere")
    result = run_cli("cluster", "scheduler", "--certs", str(tmp_path / "ca"), "--port", "1", timeout=60)
    assert result.returncode == 1 and "authority's key" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
