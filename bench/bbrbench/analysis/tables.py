"""Every table bbrbench shows, through tabulate: console text, Markdown (reproduction report) and HTML
(compare page). Cells arrive as strings or None (shown as "-"), so each caller decides its precision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

MISSING = "-"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, labels: int) -> str:
    # The first `labels` columns are names (left); the rest are numbers (right), already formatted.
    align = ["left"] * labels + ["right"] * (len(headers) - labels)
    return str(tabulate(rows, headers=list(headers), tablefmt=fmt, missingval=MISSING, disable_numparse=True,
                        colalign=align))


def text(headers: Sequence[str], rows: Sequence[Sequence[Any]], labels: int = 1) -> str:
    return _table(headers, rows, "simple", labels)


def markdown(headers: Sequence[str], rows: Sequence[Sequence[Any]], labels: int = 1) -> str:
    return _table(headers, rows, "github", labels)


def html(headers: Sequence[str], rows: Sequence[Sequence[Any]], labels: int = 1) -> str:
    return _table(headers, rows, "html", labels)


def num(value: Any, digits: int = 2, scale: float = 1.0) -> str | None:
    """A number with fixed decimals, or None (missing) for None."""
    if value is None:
        return None
    if isinstance(value, float) or scale != 1.0:
        return f"{value * scale:.{digits}f}"
    return str(value)
