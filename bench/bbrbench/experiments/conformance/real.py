"""The real runner: a case's path and sender as a testbed run, and the flow's `bbrctl trace` records."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .model import Case

RATE_TRACE = "rate.trace"  # a case's rate_steps as the Mahimahi trace its real run plays


def rate_trace_lines(steps: tuple[tuple[float, float], ...], duration_s: float) -> list[str]:
    """A Mahimahi trace (one line per 1500-byte delivery opportunity, in ms) of a piecewise-constant rate."""
    from ...ratetrace import OPPORTUNITY_BYTES
    lines = []
    bounds = [at for at, _ in steps[1:]] + [duration_s]
    for (start, mbit), end in zip(steps, bounds, strict=True):
        per_s = mbit * 1e6 / 8 / OPPORTUNITY_BYTES
        n = int((end - start) * per_s)
        lines += [str(int((start + k / per_s) * 1000)) for k in range(n)]
    return lines


def real_scenario(case: Case, algo: str, work: Path) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(json.dumps(case.path))
    raw.update(name=f"conformance-{case.id}-{algo}", duration_s=case.duration_s,
               flows=[{"algo": algo, "sender": raw["senders"][0]["name"]}])
    if case.rate_steps:
        trace = work / RATE_TRACE
        trace.write_text("\n".join(rate_trace_lines(case.rate_steps, case.duration_s)) + "\n")
        raw["bottleneck"]["rate_trace"] = str(trace)
        raw["bottleneck"].pop("rate_mbit", None)
    return raw


def _scheduled_traffic(segments: tuple[tuple[float, float | None], ...]) -> Callable[..., Any]:
    from ...testbed.topology import RECEIVER_ADDR
    from ...testbed.traffic import Traffic
    from ..lockstep import FLOW_MODULE

    class ScheduledTraffic(Traffic):
        """Flows from scheduled_flow (segments of rate and pauses) into lockstep_flow's receiver."""

        def start_servers(self) -> None:
            for flow in self.scenario.flows:
                with self.server_path(flow).open("w") as out:
                    self.servers.append(self.procs.spawn([sys.executable, "-m", FLOW_MODULE, "serve",
                                                          str(flow.server_port)], netns=self.topo.receiver,
                                                         stdout=out, stderr=subprocess.STDOUT))
            self.wait_listening()

        def client_argv(self, flow: Any) -> list[str]:
            argv = [sys.executable, "-m", "bbrbench.experiments.scheduled_flow", RECEIVER_ADDR,
                    str(flow.server_port), str(flow.client_port), "--cc", flow.algo]
            for seconds, mbit in segments:
                argv += ["--segment", f"{seconds:g}:{'max' if mbit is None else f'{mbit:g}'}"]
            return argv

    return ScheduledTraffic


def run_real(case: Case, algo: str, work: Path) -> list[dict[str, Any]]:
    from ...scenario import validate
    from ...testbed import runner, system
    from ...testbed.traffic import Traffic
    work.mkdir(parents=True, exist_ok=True)
    raw = real_scenario(case, algo, work)
    catalog = system.catalog()
    scenario = validate(raw, catalog)
    make = _scheduled_traffic(case.sender) if case.sender else Traffic
    runner.run(scenario, raw, work, catalog.bbrkit, show_progress=False, make_traffic=make)
    return real_records(work, algo)


def real_records(work: Path, algo: str) -> list[dict[str, Any]]:
    """The flow's bbrctl trace records from a real run's directory."""
    from ...analysis.rundata import trace_by_flow
    from ...results import read_json
    scenario = read_json(work / "scenario.json", "run")["resolved"]
    events = json.loads((work / "raw" / "events.json").read_text())
    records = [r for r in trace_by_flow(work, scenario, events).get(0, []) if r.get("algo") == algo]
    if (work / RATE_TRACE).is_file():
        # The link plays its trace from its own start, before the run's t0: rate_steps' times are on that
        # clock, so the records move onto it (its queue log's first row, within one log interval).
        link_start_s = float(next(csv.DictReader((work / "raw" / "link.csv").open()))["t_mono_s"])
        for r in records:
            r["t_s"] += events["t0_ns"] / 1e9 - link_start_s
    return records
