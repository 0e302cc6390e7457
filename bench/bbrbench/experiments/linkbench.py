"""Benchmark of the link emulator (bbrkit-link): its own added delay and its forwarding capacity with
wire-size frames.

Builds the delay line benchmark's sender | middle | receiver chain (experiments/delaybench.py), then:
- added delay: ping RTT through the link at --rate against the same chain bridged by the kernel (a
  Linux bridge in the middle namespace), idle and beside a UDP load at half the rate; the idle pings take the
  link's XDP idle path (bench/link/README.md, "The idle path");
- added delay through the thread: the idle ping again with the idle path off (--xdp-idle-us 0), as every frame
  of a link with an AQM, a delay or loss goes;
- capacity, tail drop: one unthrottled UDP flow of MTU-size datagrams through a link set far above what
  the machine can forward, for --duration; the link's own counters give what it forwarded;
- added delay through the thread with a poll over the whole ping gap: the thread's idle ping again with
  --busy-poll-us at twice the ping interval, so the forward thread never sleeps between pings: what waking it
  costs, bought with CPU;
- added delay through the thread with a CPU latency request of 0 us (--cpu-latency-us 0): the thread's idle
  ping again with the idle CPUs polling instead of halting, so that waking the forward thread waits for no
  hypervisor;
- the idle goal's floor: a second ping series through the bridge, judged as the link's is (its p99 less the
  first series' median). Where that alone breaks the bound, the run cannot tell a middle that adds nothing
  from one that breaks it, and the idle goal is not decided in that run;
- capacity, --flows flows: that many UDP flows (iperf3 clients of at most 128 streams each), through tail
  drop and through FQ-CoDel;
- small packets: one unthrottled UDP flow of 64-byte payloads through tail drop, in packets per second.
Capacities are the forward thread's (--xdp-idle-us 0: at 40 Gbit/s a link that never holds a frame would
otherwise pass them all through the kernel) and are counted at the receiver (its interface's counters).
Every load also goes through the kernel bridge first (CAPACITY_RUNS): what the senders and the machine can do
at all, beside what the link does; each link run reports its ratio to that, and FQ-CoDel its ratio to tail
drop at the same load (its own cost). The goals (GOALS) are stated against the bridge in the same run, so
that they can be judged on a small or shared machine: each capacity goal is a ratio to the bridge under the
same load, the idle delay goal a bound on what the link adds to the bridge's ping. Each link run reports the
forward thread's CPU share and how much of it was busy-polling; the report gives the load average at the
start and the end and marks a run on a loaded machine.

Run as `bbrbench linkbench [--out FILE]`. Everything it creates is named `bbl-<pid>-...` and removed on
exit, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..testbed.linkemu import LinkEmulator, kernel_reverse
from ..testbed.netns import netns_pids
from ..testbed.procs import command, kill_pids, wait_listening
from ..testbed.wire import WireProcess
from .delaybench import RECEIVER_ADDR, Chain, RttStats, machine, percentile, run_reported

# A rate no 2-vCPU machine forwards: the link's own speed is what the capacity runs measure.
UNBOUNDED_RATE_BPS = 40_000_000_000
UDP_PAYLOAD_BYTES = 1472  # an MTU-size IPv4 datagram
SMALL_PAYLOAD_BYTES = 64  # the small-packet capacity goal's payload
IPERF_MAX_STREAMS = 128
IPERF_BASE_PORT = 5301
PING_COUNT = 500
PING_INTERVAL_S = 0.01
LOAD_START_S = 0.3  # the load's client connects and sends before the loaded pings begin
# The second idle delay run's busy-poll: twice the gap between two pings, so no ping finds the forward thread
# asleep (what the idle goal costs in CPU).
GAP_POLL_US = round(2 * PING_INTERVAL_S * 1e6)
COMMAND_TIMEOUT_S = 30.0
# Every frame through the forward thread: the link's own capacity, and its wake-up in the thread's idle rows.
THREAD_ONLY = ["--xdp-idle-us", "0"]
BRIDGE = "bridge"  # a capacity run's middle: the kernel bridge instead of the link's queue


@dataclass(frozen=True)
class Load:
    """What the senders offer: one unthrottled UDP flow, or --flows flows sharing 2 Gbit/s."""
    key: str
    payload: int
    many: bool

    def flows(self, flows_arg: int) -> int:
        return flows_arg if self.many else 1


LOADS = {load.key: load for load in (Load("one_flow", UDP_PAYLOAD_BYTES, False),
                                     Load("many_flows", UDP_PAYLOAD_BYTES, True),
                                     Load("small", SMALL_PAYLOAD_BYTES, False))}
# Every capacity run, in order: a load and what is in the middle (the kernel bridge, or the link with that
# queue). The bridge's runs share one bridge; each link run is compared with the bridge's at its load.
CAPACITY_RUNS = (("one_flow", BRIDGE), ("many_flows", BRIDGE), ("small", BRIDGE),
                 ("one_flow", "fifo"), ("many_flows", "fifo"), ("many_flows", "fq_codel"), ("small", "fifo"))


@dataclass(frozen=True)
class Goal:
    """One of the link's speed goals, judged against the kernel bridge in the same run (docs/link-benchmarks.md):
    with `run` (a capacity run's load and queue), that run's ratio to the bridge under the same load must reach
    `bound`; without, the idle ping's added p99 (the link's p99 less the bridge's median) must stay within
    `bound` microseconds, decided only where the bridge's second ping series, judged the same way, does."""
    check: str  # its name among the checks; {flows} stands for --flows
    run: tuple[str, str] | None
    bound: float


GOALS = (Goal("idle_added_delay_p99_within_50us", None, 50),
         Goal("taildrop_at_least_0.8x_bridge", ("one_flow", "fifo"), 0.8),
         Goal("fq_codel_{flows}_flows_at_least_0.5x_bridge", ("many_flows", "fq_codel"), 0.5),
         Goal("64_byte_payloads_at_least_0.5x_bridge", ("small", "fifo"), 0.5))

# A run is marked as on a loaded machine when others' work competes with it for CPU: at the start, more
# than one runnable task per vCPU over the last minute; at the end, more than the benchmark's own capacity
# runs bring (about 2.3 per vCPU: 4.6 on 2 vCPUs with nothing else running, 2026-11-26 17:52 UTC).
LOADED_AT_START_PER_CPU = 1.0
LOADED_AT_END_PER_CPU = 3.0


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rate", type=float, default=100.0, help="link rate in Mbit/s for the delay runs (default 100)")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per capacity run (default 5)")
    ap.add_argument("--flows", type=int, default=1024,
                    help="flows of the many-flow capacity runs (bridge, tail drop, FQ-CoDel; default 1024)")
    ap.add_argument("--busy-poll-us", type=int, default=None,
                    help="the link's --busy-poll-us (default: the link's own default)")
    ap.add_argument("--out", help="write the results as JSON to this file")


def check_args(args: argparse.Namespace) -> None:
    if not 1 <= args.rate <= 10_000:
        raise UsageError("--rate: must be 1..10000 Mbit/s")
    if not 2 <= args.duration <= 600:
        raise UsageError("--duration: must be 2..600 s")
    if not 1 <= args.flows <= 4096:
        raise UsageError("--flows: must be 1..4096")
    if args.busy_poll_us is not None and not 0 <= args.busy_poll_us <= 1_000_000:
        raise UsageError("--busy-poll-us: must be 0..1000000")


def _link(chain: Chain, name: str, options: list[str], busy_poll_us: int | None) -> LinkEmulator:
    """The link with the ACK direction in the kernel (tc mirred), as bbrbench runs an unshaped one."""
    command(["tc", "qdisc", "del", "dev", "r0", "clsact"], netns=chain.delay, check=False)
    problem = kernel_reverse(chain.delay, "r0", "l0")
    spin = [] if busy_poll_us is None else ["--busy-poll-us", str(busy_poll_us)]
    return LinkEmulator(chain.delay, "l0", "r0", tag=f"{chain.prefix}{name}",
                        options=options + spin + ([] if problem else ["--rev-kernel"]))


def _counters(netns: str, dev: str) -> dict[str, Any]:
    """An interface's rx and tx counters (frames, Ethernet header included)."""
    out = command(["ip", "-j", "-s", "link", "show", dev], netns=netns).stdout
    return dict(json.loads(out)[0]["stats64"])


def _received(chain: Chain) -> tuple[int, int]:
    """Bytes and packets the receiver's interface has taken in."""
    rx = _counters(chain.receiver, "eth0")["rx"]
    return rx["bytes"], rx["packets"]


def _offered(chain: Chain) -> tuple[int, int]:
    """Frames the sender's interface sent and those the link's left interface took in: with the link's
    in_pkts and drop_kernel (PACKET_STATISTICS' tp_drops), where frames were lost on the way in."""
    return _counters(chain.sender, "eth0")["tx"]["packets"], _counters(chain.delay, "l0")["rx"]["packets"]


def _offloads_off(chain: Chain) -> None:
    """Wire-size frames: the link queues per packet."""
    for ns, dev in ((chain.sender, "eth0"), (chain.receiver, "eth0"), (chain.delay, "l0"), (chain.delay, "r0")):
        command(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"], netns=ns, check=False)


def _bridged(chain: Chain, loads: Iterable[Load], args: argparse.Namespace
             ) -> tuple[list[float], list[float], list[dict[str, Any]]]:
    """Two ping series (the second is the idle goal's floor) and the capacity under each of @loads through a
    kernel bridge in the middle namespace."""
    command(["ip", "-n", chain.delay, "link", "add", "br0", "type", "bridge"])
    try:
        for dev in ("l0", "r0", "br0"):
            if dev != "br0":
                command(["ip", "-n", chain.delay, "link", "set", dev, "master", "br0"])
            command(["ip", "-n", chain.delay, "link", "set", dev, "up"])
        chain.ping(3, 0.2)
        pings = chain.ping(PING_COUNT, PING_INTERVAL_S)
        again = chain.ping(PING_COUNT, PING_INTERVAL_S)
        return pings, again, [_measure(chain, None, BRIDGE, load, args) for load in loads]
    finally:
        command(["ip", "-n", chain.delay, "link", "del", "br0"], check=False)


def _udp_clients(chain: Chain, streams: int, per_stream_bps: float, seconds: float,
                 payload: int = UDP_PAYLOAD_BYTES) -> list[subprocess.Popen[str]]:
    """iperf3 UDP clients of at most IPERF_MAX_STREAMS streams each, one server per client."""
    clients = []
    for i, start in enumerate(range(0, streams, IPERF_MAX_STREAMS)):
        port = IPERF_BASE_PORT + i
        command(["iperf3", "-s", "-D", "-1", "-p", str(port)], netns=chain.receiver)
        wait_listening(chain.receiver, [port], what="iperf3 server")
        n = min(IPERF_MAX_STREAMS, streams - start)
        clients.append(subprocess.Popen(
            ["ip", "netns", "exec", chain.sender, "iperf3", "-c", RECEIVER_ADDR, "-p", str(port), "-u",
             "-b", str(int(per_stream_bps)), "-l", str(payload), "-P", str(n), "-t", str(seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    return clients


def _cpu_shares(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """The forward thread's CPU share between two of the link's stats lines, and how much of it was busy-polling
    (a link from before the busy-poll reports no spin_us: 0)."""
    wall = max(1, after["wall_us"] - before["wall_us"])
    return {"cpu_fwd_share": (after["cpu_fwd_us"] - before["cpu_fwd_us"]) / wall,
            "spin_share": (after.get("spin_us", 0) - before.get("spin_us", 0)) / wall}


def _thread_times(pid: int | None) -> dict[int, tuple[int, int]]:
    """Each of a process's threads' CPU time and run-queue wait so far in ns (/proc/PID/task/TID/schedstat)."""
    times: dict[int, tuple[int, int]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task") if pid is not None else []
        for tid in tids:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                run, wait = f.read().split()[:2]
            times[int(tid)] = (int(run), int(wait))
    except OSError:  # the process or a thread has gone: no figure
        return {}
    return times


def busiest_wait_share(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]],
                       wall_ns: float) -> float | None:
    """How much of the wall time the thread that ran most between two samples (the forward thread) spent
    runnable but waiting for a CPU: a thread descheduled under load, not one that forwards too slowly."""
    deltas = [(a[0] - before[t][0], a[1] - before[t][1]) for t, a in after.items() if t in before]
    return max(deltas)[1] / wall_ns if deltas and wall_ns > 0 else None


def _stop_servers(netns: str) -> None:
    """The run's iperf3 servers, found among the receiver namespace's processes: a pattern matched across
    the machine would also stop another run's servers."""
    for pid in netns_pids(netns):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone already
        if Path(argv[0].decode(errors="replace")).name == "iperf3" and b"-s" in argv:
            kill_pids([pid])


def _measure(chain: Chain, link: WireProcess | None, middle: str, load: Load, args: argparse.Namespace
             ) -> dict[str, Any]:
    """UDP through whatever is in the middle: what the receiver took in over the steady part of the run,
    and with a link its counters' differences, the forward thread's CPU share and its busy-poll share."""
    streams, seconds = load.flows(args.flows), args.duration
    # Unthrottled with one stream; with many, an even split of 2 Gbit/s (more than can pass).
    per_stream = 0 if streams == 1 else 2e9 / streams
    clients = _udp_clients(chain, streams, per_stream, seconds, load.payload)
    time.sleep(1.0)  # past the clients' start
    pid = link.pid if link else None
    before, (b0, p0), (s0, l0), t0 = link.stats() if link else {}, _received(chain), _offered(chain), time.monotonic()
    threads0 = _thread_times(pid)
    time.sleep(seconds - 2.0)
    threads1 = _thread_times(pid)
    after, (b1, p1), (s1, l1), t1 = link.stats() if link else {}, _received(chain), _offered(chain), time.monotonic()
    for c in clients:
        c.communicate(timeout=seconds + COMMAND_TIMEOUT_S)
    _stop_servers(chain.receiver)
    name = "bridge" if middle == BRIDGE else f"link {middle}"
    row: dict[str, Any] = {"name": f"{name}, {load.payload}-byte payloads",
                           "load": load.key, "middle": middle, "flows": streams, "payload_bytes": load.payload,
                           "rx_bps": (b1 - b0) * 8 / (t1 - t0), "rx_pps": (p1 - p0) / (t1 - t0),
                           "sent_pkts": s1 - s0, "l0_rx_pkts": l1 - l0}
    if link:
        row.update({
            "out_bps": (after["out_bytes"] - before["out_bytes"]) * 8 / (t1 - t0),
            "out_pps": (after["out_pkts"] - before["out_pkts"]) / (t1 - t0),
            **_cpu_shares(before, after),
            "rq_wait_share": busiest_wait_share(threads0, threads1, (t1 - t0) * 1e9),
            # a link from before the ring's size was reported gives 0 for it
            **{k: after.get(k, 0) for k in ("rx_ring", "rx_ring_frames", "qdisc_bypass", "busy_poll_us",
                                            "rx_wait_max_us")},
            **{k: after[k] - before[k] for k in ("in_pkts", "drop_kernel", "drop_overlimit", "drop_aqm")},
            "new_flows": after["new_flows"]})
    return row


def _capacity(chain: Chain, name: str, aqm: str, load: Load, args: argparse.Namespace) -> dict[str, Any]:
    options = ["--rate-bps", str(UNBOUNDED_RATE_BPS), "--aqm", aqm, "--limit-pkts", "10000", *THREAD_ONLY]
    with _link(chain, name, options, args.busy_poll_us) as link:
        return _measure(chain, link, aqm, load, args)


def _added(samples: list[float], base_p50: float) -> dict[str, Any] | None:
    """Ping RTT statistics and what the link added to the bridge's median."""
    s = RttStats.of(samples, base_p50)
    if s is None:
        return None
    return {**s.__dict__, "added_p50_us": s.p50_us - base_p50, "added_p99_us": s.p99_us - base_p50}


def _with_link_figures(row: dict[str, Any] | None, stats: dict[str, Any], **extra: Any) -> dict[str, Any] | None:
    """A ping row with the link's own added delay at departure beside the ping's (link_added_*: the link's
    counters name them as the ping's are named)."""
    return row and {**row, **extra, "link_added_p50_us": stats.get("added_p50_us"),
                    "link_added_p99_us": stats.get("added_p99_us")}


def _idle_path_counts(before: dict[str, Any], after: dict[str, Any], ready: dict[str, Any]) -> dict[str, Any]:
    """What the link's idle path did between two stats lines: the frames it forwarded of all the link took in,
    and its setting from the ready line (-1 and the reason where it was off; a link from before it: None)."""
    return {"xdp_idle_us": ready.get("xdp_idle_us"), "xdp_idle_off": ready.get("xdp_idle_off"),
            "xdp_idle_pkts": after.get("xdp_idle_pkts", 0) - before.get("xdp_idle_pkts", 0),
            "in_pkts": after["in_pkts"] - before["in_pkts"]}


def _idle_pings(chain: Chain, link: LinkEmulator) -> tuple[list[float], dict[str, Any], dict[str, Any]]:
    """The idle ping series through a running link, after a few to settle it, with the link's stats lines
    before and after it."""
    chain.ping(3, 0.2)
    before = link.stats()
    samples = chain.ping(PING_COUNT, PING_INTERVAL_S)
    return samples, before, link.stats()


def _delay(chain: Chain, rate_mbit: float, bridged: list[float], again: list[float], busy_poll_us: int | None
           ) -> dict[str, Any]:
    base_p50 = percentile(bridged, 50)
    options = ["--rate-bps", str(int(rate_mbit * 1e6)), "--limit-pkts", "1000"]
    with _link(chain, "d", options, busy_poll_us) as link:
        idle, before, after = _idle_pings(chain, link)
        idle_counts = _idle_path_counts(before, after, link.ready_event)
        load = _udp_clients(chain, 1, rate_mbit * 1e6 / 2, PING_COUNT * PING_INTERVAL_S + 2)
        time.sleep(LOAD_START_S)
        loaded = chain.ping(PING_COUNT, PING_INTERVAL_S)
        for c in load:
            c.communicate(timeout=COMMAND_TIMEOUT_S + PING_COUNT * PING_INTERVAL_S)
        stats = link.stats()
    options += THREAD_ONLY
    with _link(chain, "t", options, busy_poll_us) as link:
        thread, _, thread_stats = _idle_pings(chain, link)
    with _link(chain, "g", options, GAP_POLL_US) as link:
        gap, before, after = _idle_pings(chain, link)
        gap_cpu = _cpu_shares(before, after)
    with _link(chain, "q", options + ["--cpu-latency-us", "0"], busy_poll_us) as link:
        held = link.ready_event.get("cpu_latency_us", -1) == 0
        awake, _, awake_stats = _idle_pings(chain, link)
    gap_row = _added(gap, base_p50)
    return {"rate_mbit": rate_mbit, "bridged": RttStats.of(bridged, base_p50).__dict__,
            "bridged_again": _added(again, base_p50),
            "idle": (row := _added(idle, base_p50)) and {**row, **idle_counts},
            "half load": _added(loaded, base_p50), "link": stats,
            "idle_thread": _with_link_figures(_added(thread, base_p50), thread_stats),
            "idle_gap_poll": gap_row and {**gap_row, "busy_poll_us": GAP_POLL_US, **gap_cpu},
            "idle_cpu_latency_0": _with_link_figures(_added(awake, base_p50), awake_stats, held=held)}


def compare_runs(rows: list[dict[str, Any]]) -> None:
    """Adds to each link run its ratio to the bridge at the same load (to_bridge) and, for a queue other than
    tail drop, to tail drop at the same load (to_fifo): of received packets per second, which with one payload
    size per load is also the ratio of bits. None where the other run received nothing or is missing."""
    runs = {(r["load"], r["middle"]): r for r in rows}

    def ratio(row: dict[str, Any], middle: str) -> float | None:
        base = runs.get((row["load"], middle))
        return row["rx_pps"] / base["rx_pps"] if base and base["rx_pps"] > 0 else None

    for r in rows:
        if r["middle"] != BRIDGE:
            r["to_bridge"] = ratio(r, BRIDGE)
            if r["middle"] != "fifo":
                r["to_fifo"] = ratio(r, "fifo")


def judge_goals(rows: list[dict[str, Any]], delay: dict[str, Any], flows: int) -> list[dict[str, Any]]:
    """Each goal's figure from this run (a ratio to the bridge, or the idle ping's added p99), the link's and the
    bridge's own figures behind it, and whether it is met: True, False, or for the idle goal None (not decided)
    where its floor (the bridge's second series judged as the link's) is missing or itself breaks the bound. A
    figure not measured (no ping came back, the bridge received nothing) does not meet its goal."""
    runs = {(r["load"], r["middle"]): r for r in rows}
    goals = []
    for g in GOALS:
        floor = None
        if g.run is None:
            idle, again = delay.get("idle"), delay.get("bridged_again")
            figure, link, bridge = (idle["added_p99_us"], idle["p99_us"], delay["bridged"]["p50_us"]) if idle \
                else (None, None, delay["bridged"]["p50_us"])
            floor = again["added_p99_us"] if again else None
        else:
            row, base = runs[g.run], runs[(g.run[0], BRIDGE)]
            figure, link, bridge = row.get("to_bridge"), row["rx_pps"], base["rx_pps"]
        at_most = g.run is None
        met: bool | None = figure is not None and (figure <= g.bound if at_most else figure >= g.bound)
        if at_most and figure is not None and (floor is None or floor > g.bound):
            met = None
        goals.append({"check": g.check.format(flows=flows), "run": g.run, "figure": figure, "bound": g.bound,
                      "at_most": at_most, "link": link, "bridge": bridge, "floor": floor, "met": met})
    return goals


def machine_loaded(start: tuple[float, ...], end: tuple[float, ...], cpus: int) -> bool:
    """Whether the 1-minute load averages at the start and end say that others' work shared the machine."""
    return start[0] > LOADED_AT_START_PER_CPU * cpus or end[0] > LOADED_AT_END_PER_CPU * cpus


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    load_start, started = os.getloadavg(), time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    with Chain(f"bbl-{os.getpid()}-") as chain:
        _offloads_off(chain)
        bridged, again, capacity = _bridged(chain, [LOADS[key] for key, middle in CAPACITY_RUNS if middle == BRIDGE],
                                            args)
        if not bridged:
            raise RuntimeError("no ping through the bridged chain")
        delay = _delay(chain, args.rate, bridged, again, args.busy_poll_us)
        capacity += [_capacity(chain, f"c{i}", middle, LOADS[key], args)
                     for i, (key, middle) in enumerate(CAPACITY_RUNS) if middle != BRIDGE]
    load_end = os.getloadavg()
    compare_runs(capacity)
    goals = judge_goals(capacity, delay, args.flows)
    return {"machine": machine(), "started_utc": started,
            "load": {"start": load_start, "end": load_end,
                     "loaded": machine_loaded(load_start, load_end, os.cpu_count() or 1)},
            "delay": delay, "capacity": capacity, "goals": goals, "checks": {g["check"]: g["met"] for g in goals}}


def _rate(row: dict[str, Any]) -> str:
    return f"{row['rx_bps'] / 1e6:.0f} Mbit/s ({row['rx_pps'] / 1e3:.0f} kpps)"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _pings(label: str, s: dict[str, Any]) -> str:
    return (f"  ping through the link at {label}: p50 {s['p50_us']:.0f}  p99 {s['p99_us']:.0f} us; added p50 "
            f"{s['added_p50_us']:.0f}  p99 {s['added_p99_us']:.0f} us")


def _goal(g: dict[str, Any]) -> str:
    verdict = "NOT DECIDED" if g["met"] is None else "met" if g["met"] else "NOT MET"
    if g["at_most"]:
        figures = ("link p99 -, not measured" if g["figure"] is None else
                   f"link p99 {g['link']:.0f} us less the bridge's p50 {g['bridge']:.0f} us: {g['figure']:.0f} us")
        floor = "-" if g["floor"] is None else f"{g['floor']:.0f} us"
        return (f"  {verdict} {g['check']}: {figures}, goal <= {g['bound']:g} us; the bridge's second series "
                f"judged the same way: {floor}")
    ratio = "-" if g["figure"] is None else f"{g['figure']:.2f} x"
    return (f"  {verdict} {g['check']}: link {g['link'] / 1e3:.0f} kpps against the bridge's "
            f"{g['bridge'] / 1e3:.0f} kpps in this run: {ratio}, goal >= {g['bound']:g} x")


def report(result: dict[str, Any]) -> Iterator[str]:
    d, load, m = result["delay"], result["load"], result["machine"]
    yield (f"link emulator benchmark: kernel {m['kernel']}, {m['cpus']} CPUs, started {result['started_utc']} UTC, "
           f"load average at the start {load['start'][0]:.1f}, at the end {load['end'][0]:.1f}"
           + (" (A LOADED MACHINE: figures compare runs, not the machine's best)" if load["loaded"] else ""))
    b, again = d["bridged"], d.get("bridged_again")
    yield (f"  ping through a kernel bridge: p50 {b['p50_us']:.0f}  p99 {b['p99_us']:.0f} us"
           + (f"; a second series: p50 {again['p50_us']:.0f}  p99 {again['p99_us']:.0f} us" if again else ""))
    if i := d["idle"]:
        on = i.get("xdp_idle_us", -1) not in (None, -1)
        path = (f"idle path {i['xdp_idle_us']} us: {i['xdp_idle_pkts']} of {i['in_pkts']} frames" if on
                else f"idle path off ({i.get('xdp_idle_off') or 'not reported'})")
        yield _pings(f"{d['rate_mbit']:g} Mbit/s, idle", i) + f"; {path}"
    if h := d["half load"]:
        yield _pings(f"{d['rate_mbit']:g} Mbit/s, half load", h)
    if t := d.get("idle_thread"):
        yield (_pings(f"{d['rate_mbit']:g} Mbit/s, idle, through the thread (--xdp-idle-us 0)", t)
               + f"; added delay at departure p50 {t['link_added_p50_us']} p99 {t['link_added_p99_us']} us")
    if "link" in d:
        yield f"  link at {d['rate_mbit']:g} Mbit/s: {_cpu(d['link'])}"
    if g := d.get("idle_gap_poll"):
        yield (_pings(f"{d['rate_mbit']:g} Mbit/s, idle, through the thread, busy-poll {g['busy_poll_us']} us "
                      "(the whole ping gap)", g)
               + f"; forward thread CPU {g['cpu_fwd_share']:.0%} (busy-polling {g['spin_share']:.0%})")
    if q := d.get("idle_cpu_latency_0"):
        yield (_pings(f"{d['rate_mbit']:g} Mbit/s, idle, through the thread, CPU latency request 0 us", q)
               + ("" if q["held"] else " (REFUSED: the CPUs could halt)")
               + f"; added delay at departure p50 {q['link_added_p50_us']} p99 {q['link_added_p99_us']} us")
    for c in result["capacity"]:
        line = f"  capacity, {c['name']}, {c['flows']} UDP flow(s): received {_rate(c)}"
        for key, what in (("to_bridge", "the bridge's"), ("to_fifo", "tail drop's")):
            if c.get(key) is not None:
                line += f", {c[key]:.2f} x {what}"
        if "out_bps" in c:
            line += (f"; socket drops {c['drop_kernel']}, overlimit {c['drop_overlimit']}, AQM {c['drop_aqm']}, "
                     f"new-queue activations {c['new_flows']}; forward thread CPU {c['cpu_fwd_share']:.0%} "
                     f"(busy-polling {c['spin_share']:.0%}, waiting for a CPU {_share(c.get('rq_wait_share'))}); "
                     f"rx ring {c['rx_ring']} ({c['rx_ring_frames']} "
                     f"slots, longest wait {c['rx_wait_max_us']} us), qdisc bypass {c['qdisc_bypass']}, busy-poll "
                     f"{c['busy_poll_us']} us; frames sent {c['sent_pkts']}, at the link's interface "
                     f"{c['l0_rx_pkts']}, read {c['in_pkts']}")
        yield line
    for g in result["goals"]:
        yield _goal(g)


def _cpu(stats: dict[str, Any]) -> str:
    wall = max(1, stats["wall_us"])
    return (f"forward thread CPU {stats['cpu_fwd_us'] / wall:.0%} of the run (busy-polling "
            f"{stats.get('spin_us', 0) / wall:.0%}), added delay at departure p50 {stats.get('added_p50_us', '-')} "
            f"p99 {stats.get('added_p99_us', '-')} us")


def run_benchmark(args: argparse.Namespace) -> str:
    return run_reported("linkbench", benchmark, report, args)
