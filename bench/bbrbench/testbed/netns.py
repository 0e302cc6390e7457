"""Network namespaces, processes and run ownership: the one place that creates and removes them, for the
harness, its benchmarks and the tests.

: everything a run creates carries its prefix, so a later run can find it.

A run's prefix is `bbrb-<pid>-<random>`. Namespaces are named `<prefix>-<role>`, every child process gets
the environment variable BBRBENCH_RUN=<prefix>, and a state file in STATE_DIR records what the run changed
outside its namespaces (bbrkit algorithms attached, parameters set). A prefix whose pid is gone belongs to
a crashed run and is cleaned up by the next run or by `bbrbench cleanup`.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import HarnessError

RUN_BASE = "bbrb-"
RUN_ENV = "BBRBENCH_RUN"
STATE_DIR = Path(os.environ.get("BBRBENCH_STATE_DIR", "/run/bbrbench"))
TERM_GRACE_S = 2.0
COMMAND_TIMEOUT_S = 30.0


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


def new_prefix() -> str:
    return f"{RUN_BASE}{os.getpid()}-{secrets.token_hex(2)}"


def prefix_pid(name: str) -> int | None:
    """The owner pid encoded in a prefixed name, or None for names that are not ours."""
    if not name.startswith(RUN_BASE):
        return None
    pid = name[len(RUN_BASE):].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def run_prefix_of(name: str) -> str | None:
    parts = name.split("-")
    if prefix_pid(name) is None or len(parts) < 3:
        return None
    return "-".join(parts[:3])


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def command(argv: Sequence[str], netns: str | None = None, timeout: float = COMMAND_TIMEOUT_S,
            check: bool = True, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a short command to completion; failures become one-line HarnessErrors."""
    full = (["ip", "netns", "exec", netns] if netns else []) + list(argv)
    try:
        result = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input_text)
    except FileNotFoundError:
        raise HarnessError(f"{argv[0]}: not installed") from None
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{' '.join(full)}: no answer within {timeout:g} s") from None
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise HarnessError(f"{' '.join(full)}: {detail[-1] if detail else f'exit {result.returncode}'}")
    return result


@dataclass
class RunState:
    """What a run changed outside its own namespaces, kept on disk so a crashed run can be undone.

    `uses` maps each bbrkit algorithm the run's flows use to the parameters it set, so that concurrent
    runs can share an attachment: the last live user detaches it and restores its parameters."""

    prefix: str
    attached: list[str] = field(default_factory=list)
    restore_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    uses: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.prefix}.json"

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"prefix": self.prefix, "attached": self.attached,
                                   "restore_params": self.restore_params, "uses": self.uses}))
        tmp.replace(self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> RunState | None:
        try:
            data = json.loads(path.read_text())
            return cls(prefix=data["prefix"], attached=list(data["attached"]),
                       restore_params=dict(data["restore_params"]), uses=dict(data.get("uses", {})))
        except (OSError, ValueError, KeyError, TypeError):
            return None


def live_states(excluding: str) -> list[RunState]:
    """State files of other runs whose owner process is alive."""
    states: list[RunState] = []
    for path in sorted(STATE_DIR.glob(f"{RUN_BASE}*.json")):
        state = RunState.load(path)
        pid = prefix_pid(state.prefix) if state else None
        if state and state.prefix != excluding and pid is not None and pid_alive(pid):
            states.append(state)
    return states


@contextmanager
def state_lock() -> Iterator[None]:
    """Serialises changes to shared kernel state (attachments, parameters) between concurrent runs."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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


# ---------------------------------------------------------------- finding and removing leftovers


def list_netns() -> list[str]:
    result = command(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


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


def remove_netns(name: str) -> None:
    """Kill whatever runs inside the namespace (deleting it alone would leave them running), then delete it."""
    pids = command(["ip", "netns", "pids", name], check=False).stdout.split()
    kill_pids([int(p) for p in pids if p.isdigit()])
    command(["ip", "netns", "del", name], check=False)


class Namespaces:
    """Network namespaces made together and removed together, with every process inside them. A name is
    recorded before it is created, so destroy() after a failure half-way removes what exists."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add(self, name: str) -> str:
        self.names.append(name)
        command(["ip", "netns", "add", name])
        command(["ip", "-n", name, "link", "set", "lo", "up"])
        return name

    def veth(self, netns_a: str, if_a: str, netns_b: str, if_b: str) -> None:
        """A veth pair with one end in each namespace (down, unaddressed)."""
        command(["ip", "link", "add", if_a, "netns", netns_a, "type", "veth", "peer", "name", if_b, "netns", netns_b])

    def destroy(self) -> None:
        for name in reversed(self.names):
            remove_netns(name)
        self.names.clear()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.names))

    def __enter__(self) -> Namespaces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()


def stale_prefixes(include_live: bool = False) -> set[str]:
    """Prefixes of runs whose owner process is gone (or of all runs with include_live)."""
    prefixes: set[str] = set()
    for name in list_netns():
        prefix = run_prefix_of(name)
        if prefix:
            prefixes.add(prefix)
    if STATE_DIR.is_dir():
        for path in STATE_DIR.glob(f"{RUN_BASE}*.json"):
            prefixes.add(path.stem)
    for pid in tagged_pids(RUN_BASE):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for var in environ:
            if var.startswith(f"{RUN_ENV}=".encode()):
                prefixes.add(var.split(b"=", 1)[1].decode(errors="replace"))
    own = f"{RUN_BASE}{os.getpid()}-"
    return {p for p in prefixes if not p.startswith(own)
            and (include_live or not pid_alive(prefix_pid(p) or 0))}
