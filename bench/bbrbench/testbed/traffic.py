"""iperf3 flows: one server per flow on the receiver, one client per flow on its sender, each with its own
congestion control (`-C`), fixed client port (`--cport`, so samples can be matched to flows), start
offset, and a duration or byte count."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..scenario import Flow, Scenario
from .cpuplace import confine, plan
from .procs import ProcessGroup, wait_listening
from .topology import RECEIVER_ADDR, Topology

CONNECT_TIMEOUT_MS = 5000
# After its nominal end a flow gets this long to report before it is killed (results exchange, slow start).
FINISH_GRACE_S = 10.0
POLL_S = 0.05


@dataclass
class FlowRun:
    flow: Flow
    client: subprocess.Popen[Any] | None = None
    launched_s: float | None = None
    exited_s: float | None = None
    returncode: int | None = None
    killed: bool = False


class Traffic:
    def __init__(self, topo: Topology, procs: ProcessGroup, raw_dir: Path) -> None:
        self.topo = topo
        self.scenario: Scenario = topo.scenario
        self.procs = procs
        self.dir = raw_dir / "iperf3"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.runs = [FlowRun(flow=f) for f in self.scenario.flows]
        self.servers: list[subprocess.Popen[Any]] = []
        self.t0 = 0.0
        # The CPUs iperf3 may run on (cpu_placement; []: any).
        self.cpus = plan(self.scenario.cpu_placement).app_cpus

    def server_path(self, flow: Flow) -> Path:
        return self.dir / f"server-{flow.index}.json"

    def client_path(self, flow: Flow) -> Path:
        return self.dir / f"client-{flow.index}.json"

    def start_servers(self) -> None:
        for flow in self.scenario.flows:
            with self.server_path(flow).open("w") as out:
                self.servers.append(self.procs.spawn(
                    confine(["iperf3", "-s", "-1", "-J", "-p", str(flow.server_port)], self.cpus),
                    netns=self.topo.receiver, stdout=out, stderr=subprocess.STDOUT))
        self.wait_listening()

    def wait_listening(self) -> None:
        wait_listening(self.topo.receiver, {f.server_port for f in self.scenario.flows}, servers=self.servers,
                       what=f"flow server (see {self.dir})")

    def client_argv(self, flow: Flow) -> list[str]:
        argv = ["iperf3", "-c", RECEIVER_ADDR, "-p", str(flow.server_port), "--cport", str(flow.client_port),
                "-C", flow.algo, "-J", "-i", "1", "--connect-timeout", str(CONNECT_TIMEOUT_MS)]
        if flow.bytes is not None:
            argv += ["-n", str(flow.bytes)]
        else:
            argv += ["-t", str(flow.duration_s)]
        return argv

    def run(self, t0: float, on_tick: Callable[[], None] | None = None) -> None:
        """Launch every client at its offset from t0 (time.monotonic()), wait for all to finish.

        Byte-count flows still running at the end of the run are killed and reported incomplete."""
        self.t0 = t0
        pending = sorted(self.runs, key=lambda r: r.flow.start_s)
        run_end = t0 + self.scenario.duration_s
        while True:
            now = time.monotonic()
            while pending and now >= t0 + pending[0].flow.start_s:
                self._launch(pending.pop(0))
            self._reap(now, run_end)
            if on_tick:
                on_tick()
            if not pending and all(r.exited_s is not None for r in self.runs):
                return
            time.sleep(POLL_S)

    def _launch(self, fr: FlowRun) -> None:
        host = self.topo.hosts[fr.flow.sender]
        with self.client_path(fr.flow).open("w") as out:
            fr.client = self.procs.spawn(confine(self.client_argv(fr.flow), self.cpus), netns=host.netns,
                                         stdout=out, stderr=subprocess.STDOUT)
        fr.launched_s = time.monotonic() - self.t0

    def _reap(self, now: float, run_end: float) -> None:
        for fr in self.runs:
            if fr.client is None or fr.exited_s is not None:
                continue
            code = fr.client.poll()
            if code is None:
                deadline = run_end if fr.flow.bytes is not None else run_end + FINISH_GRACE_S
                if now >= deadline:
                    self.procs.stop(fr.client)
                    fr.killed = True
                    code = fr.client.returncode
                else:
                    continue
            fr.exited_s = now - self.t0
            fr.returncode = code

    def events(self) -> list[dict[str, Any]]:
        return [{"flow": fr.flow.index, "launched_s": fr.launched_s, "exited_s": fr.exited_s,
                 "returncode": fr.returncode, "killed": fr.killed} for fr in self.runs]
