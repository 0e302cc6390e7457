"""Metrics on fixed data, against values worked out by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import numpy as np
import pytest

from bbrbench.analysis.metrics import (
    FlowInfo,
    FlowSeries,
    RunData,
    RunInfo,
    compute,
    convergence_time,
    jain,
    percentile,
    window_rates_bps,
)
from bbrbench.analysis.stats import mean_ci95, ratio_ci95
from bbrbench.testbed.sampling import parse_rate, parse_ss

FRAME = 1514


def test_jain() -> None:
    assert jain([5, 5, 5]) == pytest.approx(1.0)
    assert jain([1, 0, 0, 0]) == pytest.approx(0.25)      # 1 / (4 x 1)
    assert jain([8, 2]) == pytest.approx(100 / 136)        # (8+2)^2 / (2 (64+4))
    assert jain([]) is None and jain([0, 0]) is None


def test_percentile_and_rates() -> None:
    # Linear interpolation: p95 of 10..50 step 10 sits at position 3.8 -> 40 + 0.8 x 10.
    assert percentile([10, 20, 30, 40, 50], 95) == pytest.approx(48.0)
    assert percentile([np.nan, 1.0], 50) == 1.0
    t = np.array([0.0, 1.0, 2.0, 4.0])
    counter = np.array([0.0, 1e6, 1e6, 3e6])
    # Windows [0,2) and [2,4): 1e6 and 2e6 bytes over 2 s each -> 4 and 8 Mbit/s.
    assert window_rates_bps(t, counter, np.array([0.0, 2.0, 4.0])) == pytest.approx([4e6, 8e6])
    # Interpolated edge: at t=0.5 the counter reads 0.5e6, so [0.5, 1] carries 0.5e6 bytes in 0.5 s.
    assert window_rates_bps(t, counter, np.array([0.5, 1.0])) == pytest.approx([8e6])


def test_convergence_time() -> None:
    edges = np.arange(6.0) * 2
    # Per-window Jain: [4,1] -> 25/34 = 0.735; [1,1] -> 1; [3,1] -> 0.8; then [1,1], [1,1]: it stays
    # >= 0.95 from the fourth window on, which starts 3 windows = 6 s after edges[0].
    rates = np.array([[4, 1, 3, 1, 1], [1, 1, 1, 1, 1]], dtype=float)
    assert convergence_time(rates, edges, 0.95) == pytest.approx(6.0)
    assert convergence_time(rates[:, :3], edges[:4], 0.95) is None   # the last window is unfair
    assert convergence_time(rates[:1], edges, 0.95) is None          # one flow: undefined


def make_run() -> RunData:
    info = RunInfo(rate_bps=10e6, sample_interval_s=0.1, limit_bytes=10 * FRAME, limit_packets=10,
                   convergence_jain=0.95, convergence_window_s=1.0,
                   flows=[FlowInfo(0, "c", "cubic", 10.0, None), FlowInfo(1, "b", "bbr", 10.0, 750_000)])
    f0 = FlowSeries(t=np.arange(5.0), columns={
        "bytes_acked": np.arange(5.0) * 1e6, "bytes_sent": np.arange(5.0) * 1e6,
        "bytes_retrans": np.array([0, 0, 0, 0, 40_000.0]), "srtt_us": np.array([10, 20, 30, 40, 50.0]) * 1000,
        "cwnd": np.full(5, 10.0)})
    f1 = FlowSeries(t=np.arange(1.0, 5.0), columns={
        "bytes_acked": np.arange(4.0) * 0.25e6, "bytes_sent": np.arange(4.0) * 0.25e6,
        "bytes_retrans": np.zeros(4), "srtt_us": np.full(4, 20_000.0), "cwnd": np.full(4, 4.0)})
    tq = np.arange(9) * 0.5
    packets = np.array([0, 2, 4, 6, 8, 10, 8, 6, 4], dtype=float)
    queue = {"t_s": tq, "backlog_packets": packets, "backlog_bytes": packets * FRAME,
             "drops": np.array([0, 0, 0, 0, 0, 1, 3, 3, 3.0]), "sent_bytes": tq * 1e6, "sent_packets": tq}
    events = {0: {"launched_s": 0.0, "returncode": 0, "killed": False},
              1: {"launched_s": 1.0, "returncode": 0, "killed": False}}
    iperf = {0: {"received_bytes": 4_000_000, "received_seconds": 4.0, "error": None},
             1: {"received_bytes": 750_000, "received_seconds": 3.0, "error": None}}
    return RunData(info=info, flows={0: f0, 1: f1}, queue=queue, events=events, iperf=iperf)


def test_run_metrics_by_hand() -> None:
    s = compute(make_run())
    c, b = s["flows"]
    t = s["total"]
    assert c["goodput_mbps"] == pytest.approx(8.0) and b["goodput_mbps"] == pytest.approx(2.0)
    assert c["throughput_mbps"] == pytest.approx(8.0)                 # 4e6 bytes x 8 / 4 s
    assert c["retrans_rate"] == pytest.approx(0.01)                   # 40,000 / 4,000,000
    assert c["rtt_ms_mean"] == pytest.approx(30.0) and c["rtt_ms_median"] == pytest.approx(30.0)
    assert c["rtt_ms_p95"] == pytest.approx(48.0) and c["rtt_ms_p99"] == pytest.approx(49.6)
    assert c["queueing_delay_ms_mean"] == pytest.approx(20.0)         # RTT - 10 ms base
    # Flow b (750,000 bytes) is first seen fully acknowledged at t = 4 s; launched at 1 s.
    assert c["fct_s"] is None and b["fct_s"] == pytest.approx(3.0)
    # All bytes acknowledged (4e6 + 0.75e6) over [0 s, 4 s]: 9.5 Mbit/s.
    assert t["goodput_mbps"] == pytest.approx(9.5)
    assert t["retrans_rate"] == pytest.approx(40_000 / 4_750_000, abs=1e-6)
    assert t["rtt_ms_mean"] == pytest.approx(230 / 9, abs=1e-3)        # (150 + 4 x 20) / 9 samples
    # Both active on [1, 4]: 3e6 and 0.75e6 bytes in 3 s -> 8 and 2 Mbit/s -> Jain 100/136.
    assert t["jain"] == pytest.approx(100 / 136, abs=1e-4)
    assert t["convergence_time_s"] is None                            # 8:2 in every window
    assert t["queue_backlog_packets_mean"] == pytest.approx(48 / 9, abs=1e-4)
    assert t["queue_backlog_packets_max"] == 10
    assert t["queue_occupancy_mean"] == pytest.approx(48 / 90, abs=1e-4)     # mean bytes / 10 frames
    assert t["queue_busy_share"] == pytest.approx(8 / 9, abs=1e-4)           # all samples but t = 0 hold some
    assert t["queue_delay_mean_ms"] == pytest.approx(48 / 9 * FRAME * 8 / 10e6 * 1e3, abs=1e-3)
    assert t["queue_drops"] == 3
    assert t["utilisation"] == pytest.approx(0.8)                     # 1e6 B/s of 1.25e6 B/s
    # Shares over the all-active period [1, 4]: 8 and 2 Mbit/s.
    assert s["by_algo"]["cubic"]["share"] == pytest.approx(0.8)
    assert s["by_algo"]["bbr"]["share"] == pytest.approx(0.2)


def test_steady_state_window_leaves_out_start_up() -> None:
    data = make_run()
    # Both flows are active on [1, 4]; the default 1 s warm-up leaves [2, 4].
    st = compute(data)["steady"]
    assert st["window_s"] == [2.0, 4.0] and st["period_s"] == pytest.approx(2.0)
    # Flow c acknowledges 2e6 bytes in [2, 4] (8 Mbit/s), flow b 0.5e6 (2 Mbit/s).
    assert st["goodput_mbps"] == pytest.approx(10.0)
    assert st["jain"] == pytest.approx(100 / 136, abs=1e-4)
    assert st["retrans_rate"] == pytest.approx(40_000 / 2_500_000, abs=1e-6)  # c's retransmission at 4 s
    # Samples at 2, 3, 4 s: c 30, 40, 50 ms and b 20, 20, 20 ms; the base RTT is 10 ms.
    assert st["rtt_ms_mean"] == pytest.approx(30.0) and st["queueing_delay_ms_mean"] == pytest.approx(20.0)
    assert st["utilisation"] == pytest.approx(0.8)
    # Queue samples at 2, 2.5, 3, 3.5, 4 s hold 8, 10, 8, 6, 4 packets.
    assert st["queue_delay_mean_ms"] == pytest.approx(7.2 * FRAME * 8 / 10e6 * 1e3, abs=1e-3)
    # A warm-up as long as the all-active period leaves no window: no steady-state figures, not wrong ones.
    data.info.warmup_s = 3.0
    assert compute(data)["steady"] == {"warmup_s": 3.0, "window_s": None}


def test_parse_ss() -> None:
    text = ("0      236024 198.18.0.1:40001 198.19.0.1:5201\n"
            "\t cubic wscale:10,10 rto:232 rtt:29.114/0.584 mss:1448 cwnd:49 ssthresh:42 bytes_sent:2471773 "
            "bytes_retrans:11584 bytes_acked:2392134 data_segs_out:1708 send 19.5Mbps pacing_rate 23394984bps "
            "delivery_rate 18.7Mbps unacked:47 retrans:0/8 lost:2 minrtt:0.006 notsent:167968\n"
            "0 0 198.18.0.1:40002 198.19.0.1:5202\n"
            "\t bbr rtt:1/0.5 cwnd:10 bbr:(bw:891076864bps,mrtt:0.013,pacing_gain:2.88672,cwnd_gain:2.88672)\n")
    a, b = parse_ss(text)
    assert (a["sport"], a["dport"], a["algo"]) == (40001, 5201, "cubic")
    assert a["srtt_us"] == 29114 and a["rttvar_us"] == 584
    assert (a["cwnd"], a["ssthresh"], a["bytes_retrans"], a["retrans"], a["lost"]) == (49, 42, 11584, 8, 2)
    assert a["pacing_rate_bps"] == 23394984 and a["delivery_rate_bps"] == pytest.approx(18.7e6)
    assert a["notsent_bytes"] == 167968 and a["min_rtt_us"] == 6 and a["mss"] == 1448
    assert b["pacing_gain"] == pytest.approx(2.88672) and b["bw_bps"] == 891076864
    assert b["bbr_min_rtt_us"] == 13
    assert parse_rate("1.5Gbps") == 1.5e9 and parse_rate("junk") is None


def test_confidence_interval() -> None:
    m, ci = mean_ci95([1.0, 2.0, 3.0])
    # sd = 1, n = 3: half-width t(0.975, 2) x 1 / sqrt(3) = 4.303 / 1.7321.
    assert m == 2.0 and ci == pytest.approx(4.303 / 3 ** 0.5, rel=1e-4)
    assert mean_ci95([5.0]) == (5.0, None)
    # Fractional Welch degrees of freedom, as the ratio interval uses them.
    assert ratio_ci95([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]).ci95 == pytest.approx(4.303 / 3 ** 0.5 / 2, rel=1e-4)
