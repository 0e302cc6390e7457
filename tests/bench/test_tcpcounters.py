"""The TCP counters a run keeps, parsed as nstat reads them, and summed into the summary's "tcp" measures."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bbrbench.analysis.report import write_summary
from bbrbench.results import TCP_COUNTERS
from bbrbench.sweep import metric_value
from bbrbench.testbed import tcpcounters
from benchutil import summary, write_fake_run

NETSTAT = """TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes
TcpExt: 0 7 3
IpExt: InNoRoutes InOctets
IpExt: 0 123
"""
SNMP = """Tcp: RtoAlgorithm MaxConn RetransSegs OutSegs
Tcp: 1 -1 42 1000
Udp: InDatagrams
Udp: 5
"""


def test_parse_keeps_the_named_counters_of_tcp_sections_only() -> None:
    assert tcpcounters.parse(NETSTAT + SNMP) == {"TCPTimeouts": 7, "TCPLossProbes": 3, "RetransSegs": 42,
                                                 "OutSegs": 1000}


def test_this_kernel_has_every_kept_counter() -> None:
    text = Path("/proc/net/netstat").read_text() + Path("/proc/net/snmp").read_text()
    assert set(tcpcounters.parse(text)) == set(TCP_COUNTERS)


def test_a_counter_is_a_sweep_measure() -> None:
    assert metric_value({"tcp": {"TCPTimeouts": 4}}, "tcp.TCPTimeouts") == 4.0
    assert metric_value({}, "tcp.TCPTimeouts") is None


def test_summary_sums_the_senders_counters_and_takes_each_flows_last_trace_count(tmp_path: Path) -> None:
    raw = {"name": "t", "duration_s": 5, "bottleneck": {"rate_mbit": 10, "buffer_bdp": 1},
           "senders": [{"name": "a", "rtt_ms": 20}, {"name": "b", "rtt_ms": 20}],
           "flows": [{"algo": "bbr", "sender": "a"}, {"algo": "bbr", "sender": "b"}]}
    run = tmp_path / "run"
    write_fake_run(run, raw, np.random.default_rng(1))
    assert summary(run)["tcp"] == {}      # a run from before counters were kept: not measured
    events = {"tcp_counters": {"a": {name: 1 for name in TCP_COUNTERS}, "b": {"TCPTimeouts": 2}}}
    (run / "raw" / "events.json").write_text(json.dumps(events))
    port = json.loads((run / "scenario.json").read_text())["resolved"]["flows"][1]["client_port"]
    # Trace times count from t0 (0 ns here): the second flow starts at 0, so both records count.
    records = [{"t_ns": 1, "sport": port, "acd_halvings": 1, "rtt_gain": 0.5},
               {"t_ns": 2, "sport": port, "acd_halvings": 5, "rtt_gain": 0.25}]
    (run / "raw" / "trace.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    write_summary(run)
    result = summary(run)
    assert result["tcp"]["TCPTimeouts"] == 3 and result["tcp"]["OutSegs"] == 1
    assert [f.get("acd_halvings") for f in result["flows"]] == [None, 5]
    assert [f.get("rtt_gain_mean") for f in result["flows"]] == [None, 0.375]
    assert metric_value(result, "total.acd_halvings") == 5.0
