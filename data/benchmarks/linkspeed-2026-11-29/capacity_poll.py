"""The busy-poll's effect on capacity, back to back in one chain: linkbench's one-flow loads (1472-byte and
64-byte UDP payloads, one unthrottled iperf3 flow) through the kernel bridge, then through bbrkit-link's tail
drop with each build/poll given, in rounds. Beside linkbench's figures, counters for where CPU time went:
each CPU's softirq backlog (/proc/net/softnet_stat: processed, dropped, time squeezed), the run-queue wait of
ksoftirqd on each CPU, and the link's forward thread's. Root, under the project's lock:

    flock /tmp/bbrkit-root.lock nice -n 10 .venv/bin/python data/benchmarks/linkspeed-2026-11-29/capacity_poll.py \
        --rounds 3 --variant default= --variant poll0=:0 --out FILE

A variant is NAME=[BINARY][:[BUSY_POLL_US][:QUEUE]] (empty: the build's bbrkit-link, the link's default
poll, tail drop). --loads many_flows with --flows 1024 gives linkbench's FQ-CoDel load."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from idle_wakeup import emit, write_rows

from bbrbench.experiments import linkbench
from bbrbench.experiments.delaybench import Chain
from bbrbench.testbed.procs import command


def softnet() -> list[list[int]]:
    """Per CPU: packets processed, dropped (backlog full), time squeezed (budget ran out)."""
    with open("/proc/net/softnet_stat", encoding="ascii") as f:
        return [[int(x, 16) for x in line.split()[:3]] for line in f]


def ksoftirqd_times() -> dict[str, tuple[int, int]]:
    times = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm", encoding="ascii") as f:
                    comm = f.read().strip()
                if comm.startswith("ksoftirqd/"):
                    with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
                        run, wait = f.read().split()[:2]
                    times[comm] = (int(run), int(wait))
            except OSError:
                continue
    return times


@contextmanager
def bridged(chain: Chain) -> Iterator[None]:
    command(["ip", "-n", chain.delay, "link", "add", "br0", "type", "bridge"])
    try:
        for dev in ("l0", "r0"):  # up: a link's run leaves them as it found them
            command(["ip", "-n", chain.delay, "link", "set", dev, "master", "br0", "up"])
        command(["tc", "qdisc", "del", "dev", "r0", "clsact"], netns=chain.delay, check=False)
        command(["ip", "-n", chain.delay, "link", "set", "br0", "up"])
        chain.ping(3, 0.2)  # the bridge forwards once its ports have learnt
        yield
    finally:
        command(["ip", "-n", chain.delay, "link", "del", "br0"], check=False)


def measured(chain: Chain, variant: str, binary: str, poll: int | None, aqm: str, load: str,
             args: argparse.Namespace) -> dict[str, Any]:
    net0, soft0, t0 = softnet(), ksoftirqd_times(), time.monotonic()
    if variant == "bridge":
        with bridged(chain):
            row = linkbench._measure(chain, None, linkbench.BRIDGE, linkbench.LOADS[load], args)
    else:
        if binary:
            os.environ["BBRKIT_LINK"] = binary
        else:
            os.environ.pop("BBRKIT_LINK", None)
        args.busy_poll_us = poll
        row = linkbench._capacity(chain, "p", aqm, linkbench.LOADS[load], args)
    net1, soft1, wall = softnet(), ksoftirqd_times(), (time.monotonic() - t0) * 1e9
    row["variant"] = variant
    row["softnet"] = [[b - a for a, b in zip(x, y)] for x, y in zip(net0, net1)]
    row["ksoftirqd_wait_share"] = {k: (soft1[k][1] - soft0[k][1]) / wall for k in soft1 if k in soft0}
    row["ksoftirqd_cpu_share"] = {k: (soft1[k][0] - soft0[k][0]) / wall for k in soft1 if k in soft0}
    row["loadavg"] = os.getloadavg()[0]
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--loads", default="one_flow,small")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--flows", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    variants: list[tuple[str, str, int | None, str]] = [("bridge", "", None, "")]
    for v in args.variant:
        name, spec = v.split("=", 1)
        binary, _, rest = spec.partition(":")
        poll, _, aqm = rest.partition(":")
        variants.append((name, binary, int(poll) if poll else None, aqm or "fifo"))
    rows = []
    with Chain(f"bbp-{os.getpid()}-") as chain:
        linkbench._offloads_off(chain)
        for rnd in range(args.rounds):
            for load in args.loads.split(","):
                for name, binary, poll, aqm in variants:
                    row = {"round": rnd, **measured(chain, name, binary, poll, aqm, load, args)}
                    emit(rows, row)
    write_rows(args.out, rows)


if __name__ == "__main__":
    main()
