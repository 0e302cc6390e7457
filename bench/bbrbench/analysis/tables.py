"""Every table bbrbench shows, through tabulate: console text, Markdown (reproduction report) and HTML
(compare page). Cells arrive as strings or None (shown as "-"), so each caller decides its precision."""

from __future__ import annotations

import html as html_
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

MISSING = "-"


@dataclass(frozen=True)
class Marked:
    """A cell the HTML form marks with a CSS class and a tooltip (e.g. a significant ratio); the text
    forms show only its text."""

    text: str
    css: str
    title: str = ""

    def __str__(self) -> str:
        return self.text


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
    # Escaped here, cell by cell, so that Marked cells can carry their markup through tabulate's unsafehtml.
    def cell(value: Any) -> Any:
        if isinstance(value, Marked):
            return (f'<span class="{html_.escape(value.css)}" title="{html_.escape(value.title)}">'
                    f"{html_.escape(value.text)}</span>")
        return None if value is None else html_.escape(str(value))
    return _table([html_.escape(h) for h in headers], [[cell(v) for v in row] for row in rows], "unsafehtml",
                  labels)


def num(value: Any, digits: int = 2, scale: float = 1.0) -> str | None:
    """A number with fixed decimals, or None (missing) for None."""
    if value is None:
        return None
    if isinstance(value, float) or scale != 1.0:
        return f"{value * scale:.{digits}f}"
    return str(value)
