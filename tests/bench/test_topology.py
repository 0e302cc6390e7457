"""The emulated path gives TCP what the scenario says: rate, buffer, RTT, loss (real namespaces and iperf3)."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from benchutil import needs_net, run_cli, summary

pytestmark = [pytest.mark.net, needs_net]
# TCP payload per 1514-byte frame on the wire (1500 MTU - 40 IP/TCP - 12 timestamp option).
PAYLOAD_FRACTION = 1448 / 1514


def queue_rows(run_dir: Path) -> list[dict[str, float]]:
    with (run_dir / "raw" / "queue.csv").open() as fh:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def flow_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "raw" / "flows.csv").open() as fh:
        return list(csv.DictReader(fh))


def events(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "raw" / "events.json").read_text())


def bench(run_dir: Path, *overrides: str) -> dict[str, Any]:
    result = run_cli("run", "smoke", "--quiet", "--out", str(run_dir), *overrides)
    assert result.returncode == 0, result.stderr
    return summary(run_dir)


def test_tbf_rate_and_packet_buffer(tmp_path: Path) -> None:
    s = bench(tmp_path, "duration_s=5", "bottleneck.rate_mbit=20", "bottleneck.buffer_packets=30")
    goodput = s["flows"][0]["goodput_mbps"]
    assert goodput == pytest.approx(20 * PAYLOAD_FRACTION, rel=0.03)
    rows = queue_rows(tmp_path)
    assert max(r["backlog_packets"] for r in rows) <= 30
    assert max(r["backlog_packets"] for r in rows) >= 25      # cubic does fill it
    assert rows[-1]["drops"] > 0                               # and overflows it
    assert s["total"]["queue_rate_hz"] >= 50
    assert s["total"]["utilisation"] == pytest.approx(1.0, abs=0.03)


def test_htb_byte_buffer_and_rtt_through_the_delay_line(tmp_path: Path) -> None:
    limit = 30 * 1514
    s = bench(tmp_path, "duration_s=5", "bottleneck.rate_mbit=10", "bottleneck.shaper=htb",
              f"bottleneck.buffer_bytes={limit}",
              "senders=[{name = 'a', rtt_ms = 20}]")
    assert s["flows"][0]["goodput_mbps"] == pytest.approx(10 * PAYLOAD_FRACTION, rel=0.03)
    rows = queue_rows(tmp_path)
    assert max(r["backlog_bytes"] for r in rows) <= limit
    assert rows[-1]["drops"] > 0
    min_rtt = min(int(r["min_rtt_us"]) for r in flow_rows(tmp_path) if r["min_rtt_us"]) / 1000
    assert min_rtt == pytest.approx(20.0, abs=1.0)
    # A full 30-packet queue at 10 Mbit/s adds 36 ms: the RTT tail shows it.
    assert s["flows"][0]["rtt_ms_p95"] == pytest.approx(20 + 30 * 1514 * 8 / 10e6 * 1e3, abs=6)
    emu = events(tmp_path)["emulation"]
    if emu["delay_mechanism"] == "delayline":
        # The sender's delay line is recorded under its name with the trust check's counters, and checked.
        line = emu["delay_lines"][0]
        assert line["sender"] == "a" and line["lr_pkts"] > 0, line
        assert all(f"{d}_{k}" in line for d in ("lr", "rl") for k in ("late_wakeups", "late_max_us", "added_p50_us",
                                                                     "added_p99_us")), line
        assert "delay_line_a_lr_added_p99_us" in s["trust"]["checks"], s["trust"]
        assert not [m for m in s["trust"]["not_reported"] if m.startswith("delay line not checked")], s["trust"]


def test_each_sender_gets_its_rtt_from_the_link_without_a_delay_line(tmp_path: Path) -> None:
    """Where bbrkit-link runs the bottleneck and the kernel has no netem, the link serves each sender's RTT
    after the bottleneck, a line per distinct delay: two senders of 10 and 40 ms each see their own RTT (a
    shared line would hold the near one's frames behind the far one's), and no delay line runs."""
    bench(tmp_path, "duration_s=4", "bottleneck.rate_mbit=10", "bottleneck.aqm=fq_codel",
          "senders=[{name = 'a', rtt_ms = 10}, {name = 'b', rtt_ms = 40}]",
          "flows=[{algo = 'cubic', sender = 'a'}, {algo = 'cubic', sender = 'b'}]")
    emu = events(tmp_path)["emulation"]
    if emu["delay_mechanism"] != "link":
        pytest.skip(f"the senders' delays ran as {emu['delay_mechanism']} (this kernel has netem)")
    min_rtt_ms = {flow: min(int(r["min_rtt_us"]) for r in rows if r["min_rtt_us"]) / 1000
                  for flow in ("0", "1") for rows in [[r for r in flow_rows(tmp_path) if r["flow"] == flow]]}
    # At least the RTT, and at most that plus one full frame's time at 10 Mbit/s (1.2 ms) and half a ms.
    frame_ms = 1514 * 8 / 10e6 * 1e3
    assert 9.8 <= min_rtt_ms["0"] <= 10 + frame_ms + 0.5 and 39.8 <= min_rtt_ms["1"] <= 40 + frame_ms + 0.5, min_rtt_ms
    assert emu["delay_lines"] == [] and "--src-delay" in emu["link_options"]


def test_random_loss_rate(tmp_path: Path) -> None:
    s = bench(tmp_path, "duration_s=4", "bottleneck.rate_mbit=50", "bottleneck.buffer_packets=200",
              "bottleneck.loss_pct=2")
    emu = events(tmp_path)["emulation"]
    leaf = next(q for q in emu["qdisc"] if q["handle"] == "10:")
    lost = emu["loss_dropped_packets"]
    offered = lost + leaf["packets"] + leaf["drops"]
    assert offered > 5000
    assert lost / offered == pytest.approx(0.02, abs=0.005)
    assert s["flows"][0]["retrans_rate"] > 0.01


def aqm_in_kernel(name: str) -> bool:
    try:
        with gzip.open("/proc/config.gz", "rt") as fh:
            return f"CONFIG_NET_SCH_{name}=y" in fh.read() or f"CONFIG_NET_SCH_{name}=m" in fh.read()
    except OSError:
        return True


@pytest.mark.skipif(aqm_in_kernel("CAKE"), reason="this kernel has cake")
def test_missing_aqm_is_reported_not_run(tmp_path: Path) -> None:
    """Held to the kernel's qdiscs (bottleneck.emulator = "kernel"), a cake scenario cannot run here."""
    result = run_cli("run", "smoke", "--quiet", "--out", str(tmp_path), "bottleneck.aqm=cake",
                     "bottleneck.emulator=kernel")
    assert result.returncode == 3
    assert "no cake qdisc" in result.stderr and "cannot run" in result.stderr
    assert not (tmp_path / "summary.json").exists()
