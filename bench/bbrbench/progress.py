"""Progress bars (tqdm) for anything longer than a few seconds: on a terminal only, and not with -q."""

from __future__ import annotations

import logging
from typing import Any

from tqdm import tqdm


def bar(disable_bar: bool = False, **kwargs: Any) -> tqdm:
    # disable=None lets tqdm switch itself off when stderr is not a terminal (CI, pipes, tests).
    off = disable_bar or not logging.getLogger("bbrbench").isEnabledFor(logging.INFO)
    return tqdm(disable=True if off else None, leave=False, dynamic_ncols=True, **kwargs)
