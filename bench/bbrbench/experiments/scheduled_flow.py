"""One TCP flow that follows an application schedule, for `bbrbench conformance`: segments of bulk
sending, rate-limited sending and pauses on one connection (iperf3's -b has no pauses).

    python -m bbrbench.experiments.scheduled_flow ADDR PORT CPORT --cc CC --segment SECONDS:MBIT ...

MBIT is the application's rate in that segment (payload, Mbit/s), 0 for a pause, `max` for as fast as the
socket takes. The receiver is lockstep_flow's `serve`. Prints one JSON line (bytes, segments) to stdout, as
the harness keeps a flow's report. Standard library only: it runs in the testbed's namespaces.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time

CHUNK_BYTES = 16 * 1024  # small enough that a 10 Mbit/s segment sends in ~13 ms steps
MAX = "max"


def parse_segment(text: str) -> tuple[float, float | None]:
    """SECONDS:MBIT -> (seconds, Mbit/s or None for unlimited)."""
    seconds, _, rate = text.partition(":")
    return float(seconds), None if rate == MAX else float(rate)


def send_segment(sock: socket.socket, seconds: float, mbit: float | None) -> int:
    data = b"\0" * CHUNK_BYTES
    start = time.monotonic()
    sent = 0
    if mbit == 0:
        time.sleep(seconds)
        return 0
    while (elapsed := time.monotonic() - start) < seconds:
        if mbit is not None:
            # Ahead of the schedule: wait until the bytes sent so far are due.
            due_s = sent * 8 / (mbit * 1e6)
            if due_s > elapsed:
                time.sleep(min(due_s - elapsed, seconds - elapsed))
                continue
        sent += sock.send(data)
    return sent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scheduled_flow")
    parser.add_argument("addr")
    parser.add_argument("port", type=int)
    parser.add_argument("cport", type=int)
    parser.add_argument("--cc", required=True)
    parser.add_argument("--segment", action="append", type=parse_segment, required=True)
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.cc.encode())
    sock.bind(("", args.cport))
    sock.connect((args.addr, args.port))
    sent = [send_segment(sock, seconds, mbit) for seconds, mbit in args.segment]
    sock.shutdown(socket.SHUT_WR)
    sock.recv(1)  # the receiver's close: everything sent was read
    sock.close()
    print(json.dumps({"bytes": sum(sent), "segments": [
        {"seconds": s, "mbit": m, "bytes": b} for (s, m), b in zip(args.segment, sent, strict=True)]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
