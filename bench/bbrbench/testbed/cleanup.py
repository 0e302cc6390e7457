"""Leaving the machine as found: signals that interrupt a run like Ctrl-C, clean-up that no further
signal cuts short, and removal of what runs that died left behind (processes, namespaces, delay lines,
bbrkit attachments and parameters), by run prefix."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Iterator
from typing import Any

from . import wire
from .attachments import undo_bbrkit
from .netns import list_netns, remove_netns
from .procs import kill_pids, tagged_pids
from .runstate import STATE_DIR, RunState, stale_prefixes

log = logging.getLogger(__name__)


class Interrupted(KeyboardInterrupt):
    """SIGTERM/SIGHUP, handled like Ctrl-C."""


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    old = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Clean-up must run to its end: further Ctrl-C/SIGTERM are ignored while it does."""
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def cleanup_prefix(prefix: str) -> list[str]:
    """Remove everything a run with this prefix may have left: processes, namespaces, delay lines,
    bbrkit attachments and parameter changes. Returns what was removed."""
    removed: list[str] = []
    pids = tagged_pids(prefix)
    if pids:
        kill_pids(pids)
        removed.append(f"{len(pids)} process(es)")
    for ns in list_netns():
        if ns.startswith(prefix + "-"):
            remove_netns(ns)
            removed.append(f"netns {ns}")
    count = wire.kill_wire_processes(prefix)
    if count:
        removed.append(f"{count} delay line(s)")
    state = RunState.load(STATE_DIR / f"{prefix}.json")
    if state is not None:
        undo_bbrkit(state)
        removed += [f"bbrkit {a} attachment" for a in state.attached]
        state.remove()
    return removed


def cleanup_stale(include_live: bool = False) -> list[str]:
    removed: list[str] = []
    for prefix in sorted(stale_prefixes(include_live)):
        items = cleanup_prefix(prefix)
        if items:
            log.info("cleanup: run %s: removed %s", prefix, ", ".join(items))
        removed += items
    return removed
