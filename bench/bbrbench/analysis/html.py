"""A results page in one HTML file: facts, the table, and the figures embedded (data: URIs), so the file
can be mailed or archived alone; the PNGs stay beside it for other uses."""

from __future__ import annotations

import base64
import html
from pathlib import Path

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 80em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
td:nth-child(-n+2), th:nth-child(-n+2) { text-align: left; }
figure { margin: 1.5em 0; }
img { max-width: 100%; }
"""


def _img(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
            f'<figcaption>{html.escape(caption)} (<a href="{html.escape(path.parent.name)}/'
            f'{html.escape(path.name)}">{html.escape(path.name)}</a>)</figcaption></figure>')


def write_page(path: Path, title: str, facts: list[str], table_html: str, legend: str,
               figures: list[tuple[str, Path]]) -> Path:
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(fact)}</p>" for fact in facts]
    parts += [table_html, f"<p><small>{html.escape(legend)}</small></p>"]
    parts += [_img(fig, caption) for caption, fig in figures]
    parts.append("</body></html>\n")
    path.write_text("\n".join(parts))
    return path
