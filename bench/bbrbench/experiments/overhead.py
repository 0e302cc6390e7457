"""Overhead benchmark: CPU per transferred byte of bbr1 against the kernel's bbr, unshaped over one veth.

Three algorithms at least: the kernel's bbr; bbr_floor (bench/kernelbbr/floor/), the kernel's BBR called through
BPF struct_ops and nothing else, which build/bbrkit-floor registers for the benchmark only; and bbr1.
floor / bbr is what the struct_ops trampolines cost, bbr1 / floor what bbrkit's own logic costs. The other
bbrkit algorithms can be added. Two namespaces joined by a veth pair, no qdisc shaping, no delay; one
iperf3 flow at full speed per run. Each repetition runs every algorithm once, the order rotated by one
per repetition so that every algorithm takes every position and a drifting machine load hits all alike;
ratios are taken within a repetition (paired) and their mean gets the interval. Offloads are off as in
every bbrbench topology, so each packet and each ACK passes the congestion control: the per-packet cost
of the algorithm is what is measured.

Per callback, the kernel's BPF run-time statistics give each struct_ops program's calls and nanoseconds
(deltas over the run; the kernel's own bbr has none). They are switched on with BPF_ENABLE_STATS, whose
file descriptor the kernel counts like a reference: closing it, also by the kernel when this process
dies, switches them off again, and the sysctl kernel.bpf_stats_enabled is never written. The stats are
per program: a concurrent user of the same algorithm would add its calls (bbr_floor is this run's own).

CPU is counted two ways per run:
- process CPU: user + system time of the iperf3 client and server (iperf3's own getrusage figures) plus
  the ksoftirqd threads' time. Without IRQ time accounting (this kernel) softirq work, where TCP and the
  congestion control run, is charged to the task it interrupts, which on veth is mostly the iperf3
  processes themselves; ksoftirqd catches the rest. Another workload on the machine adds little here.
- system CPU: busy jiffies of all CPUs from /proc/stat. This includes every other process, so it is only
  meaningful on an otherwise idle machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import platform
import re
import select
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..analysis import tables
from ..analysis.stats import mean_ci95
from ..errors import HarnessError, NotRunnable
from ..results import read_json, write_json
from ..testbed import runstate
from ..testbed.netns import Namespaces
from ..testbed.procs import ProcessGroup, command, find_binary, wait_listening
from ..testbed.runstate import RunState
from ..testbed.system import catalog
from .fidelity import CANDIDATE, REFERENCE, loadavg

SENDER_ADDR = "198.18.0.1"
RECEIVER_ADDR = "198.18.0.2"
PREFIX_LEN = 24
SERVER_PORT = 5201
CLIENT_GRACE_S = 15.0
RESULT_FILE = "overhead.json"
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
PROC_STAT_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (not idle, iowait)
FLOOR = "bbr_floor"
FLOOR_BINARY = "bbrkit-floor"
FLOOR_READY_TIMEOUT_S = 10.0  # loading and verifying eight small programs takes well under a second
FLOOR_EXIT_UNSUPPORTED = 2  # bbrkit-floor: the kernel's BBR is not callable from BPF
BPF_ENABLE_STATS = 32  # bpf(2) command, enum bpf_cmd in include/uapi/linux/bpf.h
BPF_STATS_RUN_TIME = 0  # enum bpf_stats_type
SYS_BPF = {"x86_64": 321, "aarch64": 280}  # bpf(2)'s syscall number per architecture
PROG_ID = re.compile(r"/prog_id:(\d+)$")  # how bpftool shows a struct_ops member's program


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


@contextlib.contextmanager
def bpf_run_time_stats() -> Iterator[None]:
    """Kernel BPF run-time statistics on for the block: a reference the kernel drops when the fd closes."""
    number = SYS_BPF.get(platform.machine())
    if number is None:
        raise HarnessError(f"bpf(2) syscall number for {platform.machine()} unknown")
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.c_uint32(BPF_STATS_RUN_TIME)  # union bpf_attr's enable_stats: just the type
    fd = libc.syscall(number, BPF_ENABLE_STATS, ctypes.byref(attr), ctypes.sizeof(attr))
    if fd < 0:
        raise HarnessError(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}")
    try:
        yield
    finally:
        os.close(fd)


def struct_ops_programs(dump: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{congestion control: {callback: program id}} from `bpftool -j struct_ops dump`, registered ones only."""
    out: dict[str, dict[str, int]] = {}
    for entry in dump:
        value = entry.get("bpf_struct_ops_tcp_congestion_ops")
        if value is None or value["common"]["state"] == "BPF_STRUCT_OPS_STATE_TOBEFREE":
            continue
        data = value["data"]
        out[data["name"]] = {member: int(m.group(1)) for member, text in data.items()
                             if isinstance(text, str) and (m := PROG_ID.search(text))}
    return out


def program_stats(algos: Sequence[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """{algo: {callback: (run_time_ns, run_cnt)}} now, for those of `algos` that are BPF struct_ops."""
    dump = json.loads(command(["bpftool", "-j", "struct_ops", "dump"]).stdout or "[]")
    progs = {p["id"]: p for p in json.loads(command(["bpftool", "-j", "prog", "show"]).stdout)}
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for algo, members in struct_ops_programs(dump).items():
        if algo in algos:
            out[algo] = {cb: (int(progs[i].get("run_time_ns", 0)), int(progs[i].get("run_cnt", 0)))
                         for cb, i in members.items() if i in progs}
    return out


def stats_delta(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> dict[str, dict[str, Any]]:
    """Per callback: calls and ns during the run, and ns per call (None without calls)."""
    out: dict[str, dict[str, Any]] = {}
    for cb, (ns, cnt) in after.items():
        ns0, cnt0 = before.get(cb, (0, 0))
        calls, spent = cnt - cnt0, ns - ns0
        out[cb] = {"calls": calls, "ns": spent, "ns_per_call": spent / calls if calls else None}
    return out


def start_floor(group: ProcessGroup, stderr: Path) -> subprocess.Popen[str]:
    """Run bbrkit-floor until it says bbr_floor is registered."""
    binary = find_binary(FLOOR_BINARY, "BBRKIT_FLOOR")
    if binary is None:
        raise HarnessError(f"{FLOOR_BINARY}: not built (make) and BBRKIT_FLOOR not set")
    with stderr.open("w") as err:
        proc = group.spawn([str(binary)], stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], FLOOR_READY_TIMEOUT_S)
    if ready and proc.stdout.readline().strip() == "ready":
        return proc
    group.stop(proc)
    lines = stderr.read_text().strip().splitlines()
    text = f"{FLOOR_BINARY}: " + (lines[-1] if lines else f"no 'ready' within {FLOOR_READY_TIMEOUT_S:g} s")
    if proc.returncode == FLOOR_EXIT_UNSUPPORTED:
        raise NotRunnable(text)
    raise HarnessError(text)


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


def one_run(pair: Pair, group: ProcessGroup, algo: str, seconds: int, raw_dir: Path, tag: str,
            pin: bool) -> dict[str, Any]:
    server_path = raw_dir / f"{tag}-server.json"
    client_path = raw_dir / f"{tag}-client.json"
    with server_path.open("w") as out:
        server = group.spawn(["iperf3", "-s", "-1", "-J", "-p", str(SERVER_PORT)], netns=pair.receiver, stdout=out)
    wait_listening(pair.receiver, [SERVER_PORT], servers=[server], what=f"iperf3 server (see {server_path})")
    affinity = ["-A", "0,1"] if pin else []  # client on CPU 0, server on CPU 1
    stats0 = program_stats([algo]).get(algo, {})
    busy0, soft0 = system_busy_s(), ksoftirqd_s()
    with client_path.open("w") as out:
        client = group.spawn(["iperf3", "-c", RECEIVER_ADDR, "-p", str(SERVER_PORT), "-C", algo, "-J",
                              "-t", str(seconds), *affinity], netns=pair.sender, stdout=out)
        try:
            client.wait(timeout=seconds + CLIENT_GRACE_S)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"iperf3 client ({algo}) did not finish; see {client_path}") from None
    busy, soft = system_busy_s() - busy0, ksoftirqd_s() - soft0
    callbacks = stats_delta(stats0, program_stats([algo]).get(algo, {}))
    try:
        server.wait(timeout=CLIENT_GRACE_S)
    except subprocess.TimeoutExpired:
        group.stop(server)
    client_json = json.loads(client_path.read_text())
    if "error" in client_json:
        raise HarnessError(f"iperf3 client ({algo}): {client_json['error']}")
    if client_json["end"].get("sender_tcp_congestion") != algo:
        raise HarnessError(f"iperf3 ran {client_json['end'].get('sender_tcp_congestion')!r}, not {algo!r}")
    figures = per_run(client_json, json.loads(server_path.read_text()), busy, soft)
    bpf_ns = sum(c["ns"] for c in callbacks.values())
    return {"algo": algo, **figures, "callbacks": callbacks,
            "bpf_ns_per_byte": bpf_ns / figures["bytes"] if callbacks else None}


METRICS = ("process_ns_per_byte", "system_ns_per_byte", "gbit_s", "bpf_ns_per_byte")


def _interval(values: Sequence[float]) -> dict[str, Any]:
    m, ci = mean_ci95(values)
    return {"mean": m, "ci95": ci, "n": len(values)}


def ratio_pairs(algos: Sequence[str]) -> list[tuple[str, str]]:
    """(candidate, reference): each algorithm against the kernel's bbr, each bbrkit one against the floor."""
    pairs = [(a, REFERENCE) for a in algos if a != REFERENCE]
    if FLOOR in algos:
        pairs += [(a, FLOOR) for a in algos if a not in (REFERENCE, FLOOR)]
    return pairs


def paired(runs: list[dict[str, Any]], cand: str, ref: str,
           combine: Callable[[dict[str, Any], dict[str, Any]], float | None]) -> dict[str, Any] | None:
    """Mean over repetitions of combine(cand's run, ref's run) within the repetition, with its 95% interval:
    the two ran minutes apart at most, so a machine load that drifts between repetitions cancels out."""
    by_rep: dict[int, dict[str, dict[str, Any]]] = {}
    for r in runs:
        by_rep.setdefault(r["rep"], {})[r["algo"]] = r
    values = [v for rs in by_rep.values() if cand in rs and ref in rs
              and (v := combine(rs[cand], rs[ref])) is not None]
    return _interval(values) if values else None


def paired_ratio(runs: list[dict[str, Any]], cand: str, ref: str,
                 value: Callable[[dict[str, Any]], float | None]) -> dict[str, Any] | None:
    """cand / ref of `value`, paired by repetition: the geometric mean of the per-repetition ratios with its
    95% interval (Student's t on their logarithms). Run-to-run noise on this kind of machine is
    multiplicative and large (15-20% per run), and the arithmetic mean of ratios is biased upwards by
    about the square of that (E[1/y] > 1/E[y]): two runs of the same algorithm would average 1.02-1.04."""
    def log_ratio(c: dict[str, Any], r: dict[str, Any]) -> float | None:
        x, y = value(c), value(r)
        return math.log(x / y) if x is not None and y and x > 0 and y > 0 else None
    logs = paired(runs, cand, ref, log_ratio)
    if logs is None:
        return None
    mean = math.exp(logs["mean"])
    if logs["ci95"] is None:
        return {"mean": mean, "ci95": None, "n": logs["n"]}
    low, high = math.exp(logs["mean"] - logs["ci95"]), math.exp(logs["mean"] + logs["ci95"])
    # The interval is asymmetric around the geometric mean; its larger side is the one reported.
    return {"mean": mean, "ci95": max(high - mean, mean - low), "low": low, "high": high, "n": logs["n"]}


def own_logic_pct(c: dict[str, Any], r: dict[str, Any]) -> float | None:
    """The candidate's BPF run time per byte beyond the floor's, in % of the floor's CPU per byte: what its
    own logic costs. The trampolines' entry and exit are outside run_time_ns and the same for both."""
    if c["bpf_ns_per_byte"] is None or r["bpf_ns_per_byte"] is None:
        return None
    return float((c["bpf_ns_per_byte"] - r["bpf_ns_per_byte"]) / r["process_ns_per_byte"] * 100)


def _metric(key: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda run: run[key]


def _per_call(callback: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda run: run["callbacks"].get(callback, {}).get("ns_per_call")


def intervals_and_ratios(runs: list[dict[str, Any]], algos: Sequence[str]) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    for key in METRICS:
        metrics[key] = {a: _interval(vs) for a in algos if (vs := [r[key] for r in runs
                                                                   if r["algo"] == a and r[key] is not None])}
        ratios[key] = {f"{c}/{r}": pr for c, r in ratio_pairs(algos)
                       if (pr := paired_ratio(runs, c, r, _metric(key))) is not None}
    callbacks: dict[str, Any] = {}
    for algo in algos:
        names = sorted({cb for r in runs if r["algo"] == algo for cb in r["callbacks"]})
        entry = {}
        for cb in names:
            per_call = [r["callbacks"][cb]["ns_per_call"] for r in runs
                        if r["algo"] == algo and r["callbacks"].get(cb, {}).get("ns_per_call") is not None]
            calls = [r["callbacks"][cb]["calls"] for r in runs if r["algo"] == algo and cb in r["callbacks"]]
            if per_call:
                entry[cb] = {"ns_per_call": _interval(per_call), "calls_per_run": _interval(calls)}
        if entry:
            callbacks[algo] = entry
    callback_ratios: dict[str, Any] = {}
    if FLOOR in callbacks:
        for algo in callbacks:
            if algo == FLOOR:
                continue
            callback_ratios[f"{algo}/{FLOOR}"] = {
                cb: pr for cb in callbacks[algo] if cb in callbacks[FLOOR]
                and (pr := paired_ratio(runs, algo, FLOOR, _per_call(cb))) is not None}
    own = {a: pr for a in algos if a not in (REFERENCE, FLOOR)
           and (pr := paired(runs, a, FLOOR, own_logic_pct)) is not None}
    return {"algorithms": list(algos), "metrics": metrics, "ratios": ratios, "callbacks": callbacks,
            "callback_ratios": callback_ratios, "own_logic_pct_of_cpu": own}


def _fmt(entry: dict[str, Any] | None, digits: int = 4) -> str:
    if entry is None:
        return "-"
    ci = "?" if entry["ci95"] is None else f"{entry['ci95']:.2g}"
    return f"{entry['mean']:.{digits}g} ± {ci}"


def table(summary: dict[str, Any], load: Sequence[float]) -> str:
    algos = summary["algorithms"]
    pairs = list(summary["ratios"][METRICS[0]])
    body = [[key, *(_fmt(summary["metrics"][key].get(a)) for a in algos),
             *(_fmt(summary["ratios"][key].get(p), 3) for p in pairs)] for key in METRICS]
    text = tables.text(["metric", *algos, *pairs], body)
    cb_rows = []
    for algo, entry in summary["callbacks"].items():
        ratios = summary["callback_ratios"].get(f"{algo}/{FLOOR}", {})
        for cb, e in entry.items():
            cb_rows.append([algo, cb, _fmt(e["ns_per_call"]), f"{e['calls_per_run']['mean']:.0f}",
                            _fmt(ratios.get(cb), 3)])
    if cb_rows:
        text += "\n\n" + tables.text(["algorithm", "callback", "ns per call", "calls per run", f"/ {FLOOR}"],
                                     cb_rows)
    own = [f"{algo}'s BPF run time per byte beyond {FLOOR}'s: {_fmt(e, 3)} % of {FLOOR}'s process CPU per byte"
           for algo, e in summary["own_logic_pct_of_cpu"].items()]
    if own:
        text += "\n\n" + "\n".join(own)
    if load:
        text += (f"\n\n1-minute load average before the runs: {min(load):.2f}-{max(load):.2f} "
                 f"(mean {sum(load) / len(load):.2f}) on {os.cpu_count()} CPUs")
    return (text + "\n(mean ± 95% CI half-width over repetitions; ratios are per repetition, then their geometric mean;"
            " per-callback ns from the kernel's BPF run-time statistics)")


def run(out: Path, reps: int, seconds: int, extra: Sequence[str] = (), pin: bool = False,
        floor: bool = True) -> str:
    """Run bbr, bbr_floor, bbr1 and `extra` once per repetition, `reps` times; write overhead.json and raw/.
    Without the floor a repetition is a third shorter: more pairs of bbr1 and bbr in the same time."""
    from ..testbed.attachments import undo_bbrkit, use_bbrkit
    from ..testbed.cleanup import cleanup_stale, signals_deferred, signals_interrupt
    if reps < 2:
        raise HarnessError(f"--reps: need at least 2 for a confidence interval (got {reps})")
    if seconds < 1:
        raise HarnessError(f"--seconds: must be >= 1 (got {seconds})")
    algos = list(dict.fromkeys([REFERENCE, *([FLOOR] if floor else []), CANDIDATE, *extra]))
    available = catalog()
    for algo in algos:
        if algo != FLOOR and algo not in available.kernel | available.bbrkit:
            raise HarnessError(f"{algo}: not available here (kernel module or `make` for bbrctl)")
    if pin and (os.cpu_count() or 1) < 2:
        raise HarnessError("--pin needs two CPUs")
    cleanup_stale()
    raw_dir = out / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    prefix = runstate.new_prefix()
    state = RunState(prefix)
    group = ProcessGroup(prefix)
    pair = Pair(prefix)
    runs: list[dict[str, Any]] = []
    load: list[float] = []
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    try:
        with signals_interrupt(), bpf_run_time_stats():
            state.save()
            use_bbrkit({a: {} for a in algos if a in available.bbrkit}, state)
            if floor:
                start_floor(group, out / f"{FLOOR_BINARY}.stderr")
            pair.build()
            for rep in range(reps):
                shift = rep % len(algos)
                for algo in algos[shift:] + algos[:shift]:
                    load.append(loadavg()[0])
                    runs.append({"rep": rep, **one_run(pair, group, algo, seconds, raw_dir, f"rep{rep}-{algo}", pin)})
    finally:
        with signals_deferred():
            group.stop_all()  # bbrkit-floor among them: SIGTERM unregisters bbr_floor
            pair.destroy()
            undo_bbrkit(state)
            state.remove()
    summary = intervals_and_ratios(runs, algos)
    write_json(out / RESULT_FILE, "overhead", {
        "started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "kernel": os.uname().release,
        "cpus": os.cpu_count(), "seconds": seconds, "repetitions": reps, "pinned": pin,
        "loadavg_1min_before_each_run": load, "summary": summary, "runs": runs})
    return table(summary, load)


def pooled(dirs: Sequence[Path]) -> str:
    """One table over the repetitions of several runs of this benchmark, e.g. a long measurement made in
    parts, some with the floor and some without (each ratio over the repetitions that have both sides).
    Repetitions stay paired within their run; the runs must agree on kernel, run length and pinning, or
    they would measure different things."""
    if not dirs:
        raise HarnessError("--pool: name at least one results directory")
    loaded = [read_json(d / RESULT_FILE, "overhead") for d in dirs]
    for d, data in zip(dirs[1:], loaded[1:]):
        for key in ("kernel", "seconds", "pinned"):
            if data.get(key) != loaded[0].get(key):
                raise HarnessError(f"{d}: {key} {data.get(key)!r} differs from {dirs[0]}'s "
                                   f"{loaded[0].get(key)!r}; pool only like runs")
    algos = list(dict.fromkeys(a for data in loaded for a in data["summary"]["algorithms"]))
    runs: list[dict[str, Any]] = []
    load: list[float] = []
    offset = 0
    for data in loaded:
        runs += [{**r, "rep": r["rep"] + offset} for r in data["runs"]]
        offset += data["repetitions"]
        load += data["loadavg_1min_before_each_run"]
    return (f"{offset} repetitions from {len(dirs)} runs ({', '.join(str(d) for d in dirs)})\n\n"
            + table(intervals_and_ratios(runs, algos), load))
