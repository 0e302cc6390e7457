"""Which host ran a run: what makes repetitions from two hosts comparable or not (kernel, the algorithm
objects, CPUs) and how busy it was while the run ran. Written into every run directory as host.json."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..results import read_json, write_json
from .system import bbrctl, bbrctl_path, bbrkit_attachments

HOST_FILE = "host.json"
MACHINE_ID = Path("/etc/machine-id")
# Tests only: a JSON object whose fields (hostname, machine_id, kernel, cpus) replace this host's in its
# records, so that worker processes on one machine stand for hosts that differ (tests/bench/test_cluster.py).
FAKE_HOST_ENV = "BBRBENCH_TEST_HOST"
# bbrctl --version's second line: the SHA-256 of the BPF objects it embeds, in algorithm order.
OBJECTS_LINE = "algorithm objects sha256 "


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# Tools a run depends on, by the command that names their version (first line of its output).
TOOL_VERSIONS = {"ip": ["ip", "-V"], "tc": ["tc", "-V"], "nft": ["nft", "--version"], "iperf3": ["iperf3", "--version"],
                 "ethtool": ["ethtool", "--version"]}
# The host's defaults that bear on a run (each namespace sets its own TCP buffers and ECN).
SYSCTLS = ("net.core.default_qdisc", "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_ecn",
           "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max", "net.core.wmem_max",
           "kernel.bpf_stats_enabled")


def tool_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, cmd in TOOL_VERSIONS.items():
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
            text = (done.stdout or done.stderr).strip()
            out[name] = text.splitlines()[0] if text else None
        except (OSError, subprocess.SubprocessError):
            out[name] = None
    return out


def sysctls() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for key in SYSCTLS:
        try:
            out[key] = " ".join(Path("/proc/sys", *key.split(".")).read_text().split())
        except OSError:
            out[key] = None
    return out


def machine_id() -> str | None:
    """A hash of /etc/machine-id (the id itself should not leave the host, machine-id(5)): tells apart hosts
    cloned from one image under one hostname."""
    try:
        raw = MACHINE_ID.read_text().strip()
    except OSError:
        return None
    return hashlib.sha256(f"bbrbench host {raw}".encode()).hexdigest()[:32] if raw else None


def identity() -> dict[str, Any]:
    """Which host this is and what about it bears on results: hostname, machine id, kernel, CPUs."""
    uname = os.uname()
    record: dict[str, Any] = {"hostname": socket.gethostname(), "machine_id": machine_id(), "kernel": uname.release,
                              "kernel_version": uname.version, "machine": uname.machine, "cpus": os.cpu_count()}
    if fake := os.environ.get(FAKE_HOST_ENV):
        record.update(json.loads(fake))
    return record


def host_name(record: dict[str, Any]) -> str:
    """The host in a record: its machine id, or for records without one its hostname."""
    return str(record.get("machine_id") or record.get("hostname"))


def bbrctl_build() -> tuple[str | None, str | None]:
    """bbrctl --version's first line and the hash of the BPF objects it embeds (None where missing)."""
    if bbrctl_path() is None:
        return None, None
    try:
        lines = bbrctl("--version").splitlines()
    except HarnessError:
        return None, None
    version = lines[0].strip() if lines else None
    return version, next((line.removeprefix(OBJECTS_LINE).strip() for line in lines if line.startswith(OBJECTS_LINE)),
                         None)


def host_record(load_start: tuple[float, float, float]) -> dict[str, Any]:
    """This host now. bbrctl --version names the source it came from and hashes the BPF objects it links
    in as skeletons: the exact programs the run attached. The hash of the binary itself is kept too."""
    path = bbrctl_path()
    version, objects = bbrctl_build()
    return {
        **identity(),
        "bbrctl_version": version,
        "objects_sha256": objects,
        "algorithms_sha256": _sha256(path) if path is not None else None,
        # How each attached bbrkit algorithm ran: bbr2/bbr3's loss decisions per packet or at ACK time.
        "bbrkit_attachments": bbrkit_attachments() if path is not None else {},
        # The 1-minute load average at the start and at the end: the end one covers the run's last minute.
        "loadavg_start": list(load_start),
        "loadavg_end": list(os.getloadavg()),
        "tools": tool_versions(),
        "sysctls": sysctls(),
    }


def write_host(run_dir: Path, load_start: tuple[float, float, float]) -> None:
    write_json(run_dir / HOST_FILE, "host", host_record(load_start))


def read_host(run_dir: Path) -> dict[str, Any] | None:
    """The run's host record; None for runs written before bbrbench recorded hosts."""
    path = run_dir / HOST_FILE
    return read_json(path, "host") if path.is_file() else None


# The algorithms that make v3's loss decisions, per packet or at ACK time (loader/algos.c's per_packet):
# bbrctl list --json names the path each attachment runs as features.loss_decisions.
LOSS_DECISION_ALGOS = frozenset({"bbr2", "bbr3", "bbr_draft"})
NOT_RECORDED = "not recorded"


def loss_decisions(host: dict[str, Any] | None, algo: str) -> str | None:
    """The loss-decision path a run's host record says algo ran with ("per-packet", "ack-time"); "not
    recorded" for such an algorithm where the record has none (runs before hosts recorded it); None for an
    algorithm without the choice."""
    if algo not in LOSS_DECISION_ALGOS:
        return None
    path = ((host or {}).get("bbrkit_attachments") or {}).get(algo, {}).get("loss_decisions")
    return path if isinstance(path, str) else NOT_RECORDED


def with_loss_decisions(algo: str, path: str | None) -> str:
    """'bbr3 (per-packet)': how results name an algorithm with the loss-decision path it ran."""
    return f"{algo} ({path})" if path else algo


def host_key(record: dict[str, Any]) -> tuple[str, str, str]:
    """What must agree for repetitions to pool: the kernel, the BPF objects and the CPU count (the link
    emulator and the senders compete for CPUs). Records written before bbrctl reported its objects' hash
    carry only the binary's, which also changes with its version string, so they pool only with runs of
    the same bbrctl build (or with --mix-hosts)."""
    objects = record.get("objects_sha256")
    return (str(record.get("kernel")),
            f"objects {objects}" if objects else f"binary {record.get('algorithms_sha256')}",
            f"{record.get('cpus')} CPUs")
