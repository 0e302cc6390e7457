"""The v3 differential (tests/diff/v3diff.c, docs/v3-differential.md): bbr3's host build and a
reference built around Google's v3 net/ipv4/tcp_bbr.c (a shared object named by V3DIFF_REF) on one
packet-level sender. With the per-packet path, bbr3 takes every decision v3 takes, no other, with the
same values and the same cwnd, whichever side drives the sender; without it (the ACK-time path) it
does not, which shows the comparison can fail. The reference is not part of the project: without
V3DIFF_REF the comparisons skip, the refusals of a bad reference still run."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
V3DIFF = ROOT / "build" / "bbrkit-v3diff"
REFERENCE = os.environ.get("V3DIFF_REF", "")
SCENARIOS = {"steady", "loss_1", "loss_5", "bw_step", "burst"}
needs_reference = pytest.mark.skipif(
    not REFERENCE, reason="V3DIFF_REF names no reference shared object (docs/v3-differential.md)")


def v3diff(*args: str, reference: str = REFERENCE) -> subprocess.CompletedProcess[str]:
    assert V3DIFF.exists(), f"{V3DIFF} is missing: run `make` first"
    env = dict(os.environ, V3DIFF_REF=reference)
    return subprocess.run([str(V3DIFF), *args], capture_output=True, text=True, env=env, timeout=300)


def runs(*args: str) -> list[dict]:
    out = v3diff("--json", "--seeds", "3", *args)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@needs_reference
@pytest.mark.parametrize("lead", ["bbr3", "v3"])
def test_bbr3_takes_v3s_decisions_and_no_other(lead: str) -> None:
    rows = runs("--lead", lead)
    assert {r["scenario"] for r in rows} == SCENARIOS
    for r in rows:
        assert r["decisions_v3"] > 0, r
        assert (r["v3_only"], r["bbr3_only"], r["values_differ"], r["shifted"]) == (0, 0, 0, 0), r
    # The lossy runs had loss decisions to take, each judged with its skb's own record.
    lossy = [r for r in rows if r["scenario"] in ("loss_1", "loss_5")]
    assert all(r["pp_decisions"] > 0 and r["pp_misses"] == 0 for r in lossy), lossy


@needs_reference
def test_ack_time_path_is_not_v3s() -> None:
    rows = runs("--ack-time", "--scenario", "loss_1")
    assert sum(r["v3_only"] for r in rows) > 0, rows


def test_missing_reference_is_refused() -> None:
    out = v3diff(reference="")
    assert out.returncode == 2
    assert out.stderr == "v3diff: no reference: set V3DIFF_REF to the reference's shared object\n"


def test_unknown_scenario_is_refused() -> None:
    out = v3diff("--scenario", "loss_9")
    assert out.returncode == 2
    assert out.stderr == "v3diff: unknown scenario 'loss_9' (known: steady loss_1 loss_5 bw_step burst)\n"


def test_unloadable_reference_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "ref.so"
    bogus.write_text("not a shared object\n")
    out = v3diff(reference=str(bogus))
    assert out.returncode == 2
    assert out.stderr.startswith(f"v3diff: cannot load reference {bogus}: ")
    assert out.stderr.count("\n") == 1 and out.stdout == ""
