"""Which host ran a run: what makes repetitions from two hosts comparable or not (kernel, the algorithm
objects, CPUs) and how busy it was while the run ran. Written into every run directory as host.json."""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..results import read_json, write_json
from .system import bbrctl, bbrctl_path

HOST_FILE = "host.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def host_record(load_start: tuple[float, float, float]) -> dict[str, Any]:
    """This host now. bbrctl links the algorithm objects in as skeletons, so its hash names the exact BPF
    programs the run attached; its --version names the source they came from."""
    path = bbrctl_path()
    version = None
    if path is not None:
        try:
            version = bbrctl("--version").strip()
        except HarnessError:
            version = None
    uname = os.uname()
    return {
        "hostname": socket.gethostname(),
        "kernel": uname.release,
        "kernel_version": uname.version,
        "machine": uname.machine,
        "cpus": os.cpu_count(),
        "bbrctl_version": version,
        "algorithms_sha256": _sha256(path) if path is not None else None,
        # The 1-minute load average at the start and at the end: the end one covers the run's last minute.
        "loadavg_start": list(load_start),
        "loadavg_end": list(os.getloadavg()),
    }


def write_host(run_dir: Path, load_start: tuple[float, float, float]) -> None:
    write_json(run_dir / HOST_FILE, "host", host_record(load_start))


def read_host(run_dir: Path) -> dict[str, Any] | None:
    """The run's host record; None for runs written before bbrbench recorded hosts."""
    path = run_dir / HOST_FILE
    return read_json(path, "host") if path.is_file() else None


def host_key(record: dict[str, Any]) -> tuple[str, str]:
    """What must agree for repetitions to pool: the kernel and the algorithm objects."""
    return (str(record.get("kernel")), str(record.get("algorithms_sha256")))
