"""Where a run's path works on the machine's CPUs (the scenario's top-level `cpu_placement`).

On a machine of two vCPUs bbrkit-link's forward thread shares them with the senders, the receiver and the
delay lines, and its sends run the receivers' TCP and the ACK path in softirq on whichever CPU it is on.
A placement separates them: the forward thread pinned to one CPU (bbrkit-link --cpu), every interface's
receive processing steered to the others by RPS (rps_cpus of each veth's receive queues, inside the
namespaces, so it goes with them), and the path's other processes (delay lines, iperf3) confined to the
others too, so that the link has its CPU to itself. Or the receiver's interface takes its frames through
threaded NAPI, so that the link's sends only queue them and a kernel thread, which the scheduler may put
on another CPU, runs the receiver's TCP and the ACK path. testbed/cpuplace.py applies it; validation and the
harness take the names from this table alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    pin_link: bool  # the link's forward thread runs on one CPU only
    rps: bool  # each veth's receive processing runs on the CPUs other than that one
    apps: bool  # the delay lines and iperf3 run on those other CPUs only
    meaning: str
    napi: bool = False  # the receiver's interface receives through threaded NAPI (an XDP_PASS program on it)


PLACEMENTS: dict[str, Placement] = {
    "none": Placement(False, False, False, "the scheduler places everything (what runs without the key)"),
    "rps": Placement(False, True, False, "RPS on every veth of the path to the CPUs other than the link's"),
    "pin": Placement(True, False, False, "the link's forward thread pinned to one CPU"),
    "pin+rps": Placement(True, True, False, "both"),
    "isolate": Placement(True, True, True, "pin+rps, and the delay lines and iperf3 on the CPUs other than the "
                                           "link's, which then has its CPU to itself"),
    "napi": Placement(False, False, False, "the receiver's interface receives in a NAPI kernel thread (XDP_PASS "
                                           "and threaded NAPI on it), not in the link's sends", napi=True),
    "napi+pin": Placement(True, False, False, "napi, and the link's forward thread pinned to one CPU", napi=True),
}
DEFAULT_PLACEMENT = "none"
