"""What each wake-up option buys the idle ping through bbrkit-link: linkbench's chain and idle ping (500
pings 10 ms apart, offloads off, the link at 100 Mbit/s with the ACK direction in the kernel), each option
back to back in one chain, in rounds, against the kernel bridge of the same round. Options: the link's
default (SCHED_FIFO threads, 100 us poll after a frame); the same with a PM QoS request of 0 us held on
/dev/cpu_dma_latency (the CPUs poll in idle instead of halting, as cyclictest does); a poll over the whole
ping gap (--busy-poll-us 20000), alone and with that PM QoS request; the link's threads moved to SCHED_OTHER.
Root, under the project's lock:

    flock /tmp/bbrkit-root.lock nice -n 10 .venv/bin/python data/benchmarks/linkspeed-2026-11-29/idle_wakeup.py \
        --rounds 2 --out FILE

Prints one JSON line per measurement and writes them all to --out."""

from __future__ import annotations

import argparse
import json
import os
import platform
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bbrbench.experiments import linkbench
from bbrbench.experiments.delaybench import Chain, percentile
from bbrbench.testbed.procs import command

PM_QOS_DEVICE = "/dev/cpu_dma_latency"
LINK_RATE_OPTIONS = ["--rate-bps", "100000000", "--limit-pkts", "1000"]


@contextmanager
def pm_qos_zero(on: bool) -> Iterator[None]:
    """A CPU latency request of 0 us while open (the kernel drops it when the file is closed)."""
    if not on:
        yield
        return
    fd = os.open(PM_QOS_DEVICE, os.O_WRONLY)
    try:
        os.write(fd, struct.pack("i", 0))
        yield
    finally:
        os.close(fd)


@contextmanager
def bridged(chain: Chain) -> Iterator[None]:
    command(["ip", "-n", chain.delay, "link", "add", "br0", "type", "bridge"])
    try:
        for dev in ("l0", "r0"):  # up: a link's run leaves them as it found them
            command(["ip", "-n", chain.delay, "link", "set", dev, "master", "br0", "up"])
        command(["tc", "qdisc", "del", "dev", "r0", "clsact"], netns=chain.delay, check=False)  # a link's ACK path
        command(["ip", "-n", chain.delay, "link", "set", "br0", "up"])
        yield
    finally:
        command(["ip", "-n", chain.delay, "link", "del", "br0"], check=False)


def emit(rows: list[dict[str, Any]], row: dict[str, Any]) -> None:
    """One measurement: printed as a JSON line as it comes, and kept for write_rows."""
    print(json.dumps(row), flush=True)
    rows.append(row)


def write_rows(path: str, rows: list[dict[str, Any]]) -> None:
    """Every measurement of a run, with the time, kernel and CPU count, as one JSON file."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"time_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "kernel": platform.release(),
                   "cpus": os.cpu_count(), "rows": rows}, f, indent=1)


def other_class(pid: int) -> None:
    """Every thread of the link to SCHED_OTHER (it polls within its budget as it found itself)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))


def pings(chain: Chain) -> list[float]:
    chain.ping(3, 0.2)
    return chain.ping(linkbench.PING_COUNT, linkbench.PING_INTERVAL_S)


def through_link(chain: Chain, busy_poll_us: int | None, sched_other: bool) -> tuple[list[float], dict[str, int]]:
    with linkbench._link(chain, "w", LINK_RATE_OPTIONS, busy_poll_us) as link:
        if sched_other:
            assert link._proc is not None
            other_class(link._proc.pid)
        before = link.stats()
        samples = pings(chain)
        after = link.stats()
    return samples, {k: after[k] - before[k] for k in ("wall_us", "cpu_fwd_us", "spin_us")}


OPTIONS = (("bridge", None, False, False), ("bridge, PM QoS 0", None, True, False),
           ("link", None, False, False), ("link, PM QoS 0", None, True, False),
           ("link, whole-gap poll", linkbench.GAP_POLL_US, False, False),
           ("link, whole-gap poll, PM QoS 0", linkbench.GAP_POLL_US, True, False),
           ("link, SCHED_OTHER", None, False, True))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    with Chain(f"bbw-{os.getpid()}-") as chain:
        linkbench._offloads_off(chain)
        for rnd in range(args.rounds):
            base: dict[bool, float] = {}
            for name, poll, qos, other in OPTIONS:
                with pm_qos_zero(qos):
                    if name.startswith("bridge"):
                        with bridged(chain):
                            samples, cpu = pings(chain), dict[str, int]()
                        base[qos] = percentile(samples, 50)
                    else:
                        samples, cpu = through_link(chain, poll, other)
                row: dict[str, Any] = {"round": rnd, "option": name, "loadavg": os.getloadavg()[0], "n": len(samples),
                       **{f"p{q}_us": percentile(samples, q) for q in (50, 90, 99)}, "max_us": max(samples),
                       **cpu}
                if not name.startswith("bridge"):
                    row["added_p50_us"] = row["p50_us"] - base[False]
                    row["added_p99_us"] = row["p99_us"] - base[False]
                    row["added_p99_us_same_qos_bridge"] = row["p99_us"] - base[qos]
                emit(rows, row)
    write_rows(args.out, rows)


if __name__ == "__main__":
    main()
