"""One TCP flow with a shape iperf3 cannot give, for `bbrbench lockstep`: a long idle period in the middle
of a connection, or a switch of the socket's congestion control while it sends.

    python -m bbrbench.experiments.lockstep_flow serve PORT
    python -m bbrbench.experiments.lockstep_flow send ADDR PORT CPORT --cc CC --send-s S [--idle-s I]
        [--then-s T] [--switch-to CC2 --switch-after-s W]

`serve` accepts one connection, reads it to the end and prints {"bytes": N}. `send` connects from CPORT
with congestion control CC, sends as fast as it can for S seconds (switching to CC2 after W of them),
sleeps I seconds, sends T more seconds, and prints what it did as one JSON line. Both print to stdout,
which the harness sends to the flow's file as it does iperf3's. Standard library only: it
runs in the testbed's namespaces under the interpreter that runs bbrbench.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from typing import Any

CHUNK_BYTES = 64 * 1024
ACCEPT_TIMEOUT_S = 30.0


def serve(port: int) -> None:
    with socket.create_server(("", port)) as listener:
        listener.settimeout(ACCEPT_TIMEOUT_S)
        conn, _ = listener.accept()
        total = 0
        with conn:
            while chunk := conn.recv(CHUNK_BYTES):
                total += len(chunk)
    print(json.dumps({"bytes": total}), flush=True)


def congestion_control(sock: socket.socket) -> str:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()


def send_for(sock: socket.socket, seconds: float, switch: tuple[str, float] | None,
             events: list[dict[str, Any]]) -> int:
    """Send for `seconds`; with switch = (cc, after_s), set that congestion control after_s into it."""
    data = b"\0" * CHUNK_BYTES
    start = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - start) < seconds:
        if switch and elapsed >= switch[1]:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, switch[0].encode())
            events.append({"switched_s": round(elapsed, 3), "cc": congestion_control(sock)})
            switch = None
        sent += sock.send(data)
    return sent


def send(args: argparse.Namespace) -> None:
    events: list[dict[str, Any]] = []
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.cc.encode())
    sock.bind(("", args.cport))
    sock.connect((args.addr, args.port))
    switch = (args.switch_to, args.switch_after_s) if args.switch_to else None
    sent = send_for(sock, args.send_s, switch, events)
    if args.idle_s:
        time.sleep(args.idle_s)
        sent += send_for(sock, args.then_s, None, events)
    final_cc = congestion_control(sock)
    sock.shutdown(socket.SHUT_WR)
    sock.recv(1)  # the receiver's close: everything sent was read
    sock.close()
    print(json.dumps({"bytes": sent, "seconds_sending": args.send_s + args.then_s, "cc": final_cc,
                      "events": events}), flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lockstep_flow")
    sub = parser.add_subparsers(dest="command", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("port", type=int)
    sd = sub.add_parser("send")
    sd.add_argument("addr")
    sd.add_argument("port", type=int)
    sd.add_argument("cport", type=int)
    sd.add_argument("--cc", required=True)
    sd.add_argument("--send-s", type=float, required=True)
    sd.add_argument("--idle-s", type=float, default=0.0)
    sd.add_argument("--then-s", type=float, default=0.0)
    sd.add_argument("--switch-to")
    sd.add_argument("--switch-after-s", type=float, default=0.0)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        serve(args.port)
    else:
        send(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
