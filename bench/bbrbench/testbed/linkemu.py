"""Python side of the project's link emulator (build/bbrkit-link), used for AQMs, ECN marking, rate
traces and burst loss where the kernel has no qdisc for them (see bench/link/README.md).

The binary sits in a namespace of its own between the router and the receiver and forwards frames
through AF_PACKET sockets like the delay line; testbed/wire.py starts, reads and stops it.
"""

from __future__ import annotations

from pathlib import Path

from .procs import command
from .wire import LINK_BINARY, WireError, WireProcess

BINARY_NAME, BINARY_ENV = LINK_BINARY


class LinkError(WireError):
    """The link emulator cannot be set up or has failed; the message is one line."""


class LinkEmulator(WireProcess):
    """The bottleneck: frames from left_if leave on right_if at the link's rate through its queue;
    frames from right_if go back unshaped. `options` are the binary's own (--rate-bps, --aqm, ...)."""

    binary_name = BINARY_NAME
    binary_env = BINARY_ENV
    error = LinkError

    def __init__(self, netns: str, left_if: str, right_if: str, tag: str, options: list[str],
                 binary: Path | None = None) -> None:
        super().__init__(netns, left_if, right_if, tag, binary)
        self.options = options

    def _arguments(self) -> list[str]:
        return self.options


def kernel_reverse(netns: str, right_if: str, left_if: str) -> str | None:
    """Has the kernel carry the unshaped ACK direction: everything arriving on right_if leaves on left_if
    (tc clsact ingress, a u32 filter matching all, mirred egress redirect), so the link runs with
    --rev-kernel and no thread of its own for it. None when done, else the one-line reason it could not be
    (the link's own thread then carries the ACKs)."""
    steps = (["qdisc", "add", "dev", right_if, "clsact"],
             # u32 matching every packet: this kernel has u32 but not matchall (CONFIG_NET_CLS_MATCHALL).
             ["filter", "add", "dev", right_if, "ingress", "protocol", "all", "u32", "match", "u32", "0", "0",
              "action", "mirred", "egress", "redirect", "dev", left_if])
    for step in steps:
        result = command(["tc", *step], netns=netns, check=False)
        if result.returncode != 0:
            command(["tc", "qdisc", "del", "dev", right_if, "clsact"], netns=netns, check=False)
            return f"tc {' '.join(step[:4])}: {result.stderr.strip() or 'failed'}"
    return None
