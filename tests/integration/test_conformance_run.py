"""`bbrbench conformance` for real (root): a short subset of the BBR draft's Appendix A cases on real
transfers through the testbed, each checked from `bbrctl trace` (draft-ietf-ccwg-bbr-06). ~40 s: A.3
(DRAIN exits on inflight) for bbr3, bbr1 and bbr_draft (which paces DRAIN at the draft's 0.5), A.20
(PROBE_RTT during an app-limited STARTUP returns to STARTUP) for bbr3. The full suite is a command, not a
test (docs/conformance.md):

    flock /tmp/bbrkit-root.lock bbrbench conformance --out results/conformance --markdown docs/conformance.md
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbrbench.cli import main

pytestmark = pytest.mark.net


def test_conformance_subset_passes_on_real_transfers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["conformance", "bbr3", "bbr1", "bbr_draft", "--case", "A.3", "--runner", "real",
                   "--out", str(tmp_path)])
    status_a20 = main(["conformance", "bbr3", "--case", "A.20", "--runner", "real", "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "conformance.json").read_text())
    got = {(o["case"], o["algo"]): o for o in doc["outcomes"]}
    assert set(got) == {("A.3", "bbr3"), ("A.3", "bbr1"), ("A.3", "bbr_draft"), ("A.20", "bbr3")}, \
        capsys.readouterr().err
    for outcome in got.values():
        if outcome["verdict"] == "blocked":
            # A real run does not always bring about the case's precondition: A.20's PROBE_RTT during
            # STARTUP may not come before the run ends, and A.3's DRAIN may start with inflight already at
            # the target and end on the ACK that entered it (the lockstep's deep run, on this path, once saw
            # the kernel's BBR spend no ACK in DRAIN). Never a pass; what the test guards against is a fail.
            assert "precondition" in json.dumps(outcome), outcome
            continue
        assert outcome["verdict"] == "pass", outcome
        assert (tmp_path / outcome["plot"]).stat().st_size > 10_000
    assert status == status_a20 == 0  # blocked does not fail a run
    # Each invocation's table has the cases it was asked for; the results file keeps the first one's too.
    tables = capsys.readouterr().out
    assert tables.count("A.3 ") == 3 and tables.count("A.20 ") == 1
