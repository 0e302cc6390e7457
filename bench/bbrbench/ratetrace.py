"""Link rate traces in Mahimahi's format: one line per delivery opportunity, in integer milliseconds from
the start, non-decreasing; the trace loops with the last line's time as its period. An opportunity carries
1504 bytes of what mm-link reads from its TUN device, one 1500-byte IP packet and its 4-byte header, so
rates here count 1500 bytes per opportunity. Files are read as mm-link reads them: no empty lines or
comments.

Traces are files (Mahimahi's own cellular traces, for one, are read as they are), or generated from a
shape: step, square wave or random walk.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from pathlib import Path

OPPORTUNITY_BYTES = 1500
# A line as mm-link's myatoi (strtol) takes it: leading blanks and a plus sign, then digits, nothing after.
STRTOL_MS = re.compile(r"[ \t\n\v\f\r]*\+?[0-9]+")
MAX_LINES = 10_000_000
SHAPES = ("step", "square", "random_walk")


class TraceError(ValueError):
    """A trace that cannot be used; the message is one line naming the file and the problem."""


@dataclass(frozen=True)
class Trace:
    path: Path
    opportunities: int
    period_ms: int

    @property
    def mean_mbit(self) -> float:
        return self.opportunities * OPPORTUNITY_BYTES * 8 / (self.period_ms * 1e3)


def resolve(name: str) -> Path:
    """The trace file a scenario names (~ expanded)."""
    return Path(name).expanduser()


def load(name: str) -> Trace:
    path = resolve(name)
    try:
        with path.open(newline="") as f:  # as mm-link: a carriage return is part of the line
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = (exc.strerror if isinstance(exc, OSError) else None) or exc
        raise TraceError(f"{name}: cannot read the trace ({reason})") from None
    count, last = 0, 0
    lines = text.split("\n")
    if lines[-1] == "":  # the newline ending the last line does not start another
        lines.pop()
    for lineno, line in enumerate(lines, 1):
        if not line:
            raise TraceError(f"{name}: line {lineno}: empty (Mahimahi refuses empty lines)")
        if not STRTOL_MS.fullmatch(line) or int(line) < last:
            raise TraceError(f"{name}: line {lineno}: expected a millisecond count not below the previous line's")
        last = int(line)
        count += 1
        if count > MAX_LINES:
            raise TraceError(f"{name}: more than {MAX_LINES} lines")
    if count == 0 or last == 0:
        raise TraceError(f"{name}: no delivery opportunity after 0 ms (an empty trace cannot loop)")
    return Trace(path=path, opportunities=count, period_ms=last)


def rate_at(shape: dict[str, float | str], t_s: float, walk: list[float]) -> float:
    """Mbit/s of a generated shape at t_s; `walk` holds the random walk's per-step rates."""
    kind = shape["kind"]
    low, high = float(shape["low_mbit"]), float(shape["high_mbit"])
    period = float(shape["period_s"])
    if kind == "step":
        return low if t_s < period else high
    if kind == "square":
        return high if math.fmod(t_s, period) < period / 2 else low
    return walk[min(len(walk) - 1, int(t_s / period))]


def generate(shape: dict[str, float | str], duration_s: float, out: Path, seed: int = 1) -> Trace:
    """Writes the opportunities of a shape over duration_s (the trace's period) to out.

    step: low_mbit until period_s, then high_mbit. square: high_mbit for the first half of each period_s,
    low_mbit for the second. random_walk: every period_s the rate moves by a uniform step of at most
    step_mbit, kept within [low_mbit, high_mbit], starting half-way."""
    low, high = float(shape["low_mbit"]), float(shape["high_mbit"])
    rng = random.Random(seed)
    walk = [(low + high) / 2]
    steps = int(duration_s / float(shape["period_s"])) + 1
    for _ in range(steps):
        walk.append(min(high, max(low, walk[-1] + rng.uniform(-1, 1) * float(shape.get("step_mbit", 0)))))
    lines: list[str] = []
    credit = 0.0
    total_ms = max(1, round(duration_s * 1000))
    for ms in range(1, total_ms + 1):
        credit += rate_at(shape, (ms - 1) / 1000, walk) * 1e6 / 8 / 1000 / OPPORTUNITY_BYTES
        while credit >= 1:
            lines.append(str(ms))
            credit -= 1
    if not lines or lines[-1] != str(total_ms):
        # The last line sets the period: an opportunity at the end keeps the loop exactly duration_s long.
        lines.append(str(total_ms))
    out.write_text("\n".join(lines) + "\n")
    return Trace(path=out, opportunities=len(lines), period_ms=total_ms)
