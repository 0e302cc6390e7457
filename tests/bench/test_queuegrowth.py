"""Where BBR's queue comes from: the factors of the flows' cwnd multiply back to it, each one moves
when (and only when) its cause is present in synthetic kernel-bbr samples, and the report's section
reads them from a results tree."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from bbrbench.analysis.metrics import FlowSeries
from bbrbench.analysis.queuegrowth import factor_series, queue_factors
from bbrbench.repro import queue
from bbrbench.results import FLOW_FIELDS, write_json
from bbrbench.scenario import AlgoCatalog, validate
from bbrbench.sweep import DONE_MARK

RATE_BPS = 20e6
BASE_RTT_US = 20_000.0
MSS = 1448
TRUE_BDP = RATE_BPS / 8 * BASE_RTT_US / 1e6  # 50,000 bytes


def _flow(bw_bps: float, min_rtt_us: float, extra: float, gain: float = 2.0, n: int = 50) -> FlowSeries:
    """A flow whose cwnd is gain x bw x min_rtt times `extra`, sampled every 100 ms."""
    cwnd = gain * bw_bps / 8 * min_rtt_us / 1e6 * extra / MSS
    cols = {"cwnd": np.full(n, cwnd), "mss": np.full(n, MSS), "bw_bps": np.full(n, bw_bps),
            "bbr_min_rtt_us": np.full(n, min_rtt_us), "cwnd_gain": np.full(n, gain),
            "srtt_us": np.full(n, 5 * BASE_RTT_US)}
    return FlowSeries(t=np.arange(n) * 0.1, columns=cols)


def test_fair_estimates_give_twice_the_bdp() -> None:
    flows = {i: _flow(RATE_BPS / 4, BASE_RTT_US, 1.0) for i in range(4)}
    f = queue_factors(flows, RATE_BPS, BASE_RTT_US, 0, 10)
    assert f is not None and f.instants == 50
    assert (f.gain, f.bandwidth, f.min_rtt, f.allowance) == pytest.approx((2.0, 1.0, 1.0, 1.0))
    assert f.cwnd_bdp == pytest.approx(2.0) and f.srtt == pytest.approx(5.0)


def test_each_cause_shows_in_its_own_factor_and_they_multiply() -> None:
    # Each flow believes it has half the link (sum 2 x), saw a min_rtt 1.5 x too high, and gets 1.3 x
    # its target as allowance: cwnd = 2 x 2 x 1.5 x 1.3 = 7.8 BDP.
    flows = {i: _flow(RATE_BPS / 2, 1.5 * BASE_RTT_US, 1.3) for i in range(4)}
    f = queue_factors(flows, RATE_BPS, BASE_RTT_US, 0, 10)
    assert f is not None
    assert (f.bandwidth, f.min_rtt, f.allowance) == pytest.approx((2.0, 1.5, 1.3))
    assert f.cwnd_bdp == pytest.approx(f.gain * f.bandwidth * f.min_rtt * f.allowance) == pytest.approx(7.8)


def test_only_instants_where_every_flow_has_state_count() -> None:
    a, b = _flow(RATE_BPS / 2, BASE_RTT_US, 1.0), _flow(RATE_BPS / 2, BASE_RTT_US, 1.0)
    b.columns["bbr_min_rtt_us"][:10] = np.nan  # b's first second has no BBR state (e.g. not yet sampled)
    series = factor_series({0: a, 1: b}, RATE_BPS, BASE_RTT_US, 0, 10)
    assert series is not None and len(series["t"]) == 40 and series["t"][0] == pytest.approx(1.0)
    assert queue_factors({0: a, 1: b}, RATE_BPS, BASE_RTT_US, 20, 30) is None  # window after the samples


def _fake_fig412(root: Path, reps: int = 3) -> Path:
    """seed000/fig4.12 with one kernel-bbr point of 2 flows, each repetition's ss samples showing each flow
    at the whole link's bw (bandwidth 2 x), min_rtt 1.5 x and a 1.2 x allowance: a cwnd of 7.2 BDP."""
    exp = root / "seed000" / "fig4.12"
    scenario = validate({"name": "fig4.12", "duration_s": 30,
                         "bottleneck": {"rate_mbit": RATE_BPS / 1e6, "buffer_packets": 100},
                         "senders": [{"name": "s", "rtt_ms": 20}],
                         "flows": [{"algo": "bbr", "label": "bbr", "sender": "s", "start_s": 3.0 * i}
                                   for i in range(2)]},
                        AlgoCatalog(kernel=frozenset({"bbr"}), bbrkit=frozenset())).to_dict()
    for r in range(reps):
        rep = exp / "points" / "p0" / f"rep{r}"
        (rep / "raw").mkdir(parents=True)
        write_json(rep / "scenario.json", "run", {"resolved": scenario, "raw": {}})
        with (rep / "raw" / "flows.csv").open("w") as fh:
            writer = csv.DictWriter(fh, fieldnames=FLOW_FIELDS, extrasaction="ignore")
            writer.writeheader()
            for k in range(300):
                for i in range(2):
                    f = _flow(RATE_BPS, 1.5 * BASE_RTT_US, 1.2, n=1)
                    writer.writerow({"t_s": k * 0.1, "flow": i, "algo": "bbr",
                                     **{name: float(col[0]) for name, col in f.columns.items()}})
        # A finished repetition has its summary (a sweep writes it before the mark): trusted, no link.
        write_json(rep / "summary.json", "summary", {"flows": [], "total": {}})
        (rep / DONE_MARK).write_text("")
    write_json(exp / "plan.json", "plan", {"name": "fig4.12", "raw": {}, "repetitions": reps, "metrics": [],
                                           "duration_s": 30.0,
                                           "points": [{"id": "p0", "overrides": {"flows.0.label": "bbr",
                                                                                 "flows.0.count": 2}}]})
    return root


def test_report_section_factors_the_kernel_bbr_runs(tmp_path: Path) -> None:
    root = _fake_fig412(tmp_path)
    (tmp_path / "figures").mkdir()
    numbers = queue.collect(root, tmp_path / "figures")
    lines, js = queue.render(numbers, tmp_path / "figures", "figures")
    assert js == numbers
    entry = js["2"]
    assert entry["cwnd_bdp"]["mean"] == pytest.approx(2 * 2 * 1.5 * 1.2) and entry["cwnd_bdp"]["n"] == 3
    assert entry["bandwidth"]["mean"] == pytest.approx(2.0) and entry["min_rtt"]["mean"] == pytest.approx(1.5)
    assert any("where original BBR's queue comes from" in line for line in lines)
    assert (tmp_path / "figures" / "seed000_queue_factors.png").is_file()
    assert any("seed000_queue_factors.png" in line for line in lines)
    assert queue.collect(tmp_path / "empty", tmp_path / "figures") == {}
    assert queue.render({}, tmp_path / "figures", "figures") == ([], {})
