"""Nothing is left behind: Ctrl-C during a run, and a run killed outright followed by `bbrbench cleanup`."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from benchutil import needs_net, popen_cli, root_qdiscs, run_cli, tagged_processes
from netutil import namespaces

pytestmark = [pytest.mark.net, needs_net]
STARTUP_TIMEOUT_S = 30.0
# A sender with delay, so a delay-line process is part of what must go away.
RUN_ARGS = ("run", "smoke", "--quiet", "duration_s=30", "senders=[{name = 'a', rtt_ms = 10}]")


def delay_lines(tag_prefix: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv[0].endswith("bbrkit-delay") and any(a.startswith(tag_prefix) for a in argv):
            found.append(" ".join(argv))
    return found


def start_and_wait_for_traffic(out: Path) -> tuple[subprocess.Popen[str], str]:
    proc = popen_cli(*RUN_ARGS, "--out", str(out))
    prefix = f"bbrb-{proc.pid}-"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if (out / "raw" / "flows.csv").is_file() and (out / "raw" / "flows.csv").stat().st_size > 300:
            break
        if proc.poll() is not None:
            pytest.fail(f"run ended early: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the run did not start sampling in time")
    assert len(namespaces(prefix)) >= 4          # sender, delay, router, receiver
    assert tagged_processes(prefix)              # iperf3, tc, delay line
    assert delay_lines(prefix)
    return proc, prefix


def assert_nothing_left(prefix: str, qdiscs_before: str) -> None:
    assert namespaces(prefix) == []
    assert tagged_processes(prefix) == []
    assert delay_lines(prefix) == []
    assert root_qdiscs() == qdiscs_before


def test_ctrl_c_leaves_nothing(tmp_path: Path) -> None:
    before = root_qdiscs()
    proc, prefix = start_and_wait_for_traffic(tmp_path / "run")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert_nothing_left(prefix, before)


def test_killed_run_is_cleaned_by_the_next(tmp_path: Path) -> None:
    before = root_qdiscs()
    proc, prefix = start_and_wait_for_traffic(tmp_path / "run")
    proc.kill()
    proc.wait(timeout=10)
    time.sleep(0.5)
    assert namespaces(prefix), "a killed run should leave its namespaces for the clean-up to find"
    result = run_cli("cleanup")
    assert result.returncode == 0, result.stderr
    assert prefix in result.stderr
    assert_nothing_left(prefix, before)
