"""docs/conformance.md and its plots from one run of every case at one clean revision: `bbrbench
conformance --doc`."""

from __future__ import annotations

import shutil
from pathlib import Path

from ...errors import UsageError
from .model import Case
from .report import markdown, read_results, write_markdown

# Recorded results live under data/, documents under docs/: the plots go to data/conformance/ and each
# verdict in docs/conformance.md links its run's plot there.
PLOTS_DIR = Path("data") / "conformance"
PLOTS_LINK = "../data/conformance"


def doc_path() -> Path:
    """docs/conformance.md of the checkout bbrbench runs from."""
    from ... import provenance
    return provenance.CHECKOUT / "docs" / "conformance.md"


def require_clean_checkout() -> None:
    """The report names one revision: refused before anything runs unless the tracked files are HEAD's."""
    from ... import provenance
    state = provenance.tree_state()
    if state is None:
        raise UsageError("conformance --doc needs a git checkout: it writes docs/ and names the revision")
    if state != "clean":
        raise UsageError("conformance --doc needs a clean checkout: tracked files differ from HEAD (commit first)")


def write_doc(out: Path, cases: list[Case], path: Path) -> None:
    """The report at path from out's results, its plots copied beside it (the old ones removed first)."""
    plots = path.parent.parent / PLOTS_DIR
    shutil.rmtree(plots, ignore_errors=True)
    plots.mkdir(parents=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    for png in sorted((out / "plots").glob("*.png")):
        shutil.copy2(png, plots / png.name)
    write_markdown(path, markdown(read_results(out / "conformance.json"), cases, PLOTS_LINK))
