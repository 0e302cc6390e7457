"""One definition per AQM: bbrbench/aqm.py's registry, bbrkit-link's queue kinds (bench/link/queue.h
LQ_KINDS) and bench/README.md's AQM table name the same AQMs, and every parameter the registry gives an AQM
is one the link accepts for it."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from bbrbench import aqm

ROOT = Path(__file__).resolve().parents[2]
LINK = ROOT / "build" / "bbrkit-link"
README = ROOT / "bench" / "README.md"
needs_link = pytest.mark.skipif(not LINK.exists(), reason="bbrkit-link not built (make)")


def test_the_readme_table_is_the_registry() -> None:
    lines = README.read_text().splitlines()
    table = aqm.readme_table()
    start = lines.index(table[0])
    assert lines[start:start + len(table)] == table
    assert not lines[start + len(table)].startswith("|"), "bench/README.md's AQM table has a row the registry lacks"


@needs_link
def test_the_link_knows_the_registrys_aqms_in_order() -> None:
    usage = subprocess.run([LINK, "--help"], capture_output=True, text=True, timeout=10, check=True).stdout
    match = re.search(r"--aqm KIND +one of: ([a-z_, ]+) \(", usage)
    assert match, usage
    assert match.group(1).split(", ") == list(aqm.AQMS)


def _example(key: str, low: int) -> float:
    """A valid value of parameter @key (cake's flows come in sets of 8)."""
    kind = aqm.PARAMS[key].kind
    return 1.0 if kind != "integer" else max(low, 64)


@needs_link
@pytest.mark.parametrize("name", list(aqm.AQMS))
def test_the_link_takes_every_parameter_the_registry_gives_an_aqm(name: str) -> None:
    """All of an AQM's parameters at once pass the link's option checks: it fails only later, on the
    interface that does not exist."""
    params = {key: _example(key, aqm.PARAMS[key].low) for key in aqm.AQMS[name].params}
    argv = [LINK, "--left", "lo", "--right", "no-such-if", "--tag", "t", "--rate-bps", "1000000", "--aqm", name,
            *aqm.link_options(params)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert "--right: no interface 'no-such-if'" in result.stderr, (argv, result.stderr)
