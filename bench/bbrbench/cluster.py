"""Sweeps over a rack of test hosts on Dask distributed: one scheduler, one worker per host, each worker
with one `testbed` resource so that a host never runs two experiments at once.

The workers run experiments as root, so everything speaks mutual TLS: `bbrbench cluster init` makes a
certificate authority and one certificate it signs, which the scheduler, the workers and the submitting
client all present; a peer without a certificate from that authority is refused during the handshake.

A run on a worker is one `bbrbench run` in a child process (the runner owns signal handlers, which only
the main thread of a process may set); its results directory comes back to the client as a gzipped tar
in memory with its SHA-256, and lands in the sweep directory exactly where a local run would have put it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import datetime
import hashlib
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import HarnessError, UsageError
from .scenario import AlgoCatalog
from .sweep import Job, Outcome

log = logging.getLogger(__name__)

CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "node.pem", "node-key.pem"
RESOURCE = "testbed"
CERT_DAYS = 365
CONNECT_TIMEOUT_S = 20
# `bbrbench run` exit statuses (cli/common.py) that are answers about the run, not a lost worker.
EXIT_FAILED, EXIT_INVALID, EXIT_NOT_RUNNABLE = 1, 2, 3
PR_SET_PDEATHSIG = 1
SCRATCH_PREFIX = "bbrbench-cluster-"


# ---------------------------------------------------------------- certificates


def init_certs(directory: Path, force: bool = False) -> None:
    """A fresh authority and one certificate for every member (scheduler, workers, clients): ca.pem,
    node.pem and node-key.pem (mode 0600). The authority's key is not kept: more certificates mean a new
    `init`, copied to every host, which also revokes the old ones."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    paths = [directory / n for n in (CA_FILE, CERT_FILE, KEY_FILE)]
    if any(p.exists() for p in paths) and not force:
        raise UsageError(f"cluster init: {directory} already holds certificates; pass --force to replace them")
    now = datetime.datetime.now(datetime.UTC)
    until = now + datetime.timedelta(days=CERT_DAYS)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("bbrbench cluster CA")).issuer_name(name("bbrbench cluster CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    # Both usages: every member is a server to some peers and a client to others.
    cert = (x509.CertificateBuilder().subject_name(name("bbrbench cluster member")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(paths[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))


def tls_options(directory: Path) -> list[str]:
    return ["--tls-ca-file", str(directory / CA_FILE), "--tls-cert", str(directory / CERT_FILE),
            "--tls-key", str(directory / KEY_FILE)]


def start_commands(directory: Path, host: str, port: int, tries: int) -> tuple[list[str], list[str], dict[str, str]]:
    """The scheduler's and a worker's command lines, and the scheduler's environment: a task whose worker
    died `tries` times is given up (Dask's allowed-failures counts the deaths before that)."""
    dask = str(Path(sys.executable).with_name("dask"))
    scheduler = [dask, "scheduler", "--host", f"tls://{host}", "--port", str(port), "--no-dashboard",
                 *tls_options(directory)]
    worker = [dask, "worker", f"tls://{host}:{port}", "--nthreads", "1", "--nworkers", "1",
              "--resources", f"{RESOURCE}=1", "--preload", __name__, "--preload-nanny", __name__,
              "--no-dashboard", *tls_options(directory)]
    env = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(tries - 1)}
    return scheduler, worker, env


def _security(directory: Path) -> Any:
    from distributed.security import Security
    for n in (CA_FILE, CERT_FILE, KEY_FILE):
        if not (directory / n).is_file():
            raise HarnessError(f"cluster: {directory / n} is missing; run `bbrbench cluster init` and copy "
                               f"its directory to this host (--cluster-certs)")
    return Security(tls_ca_file=str(directory / CA_FILE), tls_client_cert=str(directory / CERT_FILE),
                    tls_client_key=str(directory / KEY_FILE), require_encryption=True)


def connect(address: str, certs: Path) -> Any:
    """A client of the scheduler at `address` (tls://HOST:PORT), or HarnessError in one line."""
    try:
        from distributed import Client
    except ImportError:
        raise HarnessError("--cluster needs Dask distributed: pip install 'bbrbench[cluster]'") from None
    if not address.startswith("tls://"):
        raise UsageError(f"--cluster {address}: the scheduler speaks TLS only; give tls://HOST:PORT")
    security = _security(certs)
    try:
        return Client(address, security=security, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise HarnessError(f"cluster: cannot connect to {address}: {str(exc).splitlines()[0]}") from None


# ---------------------------------------------------------------- the worker's side


def _die_with_parent() -> None:
    # A worker process killed mid-run takes its run with it: the run gets SIGTERM and cleans up as on
    # Ctrl-C, instead of holding the host's namespaces and attachments as an orphan.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def pack(directory: Path) -> tuple[bytes, str]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    data = buffer.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def _alive(pid: int) -> bool:
    try:
        # The state follows the command name in parentheses; a zombie (Z) has died already.
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _users(path: Path) -> list[int]:
    """Live processes whose command line names path: a run still writing into it, which would recreate it
    after a removal (a run outlives a killed worker by its own clean-up, a few seconds)."""
    needle = str(path).encode()
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (proc / "cmdline").read_bytes() and _alive(int(proc.name)):
                    found.append(int(proc.name))
    return found


# This worker's runs in progress, so that its teardown can stop them before removing their scratch.
_RUNS: set[subprocess.Popen[str]] = set()
RUN_STOP_TIMEOUT_S = 10.0  # a run's own clean-up on SIGTERM (namespaces, processes) takes a few seconds
POLL_S = 0.1


def _remove_scratch(own: bool = False, wait_s: float = 0.0) -> None:
    """Scratch directories of workers that have died (a killed worker's clean-up never ran), and with
    own=True this process's, as it closes. A directory a run still writes into is left for a later call,
    or with wait_s, removed once that run has ended."""
    deadline = time.monotonic() + wait_s
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = path.name.removeprefix(SCRATCH_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or (_alive(int(pid)) and not (own and int(pid) == os.getpid())):
            continue
        while (users := _users(path)) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if not users:
            shutil.rmtree(path, ignore_errors=True)


# The worker command preloads this module in the worker and in its nanny: Dask calls these as each
# starts and closes. A start removes what dead workers left. The nanny's teardown runs before it stops
# its worker, so its clean-up waits for its own exit, when the worker has gone.
def dask_setup(_worker: Any) -> None:
    _remove_scratch()
    atexit.register(_remove_scratch, own=True, wait_s=RUN_STOP_TIMEOUT_S)


def dask_teardown(_worker: Any) -> None:
    # A closing worker stops its runs first: each cleans up its namespaces as on Ctrl-C.
    for proc in list(_RUNS):
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=RUN_STOP_TIMEOUT_S)
    _remove_scratch(own=True)


def remote_run(raw: dict[str, Any]) -> dict[str, Any]:
    """One `bbrbench run` of a sweep point on this (worker's) host. Returns its status and message, and,
    when it ran, its results directory packed. Raises only when the run ended abnormally (killed): Dask
    then retries it."""
    _remove_scratch()
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-") as tmp:
        scenario = Path(tmp) / "scenario.json"
        scenario.write_text(json.dumps(raw))
        run_dir = Path(tmp) / "run"
        with subprocess.Popen([sys.executable, "-m", "bbrbench", "-q", "run", "--no-plots", "--out", str(run_dir),
                               str(scenario)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=_die_with_parent) as proc:
            _RUNS.add(proc)
            try:
                _, stderr = proc.communicate()
            finally:
                _RUNS.discard(proc)
        message = (stderr.strip().splitlines() or [""])[-1].removeprefix("bbrbench: ")
        status = {0: "done", EXIT_NOT_RUNNABLE: "not_runnable", EXIT_FAILED: "failed",
                  EXIT_INVALID: "failed"}.get(proc.returncode)
        if status is None:
            raise HarnessError(f"bbrbench run ended with status {proc.returncode}: {message}")
        result: dict[str, Any] = {"status": status, "message": message, "host": os.uname().nodename}
        if status == "done":
            result["tar"], result["sha256"] = pack(run_dir)
        return result


# ---------------------------------------------------------------- the client's side


def unpack(result: dict[str, Any], run_dir: Path) -> None:
    """The run directory from a worker's result, checked against its checksum; whatever was at run_dir
    (an unfinished earlier try) is replaced only once the new one is complete."""
    data = result["tar"]
    if hashlib.sha256(data).hexdigest() != result["sha256"]:
        raise HarnessError(f"{run_dir}: results arrived damaged (SHA-256 mismatch)")
    partial = run_dir.with_name(run_dir.name + ".part")
    if partial.exists():
        shutil.rmtree(partial)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(partial, filter="data")
    if run_dir.exists():
        shutil.rmtree(run_dir)
    partial.rename(run_dir)


class DaskExecutor:
    """Every job at once to the scheduler; each needs the one `testbed` resource of a host. Results are
    taken in as they finish. A job whose worker died is retried by the scheduler on another worker, up to
    its allowed failures; then, or when the task raised `tries` times, it is reported failed.

    A context manager: connecting on entry, before the caller changes anything, so that a refused client
    leaves no trace."""

    def __init__(self, address: str, certs: Path, tries: int) -> None:
        if tries < 1:
            raise UsageError(f"--tries: must be >= 1 (got {tries})")
        self.address, self.certs, self.tries = address, certs, tries
        self.client: Any = None

    def __enter__(self) -> DaskExecutor:
        self.client = connect(self.address, self.certs)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.client.close()

    def execute(self, jobs: list[Job], catalog: AlgoCatalog) -> Iterator[tuple[Job, Outcome]]:
        from distributed import as_completed
        if not jobs:
            return
        client = self.client
        futures = {}
        try:
            for job in jobs:
                key = f"bbrbench-{job.point.id}-rep{job.rep}-{os.urandom(4).hex()}"
                future = client.submit(remote_run, job.raw, key=key, resources={RESOURCE: 1},
                                       retries=self.tries - 1, pure=False)
                futures[future] = job
            log.info("cluster %s: %d run(s) submitted", self.address, len(jobs))
            for future in as_completed(list(futures), loop=client.loop):
                job = futures.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # the task's own error after its retries, or KilledWorker
                    first = (str(exc).splitlines() or [""])[0]
                    yield job, Outcome("failed", f"{type(exc).__name__}: {first}")
                    continue
                log.debug("%s rep %d: %s on %s", job.point.label, job.rep + 1, result["status"], result["host"])
                if result["status"] == "done":
                    unpack(result, job.run_dir)
                yield job, Outcome(result["status"], result["message"])
        finally:
            # Ctrl-C or an error: nothing of this sweep stays queued on the cluster.
            client.cancel(list(futures))
