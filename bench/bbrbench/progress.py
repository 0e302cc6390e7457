"""Progress for anything longer than a few seconds: tqdm bars on a terminal (not with -q); off a terminal
(CI, nohup, a pipe), where a bar would print nothing, an estimate at the start and one log line per
finished run."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

# What a run costs beyond its scenario's duration: namespaces, qdiscs and delay lines up and down, iperf3
# start-up, summary. compare --profile quick took 4 min 7 s for 42 runs of 5 s: 0.9 s each.
RUN_SETUP_S = 1.0


def bar(disable_bar: bool = False, **kwargs: Any) -> tqdm:
    # disable=None lets tqdm switch itself off when stderr is not a terminal (CI, pipes, tests).
    off = disable_bar or not logging.getLogger("bbrbench").isEnabledFor(logging.INFO)
    return tqdm(disable=True if off else None, leave=False, dynamic_ncols=True, **kwargs)


def duration(seconds: float) -> str:
    """1h05m, 4m10s, 35s: an estimate's precision."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class RunCounter:
    """Finished runs out of those to do, over one sweep or several (reproduce), with an estimate of the time
    left: the nominal length of the runs left (scenario duration + RUN_SETUP_S) scaled by how the nominal
    length of the runs done so far compared with the time they took."""

    def __init__(self, nominal_s: list[float], clock: Callable[[], float] = time.monotonic) -> None:
        self.total = len(nominal_s)
        self.done = 0
        self.left_s = sum(nominal_s) + RUN_SETUP_S * self.total
        self.done_s = 0.0
        self.clock = clock
        self.t0 = clock()

    def estimate(self) -> str:
        return duration(self.left_s)

    def finished(self, what: str, nominal_s: float) -> str:
        """Count a finished run (done, failed or not runnable): '[12/42] WHAT, ETA 1m40s'."""
        self.done += 1
        self.done_s += nominal_s + RUN_SETUP_S
        self.left_s = max(0.0, self.left_s - nominal_s - RUN_SETUP_S)
        pace = (self.clock() - self.t0) / self.done_s
        return f"[{self.done}/{self.total}] {what}, ETA {duration(self.left_s * pace)}"
