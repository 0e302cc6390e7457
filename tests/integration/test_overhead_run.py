"""`bbrbench overhead` for real, briefly: the report covers bbr, the struct_ops floor and bbr1 with
per-callback figures, and the run leaves nothing behind (bbr_floor unregistered, BPF run-time
statistics and their sysctl as they were, no namespaces), also when interrupted."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netutil import available_ccs, leftovers

pytestmark = pytest.mark.net

EXIT_NOT_RUNNABLE = 3  # bbrbench: the kernel's BBR is not callable from BPF
TOOL_EXIT_UNSUPPORTED = 2  # bbrkit-floor and bbrkit-lockstep: the same, said by the tools
STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")
FLOOR = "bbr_floor"
BBRBENCH = str(Path(sys.executable).parent / "bbrbench")  # the console script of the tests' interpreter
REGISTER_TIMEOUT_S = 60.0  # attaching bbr1 and registering the floor, on a busy machine


def test_short_overhead_run_reports_floor_and_callbacks(tmp_path: Path) -> None:
    sysctl_before = STATS_SYSCTL.read_text()
    result = subprocess.run([BBRBENCH, "overhead", "--reps", "2", "--seconds", "1", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == EXIT_NOT_RUNNABLE:
        pytest.skip(result.stderr.strip())
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "overhead.json").read_text())
    summary = report["summary"]
    assert summary["algorithms"] == ["bbr", FLOOR, "bbr1"]
    assert [r["algo"] for r in report["runs"]] == ["bbr", FLOOR, "bbr1", FLOOR, "bbr1", "bbr"]  # rotated
    for metric in ("process_ns_per_byte", "system_ns_per_byte", "gbit_s"):
        assert set(summary["metrics"][metric]) == {"bbr", FLOOR, "bbr1"}
        assert set(summary["ratios"][metric]) == {f"{FLOOR}/bbr", "bbr1/bbr", f"bbr1/{FLOOR}"}
    # Every ACK passes cong_control, so a 1 s transfer at Gbit/s makes thousands of calls on both BPF
    # algorithms, each taking some ns; the kernel's own bbr has no programs to count.
    for algo in (FLOOR, "bbr1"):
        cong = summary["callbacks"][algo]["cong_control"]
        assert cong["calls_per_run"]["mean"] > 1000 and 0 < cong["ns_per_call"]["mean"] < 100_000
    assert "bbr" not in summary["callbacks"]
    assert "cong_control" in summary["callback_ratios"][f"bbr1/{FLOOR}"]
    assert len(report["loadavg_1min_before_each_run"]) == 6
    assert "ns per call" in result.stdout and "load average" in result.stdout
    assert STATS_SYSCTL.read_text() == sysctl_before
    assert FLOOR not in available_ccs()
    assert not leftovers()


def test_interrupted_overhead_run_cleans_up(tmp_path: Path) -> None:
    sysctl_before = STATS_SYSCTL.read_text()
    proc = subprocess.Popen([BBRBENCH, "overhead", "--reps", "2", "--seconds", "30", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + REGISTER_TIMEOUT_S
        while FLOOR not in available_ccs():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "bbr_floor never registered"
            time.sleep(0.2)
        time.sleep(3)  # into the first transfers
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, out + err
    assert FLOOR not in available_ccs()
    assert STATS_SYSCTL.read_text() == sysctl_before
    assert not leftovers()


@pytest.mark.parametrize("tool", ["bbrkit-floor", "bbrkit-lockstep"])
def test_a_killed_kernel_bbr_tool_leaves_nothing_registered(tool: str) -> None:
    """Both tools register through a struct_ops link their process owns, so even SIGKILL, which runs
    no clean-up, unregisters (a plain map registration outlived the process)."""
    name = {"bbrkit-floor": FLOOR, "bbrkit-lockstep": "bbr_lockstep"}[tool]
    binary = Path(__file__).resolve().parents[2] / "build" / tool
    proc = subprocess.Popen([str(binary)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line and proc.wait(timeout=5) == TOOL_EXIT_UNSUPPORTED:
            pytest.skip(proc.stderr.read().strip() if proc.stderr else tool)
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
        assert name in available_ccs()
    finally:
        proc.kill()
        proc.wait(timeout=5)
    deadline = time.monotonic() + 5
    while name in available_ccs() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert name not in available_ccs()
