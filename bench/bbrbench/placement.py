"""Where a run's path works on the machine's CPUs (the scenario's top-level `cpu_placement`).

On a machine of two vCPUs bbrkit-link's forward thread shares them with the senders, the receiver and the
delay lines, and its sends run the receivers' TCP and the ACK path in softirq on whichever CPU it is on.
A placement separates them: the forward thread pinned to one CPU (bbrkit-link --cpu), every interface's
receive processing steered to the others by RPS (rps_cpus of each veth's receive queues, inside the
namespaces, so it goes with them). testbed/cpuplace.py applies it; this table is the one place the names
are declared (validation, the harness and the docs' list come from it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    pin_link: bool  # the link's forward thread runs on one CPU only
    rps: bool  # each veth's receive processing runs on the CPUs other than that one
    meaning: str


PLACEMENTS: dict[str, Placement] = {
    "none": Placement(False, False, "the scheduler places everything (what runs without the key)"),
    "rps": Placement(False, True, "RPS on every veth of the path to the CPUs other than the link's"),
    "pin": Placement(True, False, "the link's forward thread pinned to one CPU"),
    "pin+rps": Placement(True, True, "both"),
}
DEFAULT_PLACEMENT = "none"
