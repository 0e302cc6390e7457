#!/usr/bin/env python3
"""What `bbrctl policy migrate` costs the flow it moves: the benchmark behind docs/operations.md's figure.

As root, under the shared lock: two network namespaces joined through bbrkit's delay line (RTT_MS) and a tbf
bottleneck (RATE_MBIT, a queue of one bandwidth-delay product), one bulk TCP transfer from the sender's port
18612 placed by a rule on FROM, switched to TO by `policy add ... replace=yes` + `policy migrate` SWITCH_S
seconds in. The receiver timestamps what it reads (CLOCK_MONOTONIC, shared by all namespaces); the sender's
retransmissions are sampled from `ss -ti` every SAMPLE_S. Prints, per repetition, the goodput over the
WINDOW_S before the switch and after it, the worst BIN_S bin in the WINDOW_S after it, and the segments
retransmitted in each window. Removes everything after.
Usage: scripts/migrate-cost.py FROM TO [REPETITIONS]"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from netutil import BBRCTL, make_netpair, remove_netpair  # noqa: E402

PORT = 18612
RATE_MBIT = 50
RTT_MS = 20
BDP_BYTES = RATE_MBIT * 1_000_000 // 8 * RTT_MS // 1000
SWITCH_S = 6.0  # long enough for every algorithm here to leave startup at this BDP
RUN_S = 10.0
WINDOW_S = 2.0
BIN_S = 0.1
SAMPLE_S = 0.05

SENDER = f"""
import socket, time
srv = socket.create_server(("0.0.0.0", {PORT}))
print("listening", flush=True)
conn, _ = srv.accept()
chunk = bytes(1 << 16)
end = time.monotonic() + {RUN_S}
while time.monotonic() < end:
    conn.sendall(chunk)
conn.close()
"""

RECEIVER = f"""
import json, socket, sys, time
s = socket.create_connection((sys.argv[1], {PORT}))
marks = []
while chunk := s.recv(1 << 16):
    marks.append((time.monotonic(), len(chunk)))
print(json.dumps(marks))
"""


def retrans(ns: str) -> int:
    out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Htin", f"sport = :{PORT}"], capture_output=True,
                         text=True).stdout
    m = re.search(r"retrans:\d+/(\d+)", out)
    return int(m.group(1)) if m else 0


def goodput_mbit(marks: list[tuple[float, int]], start: float, end: float) -> float:
    return sum(n for t, n in marks if start <= t < end) * 8 / (end - start) / 1e6


def one(algo_from: str, algo_to: str) -> dict[str, float]:
    pair = make_netpair(RATE_MBIT, BDP_BYTES, rtt_ms=RTT_MS)
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    try:
        subprocess.run([str(BBRCTL), "policy", "add", "mcost", f"lport={PORT}", f"arms={algo_from}"], check=True,
                       capture_output=True)
        sender = subprocess.Popen(["ip", "netns", "exec", pair.sender, sys.executable, "-c", SENDER],
                                  stdout=subprocess.PIPE, text=True)
        assert sender.stdout and sender.stdout.readline().strip() == "listening"
        receiver = pair.popen(pair.receiver, [sys.executable, "-c", RECEIVER, pair.sender_addr])
        begin = time.monotonic()

        def sample() -> None:
            while not stop.is_set():
                samples.append((time.monotonic(), retrans(pair.sender)))
                time.sleep(SAMPLE_S)

        sampler = threading.Thread(target=sample)
        sampler.start()
        time.sleep(SWITCH_S)
        switch = time.monotonic()
        subprocess.run([str(BBRCTL), "policy", "add", "mcost", f"lport={PORT}", f"arms={algo_to}", "replace=yes"],
                       check=True, capture_output=True)
        moved = subprocess.run([str(BBRCTL), "policy", "migrate", "mcost"], check=True, capture_output=True,
                               text=True).stdout
        assert moved.rstrip().endswith("1 connection moved"), moved
        out, _ = receiver.communicate(timeout=RUN_S + 30)
        sender.wait(timeout=10)
        stop.set()
        sampler.join()
    finally:
        stop.set()
        subprocess.run([str(BBRCTL), "policy", "del", "mcost"], capture_output=True)
        remove_netpair(pair)
    marks = [(float(t), int(n)) for t, n in json.loads(out)]

    def retrans_at(t: float) -> int:
        return max((r for s, r in samples if s <= t), default=0)

    bins = [goodput_mbit(marks, switch + i * BIN_S, switch + (i + 1) * BIN_S)
            for i in range(int(WINDOW_S / BIN_S))]
    return {"started_s": switch - begin,
            "before_mbit": goodput_mbit(marks, switch - WINDOW_S, switch),
            "after_mbit": goodput_mbit(marks, switch, switch + WINDOW_S),
            "worst_bin_after_mbit": min(bins),
            "retrans_before": retrans_at(switch) - retrans_at(switch - WINDOW_S),
            "retrans_after": retrans_at(switch + WINDOW_S) - retrans_at(switch)}


def main() -> None:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.rsplit("Usage: ", 1)[1].strip())
    reps = int(sys.argv[3]) if len(sys.argv) == 4 else 3
    for _ in range(reps):
        r = one(sys.argv[1], sys.argv[2])
        print(f"{sys.argv[1]} -> {sys.argv[2]}: goodput {r['before_mbit']:.1f} Mbit/s before, "
              f"{r['after_mbit']:.1f} after ({WINDOW_S:g} s each), worst {BIN_S * 1000:g} ms bin after "
              f"{r['worst_bin_after_mbit']:.1f}; retransmitted {r['retrans_before']} before, "
              f"{r['retrans_after']} after")


if __name__ == "__main__":
    main()
