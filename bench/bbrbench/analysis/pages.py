"""What the results pages of a sweep share (sweep's sweep.html, compare's compare.html): table cells marked
with a CSS class and a tooltip, the mark on every cell of a point that lost runs to the trust check,
the per-run trust verdicts and the hosts fact. html.write_page lays a page out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results import read_json
from . import tables
from .trust import DELAY_LINE_NOT_CHECKED

# A cell's mark: its CSS class (html.STYLE) and its tooltip.
Mark = tuple[str, str]


def untrusted_marks(row: dict[str, Any]) -> list[Mark]:
    """The mark for each cell of a point whose runs failed the trust check (sweep.json's untrusted_runs): those
    runs are not in the cell, the tooltip names them and the reasons."""
    runs = row.get("untrusted_runs") or []
    if not runs:
        return []
    return [("untrusted", f"{len(runs)} run(s) of this point failed the trust check and are left out: "
             + "; ".join(f"rep {r['rep']}: {', '.join(r['failed'])}" for r in runs))]


def cell(text: str | None, marks: list[Mark]) -> str | tables.Marked | None:
    """A cell's text with its marks (classes and tooltips joined); a missing value stays unmarked."""
    if text is None or not marks:
        return text
    return tables.Marked(text, " ".join(css for css, _ in marks), "; ".join(title for _, title in marks))


def verdicts(points: list[tuple[str, list[Path]]]) -> str:
    """The trust check's verdict per run of each (point name, its finished run directories), as an HTML table
    with the untrusted ones marked; empty when no run went through bbrkit-link or a delay line."""
    body: list[list[str | tables.Marked | None]] = []
    for name, run_dirs in points:
        for run_dir in run_dirs:
            trust = read_json(run_dir / "summary.json", "summary").get("trust")
            if trust is None:
                continue
            unchecked = [m for m in trust.get("not_reported", []) if m.startswith(DELAY_LINE_NOT_CHECKED)]
            verdict: str | tables.Marked = "trusted" + (f" ({DELAY_LINE_NOT_CHECKED})" if unchecked else "")
            if not trust["ok"]:
                verdict = tables.Marked("UNTRUSTED: " + "; ".join(trust["failed"]), "untrusted",
                                        "left out of the table above")
            body.append([name, run_dir.name, verdict])
    if not body:
        return ""
    return ("<h2>Trust check (bbrkit-link, delay lines), per run</h2>"
            + tables.html(["point", "run", "verdict"], body, labels=3))


def host_fact(hosts: list[dict[str, Any]]) -> str | None:
    """Which machines ran the runs (host.json): kernel, CPUs, and the measured 1-minute load average."""
    if not hosts:
        return None
    kinds = sorted({f"{h.get('hostname')} (kernel {h.get('kernel')}, {h.get('cpus')} CPUs)" for h in hosts})
    loads = [float(v) for h in hosts for v in (h.get("loadavg_start", [None])[0], h.get("loadavg_end", [None])[0])
             if isinstance(v, (int, float))]
    fact = f"Ran on {'; '.join(kinds)}"
    if loads:
        fact += f"; 1-minute load average at the runs' starts and ends {min(loads):.2f} to {max(loads):.2f}"
    return fact + "."
