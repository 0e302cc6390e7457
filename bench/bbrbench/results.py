"""What a results directory holds that is read back later: the sample columns, and JSON files that
carry a format version, checked on reading so that a file from another bbrbench version fails with one
clear line instead of a KeyError deep in a report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import HarnessError

# Quantities that `bbrctl trace` records too carry its names and units (`bbrctl trace --help`).
FLOW_FIELDS = [
    "t_s", "flow", "algo", "srtt_us", "rttvar_us", "min_rtt_us", "cwnd", "ssthresh", "bytes_sent", "bytes_retrans",
    "bytes_acked", "data_segs_out", "retrans", "lost", "unacked", "notsent_bytes", "pacing_rate_bps",
    "delivery_rate_bps", "bw_bps", "pacing_gain", "cwnd_gain", "mss", "bbr_min_rtt_us",
]
QUEUE_FIELDS = ["t_s", "backlog_bytes", "backlog_packets", "drops", "sent_bytes", "sent_packets"]

# The senders' TCP counters a run keeps (summary.json's "tcp"): nstat's name without the TcpExt/Tcp prefix
# -> what it counts.
TCP_COUNTERS = {
    "TCPTimeouts": "retransmission timeouts (RTOs)",
    "TCPSpuriousRTOs": "RTOs that F-RTO found spurious",
    "TCPLossProbes": "tail-loss probes sent",
    "TCPSackRecovery": "SACK-based loss recoveries entered",
    "TCPLostRetransmit": "retransmissions lost again",
    "RetransSegs": "segments retransmitted",
    "OutSegs": "segments sent",
}


FORMAT_KEY = "format"
# Raise a kind's version whenever a reader of the old layout would misread the new one.
VERSIONS = {"run": 1, "summary": 1, "plan": 1, "sweep": 1, "compare": 1, "fidelity": 1, "overhead": 1, "host": 1}


def format_tag(kind: str) -> str:
    return f"bbrbench-{kind}/{VERSIONS[kind]}"


def write_json(path: Path, kind: str, data: dict[str, Any]) -> None:
    path.write_text(json.dumps({FORMAT_KEY: format_tag(kind), **data}, indent=2, default=str) + "\n")


def read_json(path: Path, kind: str) -> dict[str, Any]:
    """The file's content; HarnessError when it is missing, not JSON, or of another kind or version."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise HarnessError(f"{path}: not JSON ({exc})") from None
    found = data.get(FORMAT_KEY) if isinstance(data, dict) else None
    if found != format_tag(kind):
        raise HarnessError(f"{path}: format {found or 'unversioned'}, this bbrbench reads {format_tag(kind)}; "
                           f"rerun the experiment or use the bbrbench version that wrote it")
    return data
