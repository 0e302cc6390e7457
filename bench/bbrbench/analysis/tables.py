"""Every table bbrbench shows, through tabulate: console text, Markdown (reproduction report) and HTML
(compare page). Cells arrive as strings or None (shown as "-"), so each caller decides its precision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

MISSING = "-"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    return str(tabulate(rows, headers=list(headers), tablefmt=fmt, missingval=MISSING, disable_numparse=True))


def text(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return _table(headers, rows, "simple")


def markdown(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return _table(headers, rows, "github")


def html(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return _table(headers, rows, "html")


def num(value: Any, digits: int = 2, scale: float = 1.0) -> str | None:
    """A number with fixed decimals, or None (missing) for None."""
    if value is None:
        return None
    if isinstance(value, float) or scale != 1.0:
        return f"{value * scale:.{digits}f}"
    return str(value)
