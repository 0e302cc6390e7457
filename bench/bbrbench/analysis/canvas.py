"""Where every analysis figure is drawn and how it is kept: matplotlib on the Agg backend (no display
needed), the figure width and resolution the run pages share, and the PNG-plus-SVG save."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.figure import Figure  # noqa: E402

# Width and height in inches of one time-series panel on a run's page.
FIG_SIZE = (10, 4.5)
# Dots per inch of a page's PNGs: sharp on a laptop screen, a few hundred kB per figure.
DPI = 110


def save(fig: Figure, path: Path) -> Path:
    """The PNG (for the page) and an SVG of the same figure beside it (for papers and zooming); the
    bounding box grows to whatever sits outside the axes, such as the legend."""
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    fig.savefig(path.with_suffix(".svg"), bbox_inches="tight")
    plt.close(fig)
    return path
