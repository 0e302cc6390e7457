"""bbrbench lockstep: bbrkit's BBR core against the kernel's BBR, callback by callback, on live traffic.

Each scenario runs its flows with the test-only congestion control bbr_lockstep (tests/lockstep/), which
build/bbrkit-lockstep registers for that scenario only. On every callback the kernel's BBR decides (its
kfuncs set cwnd and pacing rate on the socket) and bbrkit's core runs beside it on a shadow state fed the
same inputs; after each callback 16 fields of both decisions and models are compared, and every callback
where any differed is recorded with both states (then the shadow is re-synced from the kernel's state).

Here the records are sorted into classes with a known cause and the rest, "unexplained":
- probe_rtt_clock: one side is in PROBE_RTT and the other is not. The core times the min_rtt window and
  PROBE_RTT in ticks of 1024 us (tcp_mstamp >> 10, no helper call per ACK), the kernel in jiffies (4 ms at
  HZ=250), so entering or leaving PROBE_RTT can fall on neighbouring ACKs (bpf/bbr_core.h, header).
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HarnessError, NotRunnable
from ..scenario import validate
from ..testbed import delayline, system
from ..testbed import netns as procs
from ..testbed.emulation import Emulation, check_runnable
from ..testbed.netns import Namespaces, ProcessGroup, RunState, find_binary
from ..testbed.runner import cleanup_stale, signals_deferred, signals_interrupt
from ..testbed.topology import Topology
from ..testbed.traffic import Traffic

log = logging.getLogger(__name__)
LOCKSTEP_BINARY = "bbrkit-lockstep"
ALGO = "bbr_lockstep"
READY_TIMEOUT_S = 30.0  # loading and verifying the program takes a few seconds on a busy machine
STOP_TIMEOUT_S = 15.0
EXIT_UNSUPPORTED = 2  # bbrkit-lockstep: the kernel's BBR is not callable from BPF
DEFAULT_SECONDS = 12.0  # long enough for one PROBE_RTT (10 s min_rtt window plus STARTUP)
PROBE_RTT = 3
EXPLAINED = {"probe_rtt_clock"}


@dataclass(frozen=True)
class LockstepScenario:
    description: str
    raw: dict[str, Any]
    iperf_args: dict[int, tuple[str, ...]] = field(default_factory=dict)  # flow index -> extra client args


def _path(rate_mbit: float, rtt_ms: float, **bottleneck: Any) -> dict[str, Any]:
    return {"bottleneck": {"rate_mbit": rate_mbit, **bottleneck}, "senders": [{"name": "a", "rtt_ms": rtt_ms}]}


SCENARIOS: dict[str, LockstepScenario] = {
    "deep": LockstepScenario("one flow, 2 x BDP buffer: STARTUP, DRAIN, PROBE_BW, PROBE_RTT",
                             {**_path(50, 20, buffer_bdp=2), "flows": [{"algo": ALGO}]}),
    "shallow": LockstepScenario("one flow, 1/4 BDP buffer: losses, recovery, conservation",
                                {**_path(50, 20, buffer_bdp=0.25), "flows": [{"algo": ALGO}]}),
    "flows": LockstepScenario("three flows starting 1 s apart through a 1 x BDP buffer",
                              {**_path(50, 20, buffer_bdp=1),
                               "flows": [{"algo": ALGO, "count": 3, "start_step_s": 1}]}),
    "loss": LockstepScenario("one flow, 1% random loss: recovery, RTOs, undo",
                             {**_path(50, 20, buffer_bdp=2, loss_pct=1), "flows": [{"algo": ALGO}]}),
    "policer": LockstepScenario("10 Mbit/s with a 4-packet buffer, dropping like a token-bucket policer: "
                                "long-term sampling and the policed rate",
                                {**_path(10, 40, buffer_packets=4), "flows": [{"algo": ALGO}]}),
    "app_limited": LockstepScenario("a sender limited to 10 of 50 Mbit/s: app-limited samples (they keep it "
                                    "in STARTUP, as they should)",
                                    {**_path(50, 20, buffer_bdp=2), "flows": [{"algo": ALGO}]},
                                    {0: ("-b", "10M")}),
    "idle": LockstepScenario("1 MB bursts every 200 ms over a 50 Mbit/s, 20 ms path: the pipe fills, then idle "
                             "restarts in PROBE_BW",
                             {**_path(50, 20, buffer_bdp=2), "flows": [{"algo": ALGO}]},
                             {0: ("-b", "40M", "--pacing-timer", "200000")}),
    "heavy_loss": LockstepScenario("one flow, 15% random loss: long-term sampling settles on the lossy rate",
                            {**_path(10, 20, buffer_bdp=2, loss_pct=15), "flows": [{"algo": ALGO}]}),
}


def lockstep_binary() -> Path:
    """Test-only, so never installed: $BBRKIT_LOCKSTEP, PATH or the checkout's build/."""
    found = find_binary(LOCKSTEP_BINARY, "BBRKIT_LOCKSTEP")
    if found is None:
        raise HarnessError(f"{LOCKSTEP_BINARY}: not built (make) and BBRKIT_LOCKSTEP not set")
    return found


class _Traffic(Traffic):
    """The harness's iperf3 flows, with extra client arguments per flow (rate limits, bursts)."""

    def __init__(self, topo: Topology, group: ProcessGroup, raw_dir: Path, extra: dict[int, tuple[str, ...]]):
        super().__init__(topo, group, raw_dir)
        self.extra = extra

    def client_argv(self, flow: Any) -> list[str]:
        return super().client_argv(flow) + list(self.extra.get(flow.index, ()))


def classify(record: dict[str, Any]) -> str:
    """The known cause of a mismatch record, or "unexplained"."""
    if (record["kernel"]["mode"] == PROBE_RTT) != (record["shadow"]["mode"] == PROBE_RTT):
        return "probe_rtt_clock"
    return "unexplained"


def _start_tool(group: ProcessGroup, records: Path, stderr: Path) -> subprocess.Popen[str]:
    binary = lockstep_binary()
    if not binary.is_file():
        raise HarnessError(f"{binary}: not built (make)")
    with stderr.open("w") as err:
        proc = group.spawn([str(binary), "--records", str(records)], stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    line = proc.stdout.readline().strip() if ready else ""
    if line == "ready":
        return proc
    group.stop(proc)
    message = stderr.read_text().strip().splitlines()
    text = message[-1] if message else f"no 'ready' within {READY_TIMEOUT_S:g} s"
    if proc.returncode == EXIT_UNSUPPORTED:
        raise NotRunnable(text)
    raise HarnessError(f"bbrkit-lockstep: {text}")


def _stop_tool(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """Unregister (SIGTERM) and return the tool's summary."""
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise HarnessError("bbrkit-lockstep did not stop") from None
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise HarnessError(f"bbrkit-lockstep exited with code {proc.returncode} and no summary")
    summary: dict[str, Any] = json.loads(lines[-1])
    return summary


def _cleanup_delay_lines(prefix: str) -> None:
    delayline.cleanup_stale(prefix)


def run_scenario(name: str, spec: LockstepScenario, seconds: float, out_dir: Path) -> dict[str, Any]:
    """One scenario from a clean slate back to a clean slate; returns its summary with the classes."""
    cleanup_stale()
    out_dir.mkdir(parents=True, exist_ok=True)
    raw_dir = out_dir / "raw"
    raw_dir.mkdir(exist_ok=True)
    records = out_dir / "records.jsonl"
    prefix = procs.new_prefix()
    os.environ[procs.RUN_ENV] = prefix
    state = RunState(prefix)
    state.save()
    group = ProcessGroup(prefix)
    tool: subprocess.Popen[str] | None = None
    topo: Topology | None = None
    emulation: Emulation | None = None
    summary: dict[str, Any] = {}
    try:
        with signals_interrupt():
            tool = _start_tool(group, records, out_dir / "bbrkit-lockstep.stderr")
            raw = {"name": name, "description": spec.description, "duration_s": seconds, "trace": False, **spec.raw}
            scenario = validate(raw, system.catalog())
            topo = Topology(prefix, scenario)
            with Namespaces() as scratch:
                delay = check_runnable(scenario, scratch.add(f"{prefix}-probe"))
            topo.build()
            emulation = Emulation(topo, delay)
            emulation.start()
            traffic = _Traffic(topo, group, raw_dir, spec.iperf_args)
            traffic.start_servers()
            traffic.run(time.monotonic())
            failed = [e for e in traffic.events() if e["returncode"] != 0]
            if failed:
                raise HarnessError(f"{name}: iperf3 failed: {failed}; see {raw_dir / 'iperf3'}")
    finally:
        with signals_deferred():
            def stop_tool() -> None:
                if tool is not None and tool.poll() is None:
                    summary.update(_stop_tool(tool))

            steps: list[tuple[str, Callable[[], None]]] = [
                ("bbrkit-lockstep", stop_tool),
                ("delay lines", lambda: emulation.stop() if emulation else None),
                ("processes", group.stop_all),
                ("namespaces", lambda: topo.destroy() if topo else None),
                ("stale delay lines", lambda: _cleanup_delay_lines(prefix)),
                ("state file", state.remove),
            ]
            for what, step in steps:
                try:
                    step()
                except Exception as exc:  # every step runs, whatever the previous ones did
                    log.warning("clean-up of %s: %s", what, exc)
            os.environ.pop(procs.RUN_ENV, None)
    if not summary:
        raise HarnessError(f"{name}: bbrkit-lockstep gave no summary; see {out_dir}")
    classes: dict[str, int] = {}
    if records.is_file():
        for line in records.read_text().splitlines():
            cls = classify(json.loads(line))
            classes[cls] = classes.get(cls, 0) + 1
    summary["classes"] = classes
    summary["seconds"] = seconds
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def unexplained(summary: dict[str, Any]) -> int:
    """Mismatched callbacks without a known cause, including any the tool could not record."""
    recorded = sum(summary["classes"].values())
    total = sum(summary["mismatched"].values())
    return total - recorded + summary["classes"].get("unexplained", 0)


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'scenario':<12} {'ACKs':>8} {'other cb':>8} {'mismatch':>8} {'explained':>9} {'unexpl.':>7}  "
             "differing fields | ACKs by mode (mismatched) | coverage (ACKs)"]
    for name, s in results.items():
        acks = s["compared"]["ack"]
        other = sum(s["compared"].values()) - acks
        mismatched = sum(s["mismatched"].values())
        explained = sum(n for c, n in s["classes"].items() if c in EXPLAINED)
        fields = ",".join(f"{f}={n}" for f, n in s["fields"].items() if n) or "-"
        modes = ",".join(f"{m}={n}({s['mismatched_acks_by_mode'][m]})" for m, n in s["acks_by_mode"].items() if n)
        cover = ",".join(f"{c}={n}" for c, n in s["covered_acks"].items() if n) or "-"
        lines.append(f"{name:<12} {acks:>8} {other:>8} {mismatched:>8} {explained:>9} {unexplained(s):>7}  "
                     f"{fields} | {modes} | {cover}")
    total_acks = sum(s["compared"]["ack"] for s in results.values())
    total_mismatched = sum(sum(s["mismatched"].values()) for s in results.values())
    total_unexplained = sum(unexplained(s) for s in results.values())
    lines.append(f"all: {total_acks} ACKs compared, {total_mismatched} callbacks with a difference, "
                 f"{total_unexplained} unexplained")
    return "\n".join(lines)


def run(names: list[str], seconds: float, out: Path) -> tuple[str, int]:
    """Run the named scenarios (all when empty); return the table and the number of unexplained mismatches."""
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise HarnessError(f"unknown lockstep scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    results: dict[str, dict[str, Any]] = {}
    for name in names or list(SCENARIOS):
        results[name] = run_scenario(name, SCENARIOS[name], seconds, out / name)
    (out / "lockstep.json").write_text(json.dumps(results, indent=2) + "\n")
    return table(results), sum(unexplained(s) for s in results.values())
