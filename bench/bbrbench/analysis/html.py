"""A results page in one HTML file: facts, the table, and the figures embedded (data: URIs), so the file
can be mailed or archived alone; the PNGs (and SVGs) stay beside it for other uses."""

from __future__ import annotations

import base64
import html
from pathlib import Path

# Cells never wrap (a mean, its interval and its ratio read as one); a table wider than the window scrolls
# inside its box instead of squeezing the columns. At 1280 px compare's table fits whole.
STYLE = """
body { font-family: sans-serif; margin: 1em; max-width: 100em; }
.table { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.75em; }
th, td { border: 1px solid #ccc; padding: 0.15em 0.4em; text-align: right; white-space: nowrap; }
td:nth-child(-n+2), th:nth-child(-n+2) { text-align: left; }
.sig { font-weight: bold; background: #fff1b8; }
.untrusted { color: #a00; text-decoration: underline dotted; }
figure { margin: 1.5em 0; }
img { max-width: 100%; }
"""


def _img(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    files = [f for f in (path, path.with_suffix(".svg")) if f.is_file()]
    links = ", ".join(f'<a href="{html.escape(f.parent.name)}/{html.escape(f.name)}">{html.escape(f.name)}</a>'
                      for f in files)
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
            f'<figcaption>{html.escape(caption)} ({links})</figcaption></figure>')


def write_page(path: Path, title: str, facts: list[str], table_html: str, legend: str,
               figures: list[tuple[str, Path]]) -> Path:
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(fact)}</p>" for fact in facts]
    parts += [f'<div class="table">{table_html}</div>', f"<p><small>{html.escape(legend)}</small></p>"]
    parts += [_img(fig, caption) for caption, fig in figures]
    parts.append("</body></html>\n")
    path.write_text("\n".join(parts))
    return path
