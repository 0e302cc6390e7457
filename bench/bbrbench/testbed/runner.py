"""One run of a scenario, from a clean slate back to a clean slate.

Order: remove leftovers of crashed runs -> probe the kernel (scratch namespace) -> build the topology ->
emulation -> bbrkit algorithms -> samplers -> iperf3 -> tear everything down (also on Ctrl-C, SIGTERM or
any error). The caller turns the results directory into a summary (analysis.report).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import progress, provenance
from ..results import write_json
from ..scenario import Scenario
from . import tcpcounters, wire
from .attachments import prepare_bbrkit, undo_bbrkit
from .cleanup import cleanup_stale, signals_deferred, signals_interrupt
from .emulation import Emulation, plan
from .host import write_host
from .netns import Namespaces
from .procs import RUN_ENV, ProcessGroup
from .runstate import RunState, new_prefix
from .sampling import FlowSampler, LinkQueueSampler, QueueSampler, TraceRecorder
from .system import bbrkit_without_trace
from .topology import Topology
from .traffic import Traffic

log = logging.getLogger(__name__)


def run(scenario: Scenario, raw_scenario: dict[str, Any], out_dir: Path, bbrkit: frozenset[str],
        show_progress: bool = True,
        make_traffic: Callable[[Topology, ProcessGroup, Path], Traffic] = Traffic) -> None:
    """Run the scenario and write its raw results into out_dir (a progress bar over the run's seconds
    unless show_progress is False, as in sweeps that show their own).

    bbrkit: the names of bbrkit algorithms (from the catalog the scenario was validated against).
    make_traffic: what makes the flows (a Traffic with other senders: conformance's schedules)."""
    cleanup_stale()
    load_start = os.getloadavg()
    out_dir.mkdir(parents=True, exist_ok=True)
    raw_dir = out_dir / "raw"
    raw_dir.mkdir(exist_ok=True)
    prefix = new_prefix()
    os.environ[RUN_ENV] = prefix
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
                                                          "bbrbench": provenance.record(),
                                                          "submitted_by": provenance.submitted()})
            with Namespaces() as scratch:
                probe = scratch.add(f"{prefix}-probe")
                delay = plan(topo, probe)
            events["delay_mechanism"] = delay

            topo.build()
            emulation = Emulation(topo, delay, work_dir=raw_dir)
            emulation.start()
            prepare_bbrkit(scenario, bbrkit, state)
            traffic = make_traffic(topo, group, raw_dir)
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
                ("TCP counters", lambda: events.__setitem__("tcp_counters", {
                    h.name: tcpcounters.read(h.netns) for h in topo.hosts.values()}) if traffic else None),
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
            os.environ.pop(RUN_ENV, None)
            (raw_dir / "events.json").write_text(json.dumps(events, indent=2) + "\n")


def _stop_samplers(samplers: list[Any], events: dict[str, Any]) -> None:
    for s in samplers:
        s.stop()
        if s.error:
            events.setdefault("sampler_errors", []).append(s.error)
        s.out.close()


def _cleanup_delay_lines(prefix: str) -> None:
    wire.kill_wire_processes(prefix)
