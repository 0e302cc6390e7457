"""Samplers that run during the traffic phase.

- FlowSampler: `ss -tin` in every sender namespace at the scenario's interval (default 100 ms).
- QueueSampler: the bottleneck's leaf qdisc (backlog, drops, bytes sent) at >= 50 Hz through one
  long-lived `tc -s -j -batch -` process, which answers each query in tens of microseconds.
- TraceRecorder: `bbrctl trace` for the bbrkit algorithms in use, as JSON lines.

Times are seconds since the run's t0 on time.monotonic(), the clock bbrctl's t_ns uses too.
"""

from __future__ import annotations

import csv
import json
import logging
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from ..errors import HarnessError
from ..results import FLOW_FIELDS, QUEUE_FIELDS
from .emulation import LEAF_HANDLE
from .procs import ProcessGroup, command
from .system import bbrctl_path
from .topology import BOTTLENECK_IF, Topology

log = logging.getLogger(__name__)
US_PER_MS = 1000
TRACE_STOP_GRACE_S = 3.0
RATE_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
RATE_RE = re.compile(r"^([0-9.]+)([KMGT]?)bps$")


def parse_rate(text: str) -> float | None:
    match = RATE_RE.match(text)
    return float(match.group(1)) * RATE_UNITS[match.group(2)] if match else None


def _ms_to_us(text: str) -> int:
    """ss prints RTTs in ms with microsecond resolution."""
    return round(float(text) * US_PER_MS)


def parse_ss(text: str) -> list[dict[str, Any]]:
    """Connections from `ss -tinH`: one dict per socket with its ports and the info fields we keep."""
    sockets: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            # The local and peer address:port are the last two columns (a state filter drops the State one).
            cols = line.split()
            if len(cols) < 4:
                current = None
                continue
            current = {"sport": int(cols[-2].rsplit(":", 1)[1]), "dport": int(cols[-1].rsplit(":", 1)[1])}
            sockets.append(current)
            continue
        if current is not None:
            current.update(parse_ss_info(line))
    return sockets


def parse_ss_info(line: str) -> dict[str, Any]:
    tokens = line.split()
    info: dict[str, Any] = {}
    if tokens and ":" not in tokens[0]:
        info["algo"] = tokens[0]
    ints = {"cwnd": "cwnd", "ssthresh": "ssthresh", "bytes_sent": "bytes_sent", "bytes_retrans": "bytes_retrans",
            "bytes_acked": "bytes_acked", "data_segs_out": "data_segs_out", "lost": "lost", "unacked": "unacked",
            "notsent": "notsent_bytes", "mss": "mss"}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        key, sep, value = tok.partition(":")
        if tok in ("pacing_rate", "delivery_rate") and i + 1 < len(tokens):
            info[f"{tok}_bps"] = parse_rate(tokens[i + 1])
            i += 2
            continue
        if sep:
            if key in ints and value.isdigit():
                info[ints[key]] = int(value)
            elif key == "rtt" and "/" in value:
                srtt, rttvar = value.split("/", 1)
                info["srtt_us"], info["rttvar_us"] = _ms_to_us(srtt), _ms_to_us(rttvar)
            elif key == "minrtt":
                info["min_rtt_us"] = _ms_to_us(value)
            elif key == "retrans" and "/" in value:
                info["retrans"] = int(value.split("/", 1)[1])
            elif key == "bbr":
                info.update(_parse_bbr(value))
        i += 1
    return info


def _parse_bbr(value: str) -> dict[str, Any]:
    """The kernel bbr's own state as ss prints it: (bw:...bps,mrtt:...,pacing_gain:...,cwnd_gain:...)."""
    out: dict[str, Any] = {}
    for part in value.strip("()").split(","):
        key, _, val = part.partition(":")
        if key == "bw":
            out["bw_bps"] = parse_rate(val)
        elif key == "mrtt":  # BBR's own windowed min_rtt, unlike TCP's minrtt above
            out["bbr_min_rtt_us"] = _ms_to_us(val)
        elif key in ("pacing_gain", "cwnd_gain"):
            out[key] = float(val)
    return out


class _Periodic(threading.Thread):
    """A thread that calls tick() on an absolute schedule, so slow ticks do not stretch the interval."""

    def __init__(self, name: str, interval_s: float) -> None:
        super().__init__(name=name, daemon=True)
        self.interval_s = interval_s
        self.stop_event = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        next_at = time.monotonic()
        try:
            while not self.stop_event.is_set():
                self.tick()
                next_at += self.interval_s
                delay = next_at - time.monotonic()
                if delay < 0:
                    next_at = time.monotonic()
                    delay = 0
                self.stop_event.wait(delay)
        except Exception as exc:
            self.error = f"{self.name}: {exc}"

    def tick(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=5)


class FlowSampler(_Periodic):
    def __init__(self, topo: Topology, t0: float, out: IO[str]) -> None:
        super().__init__("flow sampler", topo.scenario.sample_interval_ms / 1000)
        self.t0 = t0
        self.writer = csv.DictWriter(out, fieldnames=FLOW_FIELDS, extrasaction="ignore")
        self.writer.writeheader()
        self.out = out
        self.by_host: dict[str, dict[int, int]] = {}
        for flow in topo.scenario.flows:
            netns = topo.hosts[flow.sender].netns
            self.by_host.setdefault(netns, {})[flow.client_port] = flow.index
        self.samples = 0

    def tick(self) -> None:
        for netns, ports in self.by_host.items():
            before = time.monotonic()
            text = command(["ss", "-N", netns, "-tinH", "state", "established"], check=False).stdout
            # ss reads the sockets somewhere between its launch and its exit; on a busy host starting it
            # takes tens of milliseconds, so the midpoint is the closer time (a steady-state window of a
            # few seconds turns a 100 ms error into several percent of goodput).
            t = (before + time.monotonic()) / 2 - self.t0
            for sock in parse_ss(text):
                flow = ports.get(sock["sport"])
                if flow is not None:
                    self.writer.writerow({**sock, "t_s": f"{t:.4f}", "flow": flow})
                    self.samples += 1
        self.out.flush()


class QueueSampler(_Periodic):
    def __init__(self, topo: Topology, procs: ProcessGroup, t0: float, out: IO[str]) -> None:
        super().__init__("queue sampler", 1 / topo.scenario.queue_sample_hz)
        self.t0 = t0
        self.writer = csv.writer(out)
        self.writer.writerow(QUEUE_FIELDS)
        self.out = out
        self.samples = 0
        # Spawned here, in the caller's (main) thread: its parent-death signal follows the spawning thread.
        self.tc = procs.spawn(["tc", "-s", "-j", "-batch", "-"], netns=topo.router, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
        self.query = f"qdisc show dev {BOTTLENECK_IF}\n"

    def tick(self) -> None:
        assert self.tc.stdin is not None and self.tc.stdout is not None
        t = time.monotonic() - self.t0
        self.tc.stdin.write(self.query)
        self.tc.stdin.flush()
        line = self.tc.stdout.readline()
        if not line:
            raise HarnessError("tc batch process ended")
        for q in json.loads(line):
            if q.get("handle") == LEAF_HANDLE:
                self.writer.writerow([f"{t:.4f}", q.get("backlog", 0), q.get("qlen", 0), q.get("drops", 0),
                                      q.get("bytes", 0), q.get("packets", 0)])
                self.samples += 1
        if self.samples % 50 == 0:
            self.out.flush()

    def stop(self) -> None:
        super().stop()
        self.out.flush()
        if self.tc.stdin:
            try:
                self.tc.stdin.close()
            except OSError:
                pass


class LinkQueueSampler:
    """The queue samples of bbrkit-link, which logs its own queue (raw/link.csv, CLOCK_MONOTONIC stamps):
    at stop they become queue.csv rows like the tc sampler's, with drops = overlimit + AQM drops."""

    def __init__(self, log: Path, t0: float, out: IO[str]) -> None:
        self.log = log
        self.t0 = t0
        self.out = out
        self.error: str | None = None

    def start(self) -> None:
        return None

    def stop(self) -> None:
        writer = csv.writer(self.out)
        writer.writerow(QUEUE_FIELDS)
        try:
            with self.log.open(newline="") as f:
                for row in csv.DictReader(f):
                    t = float(row["t_mono_s"]) - self.t0
                    if t < 0:
                        continue
                    writer.writerow([f"{t:.4f}", row["backlog_bytes"], row["backlog_pkts"],
                                     int(row["drop_overlimit"]) + int(row["drop_aqm"]), row["out_bytes"],
                                     row["out_pkts"]])
        except (OSError, ValueError, KeyError) as exc:
            self.error = f"link queue samples: {exc}"
        self.out.flush()


class TraceRecorder:
    """`bbrctl trace ALGO... --out FILE --format jsonl`, stopped with SIGINT so it flushes its output."""

    def __init__(self, procs: ProcessGroup, algos: list[str], path: Path) -> None:
        self.procs = procs
        self.algos = algos
        self.path = path
        self.proc: subprocess.Popen[Any] | None = None
        self.log = path.with_suffix(".log")

    def start(self) -> None:
        binary = bbrctl_path()
        if binary is None:
            logging.getLogger(__name__).info("note: bbrctl not found, no bbrkit state trace")
            return
        with self.log.open("w") as log:
            self.proc = self.procs.spawn([str(binary), "trace", "--out", str(self.path), "--format", "jsonl",
                                          *self.algos], stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc is not None:
            self.procs.stop(self.proc, sig=signal.SIGINT, grace_s=TRACE_STOP_GRACE_S)
