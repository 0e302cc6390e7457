"""Sweeps on a Dask cluster without a cluster: which hosts' runs pool (their BPF objects, kernels, kinds
and batch effects), which results a client takes, hung and lost runs, and one worker per host."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bbrbench.cluster import archive, client, worker
from bbrbench.cluster.archive import pack, unpack
from bbrbench.errors import HarnessError, RunsLost
from bbrbench.results import write_json
from bbrbench.scenario import AlgoCatalog
from bbrbench.sweep import DONE_MARK, Job, Outcome, Plan, Point, run_sweep
from bbrbench.sweep.store import NOT_RUNNABLE, NOT_RUNNABLE_ON
from bbrbench.testbed.host import FAKE_HOST_ENV, host_key
from benchutil import run_cli

pytest.importorskip("distributed", reason="the cluster extra: pip install 'bbrbench[cluster]'")


def fake_sweep(out: Path, hosts: list[tuple[str, str]], points: int = 1,
               values: list[float] | None = None, commands: list[str] | None = None) -> None:
    """A finished sweep of `points` points whose repetitions ran on these (hostname, kernel) hosts, point
    after point (len(hosts) // points repetitions each); `values` the goodputs and `commands` the
    submitting commands, per repetition."""
    reps = len(hosts) // points
    plan = Plan(name="t", raw={"name": "t"}, points=[Point(id=f"p{k}", overrides={"k": k}) for k in range(points)],
                repetitions=reps, metrics=["total.goodput_mbps"], duration_s=1)
    out.mkdir()
    write_json(out / "plan.json", "plan", plan.to_json())
    for k in range(points):
        for rep in range(reps):
            hostname, kernel = hosts[k * reps + rep]
            run_dir = out / "points" / f"p{k}" / f"rep{rep}"
            run_dir.mkdir(parents=True)
            goodput = values[rep] if values else 9.0 + rep
            write_json(run_dir / "summary.json", "summary", {"total": {"goodput_mbps": goodput}})
            write_json(run_dir / "host.json", "host", {"hostname": hostname, "kernel": kernel, "cpus": 2,
                                                       "machine_id": f"id-{hostname}", "bbrctl_version": "bbrctl x",
                                                       "algorithms_sha256": "ab" * 32})
            if commands:
                # As a worker writes it: its own command is per run, the submitting one is the sweep's.
                write_json(run_dir / "scenario.json", "run", {
                    "bbrbench": {"revision": "r1", "command": f"bbrbench run --out /tmp/x{k}{rep}"},
                    "submitted_by": {"revision": "r1", "command": commands[rep]}})
            (run_dir / DONE_MARK).write_text("")


def test_runs_pool_by_their_bpf_objects_not_by_the_bbrctl_binary() -> None:
    """A rebuild at a later commit changes the binary (its version string) but not the programs."""
    new = {"kernel": "6.18.1", "objects_sha256": "ab" * 32, "algorithms_sha256": "01" * 32, "cpus": 2}
    assert host_key(new) == host_key({**new, "algorithms_sha256": "02" * 32, "bbrctl_version": "bbrctl y"})
    assert host_key(new) != host_key({**new, "objects_sha256": "cd" * 32})
    assert host_key(new) != host_key({**new, "kernel": "6.12.0"})
    # The CPU count is part of the kind of host (the emulator and the senders share the CPUs).
    assert host_key(new) != host_key({**new, "cpus": 4})
    # Records from before bbrctl reported its objects: only the same binary pools with them.
    legacy = {"kernel": "6.18.1", "algorithms_sha256": "01" * 32}
    assert host_key(legacy) == host_key(dict(legacy)) and host_key(legacy) != host_key(new)


def test_report_refuses_to_pool_hosts_of_other_kernels(tmp_path: Path) -> None:
    fake_sweep(tmp_path / "mixed", [("a", "6.18.1"), ("b", "6.12.0")])
    refused = run_cli("report", str(tmp_path / "mixed"))
    assert refused.returncode == 1 and "--mix-hosts" in refused.stderr and "6.12.0" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "mixed" / "sweep.json").exists()
    told = run_cli("report", "--mix-hosts", str(tmp_path / "mixed"))
    assert told.returncode == 0, told.stderr
    assert "a, b" in told.stdout and "kernel 6.12.0" in told.stdout
    assert json.loads((tmp_path / "mixed" / "sweep.json").read_text())["points"][0]["metrics"][
        "total.goodput_mbps"]["n"] == 2
    # Two hosts of one kind pool without being told, and the report still names both.
    fake_sweep(tmp_path / "alike", [("a", "6.18.1"), ("b", "6.18.1")])
    alike = run_cli("report", str(tmp_path / "alike"))
    assert alike.returncode == 0 and "a, b" in alike.stdout


def test_points_on_different_kinds_of_host_are_refused(tmp_path: Path) -> None:
    """The confounded sweep the review found: every repetition of one point on one kernel, of the other on
    another. Each point alone is one kind of host, but comparing them compares the kernels."""
    fake_sweep(tmp_path / "s", [("a", "6.18.1"), ("a", "6.18.1"), ("b", "6.12.0"), ("b", "6.12.0")], points=2)
    refused = run_cli("report", str(tmp_path / "s"))
    assert refused.returncode == 1 and "different kinds of host" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "s" / "sweep.json").exists()
    told = run_cli("report", "--mix-hosts", str(tmp_path / "s"))
    assert told.returncode == 0 and "different sets of hosts" in told.stderr, told.stderr
    assert all(p["host_sets_differ"] for p in json.loads((tmp_path / "s" / "sweep.json").read_text())["points"])
    # One kind of host, different hosts per point: pooled, with the warning.
    fake_sweep(tmp_path / "same", [("a", "6.18.1"), ("a", "6.18.1"), ("b", "6.18.1"), ("b", "6.18.1")], points=2)
    same = run_cli("report", str(tmp_path / "same"))
    assert same.returncode == 0 and "different sets of hosts" in same.stderr, same.stderr


def test_hosts_cloned_under_one_hostname_stay_apart(tmp_path: Path) -> None:
    fake_sweep(tmp_path / "s", [("a", "6.18.1"), ("a", "6.18.1")])
    run_dir = tmp_path / "s" / "points" / "p0" / "rep1"
    host = json.loads((run_dir / "host.json").read_text())
    (run_dir / "host.json").write_text(json.dumps({**host, "machine_id": "id-other"}))
    done = run_cli("report", str(tmp_path / "s"))
    assert done.returncode == 0, done.stderr
    assert len(json.loads((tmp_path / "s" / "sweep.json").read_text())["hosts"]) == 2
    rows = (tmp_path / "s" / "runs.csv").read_text().splitlines()
    assert "host_machine_id" in rows[0] and "id-other" in rows[2]


def test_batch_effects_between_hosts_and_submitting_commands(tmp_path: Path) -> None:
    """One-way ANOVA (stats.f_oneway) over the hosts, and over the submitting commands: a worker's own
    command differs per run, so keyed by it every run was its own invocation and the check never fired."""
    values = [10.0, 10.1, 20.0, 20.1]
    fake_sweep(tmp_path / "h", [("a", "6.18.1"), ("a", "6.18.1"), ("b", "6.18.1"), ("b", "6.18.1")],
               values=values)
    assert run_cli("report", str(tmp_path / "h")).returncode == 0
    point = json.loads((tmp_path / "h" / "sweep.json").read_text())["points"][0]
    assert point["batch_effects"]["total.goodput_mbps by host"] < 0.01
    fake_sweep(tmp_path / "c", [("a", "6.18.1")] * 4, values=values,
               commands=["bbrbench sweep x --reps 2", "bbrbench sweep x --reps 2", "bbrbench sweep x --reps 4",
                         "bbrbench sweep x --reps 4"])
    assert run_cli("report", str(tmp_path / "c")).returncode == 0
    point = json.loads((tmp_path / "c" / "sweep.json").read_text())["points"][0]
    assert point["batch_effects"]["total.goodput_mbps"] < 0.01


def _tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def test_results_are_taken_only_as_the_run_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the Python the venv runs (Debian 12's 3.11.2 has no tarfile filter=): plain files and
    directories only, inside the run directory, and only the run the client asked for."""
    raw, submitted = {"name": "s"}, {"command": "bbrbench sweep s"}
    (tmp_path / "run").mkdir()
    write_json(tmp_path / "run" / "scenario.json", "run", {"raw": raw, "submitted_by": submitted})
    write_json(tmp_path / "run" / "summary.json", "summary", {})
    write_json(tmp_path / "run" / "host.json", "host", {"hostname": "h", "machine_id": "h"})
    (tmp_path / "run" / "raw").mkdir()
    (tmp_path / "run" / "raw" / "ss.csv").write_text("1\n")
    data = pack(tmp_path / "run")
    unpack(data, tmp_path / "copy", raw, submitted)
    assert (tmp_path / "copy" / "raw" / "ss.csv").read_text() == "1\n"
    with pytest.raises(HarnessError, match="damaged"):
        unpack(data[:-40] + b"x" * 40, tmp_path / "c2", raw, submitted)
    # Only gzip's trailer (CRC-32, length) is damaged: the files read fine, the stream is still refused;
    # so is a stream cut short or followed by junk.
    for damaged in (data[:-8] + bytes(b ^ 0xFF for b in data[-8:-4]) + data[-4:], data[:-4], data + b"junk"):
        with pytest.raises(HarnessError, match="damaged"):
            unpack(damaged, tmp_path / "c2", raw, submitted)
    # The tar alone is 10 KiB of blocks: over a 1 KiB cap, as a bomb would be over the real one.
    with monkeypatch.context() as m:
        m.setattr(archive, "RESULT_MAX_BYTES", 1024)
        with pytest.raises(HarnessError, match="larger than"):
            unpack(data, tmp_path / "c2", raw, submitted)
    with pytest.raises(HarnessError, match="not of the run asked for"):
        unpack(data, tmp_path / "c3", {"name": "other"}, submitted)
    with pytest.raises(HarnessError, match="not of the run asked for"):
        unpack(data, tmp_path / "c4", raw, {"command": "bbrbench sweep other"})
    link = tarfile.TarInfo("./summary.json")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
    escape = tarfile.TarInfo("../../outside.txt")
    for rogue in ([(link, b"")], [(escape, b"x")], [(tarfile.TarInfo("/abs.txt"), b"x")]):
        with pytest.raises(HarnessError, match="only plain files"):
            unpack(_tar(rogue), tmp_path / "c5", raw, submitted)
    assert not (tmp_path / "outside.txt").exists() and not Path("/abs.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "run"]


def test_a_hung_run_is_stopped_at_its_timeout() -> None:
    start = time.monotonic()
    code, _ = worker._run_child(["sleep", "60"], dict(os.environ), 1.0)
    assert code is None and time.monotonic() - start < worker.RUN_STOP_TIMEOUT_S
    assert worker._run_child(["sh", "-c", "echo no >&2; exit 3"], dict(os.environ), 10.0) == (3, "no\n")
    job = Job(0, Point("p", {}), {"duration_s": 30}, Path("x"))
    assert client.run_timeout_s(job) == 2 * 30 + client.RUN_SETUP_S


def test_one_worker_per_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host's lock is one file per host: a second worker is refused while the first holds it; it is
    removed by its holder as it closes, or once free by whoever can take it (a killed worker's nanny), so
    that stopped workers leave no lock file behind, and never while a live worker holds it."""
    monkeypatch.setattr(worker, "LOCK_DIR", tmp_path)
    monkeypatch.setattr(worker, "_LOCK_PROBLEM", "")
    monkeypatch.setattr(worker, "_lock_fds", [])
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; import bbrbench.cluster.worker as c; "
                               f"c.LOCK_DIR = c.Path({str(tmp_path)!r}); c._lock_host(); "
                               "print(c._LOCK_PROBLEM or 'held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        worker._lock_host()
        assert f"pid {holder.pid}" in worker._LOCK_PROBLEM
        assert any(f"pid {holder.pid}" in p for p in worker.health()["problems"])
        worker._unlock_host()
        assert len(list(tmp_path.iterdir())) == 1  # a live worker's lock stays
    finally:
        holder.kill()  # a worker killed outright: its lock file stays, free
        holder.wait()
    worker._unlock_host()
    assert not list(tmp_path.iterdir())
    # Another (simulated) host on this machine has its own lock, which its worker removes as it closes.
    monkeypatch.setattr(worker, "_LOCK_PROBLEM", "")
    monkeypatch.setenv(FAKE_HOST_ENV, json.dumps({"hostname": "b", "machine_id": "b"}))
    worker._lock_host()
    assert worker._LOCK_PROBLEM == "" and [p.name for p in tmp_path.iterdir()] == ["bbrbench-worker-b.lock"]
    worker._unlock_host()
    assert not list(tmp_path.iterdir())


class Scripted:
    """An executor that answers each job with the outcomes given for its (point, rep), in turn."""

    def __init__(self, answers: dict[tuple[str, int], list[Outcome]]) -> None:
        self.answers = answers

    def execute(self, jobs: list[Job], catalog: AlgoCatalog) -> Iterator[tuple[Job, Outcome]]:
        for job in jobs:
            for outcome in self.answers.get((job.point.id, job.rep), [Outcome("lost", "scheduler went away")]):
                if outcome.status == "done":
                    job.run_dir.mkdir(parents=True, exist_ok=True)
                    write_json(job.run_dir / "summary.json", "summary", {"total": {"goodput_mbps": 10.0}})
                yield job, outcome


def test_lost_runs_fail_the_sweep_and_not_runnable_is_per_host(tmp_path: Path) -> None:
    plan = Plan(name="t", raw={"name": "t"}, points=[Point("p0", {}), Point("p1", {"k": 1})], repetitions=1,
                metrics=["total.goodput_mbps"], duration_s=1)
    answers = {("p0", 0): [Outcome("not_runnable_on", "no qdisc", host="a"), Outcome("done")],
               ("p1", 0): [Outcome("done")]}
    run_sweep(plan, tmp_path / "ok", AlgoCatalog.__new__(AlgoCatalog), Scripted(answers))
    p0 = tmp_path / "ok" / "points" / "p0"
    assert (p0 / "rep0" / DONE_MARK).is_file() and not (p0 / NOT_RUNNABLE).exists()
    assert (p0 / NOT_RUNNABLE_ON).read_text() == "a: no qdisc\n"
    with pytest.raises(RunsLost, match="1/2 runs lost \\(scheduler went away\\)"):
        run_sweep(plan, tmp_path / "lost", AlgoCatalog.__new__(AlgoCatalog), Scripted({("p1", 0): [Outcome("done")]}))
    assert (tmp_path / "lost" / "sweep.json").is_file()  # aggregated what finished, then failed
