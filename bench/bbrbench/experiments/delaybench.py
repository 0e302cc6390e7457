"""Benchmark of the delay line: RTT accuracy idle and under load, and one-flow capacity.

Builds sender | delay | receiver network namespaces (one L2 segment through the delay line), then:
- idle: ping RTT against the configured RTT;
- loaded: ping and TCP (ss -tin) RTT while one iperf3 CUBIC flow runs, once paced to a rate (a path
  saturated at an emulated bottleneck rate, no queue anywhere) and once unpaced (the flow takes all the
  CPU the machine has, so the delay line is the bottleneck);
- capacity: the unpaced flow's throughput.

Run as `bbrbench delaybench [--out FILE]`. Everything it creates is named
`bbd-<pid>-...` and removed on exit, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ..errors import HarnessError, UsageError
from ..testbed.delayline import DelayLine
from ..testbed.netns import Namespaces
from ..testbed.procs import command, wait_listening
from ..testbed.wire import kill_wire_processes

SENDER_ADDR = "198.18.0.1"
RECEIVER_ADDR = "198.18.0.2"
PREFIX_LEN = 24
IPERF_PORT = 5201
# Enough for several BDPs at 10 Gbit/s x 20 ms; per-namespace, so the host is not touched.
TCP_MEM_SYSCTL = "4096 131072 67108864"
PING_INTERVAL_S = 0.01
SS_INTERVAL_S = 0.05
WARMUP_S = 1.0
RTT_TARGET_US = 500
CAPACITY_TARGET_BPS = 1_000_000_000
COMMAND_TIMEOUT_S = 30.0
PING_RE = re.compile(r"time=([\d.]+) ms")
SS_RTT_RE = re.compile(r"\brtt:([\d.]+)/")
SS_ACKED_RE = re.compile(r"\bbytes_acked:(\d+)")


class Chain:
    """sender | delay | receiver namespaces named <prefix>s, <prefix>d, <prefix>r; the delay namespace
    holds the inner ends `l0` (sender side) and `r0` (receiver side) of two veth pairs."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.sender = f"{prefix}s"
        self.delay = f"{prefix}d"
        self.receiver = f"{prefix}r"
        self.namespaces = Namespaces()

    def __enter__(self) -> Chain:
        try:
            self.create()
        except BaseException:
            self.destroy()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def create(self) -> None:
        for ns in (self.sender, self.delay, self.receiver):
            self.namespaces.add(ns)
        for ns in (self.sender, self.receiver):
            # No IPv6 chatter (DAD, router solicitations) in the measured path; the delay line itself
            # silences its own namespace's interfaces.
            command(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"],
                    netns=ns)
        self.namespaces.veth(self.delay, "l0", self.sender, "eth0")
        self.namespaces.veth(self.delay, "r0", self.receiver, "eth0")
        for ns, addr in ((self.sender, SENDER_ADDR), (self.receiver, RECEIVER_ADDR)):
            command(["ip", "-n", ns, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", "eth0"])
            command(["ip", "-n", ns, "link", "set", "eth0", "up"])
            command(["sysctl", "-qw", f"net.ipv4.tcp_rmem={TCP_MEM_SYSCTL}", f"net.ipv4.tcp_wmem={TCP_MEM_SYSCTL}"],
                    netns=ns)

    def destroy(self) -> None:
        kill_wire_processes(self.prefix)
        self.namespaces.destroy()

    def delay_line(self, delay_lr_us: int, delay_rl_us: int) -> DelayLine:
        return DelayLine(self.delay, "l0", "r0", delay_lr_us, delay_rl_us, tag=f"{self.prefix}dl")

    def ping(self, count: int, interval_s: float = PING_INTERVAL_S) -> list[float]:
        """RTT samples in microseconds."""
        out = command(["ping", "-n", "-W", "1", "-c", str(count), "-i", str(interval_s), RECEIVER_ADDR],
                      netns=self.sender, check=False, timeout=count * interval_s + COMMAND_TIMEOUT_S).stdout
        return [float(m) * 1000 for m in PING_RE.findall(out)]


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, round(pct / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class RttStats:
    samples: int
    p50_us: float
    p95_us: float
    p99_us: float
    max_us: float
    p99_error_us: float

    @staticmethod
    def of(samples: Sequence[float], target_us: float) -> RttStats | None:
        if not samples:
            return None
        p99 = percentile(samples, 99)
        return RttStats(len(samples), percentile(samples, 50), percentile(samples, 95), p99, max(samples),
                        abs(p99 - target_us))


@dataclass
class LoadResult:
    name: str
    pacing: str
    throughput_bps: float
    ping: RttStats | None
    tcp: RttStats | None
    delay_line: dict[str, int] = field(default_factory=dict)


def _sample_ss(chain: Chain, stop: threading.Event, out: list[float]) -> None:
    """srtt of the iperf3 data connection (the one with the most bytes acked), every SS_INTERVAL_S."""
    while not stop.wait(SS_INTERVAL_S):
        # ss -N only switches the network namespace: much cheaper than `ip netns exec` at 20 Hz.
        text = command(["ss", "-N", chain.sender, "-tin", "dst", RECEIVER_ADDR, "dport", "=", str(IPERF_PORT)],
                       check=False).stdout
        best: tuple[int, float] | None = None
        for line in text.splitlines():
            rtt, acked = SS_RTT_RE.search(line), SS_ACKED_RE.search(line)
            if rtt and acked and (best is None or int(acked.group(1)) > best[0]):
                best = (int(acked.group(1)), float(rtt.group(1)) * 1000)
        if best is not None and best[0] > 0:
            out.append(best[1])


def loaded_run(chain: Chain, line: DelayLine, name: str, duration_s: float, rtt_us: float,
               rate: str | None) -> LoadResult:
    """One iperf3 CUBIC flow for duration_s (paced to `rate` when given) with ping and ss sampling;
    the first WARMUP_S (slow start) is not sampled."""
    server = subprocess.Popen(["ip", "netns", "exec", chain.receiver, "iperf3", "-s", "-1", "-p", str(IPERF_PORT)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(chain.receiver, [IPERF_PORT], servers=[server], what="iperf3 server")
        before = line.stats()
        client_args = ["iperf3", "-c", RECEIVER_ADDR, "-p", str(IPERF_PORT), "-C", "cubic", "-J",
                       "-t", str(duration_s)]
        if rate:
            client_args += ["--fq-rate", rate]
        client = subprocess.Popen(["ip", "netns", "exec", chain.sender, *client_args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        time.sleep(WARMUP_S)
        stop = threading.Event()
        tcp: list[float] = []
        sampler = threading.Thread(target=_sample_ss, args=(chain, stop, tcp), daemon=True)
        sampler.start()
        ping = chain.ping(int((duration_s - WARMUP_S - 0.5) / PING_INTERVAL_S))
        stop.set()
        sampler.join()
        out, err = client.communicate(timeout=duration_s + COMMAND_TIMEOUT_S)
        if client.returncode != 0:
            raise RuntimeError(f"iperf3 client failed: {err.strip() or out[-200:]}")
        bps = float(json.loads(out)["end"]["sum_received"]["bits_per_second"])
        after = line.stats()
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()
    diff = {k: after[k] - before.get(k, 0) for k in after
            if k.endswith(("_pkts", "_bytes", "_drop_queue", "_drop_kernel", "_drop_tx", "_drop_bad", "_late_pkts"))
            and "queued" not in k}
    diff.update({k: v for k, v in after.items() if "max_" in k})
    return LoadResult(name, f"--fq-rate {rate}" if rate else "none", bps, RttStats.of(ping, rtt_us),
                      RttStats.of(tcp, rtt_us), diff)


def _fmt(stats: RttStats | None) -> str:
    if stats is None:
        return "no samples"
    return (f"p50 {stats.p50_us / 1000:7.3f}  p95 {stats.p95_us / 1000:7.3f}  p99 {stats.p99_us / 1000:7.3f}  "
            f"max {stats.max_us / 1000:7.3f} ms  (p99 error {stats.p99_error_us:5.0f} us, n={stats.samples})")


def machine() -> dict[str, Any]:
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "python": platform.python_version()}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--delay-us", type=int, default=10_000, help="one-way delay each direction (default 10000)")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per loaded run (default 10)")
    ap.add_argument("--rate", default="1G", help="pacing rate of the paced run, iperf3 syntax (default 1G)")
    ap.add_argument("--idle-pings", type=int, default=500, help="ping samples idle (default 500)")
    ap.add_argument("--out", metavar="FILE", help="write the results as JSON to this file")


def check_args(args: argparse.Namespace) -> None:
    if not 0 < args.delay_us <= 1_000_000:
        raise UsageError("--delay-us: must be 1..1000000")
    if args.duration < WARMUP_S + 2:
        raise UsageError(f"--duration: must be at least {WARMUP_S + 2:.0f} s")
    if args.idle_pings < 10:
        raise UsageError("--idle-pings: must be at least 10")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    rtt_us = 2 * args.delay_us
    with Chain(f"bbd-{os.getpid()}-") as chain:
        if chain.ping(1, 0.2):
            raise RuntimeError("packets pass without the delay line: the chain is not isolated")
        with chain.delay_line(args.delay_us, args.delay_us) as line:
            chain.ping(2, 0.2)  # resolve ARP before measuring
            idle = RttStats.of(chain.ping(args.idle_pings), rtt_us)
            loads = [loaded_run(chain, line, "paced", args.duration, rtt_us, args.rate),
                     loaded_run(chain, line, "unpaced", args.duration, rtt_us, None)]
    paced, unpaced = loads
    checks = {
        "idle_ping_p99_within_500us": idle is not None and idle.p99_error_us <= RTT_TARGET_US,
        "paced_ping_p99_within_500us": paced.ping is not None and paced.ping.p99_error_us <= RTT_TARGET_US,
        "paced_tcp_p99_within_500us": paced.tcp is not None and paced.tcp.p99_error_us <= RTT_TARGET_US,
        "unpaced_at_least_1gbps": unpaced.throughput_bps >= CAPACITY_TARGET_BPS,
    }
    return {"machine": machine(), "configured_rtt_us": rtt_us, "idle_ping": idle and idle.__dict__,
            "loads": [{**load.__dict__, "ping": load.ping and load.ping.__dict__,
                       "tcp": load.tcp and load.tcp.__dict__} for load in loads],
            "checks": checks}


def report(result: dict[str, Any]) -> Iterator[str]:
    rtt_ms = result["configured_rtt_us"] / 1000
    yield f"delay line benchmark: configured RTT {rtt_ms:.3f} ms, {result['machine']}"
    idle = result["idle_ping"]
    yield f"  idle    ping: {_fmt(RttStats(**idle) if idle else None)}"
    for load in result["loads"]:
        yield (f"  {load['name']:7s} one cubic flow, pacing {load['pacing']}: "
               f"{load['throughput_bps'] / 1e9:.2f} Gbit/s")
        for kind in ("ping", "tcp"):
            stats = load[kind]
            yield f"          {kind:4s}: {_fmt(RttStats(**stats) if stats else None)}"
        dl = load["delay_line"]
        yield (f"          delay line: drops queue/kernel/tx {dl.get('lr_drop_queue', 0)}/"
               f"{dl.get('lr_drop_kernel', 0)}/{dl.get('lr_drop_tx', 0)}, "
               f"max queued {dl.get('lr_max_queued_bytes', 0) / 1e6:.1f} MB, "
               f"departures >50 us late {dl.get('lr_late_pkts', 0)}/{dl.get('lr_pkts', 0)} "
               f"(max {dl.get('lr_late_max_us', 0)} us)")
    for name, ok in result["checks"].items():
        yield f"  {'PASS' if ok else 'FAIL'} {name}"


def run_reported(name: str, bench: Callable[[argparse.Namespace], dict[str, Any]],
                 lines: Callable[[dict[str, Any]], Iterator[str]], args: argparse.Namespace) -> str:
    """Run a chain benchmark (SIGTERM acts as Ctrl-C, so the chain is removed either way), write its
    result to --out as JSON and return its report."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        result = bench(args)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        raise HarnessError(f"{name}: {exc}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return "\n".join(lines(result))


def run_benchmark(args: argparse.Namespace) -> str:
    return run_reported("delaybench", benchmark, report, args)
