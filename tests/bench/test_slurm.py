"""Sweeps through Slurm (`--slurm`), against a real single-node Slurm: Debian's slurm-wlm, with munged,
slurmctld and slurmd on loopback, each with its own key, configuration, state and ports in a temporary
directory, started and stopped by the fixture (nothing of the host's Slurm or munge is used)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bbrbench import slurm as slurm_mod
from bbrbench.errors import RunsLost
from bbrbench.provenance import SUBMITTED_ENV
from bbrbench.results import write_json
from bbrbench.scenario import AlgoCatalog
from bbrbench.slurm import SlurmExecutor
from bbrbench.sweep import DONE_MARK, FAILED, NOT_RUNNABLE, Plan, Point, run_sweep
from bbrbench.sweep.store import NOT_RUNNABLE_ON
from benchutil import START_TIMEOUT_S, SWEEP, bbrbench_cmd, free_port, needs_net


def real_slurm(test: Callable[..., None]) -> Callable[..., None]:
    """A test on the real Slurm of the `slurm` fixture: root, and Debian's slurm-wlm and munge installed."""
    for mark in (pytest.mark.root, pytest.mark.net, needs_net,
                 pytest.mark.skipif(not all(shutil.which(d) for d in ("munged", "slurmctld", "slurmd", "sbatch")),
                                    reason="needs slurm-wlm and munge (apt-get install slurm-wlm munge)")):
        test = mark(test)
    return test


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Slurm:
    """munged, slurmctld and slurmd of one node (this host, under its short hostname) in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.chmod(0o700)  # munged refuses a key or socket in a directory others may write
        for sub in ("state", "spool", "log"):
            (directory / sub).mkdir()
        key = directory / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.socket = directory / "munge.sock"
        self.node = socket.gethostname().split(".")[0]
        self.ctld_port, self.slurmd_port = free_port(), free_port()
        self.conf = directory / "slurm.conf"
        # The epilog docs/cluster.md asks of a lab: `bbrbench cleanup` as root after every job; each run of
        # it leaves its exit status in epilog.ran.
        self.epilog_ran = directory / "epilog.ran"
        epilog = directory / "epilog"
        epilog.write_text(f"#!/bin/sh\n{shlex.quote(sys.executable)} -m bbrbench cleanup"
                          f" >>{shlex.quote(str(directory / 'log' / 'epilog.log'))} 2>&1\n"
                          f"echo $? >>{shlex.quote(str(self.epilog_ran))}\n")
        epilog.chmod(0o700)
        self.conf.write_text("\n".join([
            "ClusterName=bbrbenchtest", f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}", f"SlurmdPort={self.slurmd_port}", "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.socket}",
            f"StateSaveLocation={directory / 'state'}", f"SlurmdSpoolDir={directory / 'spool'}",
            f"SlurmctldPidFile={directory / 'slurmctld.pid'}", f"SlurmdPidFile={directory / 'slurmd.pid'}",
            f"SlurmctldLogFile={directory / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={directory / 'log' / 'slurmd.log'}", f"Epilog={epilog}",
            # No cgroups or accounting: a container's or VM's plain process groups will do.
            "ProctrackType=proctrack/pgid", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none", "MpiDefault=none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "ReturnToService=2", "MailProg=/bin/true",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN",
            f"PartitionName=test Nodes={self.node} Default=YES MaxTime=INFINITE State=UP", ""]))
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.procs: list[subprocess.Popen[bytes]] = []

    def _start(self, *argv: str) -> subprocess.Popen[bytes]:
        log = (self.dir / "log" / f"{Path(argv[0]).name}.out").open("ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=log, env=self.env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def _wait(self, what: str, ready: object) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():  # type: ignore[operator]
            assert all(p.poll() is None for p in self.procs), f"a daemon exited; see {self.dir / 'log'}"
            assert time.monotonic() < deadline, f"{what} never came up; see {self.dir / 'log'}"
            time.sleep(0.2)

    def start(self) -> None:
        # munged refuses to run as root without --force (a dedicated user is its norm; this one is a test's).
        self._start("munged", "--foreground", "--force", f"--key-file={self.dir / 'munge.key'}",
                    f"--socket={self.socket}", f"--pid-file={self.dir / 'munged.pid'}",
                    f"--seed-file={self.dir / 'munged.seed'}", f"--log-file={self.dir / 'log' / 'munged.log'}")
        self._wait("munged", self.socket.exists)
        self._start("slurmctld", "-D", "-i", "-f", str(self.conf))
        self._wait("slurmctld", lambda: listening(self.ctld_port))
        self._start("slurmd", "-D", "-f", str(self.conf))
        self._wait("the node", lambda: self.sinfo().strip() == "idle")

    def epilog_statuses(self) -> list[str]:
        return self.epilog_ran.read_text().split() if self.epilog_ran.exists() else []

    def sinfo(self) -> str:
        return subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env).stdout

    def jobs(self) -> list[str]:
        return subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True,
                              env=self.env).stdout.split()

    def stop(self) -> None:
        """Every job cancelled, then slurmd, slurmctld and munged stopped, in that order, and waited for."""
        if self.procs and self.jobs():
            subprocess.run(["scancel", "--full", *self.jobs()], env=self.env, capture_output=True)
            deadline = time.monotonic() + START_TIMEOUT_S
            while self.jobs() and time.monotonic() < deadline:
                time.sleep(0.2)
        while self.procs:
            proc = self.procs.pop()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:  # the daemon's session: slurmstepd of a job, slurmscriptd
                try:
                    os.killpg(proc.pid, 0)
                except ProcessLookupError:
                    break
                if time.monotonic() > deadline:
                    os.killpg(proc.pid, signal.SIGKILL)
                time.sleep(0.1)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    cluster = Slurm(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
    # Torn down: its ports free and no process left with its configuration.
    assert not listening(cluster.ctld_port) and not listening(cluster.slurmd_port)
    assert not cluster.socket.exists()


def sweep_cli(slurm: Slurm, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(bbrbench_cmd(*args), capture_output=True, text=True, env={**slurm.env, **(env or {})},
                          timeout=300)


@real_slurm
def test_a_sweep_through_slurm_is_a_sweep(slurm: Slurm, tmp_path: Path) -> None:
    """Every repetition one job-array task on the node, taken into the sweep with its host and the
    submitting command's record; rerunning the command has nothing left to do."""
    out = tmp_path / "sweep"
    result = sweep_cli(slurm, *SWEEP, "--out", str(out), "--slurm")
    assert result.returncode == 0, result.stderr
    runs = sorted(out.glob("points/*/rep*"))
    assert len(runs) == 4 and all((r / DONE_MARK).is_file() for r in runs), runs
    for run in runs:
        assert json.loads((run / "host.json").read_text())["hostname"] == socket.gethostname()
        submitted = json.loads((run / "scenario.json").read_text())["submitted_by"]
        assert "--slurm" in submitted["command"] and submitted["tree"] is not None
    assert [p["repetitions"] for p in json.loads((out / "sweep.json").read_text())["points"]] == [2, 2]
    assert not list((out / "slurm").iterdir()) and not slurm.jobs()
    deadline = time.monotonic() + START_TIMEOUT_S  # the epilog follows each task's end, maybe after the sweep's
    while len(slurm.epilog_statuses()) < len(runs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert slurm.epilog_statuses() == ["0"] * len(runs)
    again = sweep_cli(slurm, *(a for a in SWEEP if a != "--quiet"), "--out", str(out), "--slurm")
    assert again.returncode == 0 and "4 run(s), 0 to do" in again.stderr, again.stderr


@real_slurm
def test_a_cancelled_task_fails_the_sweep_and_it_resumes(slurm: Slurm, tmp_path: Path) -> None:
    """A task that ends without a status (here cancelled mid-run, as a node failing or running out of time
    would end it) is lost: exit 1, the resume command printed; running it finishes the sweep."""
    out = tmp_path / "sweep"
    args = [*SWEEP, "--out", str(out), "--slurm", "--tries", "1"]
    sweep = subprocess.Popen(bbrbench_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=slurm.env)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not list(out.glob("slurm/*/task*/run")):  # a run under way
        assert time.monotonic() < deadline and sweep.poll() is None, "no task started"
        time.sleep(0.1)
    subprocess.run(["scancel", *slurm.jobs()], env=slurm.env, check=True)
    _, stderr = sweep.communicate(timeout=120)
    assert sweep.returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert "runs lost" in last and "without a status" in last and "resume with bbrbench sweep smoke" in last, stderr
    assert list(out.glob(f"points/*/rep*/{FAILED}")) and not slurm.jobs()
    resumed = sweep_cli(slurm, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert len(list(out.glob(f"points/*/rep*/{DONE_MARK}"))) == 4


class FakeSlurm:
    """sbatch, squeue and sinfo as the executor calls them (slurm._slurm), for the outcomes a real node
    does not give on demand: each task of a submitted array is answered at once with the next of the
    answers given for its point (by its scenario's `k`): (exit status, node), "lost" (no status, as a
    cancelled task leaves), or "other" (status 0 but a run of another scenario)."""

    def __init__(self, nodes: list[str], answers: dict[int, list[Any]]) -> None:
        self.nodes, self.answers = nodes, answers
        self.excluded: dict[int, list[str]] = {}  # point k -> --exclude of each of its submissions

    def __call__(self, argv: list[str], env: dict[str, str] | None = None) -> str:
        if argv[0] == "sinfo":
            return "\n".join(self.nodes) + "\n"
        if argv[0] == "squeue":
            return ""  # every task has left the queue
        assert argv[0] == "sbatch" and env is not None
        directory = Path(next(a for a in argv if a.startswith("--chdir=")).partition("=")[2])
        exclude = next((a.partition("=")[2] for a in argv if a.startswith("--exclude=")), "")
        for task in directory.glob("task*"):
            raw = json.loads((task / "scenario.json").read_text())
            self.excluded.setdefault(raw["k"], []).append(exclude)
            answer = self.answers[raw["k"]].pop(0)
            if answer == "lost":
                continue
            code, node = (0, "n1") if answer == "other" else answer
            (task / "run").mkdir()
            write_json(task / "run" / "scenario.json", "run", {
                "raw": {**raw, "k": -1} if answer == "other" else raw,
                "submitted_by": json.loads(env[SUBMITTED_ENV])})
            write_json(task / "run" / "summary.json", "summary", {"total": {"goodput_mbps": 10.0}})
            write_json(task / "run" / "host.json", "host", {"hostname": node, "machine_id": node})
            (task / "stderr").write_text("bbrbench: no such qdisc here\n" if code == 3 else "")
            (task / "status").write_text(f"{code} {node}\n")
        return "77\n"


def test_slurm_outcomes_per_node_and_lost_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not runnable on one node: recorded for that node, and the run goes again to the others (--exclude);
    on every node, the point is not runnable. A task that left no status is tried again (--tries); a run
    that is not the one asked for is refused, and once its tries are spent the sweep fails. A node name
    with a control character in it (the status file is the task's) is refused, never written as a line. A
    run that failed on one node goes to another."""
    fake = FakeSlurm(["n1", "n2"], {0: [(3, "n1"), (0, "n2")], 1: ["lost", (0, "n1")], 2: ["other", "other"],
                                    3: [(3, "n1"), (3, "n2")], 4: [(3, "n1\nn2: injected"), (0, "n2")],
                                    5: [(1, "n1"), (0, "n2")], 6: [(1, "n1"), (1, "n2")]})
    monkeypatch.setattr(slurm_mod, "_slurm", fake)
    monkeypatch.setattr(slurm_mod, "POLL_S", 0.0)
    monkeypatch.setattr(slurm_mod, "STATUS_GRACE_S", 0.0)
    plan = Plan(name="t", raw={"name": "t"}, points=[Point(f"p{k}", {"k": k}) for k in range(7)], repetitions=1,
                metrics=["total.goodput_mbps"], duration_s=1)
    out = tmp_path / "sweep"
    with pytest.raises(RunsLost, match="2/7 runs lost"):
        with SlurmExecutor(2, []) as executor:
            run_sweep(plan, out, AlgoCatalog.__new__(AlgoCatalog), executor)
    points = out / "points"
    assert (points / "p0" / "rep0" / DONE_MARK).is_file() and fake.excluded[0] == ["", "n1"]
    assert (points / "p0" / NOT_RUNNABLE_ON).read_text() == "n1: no such qdisc here\n"
    assert (points / "p1" / "rep0" / DONE_MARK).is_file() and fake.excluded[1] == ["", ""]
    assert (points / "p2" / "rep0" / FAILED).read_text().startswith("lost: ")
    assert not (points / "p2" / "rep0" / "summary.json").exists()
    assert (points / "p3" / NOT_RUNNABLE).read_text() == "n1: no such qdisc here; n2: no such qdisc here\n"
    assert (points / "p4" / "rep0" / DONE_MARK).is_file() and not (points / "p4" / NOT_RUNNABLE_ON).exists()
    assert (points / "p5" / "rep0" / DONE_MARK).is_file() and fake.excluded[5] == ["", "n1"]  # failed on n1
    assert (points / "p2" / "rep0" / FAILED).read_text().startswith("lost: ") and "not of the run asked for" in (
        points / "p2" / "rep0" / FAILED).read_text()
    assert (points / "p6" / "rep0" / FAILED).read_text().startswith("lost: failed on node n2")  # tries spent
    # What is left in OUT/slurm: the lost task's directory, kept for its log, and no submission.
    assert [p.name for p in (out / "slurm").iterdir()] == ["lost-77_1"]


def test_a_slurm_run_without_its_host_record_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Status 0 and the run asked for, but no host.json: not taken in (a run is accepted only whole)."""
    fake = FakeSlurm(["n1"], {0: [(0, "n1")]})

    def without_host(argv: list[str], env: dict[str, str] | None = None) -> str:
        answer = fake(argv, env)
        for record in Path(next((a for a in argv if a.startswith("--chdir=")), "--chdir=/nonexistent")
                           .partition("=")[2]).glob("task*/run/host.json"):
            record.unlink()
        return answer

    monkeypatch.setattr(slurm_mod, "_slurm", without_host)
    monkeypatch.setattr(slurm_mod, "POLL_S", 0.0)
    plan = Plan(name="t", raw={"name": "t"}, points=[Point("p0", {"k": 0})], repetitions=1,
                metrics=["total.goodput_mbps"], duration_s=1)
    with pytest.raises(RunsLost, match="1/1 runs lost .*host.json"):
        with SlurmExecutor(1, []) as executor:
            run_sweep(plan, tmp_path / "sweep", AlgoCatalog.__new__(AlgoCatalog), executor)
