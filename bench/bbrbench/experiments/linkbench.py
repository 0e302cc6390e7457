"""Benchmark of the link emulator (bbrkit-link): its own added delay and its forwarding capacity with
wire-size frames.

Builds the delay line benchmark's sender | middle | receiver chain (experiments/delaybench.py), then:
- added delay: ping RTT through the link at --rate against the same chain bridged by the kernel (a
  Linux bridge in the middle namespace), idle and beside a UDP load at half the rate;
- capacity, tail drop: one unthrottled UDP flow of MTU-size datagrams through a link set far above what
  the machine can forward, for --duration; the link's own counters give what it forwarded;
- capacity, FQ-CoDel with --flows flows: the same with that many UDP flows (iperf3 clients of at most
  128 streams each) through FQ-CoDel.

Run as `bbrbench linkbench [--out FILE]`. Everything it creates is named `bbl-<pid>-...` and removed on
exit, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

from ..errors import UsageError
from ..testbed.linkemu import LinkEmulator, kernel_reverse
from ..testbed.procs import command
from .delaybench import RECEIVER_ADDR, Chain, RttStats, machine, percentile, run_reported

# A rate no 2-vCPU machine forwards: the link's own speed is what the capacity runs measure.
UNBOUNDED_RATE_BPS = 40_000_000_000
UDP_PAYLOAD_BYTES = 1472  # an MTU-size IPv4 datagram
IPERF_MAX_STREAMS = 128
IPERF_BASE_PORT = 5301
ADDED_DELAY_TARGET_US = 50
# Issue 32's goals for the link against a kernel bridge on the same machine.
TAILDROP_TARGET_BPS = 2_500_000_000
FQ_TARGET_BPS = 2_000_000_000
PING_COUNT = 500
PING_INTERVAL_S = 0.01
COMMAND_TIMEOUT_S = 30.0


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rate", type=float, default=100.0, help="link rate in Mbit/s for the delay runs (default 100)")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per capacity run (default 5)")
    ap.add_argument("--flows", type=int, default=1024, help="flows of the FQ-CoDel capacity run (default 1024)")
    ap.add_argument("--out", help="write the results as JSON to this file")


def check_args(args: argparse.Namespace) -> None:
    if not 1 <= args.rate <= 10_000:
        raise UsageError("--rate: must be 1..10000 Mbit/s")
    if not 2 <= args.duration <= 600:
        raise UsageError("--duration: must be 2..600 s")
    if not 1 <= args.flows <= 4096:
        raise UsageError("--flows: must be 1..4096")


def _link(chain: Chain, name: str, options: list[str]) -> LinkEmulator:
    """The link with the ACK direction in the kernel (tc mirred), as bbrbench runs an unshaped one."""
    command(["tc", "qdisc", "del", "dev", "r0", "clsact"], netns=chain.delay, check=False)
    problem = kernel_reverse(chain.delay, "r0", "l0")
    return LinkEmulator(chain.delay, "l0", "r0", tag=f"{chain.prefix}{name}",
                        options=options + ([] if problem else ["--rev-kernel"]))


def _offloads_off(chain: Chain) -> None:
    """Wire-size frames: the link queues per packet."""
    for ns, dev in ((chain.sender, "eth0"), (chain.receiver, "eth0"), (chain.delay, "l0"), (chain.delay, "r0")):
        command(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"], netns=ns, check=False)


def _bridged_pings(chain: Chain) -> list[float]:
    command(["ip", "-n", chain.delay, "link", "add", "br0", "type", "bridge"])
    try:
        for dev in ("l0", "r0", "br0"):
            if dev != "br0":
                command(["ip", "-n", chain.delay, "link", "set", dev, "master", "br0"])
            command(["ip", "-n", chain.delay, "link", "set", dev, "up"])
        chain.ping(3, 0.2)
        return chain.ping(PING_COUNT, PING_INTERVAL_S)
    finally:
        command(["ip", "-n", chain.delay, "link", "del", "br0"], check=False)


def _udp_clients(chain: Chain, streams: int, per_stream_bps: float, seconds: float) -> list[subprocess.Popen[str]]:
    """iperf3 UDP clients of at most IPERF_MAX_STREAMS streams each, one server per client."""
    clients = []
    for i, start in enumerate(range(0, streams, IPERF_MAX_STREAMS)):
        port = IPERF_BASE_PORT + i
        command(["iperf3", "-s", "-D", "-1", "-p", str(port)], netns=chain.receiver)
        n = min(IPERF_MAX_STREAMS, streams - start)
        clients.append(subprocess.Popen(
            ["ip", "netns", "exec", chain.sender, "iperf3", "-c", RECEIVER_ADDR, "-p", str(port), "-u",
             "-b", str(int(per_stream_bps)), "-l", str(UDP_PAYLOAD_BYTES), "-P", str(n), "-t", str(seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    time.sleep(0.3)
    return clients


def _capacity(chain: Chain, name: str, aqm: str, streams: int, seconds: float) -> dict[str, Any]:
    options = ["--rate-bps", str(UNBOUNDED_RATE_BPS), "--aqm", aqm, "--limit-pkts", "10000"]
    with _link(chain, name, options) as link:
        # Unthrottled with one stream; with many, an even split of 2 Gbit/s (more than can pass).
        per_stream = 0 if streams == 1 else 2e9 / streams
        clients = _udp_clients(chain, streams, per_stream, seconds)
        time.sleep(1.0)  # past the clients' start
        before, t0 = link.stats(), time.monotonic()
        time.sleep(seconds - 2.0)
        after, t1 = link.stats(), time.monotonic()
        for c in clients:
            c.communicate(timeout=seconds + COMMAND_TIMEOUT_S)
        command(["pkill", "-f", f"iperf3 -s -D -1 -p {IPERF_BASE_PORT}"], netns=chain.receiver, check=False)
    out_bps = (after["out_bytes"] - before["out_bytes"]) * 8 / (t1 - t0)
    return {"name": name, "aqm": aqm, "flows": streams, "out_bps": out_bps,
            "out_pps": (after["out_pkts"] - before["out_pkts"]) / (t1 - t0),
            "drop_kernel": after.get("drop_kernel", 0) - before.get("drop_kernel", 0),
            "drop_overlimit": after["drop_overlimit"] - before["drop_overlimit"],
            "drop_aqm": after["drop_aqm"] - before["drop_aqm"], "new_flows": after["new_flows"]}


def _delay(chain: Chain, rate_mbit: float, bridged: list[float]) -> dict[str, Any]:
    base_p50 = percentile(bridged, 50)
    rows = {}
    with _link(chain, "d", ["--rate-bps", str(int(rate_mbit * 1e6)), "--limit-pkts", "1000"]) as link:
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
        bridged = _bridged_pings(chain)
        if not bridged:
            raise RuntimeError("no ping through the bridged chain")
        delay = _delay(chain, args.rate, bridged)
        taildrop = _capacity(chain, "t", "fifo", 1, args.duration)
        fq = _capacity(chain, "f", "fq_codel", args.flows, args.duration)
    checks = {
        f"added_delay_p99_at_{args.rate:g}mbit_within_{ADDED_DELAY_TARGET_US}us":
            bool(delay["idle"]) and delay["idle"]["added_p99_us"] <= ADDED_DELAY_TARGET_US,
        "taildrop_at_least_2.5gbps": taildrop["out_bps"] >= TAILDROP_TARGET_BPS,
        f"fq_codel_{args.flows}_flows_at_least_2gbps": fq["out_bps"] >= FQ_TARGET_BPS,
    }
    return {"machine": machine(), "delay": delay, "capacity": [taildrop, fq], "checks": checks}


def report(result: dict[str, Any]) -> Iterator[str]:
    d = result["delay"]
    yield f"link emulator benchmark: {result['machine']}"
    b = d["bridged"]
    yield f"  ping through a kernel bridge: p50 {b['p50_us']:.0f}  p99 {b['p99_us']:.0f} us"
    for name in ("idle", "half load"):
        s = d[name]
        if s:
            yield (f"  ping through the link at {d['rate_mbit']:g} Mbit/s, {name}: p50 {s['p50_us']:.0f}  p99 "
                   f"{s['p99_us']:.0f} us; added p50 {s['added_p50_us']:.0f}  p99 {s['added_p99_us']:.0f} us")
    for c in result["capacity"]:
        yield (f"  capacity, {c['aqm']}, {c['flows']} UDP flow(s) of {UDP_PAYLOAD_BYTES}-byte datagrams: "
               f"{c['out_bps'] / 1e6:.0f} Mbit/s ({c['out_pps'] / 1e3:.0f} kpps); socket drops {c['drop_kernel']}, "
               f"overlimit {c['drop_overlimit']}, AQM {c['drop_aqm']}, new-queue activations {c['new_flows']}")
    for name, ok in result["checks"].items():
        yield f"  {'PASS' if ok else 'FAIL'} {name}"


def run_benchmark(args: argparse.Namespace) -> str:
    return run_reported("linkbench", benchmark, report, args)
