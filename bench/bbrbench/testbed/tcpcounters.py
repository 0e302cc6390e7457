"""A namespace's TCP counters (/proc/net/netstat and /proc/net/snmp, as nstat reads them): each sender
namespace is new for its run, so its counters at the end are the run's. They say what the flows' state
samples cannot: how many RTOs, tail-loss probes and SACK recoveries a run had."""

from __future__ import annotations

from ..results import TCP_COUNTERS
from .procs import command


def parse(text: str) -> dict[str, int]:
    """The kept counters of the TcpExt: and Tcp: header/value line pairs in /proc/net/{netstat,snmp}."""
    found: dict[str, int] = {}
    lines = text.splitlines()
    for header, values in zip(lines[::2], lines[1::2]):
        names, numbers = header.split(), values.split()
        if names and names[0] in ("TcpExt:", "Tcp:") and names[0] == numbers[0]:
            found.update({n: int(v) for n, v in zip(names[1:], numbers[1:]) if n in TCP_COUNTERS})
    return found


def read(netns: str) -> dict[str, int]:
    return parse(command(["cat", "/proc/net/netstat", "/proc/net/snmp"], netns=netns).stdout)
