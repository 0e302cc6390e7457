"""Benchmark of the link emulator (bbrkit-link): its own added delay and its forwarding capacity with
wire-size frames.

Builds the delay line benchmark's sender | middle | receiver chain (experiments/delaybench.py), then:
- added delay: ping RTT through the link at --rate against the same chain bridged by the kernel (a
  Linux bridge in the middle namespace), idle and beside a UDP load at half the rate;
- capacity, tail drop: one unthrottled UDP flow of MTU-size datagrams through a link set far above what
  the machine can forward, for --duration; the link's own counters give what it forwarded;
- capacity, FQ-CoDel with --flows flows: the same with that many UDP flows (iperf3 clients of at most
  128 streams each) through FQ-CoDel;
- small packets: one unthrottled UDP flow of 64-byte payloads through tail drop, in packets per second.
Capacities are counted at the receiver (its interface's counters), and the two one-flow runs also go
through the kernel bridge first: what the sender and the machine can do at all, beside what the link does.
Each link run reports the forward thread's CPU share and how much of it was busy-polling.

Run as `bbrbench linkbench [--out FILE]`. Everything it creates is named `bbl-<pid>-...` and removed on
exit, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

from ..errors import UsageError
from ..testbed.linkemu import LinkEmulator, kernel_reverse
from ..testbed.procs import command
from ..testbed.wire import WireProcess
from .delaybench import RECEIVER_ADDR, Chain, RttStats, machine, percentile, run_reported

# A rate no 2-vCPU machine forwards: the link's own speed is what the capacity runs measure.
UNBOUNDED_RATE_BPS = 40_000_000_000
UDP_PAYLOAD_BYTES = 1472  # an MTU-size IPv4 datagram
SMALL_PAYLOAD_BYTES = 64  # issue 32's small-packet case
IPERF_MAX_STREAMS = 128
IPERF_BASE_PORT = 5301
ADDED_DELAY_TARGET_US = 50
# Issue 32's goals for the link against a kernel bridge on the same machine.
TAILDROP_TARGET_BPS = 2_500_000_000
FQ_TARGET_BPS = 2_000_000_000
SMALL_TARGET_PPS = 300_000
PING_COUNT = 500
PING_INTERVAL_S = 0.01
COMMAND_TIMEOUT_S = 30.0


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rate", type=float, default=100.0, help="link rate in Mbit/s for the delay runs (default 100)")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per capacity run (default 5)")
    ap.add_argument("--flows", type=int, default=1024, help="flows of the FQ-CoDel capacity run (default 1024)")
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


def _bridged(chain: Chain, seconds: float) -> tuple[list[float], list[dict[str, Any]]]:
    """Ping and the one-flow capacities through a kernel bridge in the middle namespace."""
    command(["ip", "-n", chain.delay, "link", "add", "br0", "type", "bridge"])
    try:
        for dev in ("l0", "r0", "br0"):
            if dev != "br0":
                command(["ip", "-n", chain.delay, "link", "set", dev, "master", "br0"])
            command(["ip", "-n", chain.delay, "link", "set", dev, "up"])
        chain.ping(3, 0.2)
        pings = chain.ping(PING_COUNT, PING_INTERVAL_S)
        capacity = [_measure(chain, None, f"bridge, {size}-byte payloads", 1, size, seconds)
                    for size in (UDP_PAYLOAD_BYTES, SMALL_PAYLOAD_BYTES)]
        return pings, capacity
    finally:
        command(["ip", "-n", chain.delay, "link", "del", "br0"], check=False)


def _udp_clients(chain: Chain, streams: int, per_stream_bps: float, seconds: float,
                 payload: int = UDP_PAYLOAD_BYTES) -> list[subprocess.Popen[str]]:
    """iperf3 UDP clients of at most IPERF_MAX_STREAMS streams each, one server per client."""
    clients = []
    for i, start in enumerate(range(0, streams, IPERF_MAX_STREAMS)):
        port = IPERF_BASE_PORT + i
        command(["iperf3", "-s", "-D", "-1", "-p", str(port)], netns=chain.receiver)
        n = min(IPERF_MAX_STREAMS, streams - start)
        clients.append(subprocess.Popen(
            ["ip", "netns", "exec", chain.sender, "iperf3", "-c", RECEIVER_ADDR, "-p", str(port), "-u",
             "-b", str(int(per_stream_bps)), "-l", str(payload), "-P", str(n), "-t", str(seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    time.sleep(0.3)
    return clients


def _measure(chain: Chain, link: WireProcess | None, name: str, streams: int, payload: int,
             seconds: float) -> dict[str, Any]:
    """UDP through whatever is in the middle: what the receiver took in over the steady part of the run,
    and with a link its counters' differences, the forward thread's CPU share and its busy-poll share."""
    # Unthrottled with one stream; with many, an even split of 2 Gbit/s (more than can pass).
    per_stream = 0 if streams == 1 else 2e9 / streams
    clients = _udp_clients(chain, streams, per_stream, seconds, payload)
    time.sleep(1.0)  # past the clients' start
    before, (b0, p0), (s0, l0), t0 = link.stats() if link else {}, _received(chain), _offered(chain), time.monotonic()
    time.sleep(seconds - 2.0)
    after, (b1, p1), (s1, l1), t1 = link.stats() if link else {}, _received(chain), _offered(chain), time.monotonic()
    for c in clients:
        c.communicate(timeout=seconds + COMMAND_TIMEOUT_S)
    command(["pkill", "-f", f"iperf3 -s -D -1 -p {IPERF_BASE_PORT}"], netns=chain.receiver, check=False)
    row: dict[str, Any] = {"name": name, "flows": streams, "payload_bytes": payload,
                           "rx_bps": (b1 - b0) * 8 / (t1 - t0), "rx_pps": (p1 - p0) / (t1 - t0),
                           "sent_pkts": s1 - s0, "l0_rx_pkts": l1 - l0}
    if link:
        wall = max(1, after["wall_us"] - before["wall_us"])
        row.update({
            "out_bps": (after["out_bytes"] - before["out_bytes"]) * 8 / (t1 - t0),
            "out_pps": (after["out_pkts"] - before["out_pkts"]) / (t1 - t0),
            "cpu_fwd_share": (after["cpu_fwd_us"] - before["cpu_fwd_us"]) / wall,
            # a link from before the busy-poll and the receive ring reports neither (0)
            "spin_share": (after.get("spin_us", 0) - before.get("spin_us", 0)) / wall,
            # a link from before the ring's size was reported gives 0 for it
            **{k: after.get(k, 0) for k in ("rx_ring", "rx_ring_frames", "qdisc_bypass", "busy_poll_us",
                                            "rx_wait_max_us")},
            **{k: after[k] - before[k] for k in ("in_pkts", "drop_kernel", "drop_overlimit", "drop_aqm")},
            "new_flows": after["new_flows"]})
    return row


def _capacity(chain: Chain, name: str, aqm: str, streams: int, payload: int, args: argparse.Namespace
              ) -> dict[str, Any]:
    options = ["--rate-bps", str(UNBOUNDED_RATE_BPS), "--aqm", aqm, "--limit-pkts", "10000"]
    with _link(chain, name, options, args.busy_poll_us) as link:
        row = _measure(chain, link, f"link {aqm}, {payload}-byte payloads", streams, payload, args.duration)
    return {**row, "aqm": aqm}


def _delay(chain: Chain, rate_mbit: float, bridged: list[float], busy_poll_us: int | None) -> dict[str, Any]:
    base_p50 = percentile(bridged, 50)
    rows = {}
    with _link(chain, "d", ["--rate-bps", str(int(rate_mbit * 1e6)), "--limit-pkts", "1000"], busy_poll_us) as link:
        chain.ping(3, 0.2)
        idle = chain.ping(PING_COUNT, PING_INTERVAL_S)
        load = _udp_clients(chain, 1, rate_mbit * 1e6 / 2, PING_COUNT * PING_INTERVAL_S + 2)
        loaded = chain.ping(PING_COUNT, PING_INTERVAL_S)
        for c in load:
            c.communicate(timeout=COMMAND_TIMEOUT_S + PING_COUNT * PING_INTERVAL_S)
        stats = link.stats()
    for name, samples in (("idle", idle), ("half load", loaded)):
        s = RttStats.of(samples, base_p50)
        rows[name] = s and {**s.__dict__, "added_p50_us": s.p50_us - base_p50, "added_p99_us": s.p99_us - base_p50}
    return {"rate_mbit": rate_mbit, "bridged": RttStats.of(bridged, base_p50).__dict__, **rows, "link": stats}


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    with Chain(f"bbl-{os.getpid()}-") as chain:
        _offloads_off(chain)
        bridged, bridge_capacity = _bridged(chain, args.duration)
        if not bridged:
            raise RuntimeError("no ping through the bridged chain")
        delay = _delay(chain, args.rate, bridged, args.busy_poll_us)
        taildrop = _capacity(chain, "t", "fifo", 1, UDP_PAYLOAD_BYTES, args)
        fq = _capacity(chain, "f", "fq_codel", args.flows, UDP_PAYLOAD_BYTES, args)
        small = _capacity(chain, "p", "fifo", 1, SMALL_PAYLOAD_BYTES, args)
    checks = {
        f"added_delay_p99_at_{args.rate:g}mbit_within_{ADDED_DELAY_TARGET_US}us":
            bool(delay["idle"]) and delay["idle"]["added_p99_us"] <= ADDED_DELAY_TARGET_US,
        "taildrop_at_least_2.5gbps": taildrop["rx_bps"] >= TAILDROP_TARGET_BPS,
        f"fq_codel_{args.flows}_flows_at_least_2gbps": fq["rx_bps"] >= FQ_TARGET_BPS,
        "64_byte_payloads_at_least_300kpps": small["rx_pps"] >= SMALL_TARGET_PPS,
    }
    return {"machine": machine(), "load": os.getloadavg(), "delay": delay,
            "capacity": [*bridge_capacity, taildrop, fq, small], "checks": checks}


def report(result: dict[str, Any]) -> Iterator[str]:
    d = result["delay"]
    yield f"link emulator benchmark: {result['machine']}, load average at the end {result['load'][0]:.1f}"
    b = d["bridged"]
    yield f"  ping through a kernel bridge: p50 {b['p50_us']:.0f}  p99 {b['p99_us']:.0f} us"
    for name in ("idle", "half load"):
        s = d[name]
        if s:
            yield (f"  ping through the link at {d['rate_mbit']:g} Mbit/s, {name}: p50 {s['p50_us']:.0f}  p99 "
                   f"{s['p99_us']:.0f} us; added p50 {s['added_p50_us']:.0f}  p99 {s['added_p99_us']:.0f} us")
    if "link" in d:
        yield f"  link at {d['rate_mbit']:g} Mbit/s: {_cpu(d['link'])}"
    for c in result["capacity"]:
        line = (f"  capacity, {c['name']}, {c['flows']} UDP flow(s): received {c['rx_bps'] / 1e6:.0f} Mbit/s "
                f"({c['rx_pps'] / 1e3:.0f} kpps)")
        if "out_bps" in c:
            line += (f"; socket drops {c['drop_kernel']}, overlimit {c['drop_overlimit']}, AQM {c['drop_aqm']}, "
                     f"new-queue activations {c['new_flows']}; forward thread CPU {c['cpu_fwd_share']:.0%} "
                     f"(busy-polling {c['spin_share']:.0%}); rx ring {c['rx_ring']} ({c['rx_ring_frames']} "
                     f"slots, longest wait {c['rx_wait_max_us']} us), qdisc bypass {c['qdisc_bypass']}, busy-poll "
                     f"{c['busy_poll_us']} us; frames sent {c['sent_pkts']}, at the link's interface "
                     f"{c['l0_rx_pkts']}, read {c['in_pkts']}")
        yield line
    for name, ok in result["checks"].items():
        yield f"  {'PASS' if ok else 'FAIL'} {name}"


def _cpu(stats: dict[str, Any]) -> str:
    wall = max(1, stats["wall_us"])
    return (f"forward thread CPU {stats['cpu_fwd_us'] / wall:.0%} of the run (busy-polling "
            f"{stats.get('spin_us', 0) / wall:.0%}), added delay at departure p50 {stats.get('added_p50_us', '-')} "
            f"p99 {stats.get('added_p99_us', '-')} us")


def run_benchmark(args: argparse.Namespace) -> str:
    return run_reported("linkbench", benchmark, report, args)
