"""What the attached program costs the frames it passes on: one unthrottled UDP flow of 1472-byte payloads
through the link at 1 Gbit/s (a full frame serialises in 12 us, over the default 10 us bound, so each goes on to
the forward thread through the generic XDP pass), with the idle path attached (the defaults) and off, in
interleaved rounds. Root, under the project's lock, from the checkout after `make`:

    flock /tmp/bbrkit-root.lock .venv/bin/python data/benchmarks/idle-path-2026-11-29/attached_cost.py FILE"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from bbrbench.experiments import linkbench
from bbrbench.experiments.delaybench import Chain

CASES: tuple[tuple[str, list[str]], ...] = (("idle path attached", []), ("off", linkbench.THREAD_ONLY))


def main(out_path: str, rounds: int = 3) -> None:
    args = argparse.Namespace(flows=1, duration=6.0, busy_poll_us=None)
    rows: list[dict[str, Any]] = []
    with Chain(f"bbx-{os.getpid()}-") as chain:
        linkbench._offloads_off(chain)
        for rnd in range(rounds):
            for name, extra in CASES:
                options = ["--rate-bps", "1000000000", "--limit-pkts", "1000", *extra]
                with linkbench._link(chain, f"x{rnd}", options, None) as link:
                    row = linkbench._measure(chain, link, "fifo", linkbench.LOADS["one_flow"], args)
                    after = link.stats()
                out = {"round": rnd, "case": name, "rx_mbps": round(row["rx_bps"] / 1e6, 1),
                       "out_pps": round(row["out_pps"]), "cpu_fwd_share": round(row["cpu_fwd_share"], 3),
                       "xdp_idle_pkts": after["xdp_idle_pkts"], "xdp_idle_us": link.ready_event.get("xdp_idle_us"),
                       "loadavg": os.getloadavg()[0]}
                print(json.dumps(out), flush=True)
                rows.append(out)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
