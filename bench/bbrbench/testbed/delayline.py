"""Python side of the project's delay line (build/bbrkit-delay), used where the kernel has no netem.

The binary forwards every frame between two interfaces of one network namespace through AF_PACKET
sockets, delayed by a fixed time per direction (see bench/delayline/README.md for how and how well);
testbed/wire.py starts, reads and stops it.
"""

from __future__ import annotations

from pathlib import Path

from .wire import DELAY_BINARY, WireError, WireProcess

BINARY_NAME, BINARY_ENV = DELAY_BINARY
MAX_DELAY_US = 10_000_000


class DelayLineError(WireError):
    """The delay line cannot be set up or has failed; the message is one line."""


def _check_delay(what: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_DELAY_US:
        raise DelayLineError(f"{what}: must be an integer from 0 to {MAX_DELAY_US} microseconds, got {value!r}")


class DelayLine(WireProcess):
    """Every frame that arrives on left_if leaves on right_if delay_lr_us later and vice versa
    (delay_rl_us)."""

    binary_name = BINARY_NAME
    binary_env = BINARY_ENV
    error = DelayLineError

    def __init__(self, netns: str, left_if: str, right_if: str, delay_lr_us: int, delay_rl_us: int,
                 tag: str, binary: Path | None = None) -> None:
        super().__init__(netns, left_if, right_if, tag, binary)
        _check_delay("delay_lr_us", delay_lr_us)
        _check_delay("delay_rl_us", delay_rl_us)
        self.delay_lr_us = delay_lr_us
        self.delay_rl_us = delay_rl_us

    def _arguments(self) -> list[str]:
        return ["--delay-lr-us", str(self.delay_lr_us), "--delay-rl-us", str(self.delay_rl_us)]
