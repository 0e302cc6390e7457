"""Fixtures of the bbrctl tests: algorithms that must be detached for a test, and parameters put
back afterwards."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from loaderutil import attached
from netutil import bbrctl


@pytest.fixture
def detached() -> Iterator[Callable[[str], None]]:
    """Factory: detached(ALGO) detaches ALGO for this test if something else had attached it,
    and attaches it again afterwards, so that the test starts from "not attached"."""
    restore: list[str] = []

    def factory(algo: str) -> None:
        if attached(algo):
            bbrctl("detach", algo)
            restore.append(algo)

    try:
        yield factory
    finally:
        for algo in restore:
            bbrctl("attach", algo, check=False)


@pytest.fixture
def keep_params() -> Iterator[Callable[[str], None]]:
    """Factory: keep_params(ALGO) writes ALGO's current parameters back after the test."""
    saved: dict[str, dict[str, object]] = {}

    def factory(algo: str) -> None:
        shown = json.loads(bbrctl("show", algo, "--json").stdout)
        saved[algo] = {p["name"]: p["value"] for p in shown["params"]}

    try:
        yield factory
    finally:
        for algo, values in saved.items():
            if attached(algo):
                bbrctl("set", algo, *(f"{k}={v}" for k, v in values.items()), check=False)

