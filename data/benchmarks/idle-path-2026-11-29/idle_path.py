"""The idle path against the bridge, ping by ping: linkbench's chain and idle ping (500 pings 10 ms apart,
offloads off, the link at 100 Mbit/s with the ACK direction in the kernel), in rounds of four series back to
back in one chain: the kernel bridge, the bridge again, the link with its defaults (the XDP idle path), and the
link with --xdp-idle-us 0 (every frame through the forward thread). Every ping's RTT is kept, so that the tails
can be pooled over rounds: one series' p99 is its fifth-slowest ping. Root, under the project's lock, from the
checkout after `make`:

    flock /tmp/bbrkit-root.lock .venv/bin/python data/benchmarks/idle-path-2026-11-29/idle_path.py \
        --rounds 10 --out FILE

Prints one JSON line per series (without its samples) and writes them all, samples included, to --out."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "linkspeed-2026-11-29"))
from idle_wakeup import LINK_RATE_OPTIONS, bridged, emit, pings, write_rows  # noqa: E402

from bbrbench.experiments import linkbench  # noqa: E402
from bbrbench.experiments.delaybench import Chain, percentile  # noqa: E402

# Each series: its name and the link's options beyond the rate (None: the kernel bridge instead of the link).
SERIES: tuple[tuple[str, list[str] | None], ...] = (
    ("bridge", None), ("bridge again", None), ("link, idle path", []), ("link, thread", linkbench.THREAD_ONLY))


def measure(chain: Chain, extra: list[str] | None) -> tuple[list[float], dict[str, Any]]:
    if extra is None:
        with bridged(chain):
            return pings(chain), {}
    with linkbench._link(chain, "p", [*LINK_RATE_OPTIONS, *extra], None) as link:
        before = link.stats()
        samples = pings(chain)
        after = link.stats()
    return samples, {"xdp_idle_us": link.ready_event.get("xdp_idle_us"),
                     "xdp_idle_pkts": after["xdp_idle_pkts"] - before["xdp_idle_pkts"],
                     "in_pkts": after["in_pkts"] - before["in_pkts"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    with Chain(f"bbi-{os.getpid()}-") as chain:
        linkbench._offloads_off(chain)
        for rnd in range(args.rounds):
            for name, extra in SERIES:
                samples, counts = measure(chain, extra)
                row = {"round": rnd, "series": name, "loadavg": os.getloadavg()[0], "n": len(samples),
                       **{f"p{q}_us": percentile(samples, q) for q in (50, 95, 99)}, **counts}
                emit(rows, row)
                rows[-1] = {**row, "samples_us": samples}
    write_rows(args.out, rows)


if __name__ == "__main__":
    main()
