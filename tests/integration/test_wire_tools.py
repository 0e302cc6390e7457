"""What the wire tools (bbrkit-link, bbrkit-delay) ask of the machine around their sockets, on the real kernel:
the CPU latency request of --cpu-latency-us."""

from __future__ import annotations

import itertools
import os
import struct
from pathlib import Path

import pytest

from netutil import NS_PREFIX

_count = itertools.count()


CPU_LATENCY_DEVICE = Path("/dev/cpu_dma_latency")


def cpu_latency_us() -> int:
    """The machine's CPU latency limit now: the smallest request held (the kernel's PM QoS interface)."""
    fd = os.open(CPU_LATENCY_DEVICE, os.O_RDONLY)
    try:
        return int(struct.unpack("i", os.read(fd, 4))[0])
    finally:
        os.close(fd)


def test_the_cpu_latency_request_holds_while_the_link_runs_and_ends_with_it() -> None:
    """A request written to /dev/cpu_dma_latency holds while its file stays open (the kernel's PM QoS
    interface): --cpu-latency-us 0 holds one from the link's start to its exit and says so in its ready line."""
    from bbrbench.experiments import linkbench
    from bbrbench.experiments.delaybench import Chain

    if not CPU_LATENCY_DEVICE.exists():
        pytest.skip("this kernel has no /dev/cpu_dma_latency")
    before = cpu_latency_us()
    if before == 0:
        pytest.skip("another process holds a request of 0 us")
    with Chain(f"{NS_PREFIX}qos{next(_count)}-") as chain:
        with linkbench._link(chain, "q", ["--rate-bps", "100000000", "--cpu-latency-us", "0"], None) as link:
            assert link.ready_event["cpu_latency_us"] == 0, link.ready_event
            assert cpu_latency_us() == 0
        with linkbench._link(chain, "n", ["--rate-bps", "100000000"], None) as link:
            assert link.ready_event["cpu_latency_us"] == -1 and cpu_latency_us() == before
    assert cpu_latency_us() == before
