"""Sweeps over a rack of test hosts on Dask distributed: one scheduler, one worker per host (a lock), each
with one `testbed` resource. The client checks each worker as it joins (health()) and places every run
itself, spreading each point's repetitions over the hosts (docs/cluster.md).

The workers run experiments as root, so everything speaks mutual TLS with certificates of an authority
whose key stays with whoever ran `bbrbench cluster init`: per host (`add-host`, its addresses as SANs,
checked by peers) and per user (`add-user`, client use only), revoked through a CRL every member checks.
Whoever may submit runs code as root on every worker (Dask runs pickled functions); the client in turn
takes results as msgpack data only, never a worker's pickle.

A run on a worker is one `bbrbench run` in a child process (the runner owns signal handlers, which only
the main thread of a process may set); its results directory comes back as a gzipped tar, which the client
unpacks as plain files after checking it is the run it asked for, exactly where a local run would have
put it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import datetime
import fcntl
import io
import json
import logging
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from . import provenance
from .errors import HarnessError, UsageError
from .provenance import SUBMITTED_ENV
from .scenario import AlgoCatalog
from .sweep import Job, Outcome, nominal_s
from .sweep.store import accept_run
from .testbed.host import bbrctl_build, host_key, host_name, identity

log = logging.getLogger(__name__)

CA_FILE, CERT_FILE, KEY_FILE, CRL_FILE = "ca.pem", "node.pem", "node-key.pem", "crl.pem"
# Kept only in the authority's directory, with whoever runs `cluster init`.
CA_KEY_FILE, ISSUED_FILE = "ca-key.pem", "issued.json"
# Certificates start this far back, so that a host whose clock is a little behind accepts them.
BACKDATE = datetime.timedelta(minutes=10)
EXPIRY_WARN = datetime.timedelta(days=30)
RESOURCE = "testbed"
CERT_DAYS = 365
CONNECT_TIMEOUT_S = 20
# `bbrbench run` exit statuses (cli/common.py) that are answers about the run, not a lost worker.
EXIT_FAILED, EXIT_INVALID, EXIT_NOT_RUNNABLE = 1, 2, 3
PR_SET_PDEATHSIG = 1
SCRATCH_PREFIX = "bbrbench-cluster-"
# A run's files (raw samples, summaries, plots) are tens of MiB; a result larger unpacked is refused
# rather than held in the client's memory.
RESULT_MAX_BYTES = 1 << 30
GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib's framing flag for a gzip header and trailer
# A run may take RUN_TIMEOUT_FACTOR times its scenario's duration plus RUN_SETUP_S (namespaces, bbrctl,
# summary) before its host counts as hung; a slow, loaded host stays well inside.
RUN_TIMEOUT_FACTOR, RUN_SETUP_S = 2.0, 120.0
# The client's look at the scheduler for workers that joined or left, between results.
REFRESH_S = 2.0
# Runs left with no healthy worker for this long are lost (the command fails and says how to resume).
NO_WORKER_S = 60.0
# What a run needs on PATH besides bbrctl (the harness's own helpers come from the same checkout).
NEEDED_TOOLS = ("ip", "tc", "nft", "iperf3", "ethtool")
# Where a worker takes its host's lock (root's; also where util-linux keeps locks).
LOCK_DIR = Path("/run/lock")


# ---------------------------------------------------------------- certificates


def _x509() -> Any:
    try:
        from cryptography import x509
    except ImportError:
        raise HarnessError("the cluster needs cryptography and Dask distributed: pip install 'bbrbench[cluster]'") \
            from None
    return x509


def _write_private(path: Path, data: bytes) -> None:
    """A key file: created 0600 (never readable by others, not even for a moment), replaced whole."""
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    tmp.rename(path)


def _private_key_bytes(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem(obj: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return bytes(obj.public_bytes(serialization.Encoding.PEM))


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.UTC)
    return now - BACKDATE, now + datetime.timedelta(days=CERT_DAYS)


def _load_ca(ca_dir: Path) -> tuple[Any, Any, dict[str, Any]]:
    """The authority's certificate, key (checked to be 0600) and register of issued certificates."""
    x509 = _x509()
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    for n in (CA_FILE, CA_KEY_FILE, ISSUED_FILE):
        if not (ca_dir / n).is_file():
            raise HarnessError(f"cluster: {ca_dir / n} is missing; `bbrbench cluster init --ca {ca_dir}` first")
    _check_private(ca_dir / CA_KEY_FILE)
    return (x509.load_pem_x509_certificate((ca_dir / CA_FILE).read_bytes()),
            load_pem_private_key((ca_dir / CA_KEY_FILE).read_bytes(), None),
            json.loads((ca_dir / ISSUED_FILE).read_text()))


def _write_crl(ca_dir: Path, ca: Any, ca_key: Any, issued: dict[str, Any]) -> None:
    """crl.pem: the serials of every revoked certificate, signed by the authority."""
    x509 = _x509()
    from cryptography.hazmat.primitives import hashes
    now, until = _validity()
    builder = x509.CertificateRevocationListBuilder().issuer_name(ca.subject).last_update(now).next_update(until)
    for entry in issued.values():
        if entry.get("revoked"):
            builder = builder.add_revoked_certificate(
                x509.RevokedCertificateBuilder().serial_number(int(entry["serial"], 16))
                .revocation_date(datetime.datetime.fromisoformat(entry["revoked"])).build())
    (ca_dir / CRL_FILE).write_bytes(_pem(builder.sign(ca_key, hashes.SHA256())))
    (ca_dir / ISSUED_FILE).write_text(json.dumps(issued, indent=2) + "\n")


def init_ca(ca_dir: Path, force: bool = False) -> str:
    """A fresh authority in ca_dir (ca.pem, ca-key.pem 0600, an empty crl.pem, issued.json). Its key stays
    here: whoever holds it can make members. Returns when its certificate expires."""
    x509 = _x509()
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    if (ca_dir / CA_KEY_FILE).exists() and not force:
        raise UsageError(f"cluster init: {ca_dir} already holds an authority; pass --force to replace it "
                         f"(every certificate it issued stops working)")
    start, until = _validity()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bbrbench cluster CA")])
    key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(key, hashes.SHA256()))
    ca_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_private(ca_dir / CA_KEY_FILE, _private_key_bytes(key))
    (ca_dir / CA_FILE).write_bytes(_pem(ca))
    _write_crl(ca_dir, ca, key, {})
    return until.date().isoformat()


def issue(ca_dir: Path, name: str, out: Path, addresses: list[str] | None) -> str:
    """A member's directory `out` (ca.pem, crl.pem, node.pem, node-key.pem 0600): for a host (scheduler
    or worker; `addresses`, its names and IP addresses, become its SANs, which peers check) usable as
    server and client, for a user (addresses None) as client only. Returns its expiry date."""
    x509 = _x509()
    import ipaddress

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    if not name or not all(c.isalnum() or c in "._-" for c in name):
        raise UsageError(f"cluster: name {name!r}: letters, digits and . _ - only")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"cluster: {out} is not empty; give a new directory for the certificate")
    ca, ca_key, issued = _load_ca(ca_dir)
    if name in issued and not issued[name].get("revoked"):
        raise UsageError(f"cluster: {name} already has a certificate; revoke it first")
    sans: list[Any] = []
    for a in addresses or []:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(a)))
        except ValueError:
            sans.append(x509.DNSName(a))
    if addresses is None:
        sans.append(x509.UniformResourceIdentifier(f"urn:bbrbench:user:{name}"))
    elif not sans:
        raise UsageError("cluster add-host: --address: at least one name or IP address of the host")
    usage = ([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH] if addresses is not None
             else [ExtendedKeyUsageOID.CLIENT_AUTH])
    start, until = _validity()
    until = min(until, ca.not_valid_after_utc)
    key = ec.generate_private_key(ec.SECP256R1())
    kind = "host" if addresses is not None else "user"
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"bbrbench {kind} {name}")]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
            .sign(ca_key, hashes.SHA256()))
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_private(out / KEY_FILE, _private_key_bytes(key))
    (out / CERT_FILE).write_bytes(_pem(cert))
    shutil.copyfile(ca_dir / CA_FILE, out / CA_FILE)
    shutil.copyfile(ca_dir / CRL_FILE, out / CRL_FILE)
    issued[name] = {"kind": kind, "serial": f"{cert.serial_number:x}", "not_after": until.isoformat(),
                    "addresses": addresses or []}
    _write_crl(ca_dir, ca, ca_key, issued)
    return until.date().isoformat()


def revoke(ca_dir: Path, name: str) -> None:
    """Adds name's certificate to the authority's crl.pem (which every member must then be given)."""
    ca, ca_key, issued = _load_ca(ca_dir)
    if name not in issued:
        raise UsageError(f"cluster revoke: {name}: no certificate of that name (issued: {', '.join(issued) or 'none'})")
    if issued[name].get("revoked"):
        raise UsageError(f"cluster revoke: {name} is revoked already")
    issued[name]["revoked"] = datetime.datetime.now(datetime.UTC).isoformat()
    _write_crl(ca_dir, ca, ca_key, issued)


def _check_private(path: Path) -> None:
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise HarnessError(f"cluster: {path} is readable by others (mode {mode:o}); chmod 600 it")


def expiry(directory: Path) -> datetime.datetime:
    """When the member's certificate in directory expires; warned about within EXPIRY_WARN."""
    cert = _x509().load_pem_x509_certificate((directory / CERT_FILE).read_bytes())
    until: datetime.datetime = cert.not_valid_after_utc
    left = until - datetime.datetime.now(datetime.UTC)
    if left <= datetime.timedelta(0):
        raise HarnessError(f"cluster: {directory / CERT_FILE} expired on {until.date()}; ask for a new one "
                           f"(cluster add-host/add-user)")
    if left < EXPIRY_WARN:
        log.warning("cluster: %s expires on %s (in %d days)", directory / CERT_FILE, until.date(), left.days)
    return until


def _security(directory: Path) -> Any:
    """Dask's TLS settings for a member holding directory's certificate."""
    for n in (CA_FILE, CRL_FILE, CERT_FILE, KEY_FILE):
        if not (directory / n).is_file():
            raise HarnessError(f"cluster: {directory / n} is missing; ask whoever runs `bbrbench cluster init` for "
                               f"a certificate (cluster add-host/add-user) and give its directory (--cluster-certs)")
    _check_private(directory / KEY_FILE)
    expiry(directory)
    return CheckedSecurity(tls_ca_file=str(directory / CA_FILE), tls_client_cert=str(directory / CERT_FILE),
                   tls_client_key=str(directory / KEY_FILE), tls_scheduler_cert=str(directory / CERT_FILE),
                   tls_scheduler_key=str(directory / KEY_FILE), tls_worker_cert=str(directory / CERT_FILE),
                   tls_worker_key=str(directory / KEY_FILE), require_encryption=True)


try:
    from distributed.security import Security as _Security
except ImportError:  # without the cluster extra; connect() says what to install
    _Security = object  # type: ignore[misc,assignment]


class CheckedSecurity(_Security):
    """Dask's TLS contexts, which also check the authority's revocation list (crl.pem beside ca.pem) and,
    on connecting, the peer's name or address against its certificate's SANs (Dask leaves that off).
    A class of this module: the nanny pickles it to its worker."""

    def _get_tls_context(self, tls: dict[str, Any], purpose: ssl.Purpose) -> ssl.SSLContext:
        ctx: ssl.SSLContext = super()._get_tls_context(tls, purpose)
        ctx.load_verify_locations(cafile=str(Path(tls["ca_file"]).with_name(CRL_FILE)))
        ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
        ctx.check_hostname = purpose == ssl.Purpose.SERVER_AUTH
        return ctx


def start_commands(directory: Path, host: str, port: int) -> tuple[list[str], list[str]]:
    """The scheduler's command line (on `host`) and a worker's (its own address is given with --host)."""
    bbrbench = [sys.executable, "-m", "bbrbench", "cluster"]
    return ([*bbrbench, "scheduler", "--certs", str(directory), "--host", host, "--port", str(port)],
            [*bbrbench, "worker", f"tls://{host}:{port}", "--certs", str(directory)])


def _serve(make: Callable[[], Any]) -> None:
    """Runs the Dask server make() builds (in the event loop it binds to) until it finishes or SIGINT or
    SIGTERM close it (a worker's runs cleaning up)."""
    import asyncio

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with make() as server:
            ends = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(server.finished())]
            await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
            for task in ends:
                task.cancel()

    asyncio.run(main())


def serve_scheduler(certs: Path, host: str, port: int) -> None:
    """A scheduler on host:port; its HTTP server (health, metrics) on host too, at an unused port."""
    from distributed import Scheduler
    security = _security(certs)
    _serve(lambda: Scheduler(host=host, port=port, protocol="tls", security=security, dashboard=False,
                             dashboard_address=f"{host}:0"))


def serve_worker(scheduler: str, certs: Path, host: str) -> None:
    """One worker with its nanny, listening on host only (its certificate's SANs must name it), with one
    `testbed` resource, this module preloaded in both."""
    from distributed import Nanny
    security = _security(certs)
    _serve(lambda: Nanny(scheduler, nthreads=1, resources={RESOURCE: 1}, security=security, host=host,
                         protocol="tls", dashboard=False, dashboard_address=f"{host}:0", preload=[__name__],
                         preload_nanny=[__name__]))


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
        # Results are data: msgpack only, so that nothing a worker sends is unpickled here.
        return Client(address, security=security, timeout=CONNECT_TIMEOUT_S, set_as_default=False,
                      deserializers=["msgpack"])
    except (OSError, TimeoutError) as exc:
        raise HarnessError(f"cluster: cannot connect to {address}: {str(exc).splitlines()[0]}") from None


# ---------------------------------------------------------------- the worker's side


def _die_with_parent() -> None:
    # A worker process killed mid-run takes its run with it: the run gets SIGTERM and cleans up as on
    # Ctrl-C, instead of holding the host's namespaces and attachments as an orphan.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def pack(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    return buffer.getvalue()


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
def dask_setup(server: Any) -> None:
    _remove_scratch()
    atexit.register(_remove_scratch, own=True, wait_s=RUN_STOP_TIMEOUT_S)
    if type(server).__name__ == "Worker":  # not its nanny, which would hold the lock its worker needs
        _lock_host()
    else:  # the nanny exits after its worker: a worker killed outright leaves it its lock file to remove
        atexit.register(_unlock_host)


# Why this worker may not run experiments on its host: another worker there holds the host's lock.
_LOCK_PROBLEM = ""
_lock_fds: list[int] = []


def _lock_path() -> Path:
    return LOCK_DIR / f"bbrbench-worker-{host_name(identity())}.lock"


def _names(path: Path, fd: int) -> bool:
    """Whether path is still the file open as fd (not removed, or replaced, by its last holder)."""
    try:
        st, held = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _lock_host() -> None:
    """One worker per host: a worker takes the host's lock (released when its process ends, however) or
    reports, through health(), that another holds it, and is given no runs."""
    global _LOCK_PROBLEM
    path = _lock_path()
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            _LOCK_PROBLEM = f"cannot open the host lock {path}: {exc.strerror}"
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            _LOCK_PROBLEM = f"another worker (pid {holder or '?'}) already runs experiments on this host"
            return
        if _names(path, fd):
            break
        os.close(fd)  # its holder removed it as we opened it: take the one there now
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _lock_fds.append(fd)


def _unlock_host() -> None:
    """The host's lock file removed, so that stopped workers leave none behind: by the worker holding it,
    as it closes, or by any process that can take it (a killed worker's nanny as it exits). Removed while
    held, and a taker checks it still has the file named (_lock_host), so no two workers ever hold two
    files of one host."""
    path = _lock_path()
    if not _lock_fds:
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a live worker's
            os.close(fd)
            return
        _lock_fds.append(fd)
    while _lock_fds:
        fd = _lock_fds.pop()
        if _names(path, fd):
            path.unlink()
        os.close(fd)


def dask_teardown(_worker: Any) -> None:
    # A closing worker stops its runs first: each cleans up its namespaces as on Ctrl-C.
    for proc in list(_RUNS):
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=RUN_STOP_TIMEOUT_S)
    _remove_scratch(own=True)
    if _lock_fds:  # a worker's (its nanny's teardown comes before its worker has stopped)
        _unlock_host()


def _run_child(argv: list[str], env: dict[str, str], timeout_s: float) -> tuple[int | None, str]:
    """A child process's exit status and stderr; None for one still running after timeout_s (stopped then,
    cleaning up as on Ctrl-C, killed if it does not end)."""
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                          preexec_fn=_die_with_parent) as proc:
        _RUNS.add(proc)
        try:
            _, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.communicate(timeout=RUN_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            return None, ""
        finally:
            _RUNS.discard(proc)
    return proc.returncode, stderr


def remote_run(raw: dict[str, Any], submitted: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One `bbrbench run` of a sweep point on this (worker's) host, recorded as run for the `submitted`
    command (the client's provenance record). Returns its status (done, not_runnable, failed, or timeout
    when it ran past timeout_s) and message, and, when it ran, its results directory packed. Raises only
    when the run ended abnormally (killed): the client then gives it to another host."""
    _remove_scratch()
    if _LOCK_PROBLEM:
        raise HarnessError(f"this worker may not run experiments: {_LOCK_PROBLEM}")
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-") as tmp:
        scenario = Path(tmp) / "scenario.json"
        scenario.write_text(json.dumps(raw))
        run_dir = Path(tmp) / "run"
        env = {**os.environ, SUBMITTED_ENV: json.dumps(submitted)}
        code, stderr = _run_child([sys.executable, "-m", "bbrbench", "-q", "run", "--no-plots", "--out",
                                   str(run_dir), str(scenario)], env, timeout_s)
        host = str(identity()["hostname"])
        if code is None:
            return {"status": "timeout", "message": f"still running after {timeout_s:.0f} s; stopped", "host": host}
        message = (stderr.strip().splitlines() or [""])[-1].removeprefix("bbrbench: ")
        status = {0: "done", EXIT_NOT_RUNNABLE: "not_runnable", EXIT_FAILED: "failed",
                  EXIT_INVALID: "failed"}.get(code)
        if status is None:
            raise HarnessError(f"bbrbench run ended with status {code}: {message}")
        result: dict[str, Any] = {"status": status, "message": message, "host": host}
        if status == "done":
            result["tar"] = pack(run_dir)
        return result


def health() -> dict[str, Any]:
    """What the client checks of a worker before giving it runs: which host it is (and its kernel, CPUs and
    algorithm objects, which decide what its runs pool with) and what keeps it from running experiments."""
    record = identity()
    version, objects = bbrctl_build()
    problems = []
    if os.geteuid() != 0:
        problems.append("not root (network namespaces, qdiscs and BPF need it)")
    if version is None:
        problems.append("no working bbrctl on PATH")
    elif objects is None:
        problems.append(f"{version} does not report its algorithm objects' hash (rebuild it)")
    if missing := [t for t in NEEDED_TOOLS if shutil.which(t) is None]:
        problems.append(f"missing {', '.join(missing)}")
    if _LOCK_PROBLEM:
        problems.append(_LOCK_PROBLEM)
    return {**record, "bbrctl_version": version, "objects_sha256": objects, "problems": problems}


# ---------------------------------------------------------------- the client's side


# A member of a result's tar: a directory or a regular file, by a relative name that stays inside.
def _member_path(member: tarfile.TarInfo, root: Path) -> Path:
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts or not (member.isfile() or member.isdir()):
        raise HarnessError(f"result member {member.name!r}: only plain files and directories inside the run "
                           f"directory are accepted")
    return root.joinpath(*[p for p in name.parts if p != "."])


def _gunzip(data: bytes) -> bytes:
    """The whole gzip stream, decompressed before any file is written: its CRC and length are checked only
    at its end (a damaged tail would otherwise be read as file content), and a bomb stops at the cap."""
    stream = zlib.decompressobj(wbits=GZIP_WBITS)
    tar = stream.decompress(data, RESULT_MAX_BYTES + 1)
    if len(tar) > RESULT_MAX_BYTES:
        raise HarnessError(f"results refused: larger than {RESULT_MAX_BYTES >> 20} MiB unpacked")
    if not stream.eof or stream.unused_data:
        raise HarnessError("results arrived damaged (the gzip stream is cut short or followed by junk)")
    return tar


def _extract(data: bytes, root: Path) -> None:
    """The tar's files and directories under root, written by this process with its own modes: no links,
    devices or owners from the sender (tarfile's filter='data' does this from Python 3.11.4 only)."""
    root.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(_gunzip(data)), mode="r:") as tar:
            for member in tar:
                path = _member_path(member, root)
                if member.isdir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None  # a regular file's
                with source, path.open("xb") as fh:
                    shutil.copyfileobj(source, fh)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise HarnessError(f"results arrived damaged ({exc})") from None


def unpack(data: bytes, run_dir: Path, raw: dict[str, Any], submitted: dict[str, Any]) -> None:
    """The run directory from a worker's result, accepted only when it is the run asked for (its
    scenario.json holds this job's scenario and the submitting command's record); whatever was at run_dir
    (an unfinished earlier try) is replaced only once the new one is complete."""
    partial = run_dir.with_name(run_dir.name + ".part")
    if partial.exists():
        shutil.rmtree(partial)
    try:
        _extract(data, partial)
    except HarnessError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise HarnessError(f"{run_dir}: {exc}") from None
    accept_run(partial, run_dir, raw, submitted)


def run_timeout_s(job: Job) -> float:
    """How long a run may take before its host counts as hung: its traffic time twice over, plus set-up."""
    return RUN_TIMEOUT_FACTOR * nominal_s(job) + RUN_SETUP_S


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


class DaskExecutor:
    """Runs on the healthy workers of a Dask scheduler, one at a time per host, each pinned by this client
    to the host it chose: each point's repetitions spread over the hosts (a free host takes the pending
    run of the point it has run least), so that a host never stands in for a point. A worker is checked
    (health()) when first seen and given nothing if it cannot run experiments, if another worker on its
    host came first, or, unless mix_hosts, if its kind of host (kernel, algorithm objects, CPUs) is not
    the first healthy worker's. A run whose worker dies, or that raises, goes to another host, up to
    `tries`; a run that hangs past its timeout, is damaged, or whose tries are spent is lost, as is every
    run left when the scheduler goes away or no healthy worker is left.

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
                report = self.client.run(health, workers=[address])[address]
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

    def _pick(self, queue: list[Job], member: Member, placed: Counter[tuple[str, str]],
              excluded: dict[str, dict[str, str]]) -> Job | None:
        """The queued run for this host: of the point it has run least (the queue's order breaks ties)."""
        usable = [j for j in queue if member.host not in excluded.get(j.point.id, {})]
        return min(usable, key=lambda j: placed[(j.point.id, member.host)], default=None)

    def execute(self, jobs: list[Job], catalog: AlgoCatalog) -> Iterator[tuple[Job, Outcome]]:
        client = self.client
        queue = list(jobs)
        placed: Counter[tuple[str, str]] = Counter()
        excluded: dict[str, dict[str, str]] = {}  # point id -> host -> why it cannot run there
        tries: Counter[int] = Counter()
        running: dict[Any, tuple[Job, Member]] = {}
        alone_since: float | None = None
        try:
            while queue or running:
                try:
                    self._refresh()
                except HarnessError as exc:
                    for job in [*queue, *(j for j, _ in running.values())]:
                        yield job, Outcome("lost", str(exc))
                    queue.clear()
                    running.clear()
                    return
                for future, (job, member) in list(running.items()):
                    if member.address not in self.members:  # its worker left: the run goes elsewhere
                        del running[future]
                        future.cancel()
                        yield from self._retry(job, f"worker {member.label} left", queue, tries)
                busy = {m.address for _, m in running.values()}
                for member in self.members.values():
                    chosen = None if member.address in busy else self._pick(queue, member, placed, excluded)
                    if chosen is None:
                        continue
                    queue.remove(chosen)
                    placed[(chosen.point.id, member.host)] += 1
                    future = client.submit(remote_run, chosen.raw, self.submitted, run_timeout_s(chosen),
                                           key=f"bbrbench-{chosen.point.id}-rep{chosen.rep}-{os.urandom(4).hex()}",
                                           workers=[member.address], allow_other_workers=False, pure=False)
                    running[future] = (chosen, member)
                    log.debug("%s rep %d: to %s", chosen.point.label, chosen.rep + 1, member.label)
                hosts = {m.host for m in self.members.values()}
                for job in [j for j in queue if hosts and hosts <= set(excluded.get(j.point.id, {}))]:
                    queue.remove(job)
                    yield job, Outcome("not_runnable", "; ".join(f"{h}: {w}" for h, w in
                                                                 excluded[job.point.id].items()))
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
                    job, member = running.pop(future)
                    try:
                        result = future.result()
                    except Exception as exc:  # raised on the worker, cancelled, or lost with it
                        first = (str(exc).splitlines() or [""])[0]
                        yield from self._retry(job, f"{type(exc).__name__} on {member.label}: {first}", queue,
                                               tries)
                        continue
                    yield from self._take(job, member, result, queue, placed, excluded)
        finally:
            # Ctrl-C or an error: nothing of this sweep stays queued on the cluster.
            client.cancel(list(running))

    def _retry(self, job: Job, why: str, queue: list[Job], tries: Counter[int]) -> Iterator[tuple[Job, Outcome]]:
        tries[id(job)] += 1
        if tries[id(job)] < self.tries:
            log.warning("%s rep %d: %s; trying again", job.point.label, job.rep + 1, why)
            queue.insert(0, job)
        else:
            yield job, Outcome("lost", f"{why} ({self.tries} tries)")

    def _take(self, job: Job, member: Member, result: dict[str, Any], queue: list[Job],
              placed: Counter[tuple[str, str]], excluded: dict[str, dict[str, str]]) -> Iterator[tuple[Job, Outcome]]:
        """A run's result: taken in, or recorded as what it says."""
        if not isinstance(result, dict) or not isinstance(result.get("tar", b""), bytes):
            yield job, Outcome("lost", f"from {member.label}: a malformed result")
            return
        status, message = str(result.get("status")), str(result.get("message", ""))
        log.debug("%s rep %d: %s on %s", job.point.label, job.rep + 1, status, member.label)
        if status == "not_runnable":
            # An answer about this host only: the run goes to another, and this host takes no more of it.
            excluded.setdefault(job.point.id, {})[member.host] = message
            placed[(job.point.id, member.host)] -= 1
            queue.insert(0, job)
            yield job, Outcome("not_runnable_on", message, host=str(member.report.get("hostname")))
        elif status == "done":
            try:
                unpack(result["tar"], job.run_dir, job.raw, self.submitted)
            except HarnessError as exc:
                yield job, Outcome("lost", f"from {member.label}: {exc}")
            else:
                yield job, Outcome("done")
        elif status == "failed":
            yield job, Outcome("failed", message)
        else:  # timeout
            yield job, Outcome("lost", f"on {member.label}: {message}")
