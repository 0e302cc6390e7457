"""Sweeps on a Dask cluster: certificates, refusal of unauthenticated peers, and (root) a real scheduler and
worker on loopback running a sweep like the local one, also through a worker killed mid-sweep. Pooling hosts'
runs without a cluster: test_cluster_pooling.py."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
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

import bbrbench.cluster as cluster_mod
from bbrbench.cluster import client, worker
from bbrbench.cluster.certs import CA_FILE, CERT_FILE, KEY_FILE, security
from bbrbench.cluster.servers import start_commands
from bbrbench.cluster.worker import SCRATCH_PREFIX
from bbrbench.errors import HarnessError
from bbrbench.sweep import DONE_MARK, Job, Point
from bbrbench.testbed.host import FAKE_HOST_ENV
from bbrbench.testbed.runstate import RUN_BASE
from benchutil import NOBODY, START_TIMEOUT_S, SWEEP, free_port, needs_net, popen_cli, run_cli
from netutil import namespaces

pytest.importorskip("distributed", reason="the cluster extra: pip install 'bbrbench[cluster]'")

# Dask's connect timeout for a client that is to find its scheduler gone: ample on loopback, even loaded.
CLIENT_CONNECT_S = 5


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


def children(proc: subprocess.Popen[bytes]) -> set[str]:
    """The pids of proc's children (a nanny's: its worker process)."""
    found = set()
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError):
            # The parent's pid is the second field after the command name in parentheses.
            if entry.name.isdigit() and (entry / "stat").read_text().rpartition(")")[2].split()[1] == str(proc.pid):
                found.add(entry.name)
    return found


def issue(ca: Path, kind: str, name: str, out: Path, *address: str) -> Path:
    args = ["cluster", kind, name, "--ca", str(ca), "--out", str(out), *(f"--address={a}" for a in address)]
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    return out


def certificate(ca: Path, name: str, out: Path, *address: str) -> Path:
    """A host's certificate (given addresses) or a user's, issued through the library."""
    cluster_mod.issue(ca, name, out, list(address) if address else None)
    return out


class Authority:
    """An authority in DIR/ca with the user's certificate (`certs`), the scheduler's, and a host certificate
    per worker on demand: made once per module, through the library (the command line has its own test)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ca = directory / "ca"
        cluster_mod.init_ca(self.ca)
        self.certs = certificate(self.ca, "tester", directory / "user")
        self.scheduler_certs = certificate(self.ca, "scheduler", directory / "scheduler", "127.0.0.1")
        self.hosts = 0

    def host_certs(self) -> Path:
        self.hosts += 1
        return certificate(self.ca, f"worker-{self.hosts}", self.dir / f"worker-{self.hosts}", "127.0.0.1")


def simulated_host(name: str) -> dict[str, str]:
    """A simulated host of this test run (FAKE_HOST_ENV), its machine id (and so its lock file) apart from
    another test run's on this machine."""
    return {"hostname": name, "machine_id": f"bbrbench-test-{os.getpid()}-{name}"}


SHARED_HOST = simulated_host("shared")


class Cluster:
    """A scheduler on a port of its own and its workers, with certificates of `authority`."""

    def __init__(self, authority: Authority, directory: Path) -> None:
        self.dir = directory
        self.ca, self.certs, self.scheduler_certs = authority.ca, authority.certs, authority.scheduler_certs
        self.authority = authority
        self.port = free_port()
        self.address = f"tls://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.hosts: set[str] = set()  # the machine ids its workers stood for
        self.scheduler_argv, self.worker_argv = start_commands(self.scheduler_certs, "127.0.0.1", self.port)

    def _start(self, argv: list[str], name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=log, env={**os.environ, **(env or {})},
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def start_scheduler(self) -> subprocess.Popen[bytes]:
        proc = self._start(self.scheduler_argv, "scheduler")
        wait_listening(self.port, proc)
        self.workers = []
        return proc

    def client(self) -> Any:
        from distributed import Client
        return Client(self.address, security=security(self.certs), timeout=START_TIMEOUT_S)

    def worker_certs(self) -> Path:
        return self.authority.host_certs()

    def start_worker(self, host: dict[str, str] | None = None, prefix: tuple[str, ...] = (),
                     certs: Path | None = None, env: dict[str, str] | None = None,
                     wait: bool = True) -> subprocess.Popen[bytes]:
        """A worker with its own host certificate (or `certs`), as the simulated `host` (default: one of
        its own), under `prefix` (setpriv to another user)."""
        mine = str(certs or self.worker_certs())  # once: a comprehension would issue one per argument
        argv = [a.replace(str(self.scheduler_certs), mine) for a in self.worker_argv]
        host = host or simulated_host(f"w{len(self.procs)}")
        self.hosts.add(host["machine_id"])
        proc = self._start([*prefix, *argv], "worker", {FAKE_HOST_ENV: json.dumps(host), **(env or {})})
        if not wait:
            return proc
        self.workers.append(proc)
        with self.client() as client:
            client.wait_for_workers(len([p for p in self.workers if p.poll() is None]), timeout=START_TIMEOUT_S)
        return proc

    def stop_worker(self, worker: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        stop(worker, sig)
        self.workers.remove(worker)

    def close(self) -> None:
        while self.procs:
            stop(self.procs.pop())

    def lock_files(self) -> list[Path]:
        """Lock files of its workers' hosts still there (none once they have all stopped). Where this user
        cannot look into the lock directory (root's), its workers could not make one there either."""
        if not os.access(worker.LOCK_DIR, os.X_OK):
            return []
        return [p for h in sorted(self.hosts) if (p := worker.LOCK_DIR / f"bbrbench-worker-{h}.lock").exists()]


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("authority"))


@pytest.fixture
def cluster(authority: Authority, tmp_path: Path) -> Iterator[Callable[[], Cluster]]:
    made: list[Cluster] = []

    def factory() -> Cluster:
        made.append(Cluster(authority, tmp_path))
        return made[-1]

    try:
        yield factory
    finally:
        for c in made:
            c.close()
        # Workers that closed, and the nannies of those killed, leave no lock file of their host behind.
        assert not [f for c in made for f in c.lock_files()]


@pytest.fixture(scope="module")
def shared(authority: Authority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A scheduler with one worker, for the tests that need no other; a test that stops the worker starts
    another in its place (as the same host)."""
    c = Cluster(authority, tmp_path_factory.mktemp("shared"))
    try:
        c.start_scheduler()
        c.start_worker(host=SHARED_HOST)
        yield c
    finally:
        c.close()
    assert not c.lock_files()


# ---------------------------------------------------------------- no root


def test_authority_issues_and_revokes(tmp_path: Path) -> None:
    """The authority's key stays in its directory; members get their certificate (SANs, usages per kind,
    valid from before now) and the revocation list, never the key; keys are 0600 and refused otherwise."""
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID
    ca = tmp_path / "ca"
    result = run_cli("cluster", "init", "--ca", str(ca), "--port", "8790")
    assert result.returncode == 0, result.stderr
    assert "bbrbench cluster scheduler --certs DIR --host 127.0.0.1 --port 8790" in result.stdout
    assert "valid until" in result.stdout and (ca / "ca-key.pem").stat().st_mode & 0o777 == 0o600
    before = {p.name: p.read_bytes() for p in ca.iterdir()}
    again = run_cli("cluster", "init", "--ca", str(ca))
    assert again.returncode == 2 and "--force" in again.stderr and len(again.stderr.splitlines()) == 1
    assert {p.name: p.read_bytes() for p in ca.iterdir()} == before
    bad = run_cli("cluster", "init", "--ca", str(tmp_path / "x"), "--port", "70000")
    assert bad.returncode == 2 and not (tmp_path / "x").exists()
    host = issue(ca, "add-host", "h1", tmp_path / "h1", "10.0.0.7", "h1.lab")
    user = issue(ca, "add-user", "ann", tmp_path / "ann")
    for member in (host, user):
        assert sorted(p.name for p in member.iterdir()) == sorted([CA_FILE, CERT_FILE, KEY_FILE, "crl.pem"])
        assert (member / KEY_FILE).stat().st_mode & 0o777 == 0o600
    cert = x509.load_pem_x509_certificate((host / CERT_FILE).read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.0.0.7"]
    assert san.get_values_for_type(x509.DNSName) == ["h1.lab"]
    assert cert.not_valid_before_utc < datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    usages = x509.load_pem_x509_certificate((user / CERT_FILE).read_bytes()).extensions.get_extension_for_class(
        x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]  # a user cannot serve as scheduler or worker
    twice = run_cli("cluster", "add-user", "ann", "--ca", str(ca), "--out", str(tmp_path / "ann2"))
    assert twice.returncode == 2 and "revoke it first" in twice.stderr and not (tmp_path / "ann2").exists()
    revoked = run_cli("cluster", "revoke", "ann", "--ca", str(ca))
    assert revoked.returncode == 0 and "crl.pem" in revoked.stdout
    crl = x509.load_pem_x509_crl((ca / "crl.pem").read_bytes())
    assert crl.get_revoked_certificate_by_serial_number(
        x509.load_pem_x509_certificate((user / CERT_FILE).read_bytes()).serial_number) is not None
    # A key others can read is refused when loaded.
    os.chmod(host / KEY_FILE, 0o644)
    with pytest.raises(HarnessError, match="readable by others"):
        security(host)


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
    # bbrbench with a certificate of another authority: one line, exit 1, no sweep directory made.
    # (Certificates through the library here: test_authority_issues_and_revokes covers the commands.)
    cluster_mod.init_ca(tmp_path / "other-ca")
    other = certificate(tmp_path / "other-ca", "eve", tmp_path / "other")
    out = tmp_path / "sweep"
    result = run_cli(*SWEEP, "--out", str(out), "--cluster", c.address, "--cluster-certs", str(other))
    assert result.returncode == 1 and "cannot connect" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()
    # A user and a host whose certificates were revoked (the scheduler given the new list and restarted).
    revoked = certificate(c.ca, "mallory", tmp_path / "mallory")
    bad_host = certificate(c.ca, "stolen", tmp_path / "stolen", "127.0.0.1")
    for name in ("mallory", "stolen"):
        cluster_mod.revoke(c.ca, name)
    for member in (c.scheduler_certs, bad_host):
        shutil.copyfile(c.ca / "crl.pem", member / "crl.pem")
    c.close()
    c.start_scheduler()
    result = run_cli(*SWEEP, "--out", str(out), "--cluster", c.address, "--cluster-certs", str(revoked))
    assert result.returncode == 1 and "cannot connect" in result.stderr and not out.exists(), result.stderr
    # A worker of another authority never joins, a revoked host's neither; one with a good certificate,
    # started after them, does.
    c.start_worker(certs=certificate(tmp_path / "other-ca", "w", tmp_path / "other-w", "127.0.0.1"), wait=False)
    c.start_worker(certs=bad_host, wait=False)
    time.sleep(3)
    c.start_worker()
    time.sleep(3)
    with c.client() as client:
        assert len(client.scheduler_info()["workers"]) == 1
    # A scheduler whose certificate names another address: the client will not take it for this one.
    c.close()
    elsewhere = certificate(c.ca, "elsewhere", tmp_path / "elsewhere", "10.9.9.9")
    c.scheduler_argv = [a.replace(str(c.scheduler_certs), str(elsewhere)) for a in c.scheduler_argv]
    c.start_scheduler()
    result = run_cli(*SWEEP, "--out", str(out), "--cluster", c.address, "--cluster-certs", str(c.certs))
    assert result.returncode == 1 and "cannot connect" in result.stderr and not out.exists(), result.stderr
    # Plain TCP to a TLS-only scheduler is a usage error; no certificates at all, a one-line error.
    plain = run_cli(*SWEEP, "--out", str(out), "--cluster", f"tcp://127.0.0.1:{c.port}",
                    "--cluster-certs", str(c.certs))
    assert plain.returncode == 2 and "TLS only" in plain.stderr and not out.exists()
    missing = run_cli(*SWEEP, "--out", str(out), "--cluster", c.address, "--cluster-certs", str(tmp_path / "none"))
    assert missing.returncode == 1 and "cluster add-host/add-user" in missing.stderr and not out.exists()


def test_a_revocation_takes_effect_without_a_restart(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    """The scheduler reads crl.pem at every handshake: a user revoked, the new list copied into the
    scheduler's directory, and that user's next connection is refused, the scheduler still running."""
    c = cluster()
    scheduler = c.start_scheduler()
    ann = certificate(c.ca, "ann-revoked-live", tmp_path / "ann")
    args = ("--out", str(tmp_path / "sweep"), "--cluster", c.address, "--cluster-certs", str(ann))
    from bbrbench.cluster.client import connect
    connect(c.address, ann).close()
    cluster_mod.revoke(c.ca, "ann-revoked-live")
    shutil.copyfile(c.ca / "crl.pem", c.scheduler_certs / "crl.pem")
    result = run_cli(*SWEEP, *args)
    assert result.returncode == 1 and "cannot connect" in result.stderr, result.stderr
    assert scheduler.poll() is None
    connect(c.address, c.certs).close()  # others still connect


def test_only_the_tls_comm_listens_on_the_address_given(shared: Cluster) -> None:
    """Dask's scheduler and workers serve HTTP (worker lists, logs, call stacks, metrics) to anyone, without
    a certificate; it is closed as each starts. What listens is the TLS comm of the scheduler, the worker
    and its nanny, on the address given (here loopback) only, each refusing a peer without a
    certificate (test_unauthenticated_peers_are_refused)."""
    scheduler, nanny = shared.procs[0], shared.workers[0]
    pids = {str(scheduler.pid), str(nanny.pid), *children(nanny)}  # the worker process under its nanny
    listening = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout.splitlines()
    ours = [line.split()[3] for line in listening if any(f"pid={p}," in line for p in pids)]
    assert len(ours) == 3, listening  # the comm of each: scheduler, nanny, worker
    assert all(a.startswith("127.0.0.1:") for a in ours), ours
    assert f"127.0.0.1:{shared.port}" in ours


# ---------------------------------------------------------------- root: real runs on the cluster


def goodputs(out: Path) -> dict[str, tuple[float, float | None]]:
    sweep = json.loads((out / "sweep.json").read_text())
    return {p["label"]: (p["metrics"]["total.goodput_mbps"]["mean"], p["metrics"]["total.goodput_mbps"]["ci95"])
            for p in sweep["points"]}


def on(c: Cluster, *args: str) -> tuple[str, ...]:
    return (*args, "--cluster", c.address, "--cluster-certs", str(c.certs))


def wait_for(what: str, ready: Callable[[], object], alive: subprocess.Popen[str] | None = None,
             timeout_s: float = 120) -> None:
    """Until ready() (polled every 0.1 s), while `alive` (the sweep) runs."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        assert alive is None or alive.poll() is None, f"{what}: the sweep ended first"
        time.sleep(0.1)


def scratch_of(worker: subprocess.Popen[bytes]) -> list[Path]:
    """The scratch directories of the worker process under this nanny."""
    pids = children(worker)
    return [p for p in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*")
            if p.name.removeprefix(SCRATCH_PREFIX).split("-")[0] in pids]


def dead_scratch() -> list[Path]:
    """Scratch directories whose worker process has gone."""
    return [p for p in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*")
            if not Path(f"/proc/{p.name.removeprefix(SCRATCH_PREFIX).split('-')[0]}").exists()]


@pytest.mark.net
@needs_net
def test_cluster_sweep_matches_local(shared: Cluster, tmp_path: Path) -> None:
    # Both sweeps at once: each run has its own namespaces and bottleneck, and two runs at 10-20 Mbit/s
    # leave the CPUs to spare.
    remote = popen_cli(*on(shared, *SWEEP, "--out", str(tmp_path / "remote")))
    local = run_cli(*SWEEP, "--out", str(tmp_path / "local"), timeout=300)
    _, remote_err = remote.communicate(timeout=300)
    assert remote.returncode == 0, remote_err
    assert local.returncode == 0, local.stderr
    got, want = goodputs(tmp_path / "remote"), goodputs(tmp_path / "local")
    assert got.keys() == want.keys()
    for label, (mean, ci) in got.items():
        # Within the two intervals, with a floor of 3% for the near-zero spread of short runs at line rate.
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
def test_worker_killed_mid_sweep(shared: Cluster, tmp_path: Path) -> None:
    worker = shared.workers[0]
    out = tmp_path / "sweep"
    sweep = popen_cli(*on(shared, *SWEEP, "--out", str(out)))
    wait_for("a run finished", lambda: list(out.glob("points/*/rep*/done")), sweep)
    # The next run under way: its child has written its scenario into the scratch directory.
    wait_for("the next run started", lambda: [p for p in scratch_of(worker) if (p / "run").is_dir()], sweep)
    shared.stop_worker(worker, signal.SIGKILL)  # the host dies: worker and nanny at once
    shared.start_worker(host=SHARED_HOST)  # and comes back
    _, stderr = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, stderr
    runs = sorted(out.glob("points/*/rep*"))
    assert [r.name for r in runs] == ["rep0", "rep1", "rep0", "rep1"]
    assert all((r / DONE_MARK).is_file() for r in runs) and not list(out.glob("points/*/*.part"))
    # Each run directory is one run: four distinct run prefixes.
    assert len({json.loads((r / "scenario.json").read_text())["prefix"] for r in runs}) == 4
    assert [p["repetitions"] for p in json.loads((out / "sweep.json").read_text())["points"]] == [2, 2]
    # The killed worker's scratch directory went with the next run on that host.
    assert not dead_scratch()


@pytest.mark.net
@needs_net
def test_interrupted_client_leaves_nothing_queued(shared: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    sweep = popen_cli(*on(shared, *SWEEP, "--out", str(out)))
    wait_for("a run finished", lambda: list(out.glob("points/*/rep*/done")), sweep)
    sweep.send_signal(signal.SIGINT)
    sweep.communicate(timeout=60)
    assert sweep.returncode == 130
    with shared.client() as client:
        # A lambda travels by value; a function of this module would need the module on the scheduler.
        wait_for("the scheduler dropped the sweep's runs",
                 lambda: not client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)), timeout_s=30)
    assert len(list(out.glob("points/*/rep*/done"))) < 4
    # The worker closing takes its abandoned run's scratch directory with it, and the run, stopped as on
    # Ctrl-C, removes its namespaces within its stop time. The worker's exit does not wait for that last
    # step (CI saw the run's namespaces still there when the test ended), so the test waits for it.
    shared.stop_worker(shared.workers[0])
    assert not list(Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"))
    # Its stop time, then the clean-up's own (a loaded machine was seen to need more than the stop time).
    wait_for("the abandoned run removed its namespaces", lambda: not namespaces(RUN_BASE),
             timeout_s=worker.RUN_STOP_TIMEOUT_S + 50)
    shared.start_worker(host=SHARED_HOST)


def run_hosts(out: Path) -> dict[str, list[str]]:
    """Per point id, the hostname of each finished repetition."""
    ids = {p["id"] for p in json.loads((out / "plan.json").read_text())["points"]}
    return {d.name: [json.loads((r / "host.json").read_text())["hostname"] for r in sorted(d.glob("rep*"))]
            for d in sorted((out / "points").iterdir()) if d.name in ids}


@pytest.mark.net
@needs_net
def test_two_hosts_share_every_point(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    """Two hosts of different kernels (simulated per worker process): each point's repetitions are spread
    over both with --mix-hosts; without it only the first kind of host gets runs, and the other is named."""
    c = cluster()
    c.start_scheduler()
    c.start_worker(host=simulated_host("host-a"))
    c.start_worker(host={**simulated_host("host-b"), "kernel": "6.1.0-other"})
    mixed = run_cli(*on(c, *SWEEP, "--out", str(tmp_path / "mixed"), "--mix-hosts"), timeout=300)
    assert mixed.returncode == 0, mixed.stderr
    hosts = run_hosts(tmp_path / "mixed")
    assert len(hosts) == 2 and all(sorted(h) == ["host-a", "host-b"] for h in hosts.values()), hosts
    assert all(p["hosts"] == ["host-a", "host-b"] for p in
               json.loads((tmp_path / "mixed" / "sweep.json").read_text())["points"])
    # One point's two repetitions: on both hosts if both were used.
    one = run_cli(*on(c, "sweep", "smoke", "--quiet", "duration_s=1", "--reps", "2", "--out", str(tmp_path / "one")),
                  timeout=300)
    assert one.returncode == 0, one.stderr
    assert "refused" in one.stderr and "6.1.0-other" in one.stderr and "--mix-hosts" in one.stderr, one.stderr
    assert [len(reps) for reps in run_hosts(tmp_path / "one").values()] == [2]
    assert len({h for reps in run_hosts(tmp_path / "one").values() for h in reps}) == 1


@pytest.mark.net
@needs_net
def test_a_dead_scheduler_fails_the_sweep_and_it_resumes(cluster: Callable[[], Cluster], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster()
    scheduler = c.start_scheduler()
    worker = c.start_worker()
    out = tmp_path / "sweep"
    args = on(c, *SWEEP, "--out", str(out))
    # The client gives up on the scheduler after Dask's connect timeout (30 s by default; loopback needs less).
    with monkeypatch.context() as env:
        env.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", f"{CLIENT_CONNECT_S}s")
        sweep = popen_cli(*args)
    wait_for("a run finished", lambda: list(out.glob("points/*/rep*/done")), sweep)
    stop(scheduler, signal.SIGKILL)
    _, stderr = sweep.communicate(timeout=180)
    assert sweep.returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert "runs lost" in last and "went away" in last and "resume with bbrbench sweep smoke" in last, stderr
    c.stop_worker(worker)
    c.start_scheduler()
    c.start_worker()
    # The command it printed (this one: --out was given), so that the runs are of one invocation.
    resumed = run_cli(*args, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert len(list(out.glob("points/*/rep*/done"))) == 4


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="starts a worker as another user")
def test_workers_that_cannot_run_experiments_get_none(cluster: Callable[[], Cluster], shared: Cluster,
                                                      tmp_path: Path) -> None:
    """A worker not running as root, and a second worker on one host, are refused when they join; with no
    other worker the sweep fails before writing anything."""
    c = cluster()
    c.start_scheduler()
    # The certificates where the unprivileged worker can read them (its own copy, its key 0600).
    theirs = Path(tempfile.mkdtemp(prefix="bbrbench-test-certs-"))
    try:
        for f in c.worker_certs().iterdir():
            (theirs / f.name).write_bytes(f.read_bytes())
            os.chmod(theirs / f.name, 0o600 if f.name == KEY_FILE else 0o644)
            os.chown(theirs / f.name, NOBODY, NOBODY)
        os.chown(theirs, NOBODY, NOBODY)
        c.start_worker(prefix=("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"), certs=theirs,
                       env={"HOME": str(theirs)})
        out = tmp_path / "sweep"
        refused = run_cli(*on(c, *SWEEP, "--out", str(out)))
        assert refused.returncode == 1 and "no worker can run experiments" in refused.stderr, refused.stderr
        assert "not root" in refused.stderr and not out.exists()
    finally:
        c.close()
        subprocess.run(["rm", "-rf", str(theirs)], check=True)
    # A second worker on the shared worker's host.
    from bbrbench.cluster import DaskExecutor
    twin = shared.start_worker(host=SHARED_HOST)
    try:
        # Both workers registered before the client looks (the second one's join is not instant).
        with shared.client() as client:
            wait_for("the second worker joined",
                     lambda: client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.workers)) == 2,
                     timeout_s=60)
        with DaskExecutor(shared.address, shared.certs, 1) as executor:
            assert len(executor.members) == 1 and len(executor.refused) == 1
    finally:
        shared.stop_worker(twin)


ROGUE = '''
import os
import bbrbench.cluster.worker


class Payload:
    """Unpickling it runs a command: what a compromised worker would send."""

    def __reduce__(self):
        return (os.system, ("touch {mark}-$$",))


def rogue_run(*_args, **_kwargs):
    return {{"status": "done", "message": "", "host": "rogue", "tar": Payload()}}


bbrbench.cluster.worker.remote_run = rogue_run
'''


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="starts a worker as root")
def test_a_rogue_workers_pickle_never_runs_in_the_client(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    """A worker answers a run with a pickle, through Dask's Serialize path, that would run a command when
    loaded: the client's msgpack-only deserializers refuse it, the run is lost (exit 1) and nothing ran.
    (A ToPickle frame is unpickled regardless: test_every_member_can_run_code_in_every_other.)"""
    mark = tmp_path / "unpickled"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(ROGUE.format(mark=mark))
    c = cluster()
    c.start_scheduler()
    c.start_worker(env={"PYTHONPATH": str(site)})
    out = tmp_path / "sweep"
    # One run: the rogue worker answers it at once.
    result = run_cli(*on(c, "sweep", "smoke", "--quiet", "--reps", "1", "--out", str(out), "--tries", "1"), timeout=120)
    assert result.returncode == 1 and "1/1 runs lost" in result.stderr, result.stderr
    assert not list(tmp_path.glob("unpickled*")) and not list(out.glob("points/*/rep*/done"))


TO_PICKLE = '''
import os
import pickle
import distributed.worker
from distributed.protocol.serialize import Pickled, ToPickle


class Payload:
    """Unpickling it runs a command: what any member can send."""

    def __reduce__(self):
        return (os.system, ("echo $PPID >> {mark}",))


async def rogue_run(*_args, **_kwargs):
    # Dask's handler wraps a result in Serialize, which a msgpack-only peer refuses; a worker's own code
    # can answer with a ToPickle frame instead, which every peer unpickles: the scheduler unpickles the
    # outer one (running nothing) and forwards the inner, already pickled, to the client.
    inner = Pickled({{"pickled-obj": pickle.dumps(Payload())}}, [])
    return {{"status": "OK", "result": ToPickle(inner), "for_the_scheduler": ToPickle(Payload())}}


distributed.worker.run = rogue_run
'''


def test_every_member_can_run_code_in_every_other(cluster: Callable[[], Cluster], tmp_path: Path) -> None:
    """The trust model of docs/cluster.md, attacked: Dask unpickles ToPickle frames whatever the client's
    deserializers say, so a worker's reply runs code in the scheduler and in the submitting client; a
    user's certificate runs code in the scheduler and on every worker, and so does a host's used as a
    client. Every member is trusted: the certificates decide membership, not what a member may do."""
    c = cluster()
    c.start_scheduler()
    site = tmp_path / "site"
    site.mkdir()
    in_client = tmp_path / "ran-in-client"
    (site / "sitecustomize.py").write_text(TO_PICKLE.format(mark=in_client))
    rogue = c.worker_certs()
    c.start_worker(certs=rogue, env={"PYTHONPATH": str(site)})
    from bbrbench.cluster import DaskExecutor
    with pytest.raises(HarnessError, match="no worker can run experiments"):
        with DaskExecutor(c.address, c.certs, 1):
            pass
    # The worker's health reply ran in the scheduler and in this process (the client's), and was then
    # refused as malformed.
    assert sorted(in_client.read_text().split()) == sorted([str(c.procs[0].pid), str(os.getpid())])
    # A user's certificate, and a host's used as a client: code in the scheduler and on a worker.
    c.start_worker()
    for name, certs in (("user", c.certs), ("host", rogue)):
        from distributed import Client
        with Client(c.address, security=security(certs), timeout=START_TIMEOUT_S, set_as_default=False) as member:
            member.run_on_scheduler(os.system, f"echo $PPID > {tmp_path / f'{name}-in-scheduler'}")
            member.run(os.system, f"echo $PPID > {tmp_path / f'{name}-on-worker'}")
        assert (tmp_path / f"{name}-in-scheduler").read_text().strip() == str(c.procs[0].pid)
        assert (tmp_path / f"{name}-on-worker").is_file()


def test_each_point_spreads_over_the_hosts() -> None:
    """The client's placement, hosts taking runs in turn (as two equal hosts do): each point's repetitions
    alternate between them. Handing out the queue in order instead puts every repetition of one point on
    one host and of the other on the other: the confounding the review found."""

    from bbrbench.cluster.client import DaskExecutor, Member
    executor = DaskExecutor.__new__(DaskExecutor)
    hosts = [Member("tls://a", {"machine_id": "a"}), Member("tls://b", {"machine_id": "b"})]
    queue = [Job(rep, Point(f"p{k}", {}), {}, Path()) for rep in range(4) for k in range(2)]
    ledger = client.Ledger()
    ran: dict[str, list[str]] = {}
    turn = 0
    while queue:
        member = hosts[turn % 2]
        job = executor._pick(queue, member, ledger)
        assert job is not None
        queue.remove(job)
        ledger.placed[(job.point.id, member.host)] += 1
        ran.setdefault(job.point.id, []).append(member.host)
        turn += 1
    assert {p: sorted(h) for p, h in ran.items()} == {"p0": ["a", "a", "b", "b"], "p1": ["a", "a", "b", "b"]}
    # A host that cannot run a point takes the other's runs, and the point's runs go to the other host.
    excluded = client.Ledger(excluded={"p0": {"a": "no qdisc"}})
    queue = [Job(0, Point("p0", {}), {}, Path()), Job(0, Point("p1", {}), {}, Path())]
    assert executor._pick(queue, hosts[0], excluded) is queue[1]
    assert executor._pick(queue[:1], hosts[0], excluded) is None
