#!/usr/bin/env python3
"""What matching a cgroup rule by path costs the policy program: the benchmark behind docs/operations.md's figure.

As root, under the shared lock: a rule cgroup=/CG rport=18614 arms=reno, CONNECTIONS loopback connections
opened from a process in CG in a network namespace of their own, with the kernel's BPF run-time statistics
on (sysctl kernel.bpf_stats_enabled, restored after): the policy program's mean run time while CG has the
id the rule was added with (an id comparison), after CG was removed and made again (the names compared
along the path), and from a sibling cgroup that never matches. Removes everything after.
Usage: scripts/cgroup-match-cost.py [CONNECTIONS]"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BBRCTL = str(ROOT / "build" / "bbrctl")
PORT = 18614
NS = "bbrkit-cgcost"
STATS = Path("/proc/sys/kernel/bpf_stats_enabled")

LISTENER = f"""
import socket
srv = socket.create_server(("127.0.0.1", {PORT}), backlog=1024)
print("listening", flush=True)
while True:
    srv.accept()[0].close()
"""

CLIENT = f"""
import socket, sys
for _ in range(int(sys.argv[1])):
    socket.create_connection(("127.0.0.1", {PORT})).close()
"""


def program_stats() -> tuple[int, int]:
    progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                                      check=True).stdout)
    p = next(p for p in progs if p.get("name") == "policy_sockops")
    return int(p.get("run_time_ns", 0)), int(p.get("run_cnt", 0))


def mean_ns(cgroup: Path, n: int) -> float:
    t0, c0 = program_stats()
    subprocess.run(["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh", "ip", "netns", "exec", NS,
                    sys.executable, "-c", CLIENT, str(n)], check=True)
    t1, c1 = program_stats()
    return (t1 - t0) / max(c1 - c0, 1)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    mnt = Path(tempfile.mkdtemp(prefix="bbrkit-cgcost-"))
    was = STATS.read_text().strip()
    subprocess.run(["ip", "netns", "add", NS], check=True)
    listener = None
    svc, sib = mnt / "bbrkit-cgcost-svc", mnt / "bbrkit-cgcost-sib"
    try:
        subprocess.run(["ip", "-n", NS, "link", "set", "lo", "up"], check=True)
        listener = subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, "-c", LISTENER],
                                    stdout=subprocess.PIPE, text=True)
        assert listener.stdout and listener.stdout.readline().strip() == "listening"
        subprocess.run(["mount", "-t", "cgroup2", "none", str(mnt)], check=True)
        svc.mkdir()
        sib.mkdir()
        subprocess.run([BBRCTL, "policy", "add", "cgcost", f"cgroup=/{svc.name}", f"rport={PORT}", "arms=reno"],
                       check=True, capture_output=True)
        STATS.write_text("1")
        by_id = mean_ns(svc, n)
        svc.rmdir()
        svc.mkdir()
        by_path = mean_ns(svc, n)
        sibling = mean_ns(sib, n)
        print(f"policy program, mean per run over {n} connections: {by_id:.0f} ns with the cgroup's id, "
              f"{by_path:.0f} ns after it was made again (names compared), {sibling:.0f} ns from a sibling")
    finally:
        STATS.write_text(was)
        subprocess.run([BBRCTL, "policy", "del", "cgcost"], capture_output=True)
        if listener:
            listener.kill()
            listener.wait()
        subprocess.run(["ip", "netns", "del", NS])
        for d in (svc, sib):
            if d.exists():
                d.rmdir()
        subprocess.run(["umount", str(mnt)])
        mnt.rmdir()


if __name__ == "__main__":
    main()
