"""A test host's worker: its host lock (one worker per host), its scratch directories, the health report the
client checks, and one `bbrbench run` per task in a child process.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..provenance import SUBMITTED_ENV
from ..testbed.host import bbrctl_build, host_name, identity
from ..testbed.runstate import STATE_DIR
from .archive import pack
from .certs import certificate
from .replies import MAX_TEXT_CHARS

log = logging.getLogger(__name__)

# `bbrbench run` exit statuses (cli/common.py) that are answers about the run, not a lost worker.
EXIT_FAILED, EXIT_INVALID, EXIT_NOT_RUNNABLE = 1, 2, 3
PR_SET_PDEATHSIG = 1
SCRATCH_PREFIX = "bbrbench-cluster-"
# The resource every run asks for and every worker offers once: one experiment per host at a time.
RESOURCE = "testbed"
# What a run needs on PATH besides bbrctl (the harness's own helpers come from the same checkout).
NEEDED_TOOLS = ("ip", "tc", "nft", "iperf3", "ethtool")
# Where a worker takes its host's lock: the runs' state directory, root's alone (not the world-writable
# /run/lock, where another user could plant a link for root to follow), made on first use.
LOCK_DIR = STATE_DIR
# The lock file is opened without following a link, and closed in any child (a run must not hold it).
LOCK_OPEN_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC


def _die_with_parent() -> None:
    # A worker process killed mid-run takes its run with it: the run gets SIGTERM and cleans up as on
    # Ctrl-C, instead of holding the host's namespaces and attachments as an orphan.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


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
def close_http(server: Any) -> None:
    """Closes the HTTP server Dask starts in every scheduler and worker: it answers without a certificate
    (worker lists, logs, call stacks, metrics), and the cluster needs none of it."""
    if (http := getattr(server, "http_server", None)) is not None:
        http.stop()


def dask_setup(server: Any) -> None:
    close_http(server)
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


def _lock_dir_problem() -> str:
    """Why LOCK_DIR cannot hold the lock safely ('' if it can): it must be a directory (not a link) of this
    process's user that no one else may write to; made so if it is missing."""
    with contextlib.suppress(FileExistsError):
        LOCK_DIR.mkdir(mode=0o700)
    try:
        st = os.lstat(LOCK_DIR)
    except OSError as exc:
        return f"cannot use the lock directory {LOCK_DIR}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return (f"the lock directory {LOCK_DIR} is not a directory of this user's that only it can write to "
                f"(owner {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})")
    return ""


def _lock_host() -> None:
    """One worker per host: a worker takes the host's lock (released when its process ends, however) or
    reports, through health(), that another holds it, and is given no runs."""
    global _LOCK_PROBLEM
    if problem := _lock_dir_problem():
        _LOCK_PROBLEM = problem
        return
    path = _lock_path()
    while True:
        try:
            fd = os.open(path, LOCK_OPEN_FLAGS | os.O_CREAT, 0o600)
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
            fd = os.open(path, LOCK_OPEN_FLAGS)
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


def remote_run(raw: dict[str, Any], submitted: dict[str, Any], timeout_s: float, nonce: str) -> dict[str, Any]:
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
            return {"status": "timeout", "message": f"still running after {timeout_s:.0f} s; stopped", "host": host,
                    "nonce": nonce}
        last = (stderr.strip().splitlines() or [""])[-1].removeprefix("bbrbench: ")
        message = "".join(c if c.isprintable() else "?" for c in last)[:MAX_TEXT_CHARS]
        status = {0: "done", EXIT_NOT_RUNNABLE: "not_runnable", EXIT_FAILED: "failed",
                  EXIT_INVALID: "failed"}.get(code)
        if status is None:
            raise HarnessError(f"bbrbench run ended with status {code}: {message}")
        result: dict[str, Any] = {"status": status, "message": message, "host": host, "nonce": nonce}
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
    return {**record, "bbrctl_version": version, "objects_sha256": objects, "problems": problems,
            "certificate": _own_certificate()}


def _own_certificate() -> str | None:
    """This worker's certificate as 'SUBJECT serial HEX', as it says itself: the client records it with
    each run it delivers (a member could lie; docs/cluster.md, the trust model)."""
    from distributed import get_worker
    with contextlib.suppress(ValueError, OSError):
        security: Any = get_worker().security  # its TLS paths are set per instance
        cert = certificate(Path(security.tls_worker_cert))
        return f"{cert.subject.rfc4514_string()} serial {cert.serial_number:x}"
    return None


