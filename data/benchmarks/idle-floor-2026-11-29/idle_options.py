"""The idle goal against the machine's floor: linkbench's chain and idle ping (500 pings 10 ms apart, offloads
off, the link at 100 Mbit/s with the ACK direction in the kernel), in rounds, each round's options back to back
in one chain. Per round: the kernel bridge, the bridge again (the goal's estimator applied to a middle that adds
nothing: the floor), the bridge with the CPUs held out of halt; the link with its defaults, with
--cpu-latency-us 0, with a poll over the whole ping gap, with both, and with both and the pinger and the forward
thread pinned to different vCPUs; then the bare wake-up (wakeup.c) across vCPUs with and without the
request, and on one vCPU. Added p99 is the option's p99 less the same round's first bridge median, as linkbench
judges the goal. Root, under the project's lock, from the checkout after `make`:

    cc -O2 -pthread -o /tmp/wakeup data/benchmarks/idle-floor-2026-11-29/wakeup.c
    flock /tmp/bbrkit-root.lock .venv/bin/python data/benchmarks/idle-floor-2026-11-29/idle_options.py \
        --rounds 5 --wakeup /tmp/wakeup --out FILE

Prints one JSON line per measurement and writes them all to --out."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "linkspeed-2026-11-29"))
from idle_wakeup import LINK_RATE_OPTIONS, bridged, emit, pm_qos_zero, write_rows  # noqa: E402

from bbrbench.experiments import linkbench  # noqa: E402
from bbrbench.experiments.delaybench import PING_RE, RECEIVER_ADDR, Chain, percentile  # noqa: E402
from bbrbench.testbed.procs import command  # noqa: E402


class Option(NamedTuple):
    name: str
    link: bool
    cpu_latency_0: bool
    poll_us: int | None = None
    ping_cpu: int | None = None
    link_cpu: int | None = None


GAP = linkbench.GAP_POLL_US
OPTIONS = (Option("bridge", False, False), Option("bridge again", False, False),
           Option("bridge, CPU latency 0", False, True),
           Option("link", True, False), Option("link, --cpu-latency-us 0", True, True),
           Option("link, whole-gap poll", True, False, GAP),
           Option("link, whole-gap poll, --cpu-latency-us 0", True, True, GAP),
           Option("link, whole-gap poll, --cpu-latency-us 0, ping on CPU 0, link on CPU 1", True, True, GAP, 0, 1))
WAKEUPS = (("wake-up across vCPUs", 0, 1, 0), ("wake-up across vCPUs, CPU latency 0", 0, 1, 1),
           ("wake-up on one vCPU", 0, 0, 0))


def ping(chain: Chain, cpu: int | None) -> list[float]:
    pin = [] if cpu is None else ["taskset", "-c", str(cpu)]

    def series(count: int, interval_s: float) -> list[float]:
        out = command([*pin, "ping", "-n", "-W", "1", "-c", str(count), "-i", str(interval_s), RECEIVER_ADDR],
                      netns=chain.sender, check=False, timeout=count * interval_s + 30).stdout
        return [float(m) * 1000 for m in PING_RE.findall(out)]

    series(3, 0.2)
    return series(linkbench.PING_COUNT, linkbench.PING_INTERVAL_S)


def measure(chain: Chain, o: Option) -> tuple[list[float], dict[str, Any]]:
    if not o.link:
        with pm_qos_zero(o.cpu_latency_0), bridged(chain):
            return ping(chain, o.ping_cpu), {}
    options = [*LINK_RATE_OPTIONS, *(["--cpu-latency-us", "0"] if o.cpu_latency_0 else []),
               *([] if o.link_cpu is None else ["--cpu", str(o.link_cpu)])]
    with linkbench._link(chain, "w", options, o.poll_us) as link:
        samples = ping(chain, o.ping_cpu)
        stats = link.stats()
        # the link's own added delay at departure (against its schedule), beside the ping's added p99
        inner = {f"link_{k}": stats.get(k) for k in ("added_p50_us", "added_p99_us", "late_max_us")}
        return samples, {**inner, "cpu_latency_us": link.ready_event.get("cpu_latency_us")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--wakeup", required=True, help="wakeup.c, built")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    with Chain(f"bbw-{os.getpid()}-") as chain:
        linkbench._offloads_off(chain)
        for rnd in range(args.rounds):
            base = 0.0
            for o in OPTIONS:
                samples, extra = measure(chain, o)
                if o.name == "bridge":
                    base = percentile(samples, 50)
                row: dict[str, Any] = {"round": rnd, "option": o.name, "loadavg": os.getloadavg()[0],
                                       "n": len(samples), **{f"p{q}_us": percentile(samples, q) for q in (50, 90, 99)},
                                       "added_p99_us": percentile(samples, 99) - base, **extra}
                emit(rows, row)
            for name, waker, sleeper, qos in WAKEUPS:
                out = subprocess.run([args.wakeup, "500", str(waker), str(sleeper), "10", str(qos)],
                                     capture_output=True, text=True, check=True).stdout
                row = {"round": rnd, "option": name, "loadavg": os.getloadavg()[0], **json.loads(out)}
                emit(rows, row)
    write_rows(args.out, rows)


if __name__ == "__main__":
    main()
