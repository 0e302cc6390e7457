"""One run of a scenario, from a clean slate back to a clean slate.

Order: remove leftovers of crashed runs -> probe the kernel (scratch namespace) -> build the topology ->
emulation -> bbrkit algorithms -> samplers -> iperf3 -> tear everything down (also on Ctrl-C, SIGTERM or
any error). The caller turns the results directory into a summary (analysis.report).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .. import progress, provenance
from ..errors import HarnessError
from ..results import write_json
from ..scenario import Scenario
from . import delayline
from . import netns as procs
from .emulation import LINK, Emulation, bottleneck_impl, check_runnable
from .host import write_host
from .netns import Namespaces, ProcessGroup, RunState, remove_netns
from .sampling import FlowSampler, LinkQueueSampler, QueueSampler, TraceRecorder
from .system import bbrctl, bbrkit_attached, bbrkit_params, bbrkit_without_trace, format_param
from .topology import Topology
from .traffic import Traffic

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


# ---------------------------------------------------------------- leftovers


def cleanup_prefix(prefix: str) -> list[str]:
    """Remove everything a run with this prefix may have left: processes, namespaces, delay lines,
    bbrkit attachments and parameter changes. Returns what was removed."""
    removed: list[str] = []
    pids = procs.tagged_pids(prefix)
    if pids:
        procs.kill_pids(pids)
        removed.append(f"{len(pids)} process(es)")
    for ns in procs.list_netns():
        if ns.startswith(prefix + "-"):
            remove_netns(ns)
            removed.append(f"netns {ns}")
    count = delayline.cleanup_stale(prefix)
    if count:
        removed.append(f"{count} delay line(s)")
    state = RunState.load(procs.STATE_DIR / f"{prefix}.json")
    if state is not None:
        undo_bbrkit(state)
        removed += [f"bbrkit {a} attachment" for a in state.attached]
        state.remove()
    return removed


def cleanup_stale(include_live: bool = False) -> list[str]:
    removed: list[str] = []
    for prefix in sorted(procs.stale_prefixes(include_live)):
        items = cleanup_prefix(prefix)
        if items:
            log.info("cleanup: run %s: removed %s", prefix, ", ".join(items))
        removed += items
    return removed


# ---------------------------------------------------------------- bbrkit algorithms


def prepare_bbrkit(scenario: Scenario, bbrkit: frozenset[str], state: RunState) -> None:
    """Attach the bbrkit algorithms the flows use, with the scenario's parameters (see use_bbrkit)."""
    wanted: dict[str, dict[str, float]] = {}
    for flow in scenario.flows:
        if flow.algo in bbrkit:
            wanted.setdefault(flow.algo, flow.params)
    use_bbrkit(wanted, state)


def use_bbrkit(wanted: dict[str, dict[str, float]], state: RunState) -> None:
    """Attach each wanted bbrkit algorithm and set every parameter (the given value, else the default, so
    results do not depend on what an earlier session left set), recording in `state` how to undo it.

    Attachments and parameters are global to the machine: a concurrent run may already use an algorithm.
    It is shared when both want the same parameters and refused otherwise, since each would corrupt the
    other's results. undo_bbrkit() is the counterpart."""
    if not wanted:
        return
    with procs.state_lock():
        others = procs.live_states(excluding=state.prefix)
        attached = bbrkit_attached()
        for algo, params in wanted.items():
            settings = {**bbrkit_params(algo, "default"), **params}
            sharing = [o for o in others if algo in o.uses]
            for other in sharing:
                if other.uses[algo] != settings:
                    raise HarnessError(f"{algo} is in use by run {other.prefix} with other parameters "
                                       f"({other.uses[algo]}); run these one at a time")
            state.uses[algo] = settings
            if algo not in attached:
                state.attached.append(algo)
                state.save()
                bbrctl("attach", algo)
            if settings and not sharing:
                state.restore_params[algo] = bbrkit_params(algo)
                state.save()
                bbrctl("set", algo, *(f"{k}={format_param(v)}" for k, v in settings.items()))
            state.save()


def undo_bbrkit(state: RunState) -> None:
    """Restore parameters and detach what this run attached, unless a live run still uses the algorithm:
    then that run inherits the duty."""
    with procs.state_lock():
        others = procs.live_states(excluding=state.prefix)
        for algo in set(state.restore_params) | set(state.attached):
            heir = next((o for o in others if algo in o.uses), None)
            if heir is not None:
                if algo in state.restore_params:
                    heir.restore_params.setdefault(algo, state.restore_params[algo])
                if algo in state.attached and algo not in heir.attached:
                    heir.attached.append(algo)
                heir.save()
                continue
            if algo not in bbrkit_attached():
                continue  # never attached (attach failed) or detached by hand: nothing to undo
            params = state.restore_params.get(algo)
            if params:
                try:
                    bbrctl("set", algo, *(f"{k}={format_param(v)}" for k, v in params.items()))
                except HarnessError as exc:
                    log.warning("restoring %s parameters: %s", algo, exc)
            if algo in state.attached:
                try:
                    bbrctl("detach", algo)
                except HarnessError as exc:
                    log.warning("detaching %s: %s", algo, exc)


# ---------------------------------------------------------------- the run


def run(scenario: Scenario, raw_scenario: dict[str, Any], out_dir: Path, bbrkit: frozenset[str],
        show_progress: bool = True) -> None:
    """Run the scenario and write its raw results into out_dir (a progress bar over the run's seconds
    unless show_progress is False, as in sweeps that show their own).

    bbrkit: the names of bbrkit algorithms (from the catalog the scenario was validated against)."""
    cleanup_stale()
    load_start = os.getloadavg()
    out_dir.mkdir(parents=True, exist_ok=True)
    raw_dir = out_dir / "raw"
    raw_dir.mkdir(exist_ok=True)
    prefix = procs.new_prefix()
    os.environ[procs.RUN_ENV] = prefix
    state = RunState(prefix)
    state.save()
    group = ProcessGroup(prefix)
    topo = Topology(prefix, scenario)
    emulation: Emulation | None = None
    events: dict[str, Any] = {"prefix": prefix}
    samplers: list[Any] = []
    trace: TraceRecorder | None = None
    traffic: Traffic | None = None
    for note in scenario.skipped:
        log.info("note: %s", note)
    try:
        with signals_interrupt():
            write_json(out_dir / "scenario.json", "run", {"resolved": scenario.to_dict(), "raw": raw_scenario,
                                                          "prefix": prefix, "kernel": os.uname().release,
                                                          "bbrbench": provenance.record()})
            with Namespaces() as scratch:
                probe = scratch.add(f"{prefix}-probe")
                delay = check_runnable(scenario, probe)
                if bottleneck_impl(scenario, probe) == LINK:
                    topo.link_netns = f"{prefix}-q"
            events["delay_mechanism"] = delay

            topo.build()
            emulation = Emulation(topo, delay, work_dir=raw_dir)
            emulation.start()
            prepare_bbrkit(scenario, bbrkit, state)
            traffic = Traffic(topo, group, raw_dir)
            traffic.start_servers()

            traced = sorted({f.algo for f in scenario.flows if f.algo in bbrkit})
            untraceable = bbrkit_without_trace(traced) if scenario.trace else []
            for algo in untraceable:
                log.info("note: no state trace of %s: this kernel gave it no ring buffer (bbrctl features)", algo)
            traced = [a for a in traced if a not in untraceable]
            if scenario.trace and traced:
                trace = TraceRecorder(group, traced, raw_dir / "trace.jsonl")
                trace.start()
            t0 = time.monotonic()
            events["t0_ns"] = int(t0 * 1e9)
            flow_file = (raw_dir / "flows.csv").open("w", newline="")
            queue_file = (raw_dir / "queue.csv").open("w", newline="")
            link_log = emulation.link_log
            queue_sampler = (LinkQueueSampler(link_log, t0, queue_file) if link_log
                             else QueueSampler(topo, group, t0, queue_file))
            samplers = [FlowSampler(topo, t0, flow_file), queue_sampler]
            for s in samplers:
                s.start()
            seconds = round(scenario.duration_s)
            with progress.bar(total=seconds, unit="s", desc=scenario.name, disable_bar=not show_progress) as bar:

                def tick() -> None:
                    bar.update(min(seconds, int(time.monotonic() - t0)) - bar.n)

                traffic.run(t0, on_tick=tick)
            write_host(out_dir, load_start)
    finally:
        with signals_deferred():
            steps: list[tuple[str, Callable[[], None]]] = [
                # The link's own queue log is complete only once the link has stopped.
                ("delay lines", lambda: emulation.stop() if emulation else None),
                ("samplers", lambda: _stop_samplers(samplers, events)),
                ("bbrctl trace", lambda: trace.stop() if trace else None),
                ("flow events", lambda: events.__setitem__("flows", traffic.events()) if traffic else None),
                ("emulation statistics", lambda: events.__setitem__("emulation", emulation.stats())
                 if emulation else None),
                ("processes", group.stop_all),
                ("namespaces", topo.destroy),
                ("bbrkit", lambda: undo_bbrkit(state)),
                ("stale delay lines", lambda: _cleanup_delay_lines(prefix)),
                ("state file", state.remove),
            ]
            # Each step runs whatever the previous ones did: one failure must not leave the rest behind.
            for what, step in steps:
                try:
                    step()
                except Exception as exc:
                    log.warning("clean-up of %s: %s", what, exc)
            os.environ.pop(procs.RUN_ENV, None)
            (raw_dir / "events.json").write_text(json.dumps(events, indent=2) + "\n")


def _stop_samplers(samplers: list[Any], events: dict[str, Any]) -> None:
    for s in samplers:
        s.stop()
        if s.error:
            events.setdefault("sampler_errors", []).append(s.error)
        s.out.close()


def _cleanup_delay_lines(prefix: str) -> None:
    delayline.cleanup_stale(prefix)
