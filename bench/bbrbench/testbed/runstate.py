"""Run ownership: everything a run creates carries its prefix, so a later run can find it.

A run's prefix is `bbrb-<pid>-<random>`. Its namespaces are `<prefix>-<role>`, its processes carry
BBRBENCH_RUN=<prefix>, and a state file in STATE_DIR records what the run changed outside its
namespaces (bbrkit algorithms attached, parameters set). A prefix whose pid is gone belongs to a crashed
run and is cleaned up by the next run or by `bbrbench cleanup`.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .netns import list_netns
from .procs import RUN_ENV, pid_alive, tagged_pids

RUN_BASE = "bbrb-"
STATE_DIR = Path(os.environ.get("BBRBENCH_STATE_DIR", "/run/bbrbench"))


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
