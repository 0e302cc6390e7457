"""Processes of a run: the one short-command runner (in a namespace or not), long-running children
tagged with the run's prefix (environment variable BBRBENCH_RUN=<prefix>) so that a later run finds
them, and where binaries are found."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import HarnessError

RUN_ENV = "BBRBENCH_RUN"
TERM_GRACE_S = 2.0
COMMAND_TIMEOUT_S = 30.0
SERVER_READY_TIMEOUT_S = 10.0  # a server's start-up on a loaded 2-vCPU machine, with room to spare
READY_POLL_S = 0.05


# A source checkout's build directory: where `make` leaves the binaries before `make install`.
CHECKOUT_BUILD = Path(__file__).resolve().parents[3] / "build"


def find_binary(name: str, env_var: str) -> Path | None:
    """The binary to run: $env_var when set, else the one on PATH (`make install`), else the checkout's
    build/ (a developer who ran only `make`)."""
    env = os.environ.get(env_var)
    found = Path(env) if env else None
    if found is None:
        on_path = shutil.which(name)
        found = Path(on_path) if on_path else CHECKOUT_BUILD / name
    return found if found.is_file() and os.access(found, os.X_OK) else None


def wait_listening(netns: str | None, ports: Iterable[int], udp: bool = False,
                   servers: Sequence[subprocess.Popen[Any]] = (), what: str = "server",
                   timeout_s: float = SERVER_READY_TIMEOUT_S) -> None:
    """Returns once sockets in @netns (None: this one) listen on (TCP) or are bound to (UDP) every one of
    @ports: a server started in the background is ready only then (a client that came first is refused, or
    its datagram lost). One of @servers exiting first, or the time-out, is an error naming @what."""
    wanted = set(ports)
    deadline = time.monotonic() + timeout_s
    while True:
        listing = command(["ss", "-Hln" + ("u" if udp else "t")], netns=netns).stdout
        bound = {int(line.split()[3].rsplit(":", 1)[1]) for line in listing.splitlines() if line.strip()}
        if wanted <= bound:
            return
        for server in servers:
            if server.poll() is not None:
                raise HarnessError(f"{what} exited early (code {server.returncode})")
        if time.monotonic() > deadline:
            missing = ", ".join(str(p) for p in sorted(wanted - bound))
            raise HarnessError(f"{what} not listening on port {missing} after {timeout_s:g} s")
        time.sleep(READY_POLL_S)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def command(argv: Sequence[str], netns: str | None = None, timeout: float = COMMAND_TIMEOUT_S,
            check: bool = True, input_text: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a short command to completion; failures become one-line HarnessErrors."""
    full = (["ip", "netns", "exec", netns] if netns else []) + list(argv)
    try:
        result = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input_text, env=env)
    except FileNotFoundError:
        raise HarnessError(f"{argv[0]}: not installed") from None
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{' '.join(full)}: no answer within {timeout:g} s") from None
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise HarnessError(f"{' '.join(full)}: {detail[-1] if detail else f'exit {result.returncode}'}")
    return result


class ProcessGroup:
    """Long-running children of one run; each dies with its parent thread (pdeathsig) and is tagged."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.procs: list[subprocess.Popen[Any]] = []

    def spawn(self, argv: Sequence[str], netns: str | None = None, stdout: IO[Any] | int | None = None,
              stderr: IO[Any] | int | None = None, stdin: int | None = subprocess.DEVNULL,
              text: bool = False) -> subprocess.Popen[Any]:
        # setpriv makes the kernel kill the child if we die without cleaning up (SIGKILL, crash), and the
        # new session keeps the terminal's Ctrl-C away from children we must stop in order ourselves.
        full = ["setpriv", "--pdeathsig", "KILL", "--"]
        full += (["ip", "netns", "exec", netns] if netns else []) + list(argv)
        env = dict(os.environ, **{RUN_ENV: self.prefix})
        proc = subprocess.Popen(full, stdout=stdout if stdout is not None else subprocess.DEVNULL,
                                stderr=stderr if stderr is not None else subprocess.DEVNULL, stdin=stdin,
                                env=env, start_new_session=True, text=text)
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, grace_s: float = TERM_GRACE_S) -> None:
        if proc.poll() is None:
            try:
                proc.send_signal(sig)
                proc.wait(timeout=grace_s)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    proc.terminate()
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + TERM_GRACE_S
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()


def tagged_pids(prefix_filter: str) -> list[int]:
    """Processes whose BBRBENCH_RUN starts with prefix_filter (found through /proc/PID/environ)."""
    marker = f"{RUN_ENV}={prefix_filter}".encode()
    me = os.getpid()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if any(var.startswith(marker) for var in environ.split(b"\0")):
            found.append(int(entry.name))
    return found


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
