#!/usr/bin/env python3
"""What `bbrctl export` costs per scrape with many flows: the benchmark behind docs/operations.md's figure.

As root, under the shared lock: attaches bbr1, adds a policy rule for port 18090 (bbr1 50%, cubic 50%), opens
FLOWS real TCP connections over loopback in a network namespace of its own, starts the exporter and scrapes it
SCRAPES times, reading the exporter's CPU time (utime + stime, /proc/PID/stat) around the scrapes. Prints the CPU
seconds per scrape and what that is as a share of one CPU at a 15 s scrape interval. Removes everything after.
Usage: scripts/export-cost.py [FLOWS] [SCRAPES]"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BBRCTL = str(ROOT / "build" / "bbrctl")
NS = f"bbrkit-cost-{os.getpid()}"
PORT = 18090
LISTEN = "127.0.0.1:19599"
SCRAPE_INTERVAL_S = 15.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hold(role: str, n: int) -> None:
    """`export-cost.py --hold server|client N`, run in the namespace: the listener accepting n connections, or
    the client opening them; held until killed. Two processes: each end needs its own n descriptors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 100), hard))
    held: list[socket.socket] = []
    if role == "server":
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", PORT))
        srv.listen(4096)
        while len(held) < n:
            held.append(srv.accept()[0])
    else:
        while len(held) < n:
            held.append(socket.create_connection(("127.0.0.1", PORT)))
    signal.pause()


def main() -> int:
    if sys.argv[1:2] == ["--hold"]:
        hold(sys.argv[2], int(sys.argv[3]))
        return 0
    flows = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    scrapes = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    attached = "bbr1" in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    subprocess.run(["ip", "netns", "add", NS], check=True)
    holders: list[subprocess.Popen[bytes]] = []
    exporter = None
    try:
        subprocess.run(["ip", "-n", NS, "link", "set", "lo", "up"], check=True)
        if not attached:
            subprocess.run([BBRCTL, "attach", "bbr1"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([BBRCTL, "policy", "add", "cost", f"lport={PORT}", "arms=bbr1:50,cubic:50"], check=True,
                       stdout=subprocess.DEVNULL)
        for role in ("server", "client"):  # the listener first
            holders.append(subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, __file__, "--hold", role,
                                             str(flows)]))
            time.sleep(0.5)
        exporter = subprocess.Popen([BBRCTL, "export", "--listen", LISTEN], stderr=subprocess.DEVNULL)
        time.sleep(1)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # until the policy has placed every connection
            shown = subprocess.run([BBRCTL, "policy", "show", "cost", "--json"], capture_output=True, text=True)
            if sum(a["connections"] for a in json.loads(shown.stdout)["rules"][0]["arms"]) >= flows:
                break
            if any(h.poll() is not None for h in holders):
                raise SystemExit("export-cost: a connection holder failed")
            time.sleep(1)
        url = f"http://{LISTEN}/metrics"
        body = urllib.request.urlopen(url, timeout=60).read()  # warm-up
        before, t0 = cpu_seconds(exporter.pid), time.monotonic()
        for _ in range(scrapes):
            body = urllib.request.urlopen(url, timeout=60).read()
        per_scrape = (cpu_seconds(exporter.pid) - before) / scrapes
        wall = (time.monotonic() - t0) / scrapes
        placed = [line for line in body.decode().splitlines()
                  if line.startswith(("bbrkit_policy_flows{", "bbrkit_algo_flows{"))]
        print(f"flows placed: {', '.join(placed)}")
        print(f"bbrctl export, {flows} flows: {per_scrape * 1e3:.1f} ms CPU per scrape ({wall * 1e3:.1f} ms wall, "
              f"{len(body)} bytes); at a {SCRAPE_INTERVAL_S:.0f} s interval "
              f"{per_scrape / SCRAPE_INTERVAL_S * 100:.3f}% of one CPU; load average {os.getloadavg()[0]:.2f}")
    finally:
        if exporter:
            exporter.terminate()
            exporter.wait()
        for h in holders:
            h.kill()
            h.wait()
        subprocess.run(["ip", "netns", "del", NS])
        subprocess.run([BBRCTL, "policy", "del", "cost"], stdout=subprocess.DEVNULL)
        if not attached:
            subprocess.run([BBRCTL, "detach", "bbr1"], stdout=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
