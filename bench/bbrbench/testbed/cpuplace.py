"""A run's CPU placement (the scenario's cpu_placement, placement.PLACEMENTS) put into effect.

The link's forward thread takes the lowest CPU the harness may run on (bbrkit-link --cpu, so the pin goes
with the process); receive processing of every veth of the path is steered to the others by RPS, written
to rps_cpus of each receive queue inside its namespace, so it goes with the namespaces; the delay lines
and iperf3 are started confined to the others (taskset), so it goes with them. "napi" attaches an
XDP_PASS program (bpf/xdp/xdp_pass.bpf.c) to the receiver's interface and turns its threaded NAPI on, both
inside the receiver's namespace, so they go with it. Nothing global changes, so nothing is left to restore
after a failure or an interrupt.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..placement import PLACEMENTS
from .procs import CHECKOUT_BUILD, command
from .topology import HOST_IF, Topology

# rps_cpus is a hex bitmap written in comma-separated groups of 32 CPUs, most significant first.
RPS_GROUP_BITS = 32
# The XDP program "napi" attaches (built by make; $BBRKIT_XDP_PASS names another) and its ELF section.
XDP_PASS_OBJECT = "xdp_pass.bpf.o"
XDP_PASS_ENV = "BBRKIT_XDP_PASS"
XDP_PASS_SECTION = "xdp"
# Where `make install` puts it, under PREFIX (the Makefile's install rule).
XDP_PASS_INSTALL_DIR = Path("lib", "bbrkit")


@dataclass(frozen=True)
class CpuPlan:
    """What a run asked for and what it runs: results record it (events.json, emulation.cpu_placement)."""

    asked: str
    ran: str
    link_cpu: int | None  # the forward thread's CPU, None: not pinned
    rps_cpus: list[int]  # where receive processing goes, []: the kernel's default (the receiving CPU)
    app_cpus: list[int]  # where the delay lines and iperf3 may run, []: anywhere
    napi: bool = False  # the receiver's interface receives in a threaded-NAPI kernel thread
    note: str = ""

    def record(self) -> dict[str, Any]:
        return asdict(self)


def plan(name: str, cpus: set[int] | None = None) -> CpuPlan:
    """The placement @name on @cpus (default: the CPUs this process may run on). One CPU has nothing to
    separate: that runs "none" and records why in its note."""
    usable = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if name != "none" and len(usable) < 2:
        note = f"cpu_placement {name}: this machine gives the run 1 CPU, so it runs \"none\""
        return CpuPlan(asked=name, ran="none", link_cpu=None, rps_cpus=[], app_cpus=[], note=note)
    spec = PLACEMENTS[name]
    return CpuPlan(asked=name, ran=name, link_cpu=usable[0] if spec.pin_link else None,
                   rps_cpus=usable[1:] if spec.rps else [], app_cpus=usable[1:] if spec.apps else [],
                   napi=spec.napi)


def confine(argv: list[str], cpus: list[int]) -> list[str]:
    """@argv started on @cpus only (all its threads: the affinity is set before it runs); [] leaves it be."""
    return ["taskset", "-c", ",".join(map(str, cpus)), *argv] if cpus else argv


def rps_mask(cpus: list[int]) -> str:
    """The rps_cpus bitmap of @cpus: "2" for CPU 1, "1,00000000" for CPU 32."""
    bits = sum(1 << cpu for cpu in cpus)
    groups = max(cpus, default=0) // RPS_GROUP_BITS + 1
    mask = (1 << RPS_GROUP_BITS) - 1
    parts = [f"{(bits >> (RPS_GROUP_BITS * g)) & mask:08x}" for g in reversed(range(groups))]
    return ",".join([parts[0].lstrip("0") or "0", *parts[1:]])


def steer_receive(topo: Topology, cpus: list[int]) -> None:
    """RPS on every receive queue of every interface of the topology's namespaces, to @cpus."""
    mask = rps_mask(cpus)
    for ns in topo.namespaces:
        for dev in topo.interfaces(ns):
            # A kernel without CONFIG_RPS has no rps_cpus: the unmatched glob fails the write.
            script = (f"for q in /sys/class/net/{shlex.quote(dev)}/queues/rx-*/rps_cpus; "
                      f"do echo {mask} > \"$q\" || exit 1; done")
            result = command(["sh", "-c", script], netns=ns, check=False)
            if result.returncode != 0:
                raise HarnessError(f"cpu_placement: cannot steer {ns}/{dev}'s receive processing (rps_cpus): "
                                   f"{(result.stderr.strip().splitlines() or ['exit status 1'])[-1]}")


def xdp_pass_object(link_binary: Path | None) -> Path | None:
    """The XDP_PASS object "napi" attaches: $BBRKIT_XDP_PASS when set, else the checkout's build/, else where
    `make install` put it beside @link_binary (PREFIX/lib/bbrkit for PREFIX/bin/bbrkit-link)."""
    env = os.environ.get(XDP_PASS_ENV)
    installed = [link_binary.parent.parent / XDP_PASS_INSTALL_DIR / XDP_PASS_OBJECT] if link_binary else []
    places = [Path(env)] if env else [CHECKOUT_BUILD / XDP_PASS_OBJECT, *installed]
    return next((place for place in places if place.is_file()), None)


def thread_receive(topo: Topology, program: Path) -> None:
    """The receiver's interface takes its frames through threaded NAPI. A veth hands a frame to its peer's
    stack within the sender's transmit (__netif_rx, and the softirq then runs in the sender's thread) unless
    the peer has NAPI, which veth turns on when an XDP program is attached (drivers/net/veth.c, veth_xmit's
    use_napi): the sender then only fills the peer's ring, and threaded NAPI polls it in a kernel thread."""
    ns, dev = topo.receiver, HOST_IF

    def run(what: str, argv: list[str]) -> None:
        result = command(argv, netns=ns, check=False)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines() or [f"exit status {result.returncode}"]
            raise HarnessError(f"cpu_placement napi: cannot {what} on {ns}/{dev}: {detail[-1]}")

    run("attach an XDP program (native XDP on veth)",
        ["ip", "link", "set", "dev", dev, "xdpdrv", "obj", str(program), "sec", XDP_PASS_SECTION])
    # GRO off, whatever attaching the program did to the features (veth_xdp_set updates them): frames reach
    # the receiver's stack one by one as they left the link (netif_elide_gro), and NAPI stays on for XDP.
    run("turn GRO off", ["ethtool", "-K", dev, "gro", "off"])
    # A kernel without threaded NAPI has no such file, and the redirection fails.
    run("turn threaded NAPI on (/sys/class/net/DEV/threaded)",
        ["sh", "-c", f"echo 1 > /sys/class/net/{shlex.quote(dev)}/threaded"])
