"""bbrbench lockstep: bbrkit's BBR core against the kernel's BBR, callback by callback, on live traffic.

Each scenario runs its flows with the test-only congestion control bbr_lockstep (bench/kernelbbr/lockstep/), which
build/bbrkit-lockstep registers for that scenario only. On every callback the kernel's BBR decides (its
kfuncs set cwnd and pacing rate on the socket) and bbrkit's core runs beside it on a shadow state fed the
same inputs; after each callback the decisions and the whole model (hidden state included) are compared,
and every callback where any field differed is recorded with both states; then the shadow is re-synced
from the kernel's state.

Here the records are sorted into classes with a known cause and the rest:
- probe_rtt_clock: one side is in PROBE_RTT and the other is not, every differing field is one that
  entering or leaving PROBE_RTT sets, and the other side's own clock would have made the same move within
  one tick of the two clocks or one round, whichever is longer. The core times the min_rtt window and
  PROBE_RTT in ticks of 1024 us (tcp_mstamp >> 10, no helper call per ACK), the kernel in jiffies (4 ms
  at HZ=250), so the move can fall on neighbouring ACKs (bpf/bbr_core.h, header).
- probe_rtt_offset: the same but further apart than that, or with no clock of its own to say when the
  other side would follow (PROBE_RTT's end not armed): a difference, not explained.
- unexplained: anything else.
A re-sync hides how long a difference would have lasted; records whose callback numbers on one socket
are consecutive ("runs") show a difference that came back after each re-sync.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HarnessError, NotRunnable
from ..scenario import Flow, validate
from ..testbed import procs, runstate, system, wire
from ..testbed.cleanup import cleanup_stale, signals_deferred, signals_interrupt
from ..testbed.emulation import Emulation, plan
from ..testbed.netns import Namespaces
from ..testbed.procs import ProcessGroup, command, find_binary
from ..testbed.runstate import RunState
from ..testbed.topology import RECEIVER_ADDR, Topology
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
FLOW_MODULE = "bbrbench.experiments.lockstep_flow"
HOLE_TABLE = "lockstep_hole"

# The two clocks of bpf/bbr_core.h and the kernel's tcp_bbr.c, for the PROBE_RTT offset bound.
TICK_US = 1024  # the core's tick, tcp_mstamp >> 10
MIN_RTT_WIN_US = 10_000_000  # the min_rtt window, 10 s (kernel: 10 * HZ jiffies)
PROBE_RTT_US = 200_000  # time at minimum cwnd in PROBE_RTT (kernel: msecs_to_jiffies(200))
# What entering or leaving PROBE_RTT changes on one side (tcp_bbr.c bbr_update_min_rtt,
# bbr_check_probe_rtt_done): the mode and gains, cwnd capped at 4 or restored (prior_cwnd saved on entry),
# pacing at gain 1, the app-limited mark, min_rtt and its stamp (an expired filter takes the current
# sample; leaving restarts the window), the end stamp zeroed or armed (arming starts a round), and on
# leaving for PROBE_BW a new gain cycle phase and its stamp.
PROBE_RTT_CONSEQUENCES = frozenset({
    "mode", "gains", "cwnd", "prior_cwnd", "pacing_rate", "app_limited", "min_rtt", "min_rtt_stamp",
    "probe_rtt_stamp", "next_rtt_delivered", "cycle_idx", "cycle_stamp"})
# min_tso_segs and sndbuf_expand records carry the sequence number of the callback before them: not a
# chance to converge, so not part of a run.
STATELESS_CALLBACKS = frozenset({"min_tso_segs", "sndbuf_expand"})


@dataclass(frozen=True)
class Blackhole:
    """Drop a direction of every flow's packets at the receiver for a while (nftables, receiver namespace):
    "data" drops what arrives for the servers (the sender's RTO), "acks" what the servers send back (the
    data arrives, so the RTO is spurious and the timestamps or DSACKs undo it)."""
    direction: str
    at_s: float
    for_s: float


@dataclass(frozen=True)
class LockstepScenario:
    description: str
    raw: dict[str, Any]
    iperf_args: dict[int, tuple[str, ...]] = field(default_factory=dict)  # flow index -> extra client args
    # flow index -> lockstep_flow send arguments: that flow runs lockstep_flow instead of iperf3
    script_args: dict[int, tuple[str, ...]] = field(default_factory=dict)
    min_seconds: float = 0.0  # a scenario that needs longer runs this long whatever --seconds says
    blackhole: Blackhole | None = None


def _path(rate_mbit: float, rtt_ms: float, **bottleneck: Any) -> dict[str, Any]:
    return {"bottleneck": {"rate_mbit": rate_mbit, **bottleneck}, "senders": [{"name": "a", "rtt_ms": rtt_ms}]}


DEEP = _path(50, 20, buffer_bdp=2)


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
    "rto": LockstepScenario("the receiver's input blackholed for 0.7 s at 3 s (> 1 RTO): retransmission "
                            "timeouts, TCP_CA_Loss and the recovery after",
                            {**DEEP, "flows": [{"algo": ALGO}]}, min_seconds=6,
                            blackhole=Blackhole("data", 3.0, 0.7)),
    "undo": LockstepScenario("the receiver's ACKs blackholed for 0.5 s at 3 s: the data arrives, so the RTO "
                             "is spurious and undone (undo_cwnd)",
                             {**DEEP, "flows": [{"algo": ALGO}]}, min_seconds=6,
                             blackhole=Blackhole("acks", 3.0, 0.5)),
    "long_idle": LockstepScenario("3 s of sending, 11 s idle (past the 10 s min_rtt window), 3 s more: "
                                  "restart after a long idle",
                                  {**DEEP, "flows": [{"algo": ALGO}]},
                                  script_args={0: ("--send-s", "3", "--idle-s", "11", "--then-s", "3")},
                                  min_seconds=17),
    "probe_rtt_twice": LockstepScenario("one flow for 26 s over a 2 x BDP buffer: two PROBE_RTTs",
                                        {**DEEP, "flows": [{"algo": ALGO}]}, min_seconds=26),
    "cc_switch": LockstepScenario("a cubic connection switched to bbr_lockstep (setsockopt) 2 s into sending, "
                                  "then 4 s more: init on a connection in full flight",
                                  {**DEEP, "flows": [{"algo": "cubic"}]},
                                  script_args={0: ("--send-s", "6", "--switch-to", ALGO, "--switch-after-s", "2")},
                                  min_seconds=6),
    "fast": LockstepScenario("no delay and a 10 Gbit/s shaper that never binds: the CPU is the bottleneck "
                             "(>= 1 Gbit/s)",
                             {**_path(10_000, 0, buffer_packets=1000), "flows": [{"algo": ALGO}]}),
    "sub_ms": LockstepScenario("200 Mbit/s, no added delay, 12-packet buffer: RTT under 1 ms, a round "
                               "shorter than a jiffy",
                               {**_path(200, 0, buffer_packets=12), "flows": [{"algo": ALGO}]}),
}


def lockstep_binary() -> Path:
    """Test-only, so never installed: $BBRKIT_LOCKSTEP, PATH or the checkout's build/."""
    found = find_binary(LOCKSTEP_BINARY, "BBRKIT_LOCKSTEP")
    if found is None:
        raise HarnessError(f"{LOCKSTEP_BINARY}: not built (make) and BBRKIT_LOCKSTEP not set")
    return found


class _Traffic(Traffic):
    """The harness's iperf3 flows, with extra client arguments per flow (rate limits, bursts), or
    lockstep_flow in place of iperf3 where the scenario needs a flow iperf3 cannot make."""

    def __init__(self, topo: Topology, group: ProcessGroup, raw_dir: Path, spec: LockstepScenario):
        super().__init__(topo, group, raw_dir)
        self.spec = spec

    def start_servers(self) -> None:
        for flow in self.scenario.flows:
            port = str(flow.server_port)
            argv = ([sys.executable, "-m", FLOW_MODULE, "serve", port] if flow.index in self.spec.script_args
                    else ["iperf3", "-s", "-1", "-J", "-p", port])
            with self.server_path(flow).open("w") as out:
                self.servers.append(self.procs.spawn(argv, netns=self.topo.receiver, stdout=out,
                                                     stderr=subprocess.STDOUT))
        self.wait_listening()

    def client_argv(self, flow: Flow) -> list[str]:
        if flow.index in self.spec.script_args:
            return [sys.executable, "-m", FLOW_MODULE, "send", RECEIVER_ADDR, str(flow.server_port),
                    str(flow.client_port), "--cc", flow.algo, *self.spec.script_args[flow.index]]
        return super().client_argv(flow) + list(self.spec.iperf_args.get(flow.index, ()))

    def outcomes(self) -> list[dict[str, Any]]:
        """What each flow measured: iperf3's rate and mean RTT, or lockstep_flow's report."""
        out = []
        for flow in self.scenario.flows:
            try:
                data = json.loads(self.client_path(flow).read_text())
            except ValueError:
                out.append({"flow": flow.index, "error": "no result"})
                continue
            if flow.index in self.spec.script_args:
                out.append({"flow": flow.index, "mbit_s": round(data["bytes"] * 8 / data["seconds_sending"] / 1e6, 1),
                            "cc": data["cc"], "events": data["events"]})
                continue
            end = data.get("end", {})
            streams = end.get("streams") or [{}]
            out.append({"flow": flow.index,
                        "mbit_s": round(end.get("sum_received", {}).get("bits_per_second", 0) / 1e6, 1),
                        "mean_rtt_ms": streams[0].get("sender", {}).get("mean_rtt", 0) / 1000})
        return out


class _Hole:
    """A scenario's blackhole, switched on and off from the traffic loop's tick; measures when it really
    was in place and how many packets it dropped."""

    def __init__(self, spec: Blackhole, netns: str, ports: list[int], t0: float) -> None:
        self.spec, self.netns, self.t0 = spec, netns, t0
        hook, match = ("input", "dport") if spec.direction == "data" else ("output", "sport")
        port_set = ", ".join(str(p) for p in ports)
        self.rules = (f"add table inet {HOLE_TABLE}\n"
                      f"add chain inet {HOLE_TABLE} hole {{ type filter hook {hook} priority 0; }}\n"
                      f"add rule inet {HOLE_TABLE} hole tcp {match} {{ {port_set} }} counter drop\n")
        self.on_s: float | None = None
        self.off_s: float | None = None
        self.dropped: int | None = None

    def tick(self) -> None:
        elapsed = time.monotonic() - self.t0
        if self.on_s is None and elapsed >= self.spec.at_s:
            command(["nft", "-f", "-"], netns=self.netns, input_text=self.rules)
            self.on_s = time.monotonic() - self.t0
        elif self.on_s is not None and self.off_s is None and elapsed >= self.spec.at_s + self.spec.for_s:
            self.off()

    def off(self) -> None:
        if self.on_s is None or self.off_s is not None:
            return
        listing = command(["nft", "-j", "list", "table", "inet", HOLE_TABLE], netns=self.netns).stdout
        command(["nft", "delete", "table", "inet", HOLE_TABLE], netns=self.netns)
        self.off_s = time.monotonic() - self.t0
        self.dropped = sum(int(expr["counter"]["packets"]) for item in json.loads(listing)["nftables"]
                           for expr in item.get("rule", {}).get("expr", []) if "counter" in expr)

    def report(self) -> dict[str, Any]:
        if self.on_s is None or self.off_s is None:
            raise HarnessError(f"blackhole never {'set' if self.on_s is None else 'lifted'}: the run was too short")
        return {"direction": self.spec.direction, "from_s": round(self.on_s, 3), "to_s": round(self.off_s, 3),
                "dropped_packets": self.dropped}


def _bottleneck(stats: dict[str, Any]) -> dict[str, int]:
    """Whether the shaper bound (its overlimits: packets it held back) and what the buffer dropped."""
    qdiscs = stats["qdisc"]
    return {"shaper_overlimits": sum(q.get("overlimits", 0) for q in qdiscs if q.get("kind") in ("tbf", "htb")),
            "dropped_packets": sum(q.get("drops", 0) for q in qdiscs)}


def _window_us(window_us: int, side: str, jiffy_us: int) -> int:
    """A window as each side's clock measures it: whole jiffies (exact for 10 s and 200 ms at any
    usual HZ) or whole core ticks, rounded up."""
    unit = jiffy_us if side == "kernel" else TICK_US
    return -(-window_us // unit) * unit


def probe_rtt_offset_us(record: dict[str, Any]) -> float | None:
    """How long after this callback the side that did not move into (or out of) PROBE_RTT would have
    moved by its own clock, in us; None when its clock would never move it (PROBE_RTT's end not armed)."""
    leaving = record["mode_before"] == PROBE_RTT
    side = next(s for s in ("kernel", "shadow") if (record[s]["mode"] == PROBE_RTT) == leaving)
    state, jiffy_us = record[side], record["jiffy_us"]
    unit = jiffy_us if side == "kernel" else TICK_US
    # Both clocks move a window on at the first unit after it (after(now, stamp + window)).
    if leaving:
        if not (state["probe_rtt_armed"] and state["probe_rtt_round_done"]):
            return None
        return float(state["probe_rtt_done_us"] + unit)
    return float(state["min_rtt_stamp_us"] + _window_us(MIN_RTT_WIN_US, side, jiffy_us) + unit)


def probe_rtt_bound_us(record: dict[str, Any]) -> float:
    """One tick of the two clocks or one round, whichever is longer. A tick of the two clocks: what the
    BPF side allows between the two stamps of one event (two jiffies, for rounding and a late timer tick,
    and two core ticks, for rounding and a re-sync's conversion) plus what the core's rounding of the
    window up to whole ticks adds; a round: the socket's smoothed RTT."""
    jiffy_us = record["jiffy_us"]
    window = PROBE_RTT_US if record["mode_before"] == PROBE_RTT else MIN_RTT_WIN_US
    rounding = _window_us(window, "shadow", jiffy_us) - _window_us(window, "kernel", jiffy_us)
    return float(max(2 * jiffy_us + 2 * TICK_US + abs(rounding), record["srtt_us"]))


def classify(record: dict[str, Any]) -> str:
    """The known cause of a mismatch record: probe_rtt_clock, probe_rtt_offset (one side in PROBE_RTT, but
    further apart than the clocks explain) or unexplained."""
    one_side_in_probe_rtt = (record["kernel"]["mode"] == PROBE_RTT) != (record["shadow"]["mode"] == PROBE_RTT)
    if not one_side_in_probe_rtt or not set(record["fields"]) <= PROBE_RTT_CONSEQUENCES:
        return "unexplained"
    offset = probe_rtt_offset_us(record)
    if offset is None or abs(offset) > probe_rtt_bound_us(record):
        return "probe_rtt_offset"
    return "probe_rtt_clock"


def mismatch_runs(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Records of state-changing callbacks grouped into runs: consecutive callbacks on one socket that
    each differed, i.e. a difference that came back after every re-sync."""
    runs: list[list[dict[str, Any]]] = []
    last: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in sorted((r for r in records if r["callback"] not in STATELESS_CALLBACKS),
                    key=lambda r: (r["sport"], r["dport"], r["seq"])):
        key = (r["sport"], r["dport"])
        run = last.get(key)
        if run is not None and r["seq"] == run[-1]["seq"] + 1:
            run.append(r)
        else:
            run = [r]
            runs.append(run)
            last[key] = run
    return runs


def analyse(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Classes (with the fields that differed in each), runs, and the PROBE_RTT offsets measured."""
    classes: dict[str, int] = {}
    class_fields: dict[str, dict[str, int]] = {}
    offsets: list[tuple[float, float]] = []
    for r in records:
        cls = classify(r)
        classes[cls] = classes.get(cls, 0) + 1
        counts = class_fields.setdefault(cls, {})
        for f in r["fields"]:
            counts[f] = counts.get(f, 0) + 1
        if cls in ("probe_rtt_clock", "probe_rtt_offset"):
            offset = probe_rtt_offset_us(r)
            offsets.append((float("inf") if offset is None else abs(offset), probe_rtt_bound_us(r)))
    runs = mismatch_runs(records)
    longest = max(runs, key=len, default=[])
    worst = max(offsets, key=lambda o: o[0] / o[1], default=None)
    return {
        "classes": classes, "class_fields": class_fields,
        "runs": {"count": len(runs), "longest": len(longest),
                 "longest_ms": round((longest[-1]["t_ns"] - longest[0]["t_ns"]) / 1e6, 3) if longest else 0.0,
                 "after_resync": sum(len(run) - 1 for run in runs)},
        "probe_rtt_offset_ms": None if worst is None else
        {"max": None if worst[0] == float("inf") else round(worst[0] / 1000, 3), "bound": round(worst[1] / 1000, 3)},
    }


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
    wire.kill_wire_processes(prefix)


def run_scenario(name: str, spec: LockstepScenario, seconds: float, out_dir: Path) -> dict[str, Any]:
    """One scenario from a clean slate back to a clean slate; returns its summary with the classes."""
    seconds = max(seconds, spec.min_seconds)
    if spec.blackhole and not system.have_tool("nft"):
        raise NotRunnable(f"{name}: the blackhole needs nftables (the nft command)")
    cleanup_stale()
    out_dir.mkdir(parents=True, exist_ok=True)
    raw_dir = out_dir / "raw"
    raw_dir.mkdir(exist_ok=True)
    records = out_dir / "records.jsonl"
    prefix = runstate.new_prefix()
    os.environ[procs.RUN_ENV] = prefix
    state = RunState(prefix)
    state.save()
    group = ProcessGroup(prefix)
    tool: subprocess.Popen[str] | None = None
    topo: Topology | None = None
    emulation: Emulation | None = None
    hole: _Hole | None = None
    summary: dict[str, Any] = {}
    outcome: dict[str, Any] = {}
    try:
        with signals_interrupt():
            tool = _start_tool(group, records, out_dir / "bbrkit-lockstep.stderr")
            raw = {"name": name, "description": spec.description, "duration_s": seconds, "trace": False, **spec.raw}
            scenario = validate(raw, system.catalog())
            topo = Topology(prefix, scenario)
            with Namespaces() as scratch:
                delay = plan(topo, scratch.add(f"{prefix}-probe"))
            topo.build()
            emulation = Emulation(topo, delay)
            emulation.start()
            traffic = _Traffic(topo, group, raw_dir, spec)
            traffic.start_servers()
            t0 = time.monotonic()
            if spec.blackhole:
                hole = _Hole(spec.blackhole, topo.receiver, [f.server_port for f in scenario.flows], t0)
            traffic.run(t0, hole.tick if hole else None)
            failed = [e for e in traffic.events() if e["returncode"] != 0]
            if failed:
                raise HarnessError(f"{name}: a flow failed: {failed}; see {raw_dir / 'iperf3'}")
            outcome["flows"] = traffic.outcomes()
            outcome["bottleneck"] = _bottleneck(emulation.stats())
            if hole:
                hole.off()
                outcome["blackhole"] = hole.report()
    finally:
        with signals_deferred():
            def stop_tool() -> None:
                if tool is not None and tool.poll() is None:
                    summary.update(_stop_tool(tool))

            steps: list[tuple[str, Callable[[], None]]] = [
                ("blackhole", lambda: hole.off() if hole else None),
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
    recorded = [json.loads(line) for line in records.read_text().splitlines()] if records.is_file() else []
    summary.update(analyse(recorded))
    summary["min_rtt_window_s"] = _window(summary.pop("window_ns"))
    summary.update(outcome)
    summary["seconds"] = seconds
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _window(ns: dict[str, int]) -> dict[str, float | None]:
    """The kernel's min_rtt window in seconds from the first ACK: when min_rtt last fell to a new low
    before the first PROBE_RTT, and when that PROBE_RTT began (None: never)."""
    def since_first(stamp: int) -> float | None:
        return round((stamp - ns["first_ack"]) / 1e9, 3) if stamp and ns["first_ack"] else None

    return {"min_rtt_lowered": since_first(ns["min_rtt_lowered"]),
            "probe_rtt_entered": since_first(ns["probe_rtt_entered"])}


def unexplained(summary: dict[str, Any]) -> int:
    """Mismatched callbacks without a known cause, including any the tool could not record."""
    recorded = sum(summary["classes"].values())
    total = sum(summary["mismatched"].values())
    return total - recorded + sum(n for c, n in summary["classes"].items() if c not in EXPLAINED)


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'scenario':<16} {'ACKs':>8} {'other cb':>8} {'mismatch':>8} {'re-syncs':>8} {'runs':>5} "
             f"{'longest':>7} {'explained':>9} {'unexpl.':>7}  "
             "classes (fields) | PROBE_RTT offset, stamps | ACKs by mode (mismatched) | coverage (ACKs) | flows"]
    for name, s in results.items():
        acks = s["compared"]["ack"]
        other = sum(s["compared"].values()) - acks
        mismatched = sum(s["mismatched"].values())
        explained = sum(n for c, n in s["classes"].items() if c in EXPLAINED)
        classes = "; ".join(f"{c}={n} ({','.join(s['class_fields'][c])})" for c, n in s["classes"].items()) or "-"
        offset = s["probe_rtt_offset_ms"]
        offset_text = ("-" if offset is None else f"end not armed (bound {offset['bound']} ms)" if offset["max"] is None
                       else f"<= {offset['max']} ms (bound {offset['bound']} ms)")
        offset_text += f", agreeing stamps <= {s['stamp_gap_us'] / 1000:.1f} ms apart"
        window = s["min_rtt_window_s"]
        if window["min_rtt_lowered"] is not None:
            offset_text += f", last new min_rtt at {window['min_rtt_lowered']} s"
        if window["probe_rtt_entered"] is not None:
            offset_text += f", first entered at {window['probe_rtt_entered']} s"
        modes = ",".join(f"{m}={n}({s['mismatched_acks_by_mode'][m]})" for m, n in s["acks_by_mode"].items() if n)
        cover = ",".join(f"{c}={n}" for c, n in s["covered_acks"].items() if n) or "-"
        flows = ",".join(f"{f.get('mbit_s', '?')} Mbit/s"
                         + (f" {f['mean_rtt_ms']:.2f} ms" if "mean_rtt_ms" in f else "") for f in s.get("flows", []))
        if "bottleneck" in s:
            b = s["bottleneck"]
            flows += f"; shaper overlimits {b['shaper_overlimits']}, {b['dropped_packets']} dropped"
        if "blackhole" in s:
            b = s["blackhole"]
            flows += f"; {b['direction']} blackholed {b['from_s']}-{b['to_s']} s ({b['dropped_packets']} dropped)"
        runs = s["runs"]
        lines.append(f"{name:<16} {acks:>8} {other:>8} {mismatched:>8} {s['resyncs']:>8} {runs['count']:>5} "
                     f"{runs['longest']:>7} {explained:>9} {unexplained(s):>7}  "
                     f"{classes} | {offset_text} | {modes} | {cover} | {flows}")
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
