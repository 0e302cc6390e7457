"""Helpers of the bbrbench tests: the CLI as a subprocess, what a run leaves on the system, synthetic run
directories."""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bbrbench import sweep
from bbrbench.analysis.report import write_summary
from bbrbench.results import FLOW_FIELDS, QUEUE_FIELDS, write_json
from bbrbench.scenario import AlgoCatalog, validate

# The console script pip installed beside the interpreter running the tests (the venv): the entry point
# users run, not a module path.
BBRBENCH = Path(sys.executable).parent / "bbrbench"


# The distributed back-ends' tests (Dask, Slurm): how long a daemon may take to come up, the uid runs are
# handed to, and one sweep of 2 points x 2 repetitions of 1 s (each point on two hosts, or a run under
# way when another has finished).
START_TIMEOUT_S = 30
NOBODY = 65534
SWEEP = ("sweep", "smoke", "--quiet", "duration_s=1", "--reps", "2", "--grid", "bottleneck.rate_mbit=[10, 20]")


def free_port() -> int:
    """A loopback TCP port free at this moment."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bbrbench_cmd(*args: str) -> list[str]:
    return [str(BBRBENCH), *args]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(bbrbench_cmd(*args), capture_output=True, text=True, timeout=timeout)


def popen_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(bbrbench_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


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


HOST = {"hostname": "testhost", "kernel": "6.18.0-test", "cpus": 4, "machine": "x86_64",
        "bbrctl_version": "bbrctl test", "objects_sha256": "0" * 64, "algorithms_sha256": "1" * 64,
        "loadavg_start": [0.25, 0.2, 0.1], "loadavg_end": [1.5, 0.4, 0.2]}
# Per algorithm: mean queueing delay (ms) the synthetic flows add to the base RTT, and their goodput share.
BEHAVIOUR = {"bbr": (4.0, 0.99), "cubic": (30.0, 0.995), "bbr1": (4.2, 0.98), "reno": (28.0, 0.99),
             "bbr2": (6.0, 0.99), "bbr3": (3.0, 0.985), "bbr_acd": (2.5, 0.95), "bbr_rttgain": (1.5, 0.97),
             "bbr_draft": (3.5, 0.985)}


def write_fake_run(run_dir: Path, raw: dict[str, Any], rng: np.random.Generator, spread_ms: float = 2.0,
                   done: bool = True) -> None:
    """A finished run directory as a sweep leaves it (scenario.json, raw/flows.csv, host.json, `done`),
    summarised by the real code: ss samples every 100 ms with an RTT of base + the algorithm's queueing
    delay (normal, spread_ms standard deviation) and a steady delivery rate."""
    scenario = validate(raw, AlgoCatalog(kernel=frozenset(BEHAVIOUR), bbrkit=frozenset()))
    (run_dir / "raw").mkdir(parents=True)
    write_json(run_dir / "scenario.json", "run", {"resolved": scenario.to_dict(), "raw": raw, "prefix": "t",
                                                  "kernel": HOST["kernel"]})
    rate = scenario.bottleneck.rate_mbit * 1e6 / 8 * 1448 / 1514 / len(scenario.flows)
    with (run_dir / "raw" / "flows.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, FLOW_FIELDS)
        writer.writeheader()
        for flow in scenario.flows:
            qdelay, share = BEHAVIOUR[flow.algo]
            base = scenario.sender(flow.sender).rtt_ms
            for t in np.arange(flow.start_s + 0.1, scenario.duration_s, 0.1):
                acked = rate * share * (t - flow.start_s)
                writer.writerow({"t_s": f"{t:.3f}", "flow": flow.index, "algo": flow.algo,
                                 "srtt_us": round((base + max(0.0, rng.normal(qdelay, spread_ms))) * 1000),
                                 "cwnd": 40, "bytes_acked": int(acked), "bytes_sent": int(acked * 1.001),
                                 "bytes_retrans": int(acked * 0.001), "mss": 1448})
    # The bottleneck queue every 10 ms: a backlog of the algorithm's queueing delay, frames leaving at
    # 99.9% of the rate (the utilisation column).
    qdelay = BEHAVIOUR[scenario.flows[0].algo][0]
    link = scenario.bottleneck.rate_mbit * 1e6 / 8
    with (run_dir / "raw" / "queue.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(QUEUE_FIELDS)
        for t in np.arange(0.0, scenario.duration_s, 0.01):
            backlog, sent = int(link * qdelay / 1e3), int(link * 0.999 * t)
            writer.writerow([f"{t:.3f}", backlog, backlog // 1514, 0, sent, sent // 1514])
    (run_dir / "raw" / "events.json").write_text("{}\n")
    write_json(run_dir / "host.json", "host", HOST)
    write_summary(run_dir)
    if done:
        (run_dir / sweep.DONE_MARK).write_text("")


class FakeExecutor:
    """Finishes each job with a synthetic run; Ctrl-C (KeyboardInterrupt) before job number `stop_at`."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.stop_at = stop_at
        self.rng = np.random.default_rng(4)

    def execute(self, jobs: list[sweep.Job], catalog: AlgoCatalog) -> Iterator[tuple[sweep.Job, sweep.Outcome]]:
        for i, job in enumerate(jobs):
            if i == self.stop_at:
                raise KeyboardInterrupt
            write_fake_run(job.run_dir, job.raw, self.rng, done=False)  # the sweep marks it done itself
            yield job, sweep.Outcome("done")
