"""Overhead benchmark: CPU per transferred byte of bbr1 against the kernel's bbr, unshaped over one veth.

Two namespaces joined by a veth pair, no qdisc shaping, no delay; one iperf3 flow at full speed per run,
the algorithms alternating in ABBA order (bbr, bbr1 | bbr1, bbr | ...) so that a drifting machine load
hits both alike. Offloads are off as in every bbrbench topology, so each packet and each ACK passes the
congestion control: the per-packet cost of the algorithm is what is measured.

CPU is counted two ways per run:
- process CPU: user + system time of the iperf3 client and server (iperf3's own getrusage figures) plus
  the ksoftirqd threads' time. Without IRQ time accounting (this kernel) softirq work, where TCP and the
  congestion control run, is charged to the task it interrupts, which on veth is mostly the iperf3
  processes themselves; ksoftirqd catches the rest. Another workload on the machine adds little here.
- system CPU: busy jiffies of all CPUs from /proc/stat. This includes every other process, so it is only
  meaningful on an otherwise idle machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from ..analysis import tables
from ..analysis.stats import mean_ci95, ratio_ci95
from ..errors import HarnessError
from ..results import write_json
from ..testbed import netns as procs
from ..testbed.netns import Namespaces, ProcessGroup, RunState, command
from ..testbed.system import catalog
from .fidelity import CANDIDATE, REFERENCE, loadavg

SENDER_ADDR = "198.18.0.1"
RECEIVER_ADDR = "198.18.0.2"
PREFIX_LEN = 24
SERVER_PORT = 5201
SERVER_READY_TIMEOUT_S = 5.0
CLIENT_GRACE_S = 15.0
RESULT_FILE = "overhead.json"
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
PROC_STAT_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (not idle, iowait)


def system_busy_s() -> float:
    """Busy CPU seconds of all CPUs since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in PROC_STAT_BUSY_FIELDS) / CLOCK_TICKS_PER_S


def ksoftirqd_s() -> float:
    """CPU seconds the ksoftirqd threads have used since boot."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("ksoftirqd/"):
                continue
            # Fields after the ')' of comm: utime and stime are the 12th and 13th.
            rest = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(rest[11]) + int(rest[12])
    return total / CLOCK_TICKS_PER_S


def per_run(client: dict[str, Any], server: dict[str, Any], busy_s: float, softirq_s: float) -> dict[str, Any]:
    """One run's figures from iperf3's client JSON (-J) and the CPU counter deltas."""
    end = client["end"]
    received = float(end["sum_received"]["bytes"])
    seconds = float(end["sum_received"]["seconds"])
    cpu = end["cpu_utilization_percent"]
    process_s = (cpu["host_total"] + cpu["remote_total"]) / 100 * seconds + softirq_s
    return {"bytes": received, "seconds": seconds, "gbit_s": received * 8 / seconds / 1e9,
            "process_cpu_s": process_s, "system_cpu_s": busy_s, "ksoftirqd_s": softirq_s,
            "process_ns_per_byte": process_s * 1e9 / received, "system_ns_per_byte": busy_s * 1e9 / received,
            "retransmits": end["sum_sent"].get("retransmits"), "server_reported_bytes":
            server.get("end", {}).get("sum_received", {}).get("bytes")}


class Pair:
    """Sender and receiver namespaces on one veth pair, named under a run prefix so `cleanup` finds them."""

    def __init__(self, prefix: str) -> None:
        self.sender = f"{prefix}-s0"
        self.receiver = f"{prefix}-d"
        self.namespaces = Namespaces()

    def build(self) -> None:
        for ns in (self.sender, self.receiver):
            self.namespaces.add(ns)
        self.namespaces.veth(self.sender, "eth0", self.receiver, "eth0")
        for ns, addr in ((self.sender, SENDER_ADDR), (self.receiver, RECEIVER_ADDR)):
            command(["ip", "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", "eth0"], netns=ns)
            command(["ip", "link", "set", "eth0", "up"], netns=ns)
            command(["sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1"], netns=ns)
            command(["ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off"], netns=ns)

    def destroy(self) -> None:
        self.namespaces.destroy()


def one_run(pair: Pair, group: ProcessGroup, algo: str, seconds: int, raw_dir: Path, tag: str) -> dict[str, Any]:
    server_path = raw_dir / f"{tag}-server.json"
    client_path = raw_dir / f"{tag}-client.json"
    with server_path.open("w") as out:
        server = group.spawn(["iperf3", "-s", "-1", "-J", "-p", str(SERVER_PORT)], netns=pair.receiver, stdout=out)
    deadline = time.monotonic() + SERVER_READY_TIMEOUT_S
    while not command(["ss", "-Hltn", f"sport = :{SERVER_PORT}"], netns=pair.receiver).stdout.strip():
        if server.poll() is not None or time.monotonic() > deadline:
            raise HarnessError(f"iperf3 server not listening; see {server_path}")
        time.sleep(0.05)
    busy0, soft0 = system_busy_s(), ksoftirqd_s()
    with client_path.open("w") as out:
        client = group.spawn(["iperf3", "-c", RECEIVER_ADDR, "-p", str(SERVER_PORT), "-C", algo, "-J",
                              "-t", str(seconds)], netns=pair.sender, stdout=out)
        try:
            client.wait(timeout=seconds + CLIENT_GRACE_S)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"iperf3 client ({algo}) did not finish; see {client_path}") from None
    busy, soft = system_busy_s() - busy0, ksoftirqd_s() - soft0
    try:
        server.wait(timeout=CLIENT_GRACE_S)
    except subprocess.TimeoutExpired:
        group.stop(server)
    client_json = json.loads(client_path.read_text())
    if "error" in client_json:
        raise HarnessError(f"iperf3 client ({algo}): {client_json['error']}")
    if client_json["end"].get("sender_tcp_congestion") != algo:
        raise HarnessError(f"iperf3 ran {client_json['end'].get('sender_tcp_congestion')!r}, not {algo!r}")
    return {"algo": algo, **per_run(client_json, json.loads(server_path.read_text()), busy, soft)}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    by = {a: [r for r in runs if r["algo"] == a] for a in (REFERENCE, CANDIDATE)}
    out: dict[str, Any] = {}
    for key in ("process_ns_per_byte", "system_ns_per_byte", "gbit_s"):
        entry: dict[str, Any] = {}
        for algo, rs in by.items():
            m, ci = mean_ci95([r[key] for r in rs])
            entry[algo] = {"mean": m, "ci95": ci, "n": len(rs)}
        ratio = ratio_ci95([r[key] for r in by[CANDIDATE]], [r[key] for r in by[REFERENCE]])
        entry.update({"ratio": ratio.ratio, "ci95": ratio.ci95, "df": ratio.df})
        out[key] = entry
    return out


def table(summary: dict[str, Any]) -> str:
    body = [[key, *(f"{e[a]['mean']:.4g} ± {e[a]['ci95']:.2g}" for a in (REFERENCE, CANDIDATE)),
             f"{e['ratio']:.3f} ± {e['ci95']:.3f}"] for key, e in summary.items()]
    return (tables.text(["metric", REFERENCE, CANDIDATE, f"{CANDIDATE}/{REFERENCE}"], body)
            + "\n(mean ± 95% CI half-width over repetitions; ratio of means with a delta-method CI)")


def run(out: Path, reps: int, seconds: int) -> str:
    """Alternate the two algorithms `reps` times each; write overhead.json and raw/ into `out`."""
    from ..testbed.runner import cleanup_stale, signals_deferred, signals_interrupt, undo_bbrkit, use_bbrkit
    if reps < 2:
        raise HarnessError(f"--reps: need at least 2 for a confidence interval (got {reps})")
    if seconds < 1:
        raise HarnessError(f"--seconds: must be >= 1 (got {seconds})")
    available = catalog()
    for algo in (REFERENCE, CANDIDATE):
        if algo not in available.kernel | available.bbrkit:
            raise HarnessError(f"{algo}: not available here (kernel module or `make` for bbrctl)")
    cleanup_stale()
    raw_dir = out / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    prefix = procs.new_prefix()
    state = RunState(prefix)
    group = ProcessGroup(prefix)
    pair = Pair(prefix)
    runs: list[dict[str, Any]] = []
    load: list[list[float]] = []
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    try:
        with signals_interrupt():
            state.save()
            use_bbrkit({a: {} for a in (REFERENCE, CANDIDATE) if a in available.bbrkit}, state)
            pair.build()
            for rep in range(reps):
                order = (REFERENCE, CANDIDATE) if rep % 2 == 0 else (CANDIDATE, REFERENCE)
                for algo in order:
                    load.append(loadavg())
                    runs.append(one_run(pair, group, algo, seconds, raw_dir, f"rep{rep}-{algo}"))
    finally:
        with signals_deferred():
            group.stop_all()
            pair.destroy()
            undo_bbrkit(state)
            state.remove()
    summary = summarise(runs)
    write_json(out / RESULT_FILE, "overhead", {
        "started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "kernel": os.uname().release,
        "cpus": os.cpu_count(), "seconds": seconds, "repetitions": reps, "loadavg_before_each_run": load,
        "summary": summary, "runs": runs})
    return table(summary)
