"""The processes that forward frames between two interfaces of a network namespace through AF_PACKET
sockets: the delay line (bbrkit-delay, testbed/delayline.py) and the link emulator (bbrkit-link,
testbed/linkemu.py). WireProcess starts one inside its namespace, waits for its ready line, reads its
counters (SIGUSR1) and stops it; kill_wire_processes ends those a killed run left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any, Self

from ..errors import HarnessError
from .cpuplace import confine
from .procs import CHECKOUT_BUILD, command, find_binary

MAX_IFNAME_LEN = 15
TAG_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
READY_TIMEOUT_S = 5.0
STATS_TIMEOUT_S = 2.0
STOP_GRACE_S = 3.0
COMMAND_TIMEOUT_S = 10.0
STDERR_KEEP_LINES = 20
# SCHED_FIFO for the forwarding threads: measured to keep departures on time while iperf3 saturates
# both cores (bench/delayline/README.md); the threads sleep between departures, and bbrkit-link's poll
# runs as SCHED_OTHER past 80% of each 100 ms (bench/link/README.md, "Fast paths"), so they cannot starve
# the machine.
RT_PRIO = 10
# Each wire binary's name and the environment variable that names another path to it.
DELAY_BINARY = ("bbrkit-delay", "BBRKIT_DELAY")
LINK_BINARY = ("bbrkit-link", "BBRKIT_LINK")


class WireError(HarnessError):
    """A wire process cannot be set up or has failed; the message is one line."""


def _binary(explicit: Path | None, name: str, env: str) -> Path:
    if explicit is not None:
        return explicit
    # A missing binary is reported by start(), naming where it was looked for.
    return find_binary(name, env) or CHECKOUT_BUILD / name


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return command(args, timeout=COMMAND_TIMEOUT_S, check=check)


def _check_ifname(what: str, name: str, error: type[WireError]) -> None:
    if not name or len(name) > MAX_IFNAME_LEN or any(c in name for c in "/ \t\n:"):
        raise error(f"{what}: invalid interface name {name!r}")


class WireProcess:
    """A bump in the wire between two interfaces of one network namespace: hosts on either side see each
    other as directly connected (same L2 segment / subnet). Subclasses name the binary, its options and
    their error class."""

    binary_name: str
    binary_env: str
    error: type[WireError] = WireError

    def __init__(self, netns: str, left_if: str, right_if: str, tag: str, binary: Path | None = None) -> None:
        if not netns or "/" in netns:
            raise self.error(f"netns: invalid namespace name {netns!r}")
        _check_ifname("left_if", left_if, self.error)
        _check_ifname("right_if", right_if, self.error)
        if left_if == right_if:
            raise self.error(f"left_if and right_if are both {left_if!r}")
        if not TAG_RE.fullmatch(tag):
            raise self.error(f"tag: {tag!r} must be 1-64 characters from [A-Za-z0-9._-]")
        self.netns = netns
        self.left_if = left_if
        self.right_if = right_if
        self.tag = tag
        self.binary = _binary(binary, self.binary_name, self.binary_env)
        self._proc: subprocess.Popen[str] | None = None
        self._readers: list[threading.Thread] = []
        self._cond = threading.Condition()
        self._ready = False
        self.ready_event: dict[str, Any] = {}  # the ready line as the binary printed it (what it got)
        self._stats: dict[str, int] = {}
        self._stats_seq = 0
        self._stderr: list[str] = []
        # What start() changed in the namespace, to undo in stop(): sysctl key -> old value, links set up.
        self._sysctls: dict[str, str] = {}
        self._links_up: list[str] = []
        # The CPUs it may run on ([]: any), set before start() (cpu_placement).
        self.cpus: list[int] = []

    def start(self) -> None:
        """Returns once forwarding works; raises self.error with a clear message."""
        if self._proc is not None:
            raise self.error(f"delay line {self.tag} is already running")
        if not os.access(self.binary, os.X_OK):
            raise self.error(f"{self.binary}: not found or not executable (make, make install, or set "
                                 f"{self.binary_env})")
        if _run(["ip", "netns", "exec", self.netns, "true"], check=False).returncode != 0:
            raise self.error(f"network namespace {self.netns!r} does not exist")
        try:
            self._prepare_links()
            self._launch()
        except BaseException:
            self.stop()
            raise

    def _prepare_links(self) -> None:
        for name in (self.left_if, self.right_if):
            show = _run(["ip", "-n", self.netns, "-j", "link", "show", "dev", name], check=False)
            if show.returncode != 0:
                raise self.error(f"no interface {name!r} in network namespace {self.netns!r}")
            if "UP" not in json.loads(show.stdout)[0].get("flags", []):
                _run(["ip", "-n", self.netns, "link", "set", "dev", name, "up"])
                self._links_up.append(name)
        # Without this, the namespace's own IPv6 stack would send router solicitations and DAD probes
        # out of the two interfaces into the emulated path.
        keys = [f"net.ipv6.conf.{name}.disable_ipv6" for name in (self.left_if, self.right_if)]
        old = _run(["ip", "netns", "exec", self.netns, "sysctl", "-n", *keys], check=False)
        values = old.stdout.split()
        if old.returncode == 0 and len(values) == len(keys):
            _run(["ip", "netns", "exec", self.netns, "sysctl", "-qw", *(f"{k}=1" for k in keys)])
            self._sysctls = dict(zip(keys, values))

    def _arguments(self) -> list[str]:
        """The binary's options besides --left, --right, --tag and --rt-prio."""
        raise NotImplementedError

    def _launch(self) -> None:
        args = ["ip", "netns", "exec", self.netns, *confine(
            [str(self.binary), "--left", self.left_if, "--right", self.right_if, "--tag", self.tag,
             "--rt-prio", str(RT_PRIO), *self._arguments()], self.cpus)]
        # Own session: a Ctrl-C aimed at the harness must not kill the line before stop() reads its counters.
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True)
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._readers = [threading.Thread(target=self._read_stdout, args=(self._proc.stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(self._proc.stderr,), daemon=True)]
        for reader in self._readers:
            reader.start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        with self._cond:
            while not self._ready and self._proc.poll() is None and time.monotonic() < deadline:
                self._cond.wait(0.05)
            ready = self._ready
        if not ready:
            self._reap(force=True)
            raise self.error(f"{self.binary_name} in {self.netns} did not start: {self._last_error()}")

    def _read_stdout(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                event: dict[str, Any] = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                if event.get("event") == "ready":
                    self._ready = True
                    self.ready_event = event
                elif event.get("event") in ("stats", "exit"):
                    self._stats = {k: v for k, v in event.items() if isinstance(v, int)}
                    self._stats_seq += 1
                self._cond.notify_all()

    def _read_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            with self._cond:
                self._stderr = (self._stderr + [line.strip()])[-STDERR_KEEP_LINES:]
                self._cond.notify_all()

    def _last_error(self) -> str:
        with self._cond:
            lines = [line for line in self._stderr if line]
        if lines:
            return lines[-1]
        code = self._proc.returncode if self._proc else None
        return f"exit status {code}" if code is not None else f"no ready line within {READY_TIMEOUT_S:.0f} s"

    @property
    def pid(self) -> int | None:
        """The running binary's process id (its threads are /proc/PID/task), None before start or after exit."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def stats(self) -> dict[str, int]:
        """The binary's counters (its stats line's integers), fresh while running, final after stop()."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            with self._cond:
                return dict(self._stats)
        with self._cond:
            seq = self._stats_seq
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + STATS_TIMEOUT_S
        with self._cond:
            while self._stats_seq == seq and time.monotonic() < deadline:
                self._cond.wait(0.05)
            if self._stats_seq == seq:
                raise self.error(f"{self.binary_name} {self.tag} did not report counters: {self._last_error()}")
            return dict(self._stats)

    def _reap(self, force: bool) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL if force else signal.SIGTERM)
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for reader in self._readers:
            reader.join(STOP_GRACE_S)
        self._readers = []

    def stop(self) -> None:
        """Idempotent: ends the process (its last counters stay readable) and undoes start()'s changes."""
        self._reap(force=False)
        self._proc = None
        with self._cond:
            self._ready = False
        namespace_alive = _run(["ip", "netns", "exec", self.netns, "true"], check=False).returncode == 0
        if namespace_alive and self._sysctls:
            _run(["ip", "netns", "exec", self.netns, "sysctl", "-qw",
                  *(f"{k}={v}" for k, v in self._sysctls.items())], check=False)
        if namespace_alive:
            for name in self._links_up:
                _run(["ip", "-n", self.netns, "link", "set", "dev", name, "down"], check=False)
        self._sysctls = {}
        self._links_up = []

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _tag_of(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "--tag" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--tag="):
            return arg[len("--tag="):]
    return None


def _wire_processes(tag_prefix: str) -> list[int]:
    names = {n for name, env in (DELAY_BINARY, LINK_BINARY) for n in (name, Path(os.environ.get(env, name)).name)}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        tag = _tag_of(argv)
        if argv and Path(argv[0]).name in names and tag is not None and tag.startswith(tag_prefix):
            pids.append(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def kill_wire_processes(tag_prefix: str) -> int:
    """Kills leftover bbrkit-delay and bbrkit-link processes whose --tag starts with tag_prefix; returns
    how many."""
    pids = _wire_processes(tag_prefix)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    for pid in filter(_alive, pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(pids)
