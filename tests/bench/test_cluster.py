"""Sweeps on a Dask cluster: certificates, refusal of unauthenticated peers, the host pooling check, and
(root) a real scheduler and worker on loopback running a sweep like the local one, also through a worker
killed mid-sweep."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bbrbench.cluster import CA_FILE, CERT_FILE, KEY_FILE, SCRATCH_PREFIX, pack, start_commands, unpack
from bbrbench.errors import HarnessError
from bbrbench.results import write_json
from bbrbench.sweep import DONE_MARK, Plan, Point
from bbrbench.testbed.host import host_key
from benchutil import needs_net, popen_cli, run_cli

pytest.importorskip("distributed", reason="the cluster extra: pip install 'bbrbench[cluster]'")

START_TIMEOUT_S = 30
SWEEP = ("sweep", "smoke", "--quiet", "duration_s=2", "--reps", "2", "--grid", "bottleneck.rate_mbit=[10, 20]")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        assert proc.poll() is None, "the scheduler exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert time.monotonic() < deadline, "the scheduler never listened"
        time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """The process and everything it started (its own session), waited for to the last: a worker's run
    cleans up on SIGTERM for seconds after the worker has gone, and the leak check runs next."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"process group {proc.pid} outlived its leader by 30 s"
        time.sleep(0.1)


class Cluster:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.certs = directory / "certs"
        self.port = free_port()
        self.address = f"tls://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        result = run_cli("cluster", "init", "--certs", str(self.certs), "--port", str(self.port))
        assert result.returncode == 0, result.stderr
        self.scheduler_argv, self.worker_argv, self.env = start_commands(self.certs, "127.0.0.1", self.port, 3)

    def _start(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        log = (self.dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=log, env={**os.environ, **self.env},
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def start_scheduler(self) -> None:
        wait_listening(self.port, self._start(self.scheduler_argv, "scheduler"))

    def client(self) -> Any:
        from distributed import Client
        from distributed.security import Security
        security = Security(tls_ca_file=str(self.certs / CA_FILE), tls_client_cert=str(self.certs / CERT_FILE),
                            tls_client_key=str(self.certs / KEY_FILE), require_encryption=True)
        return Client(self.address, security=security, timeout=START_TIMEOUT_S)

    def start_worker(self) -> subprocess.Popen[bytes]:
        proc = self._start(self.worker_argv, "worker")
        with self.client() as client:
            client.wait_for_workers(len([p for p in self.procs[1:] if p.poll() is None]), timeout=START_TIMEOUT_S)
        return proc

    def close(self) -> None:
        while self.procs:
            stop(self.procs.pop())


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Callable[[], Cluster]]:
    made: list[Cluster] = []

    def factory() -> Cluster:
        made.append(Cluster(tmp_path))
        return made[-1]

    try:
        yield factory
    finally:
        for c in made:
            c.close()


# ---------------------------------------------------------------- no root


def test_init_writes_certificates_once(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    result = run_cli("cluster", "init", "--certs", str(certs), "--port", "8790")
    assert result.returncode == 0, result.stderr
    assert "dask scheduler --host tls://127.0.0.1 --port 8790" in result.stdout
    assert "dask worker tls://127.0.0.1:8790 --nthreads 1 --nworkers 1 --resources testbed=1" in result.stdout
    assert (certs / KEY_FILE).stat().st_mode & 0o777 == 0o600
    before = {p.name: p.read_bytes() for p in certs.iterdir()}
    again = run_cli("cluster", "init", "--certs", str(certs))
    assert again.returncode == 2 and "--force" in again.stderr and len(again.stderr.splitlines()) == 1
    assert {p.name: p.read_bytes() for p in certs.iterdir()} == before
    bad = run_cli("cluster", "init", "--certs", str(tmp_path / "x"), "--port", "70000")
    assert bad.returncode == 2 and not (tmp_path / "x").exists()


def test_unauthenticated_peers_are_refused(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    c = cluster()
    c.start_scheduler()
    # A TLS client that trusts the scheduler but shows no certificate: the scheduler ends the handshake.
    context = ssl.create_default_context(cafile=str(c.certs / CA_FILE))
    context.check_hostname = False
    with socket.create_connection(("127.0.0.1", c.port), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with context.wrap_socket(raw) as tls:
                tls.sendall(b"\0" * 16)
                if not tls.recv(1):
                    raise ConnectionError("closed by the scheduler")
    # bbrbench with certificates of another authority: one line, exit 1, no sweep directory made.
    assert run_cli("cluster", "init", "--certs", str(tmp_path / "other")).returncode == 0
    out = tmp_path / "sweep"
    result = run_cli(*SWEEP, "--out", str(out), "--cluster", c.address, "--cluster-certs", str(tmp_path / "other"))
    assert result.returncode == 1 and "cannot connect" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()
    # Plain TCP to a TLS-only scheduler is a usage error; no certificates at all, a one-line error.
    plain = run_cli(*SWEEP, "--out", str(out), "--cluster", f"tcp://127.0.0.1:{c.port}",
                    "--cluster-certs", str(c.certs))
    assert plain.returncode == 2 and "TLS only" in plain.stderr and not out.exists()
    missing = run_cli(*SWEEP, "--out", str(out), "--cluster", c.address, "--cluster-certs", str(tmp_path / "none"))
    assert missing.returncode == 1 and "cluster init" in missing.stderr and not out.exists()


def fake_sweep(out: Path, hosts: list[tuple[str, str]]) -> None:
    """A finished one-point sweep whose repetitions ran on these (hostname, kernel) hosts."""
    plan = Plan(name="t", raw={"name": "t"}, points=[Point(id="p0", overrides={})], repetitions=len(hosts),
                metrics=["total.goodput_mbps"], duration_s=1)
    out.mkdir()
    write_json(out / "plan.json", "plan", plan.to_json())
    for rep, (hostname, kernel) in enumerate(hosts):
        run_dir = out / "points" / "p0" / f"rep{rep}"
        run_dir.mkdir(parents=True)
        write_json(run_dir / "summary.json", "summary", {"total": {"goodput_mbps": 9.0 + rep}})
        write_json(run_dir / "host.json", "host", {"hostname": hostname, "kernel": kernel, "cpus": 2,
                                                   "bbrctl_version": "bbrctl x", "algorithms_sha256": "ab" * 32})
        (run_dir / DONE_MARK).write_text("")


def test_runs_pool_by_their_bpf_objects_not_by_the_bbrctl_binary() -> None:
    """A rebuild at a later commit changes the binary (its version string) but not the programs."""
    new = {"kernel": "6.18.1", "objects_sha256": "ab" * 32, "algorithms_sha256": "01" * 32}
    assert host_key(new) == host_key({**new, "algorithms_sha256": "02" * 32, "bbrctl_version": "bbrctl y"})
    assert host_key(new) != host_key({**new, "objects_sha256": "cd" * 32})
    assert host_key(new) != host_key({**new, "kernel": "6.12.0"})
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


def test_damaged_results_are_refused(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text("{}")
    data, digest = pack(tmp_path / "run")
    unpack({"tar": data, "sha256": digest}, tmp_path / "copy")
    assert (tmp_path / "copy" / "summary.json").read_text() == "{}"
    with pytest.raises(HarnessError, match="damaged"):
        unpack({"tar": data[:-1] + b"x", "sha256": digest}, tmp_path / "copy2")
    assert not (tmp_path / "copy2").exists()


# ---------------------------------------------------------------- root: real runs on the cluster


def goodputs(out: Path) -> dict[str, tuple[float, float | None]]:
    sweep = json.loads((out / "sweep.json").read_text())
    return {p["label"]: (p["metrics"]["total.goodput_mbps"]["mean"], p["metrics"]["total.goodput_mbps"]["ci95"])
            for p in sweep["points"]}


@pytest.mark.net
@needs_net
def test_cluster_sweep_matches_local(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    c = cluster()
    c.start_scheduler()
    c.start_worker()
    remote = run_cli(*SWEEP, "--out", str(tmp_path / "remote"), "--cluster", c.address,
                     "--cluster-certs", str(c.certs), timeout=300)
    assert remote.returncode == 0, remote.stderr
    local = run_cli(*SWEEP, "--out", str(tmp_path / "local"), timeout=300)
    assert local.returncode == 0, local.stderr
    got, want = goodputs(tmp_path / "remote"), goodputs(tmp_path / "local")
    assert got.keys() == want.keys()
    for label, (mean, ci) in got.items():
        # Within the two intervals, with a floor of 3% for the near-zero spread of 2 s runs at line rate.
        slack = (ci or 0) + (want[label][1] or 0) + 0.03 * mean
        assert abs(mean - want[label][0]) <= slack, (label, got, want)
    for out in (tmp_path / "remote", tmp_path / "local"):
        runs = sorted(out.glob("points/*/rep*"))
        assert len(runs) == 4 and all((r / DONE_MARK).is_file() and (r / "host.json").is_file() for r in runs)
    # Resume: nothing left to do, whichever host ran it.
    again = run_cli(*(a for a in SWEEP if a != "--quiet"), "--out", str(tmp_path / "remote"), timeout=120)
    assert again.returncode == 0 and "4 run(s), 0 to do" in again.stderr, again.stderr


@pytest.mark.net
@needs_net
def test_worker_killed_mid_sweep(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    c = cluster()
    c.start_scheduler()
    worker = c.start_worker()
    out = tmp_path / "sweep"
    sweep = popen_cli(*(a if a != "duration_s=2" else "duration_s=4" for a in SWEEP), "--out", str(out),
                      "--cluster", c.address, "--cluster-certs", str(c.certs))
    deadline = time.monotonic() + 120
    while not list(out.glob("points/*/rep*/done")):
        assert time.monotonic() < deadline and sweep.poll() is None, "no run finished"
        time.sleep(0.1)
    time.sleep(1.5)  # well into the next run's 4 s
    stop(worker, signal.SIGKILL)  # the host dies: worker and nanny at once
    time.sleep(1)
    c.start_worker()
    _, stderr = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, stderr
    runs = sorted(out.glob("points/*/rep*"))
    assert [r.name for r in runs] == ["rep0", "rep1", "rep0", "rep1"]
    assert all((r / DONE_MARK).is_file() for r in runs) and not list(out.glob("points/*/*.part"))
    # Each run directory is one run: four distinct run prefixes.
    assert len({json.loads((r / "scenario.json").read_text())["prefix"] for r in runs}) == 4
    assert [p["repetitions"] for p in json.loads((out / "sweep.json").read_text())["points"]] == [2, 2]
    # The killed worker's scratch directory went with the next run on that host.
    assert not [p for p in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*")
                if not Path(f"/proc/{p.name.split('-')[2]}").exists()]


@pytest.mark.net
@needs_net
def test_interrupted_client_leaves_nothing_queued(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    c = cluster()
    c.start_scheduler()
    c.start_worker()
    out = tmp_path / "sweep"
    sweep = popen_cli(*SWEEP, "--out", str(out), "--cluster", c.address, "--cluster-certs", str(c.certs))
    deadline = time.monotonic() + 60
    while not list(out.glob("points/*/rep*/done")):
        assert time.monotonic() < deadline and sweep.poll() is None, "no run finished"
        time.sleep(0.1)
    sweep.send_signal(signal.SIGINT)
    sweep.communicate(timeout=60)
    assert sweep.returncode == 130
    with c.client() as client:
        deadline = time.monotonic() + 30
        # A lambda travels by value; a function of this module would need the module on the scheduler.
        while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
            assert time.monotonic() < deadline, "the scheduler still holds the sweep's runs"
            time.sleep(0.5)
    assert len(list(out.glob("points/*/rep*/done"))) < 4
    c.close()  # the worker closing takes its abandoned run's scratch directory with it
    assert not list(Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"))
