"""bbrkit-link's per-packet log in Mahimahi mm-link's format (link_queue.cc): header lines starting with
`#`, among them `# base timestamp: N`, then `TS + BYTES` (arrival), `TS # BYTES` (a delivery opportunity),
`TS - BYTES DELAY` (departure and its delay through the link), in whole ms. Read with the rules Mahimahi's
mm-throughput-graph and mm-delay-graph apply (they reject anything else), and plotted as they plot it:
capacity, ingress and egress per bin above the per-packet delay."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import HarnessError

BASE_RE = re.compile(r"^# base timestamp: (\d+)")


class MmLogError(HarnessError):
    """A line mm-throughput-graph would reject; the message names the file and line."""


@dataclass
class MmLog:
    arrivals: list[tuple[int, int]] = field(default_factory=list)  # (ms, bytes)
    capacity: list[tuple[int, int]] = field(default_factory=list)
    departures: list[tuple[int, int, int]] = field(default_factory=list)  # (ms, bytes, delay ms)

    def rates_mbit(self, bin_ms: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Bin starts (s) and Mbit/s per bin of capacity, ingress and egress, as mm-throughput-graph bins."""
        last = max((t for series in (self.arrivals, self.capacity, self.departures) for t, *_ in series), default=0)
        edges = np.arange(0, last + bin_ms + 1, bin_ms)
        out = {}
        for name, series in (("capacity", self.capacity), ("ingress", self.arrivals), ("egress", self.departures)):
            sums, _ = np.histogram([t for t, *_ in series], bins=edges, weights=[b * 8 for _, b, *_ in series])
            out[name] = sums / (bin_ms / 1000) / 1e6
        return edges[:-1] / 1000, out


def read(path: Path) -> MmLog:
    log = MmLog()
    base: int | None = None
    with path.open() as fh:
        for lineno, line in enumerate(fh, 1):
            match = BASE_RE.match(line)
            if match:
                if base is not None:
                    raise MmLogError(f"{path}: line {lineno}: base timestamp multiply defined")
                base = int(match.group(1))
                continue
            if line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) < 3 or not fields[0].isdigit() or not fields[2].isdigit():
                raise MmLogError(f"{path}: line {lineno}: expected 'timestamp event_type num_bytes [delay]'")
            if base is None:
                raise MmLogError(f"{path}: line {lineno}: the log is missing its base timestamp")
            ts, kind, size = int(fields[0]) - base, fields[1], int(fields[2])
            if kind == "+":
                log.arrivals.append((ts, size))
            elif kind == "#":
                log.capacity.append((ts, size))
            elif kind == "-":
                if len(fields) != 4 or not fields[3].isdigit() or ts - int(fields[3]) < 0:
                    raise MmLogError(f"{path}: line {lineno}: departure format is 'timestamp - num_bytes delay'")
                log.departures.append((ts, size, int(fields[3])))
            else:
                raise MmLogError(f"{path}: line {lineno}: unknown event type {kind!r}")
    return log


def plot(path: Path, out: Path, title: str, bin_ms: int = 100) -> Path:
    """Throughput (capacity, ingress, egress per bin) above per-packet delay through the link."""
    from . import canvas  # matplotlib only when a figure is drawn

    log = read(path)
    t, rates = log.rates_mbit(bin_ms)
    fig, (top, bottom) = canvas.plt.subplots(2, 1, figsize=(canvas.FIG_SIZE[0], 7), sharex=True)
    top.fill_between(t, rates["capacity"], step="post", alpha=0.25, label="capacity")
    top.step(t, rates["ingress"], where="post", linewidth=1.5, label="ingress")
    top.step(t, rates["egress"], where="post", linewidth=1.0, label="egress")
    top.set_ylabel("Mbit/s")
    top.set_title(f"{title} ({bin_ms} ms bins)")
    top.legend(loc="upper right")
    if log.departures:
        dep = np.array(log.departures)
        bottom.plot(dep[:, 0] / 1000, dep[:, 2], ",", alpha=0.6)
    bottom.set_ylabel("per-packet delay (ms)")
    bottom.set_xlabel("time (s)")
    return canvas.save(fig, out)
