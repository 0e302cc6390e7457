"""Helpers of the bbrbench tests: the CLI as a subprocess, what a run leaves on the system."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# The console script pip installed beside the interpreter running the tests (the venv): the entry point
# users run, not a module path.
BBRBENCH = Path(sys.executable).parent / "bbrbench"


def bbrbench_cmd(*args: str) -> list[str]:
    return [str(BBRBENCH), *args]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(bbrbench_cmd(*args), capture_output=True, text=True, timeout=timeout)


def popen_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(bbrbench_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def namespaces(prefix: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix)]


def tagged_processes(prefix: str) -> list[int]:
    """Processes carrying BBRBENCH_RUN=<prefix...> in their environment."""
    marker = f"BBRBENCH_RUN={prefix}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(v.startswith(marker) for v in env):
                pids.append(int(entry.name))
    return pids


def root_qdiscs() -> str:
    return subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout


def summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


needs_net = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("iperf3") is None,
                               reason="needs root and iperf3")
