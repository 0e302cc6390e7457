"""A path through bbrkit-link for the link's integration tests: the link_path fixture builds a dumbbell of
one sender whose bottleneck is the link, and the helpers run iperf3, ping and nstat across it."""
from __future__ import annotations

import csv
import itertools
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bbrbench.scenario import AlgoCatalog, validate
from bbrbench.testbed.emulation import Emulation, plan
from bbrbench.testbed.netns import Namespaces
from bbrbench.testbed.procs import command, wait_listening
from bbrbench.testbed.topology import RECEIVER_ADDR, Topology
from netutil import NS_PREFIX

IPERF_PORT = 5201  # iperf3's default

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr", "reno"}), bbrkit=frozenset())
_serial = itertools.count()


def next_serial() -> int:
    """A number no other namespace prefix of this session's link tests has."""
    return next(_serial)


class LinkPath:
    def __init__(self, topo: Topology, emulation: Emulation, work: Path) -> None:
        self.topo = topo
        self.emulation = emulation
        self.work = work
        self.sender = next(iter(topo.hosts.values())).netns

    def log(self) -> list[dict[str, float]]:
        with (self.work / "link.csv").open() as f:
            return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


@pytest.fixture
def link_path(tmp_path: Path) -> Iterator[Callable[..., LinkPath]]:
    """Factory: link_path(bottleneck={...}, rtt_ms=..) -> a built, running path through bbrkit-link."""
    made: list[tuple[Topology, Emulation]] = []

    def factory(bottleneck: dict[str, Any], rtt_ms: float = 0, sysctls: tuple[str, ...] = (),
                cpu_placement: str = "none") -> LinkPath:
        raw = {"name": "linktest", "duration_s": 10, "bottleneck": {"emulator": "bbrkit-link", **bottleneck},
               "senders": [{"name": "s0", "rtt_ms": rtt_ms}], "flows": [{"algo": "cubic"}],
               "cpu_placement": cpu_placement}
        scenario = validate(raw, CATALOG)
        prefix = f"{NS_PREFIX}lk{next_serial()}"
        topo = Topology(prefix, scenario)
        with Namespaces() as scratch:
            probe = scratch.add(f"{prefix}-probe")
            delay = plan(topo, probe)
        assert topo.link_netns
        emulation = Emulation(topo, delay, work_dir=tmp_path)
        made.append((topo, emulation))
        topo.build()
        for ns in (topo.receiver, *topo.sender_namespaces):
            if sysctls:
                command(["sysctl", "-qw", *sysctls], netns=ns)
        emulation.start()
        return LinkPath(topo, emulation, tmp_path)

    try:
        yield factory
    finally:
        for topo, emulation in made:
            try:
                emulation.stop()
            finally:
                topo.destroy()


def iperf(path: LinkPath, args: list[str], seconds: float) -> subprocess.Popen[str]:
    command(["iperf3", "-s", "-D", "-1"], netns=path.topo.receiver)
    wait_listening(path.topo.receiver, [IPERF_PORT])
    return subprocess.Popen(["ip", "netns", "exec", path.sender, "iperf3", "-c", RECEIVER_ADDR, "-t",
                             str(seconds), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ping_ms(path: LinkPath, count: int, interval_s: float) -> list[float]:
    out = command(["ping", "-n", "-c", str(count), "-i", str(interval_s), RECEIVER_ADDR], netns=path.sender,
                  timeout=count * interval_s + 10).stdout
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]


def nstat(ns: str, name: str) -> int:
    out = command(["nstat", "-az", name], netns=ns).stdout
    match = re.search(rf"{name}\s+(\d+)", out)
    return int(match.group(1)) if match else 0


def iperf_json(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return dict(json.loads(out))
