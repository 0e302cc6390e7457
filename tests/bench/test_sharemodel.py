"""Seed 004's share model against values computed by hand.

Link used throughout: c = 1000 packets/s, l = 0.1 s, so one BDP is 100 packets; d = 60 s.
Probe_time / d = (q/c + 0.2 + l) / 10 whatever d is.
"""

from __future__ import annotations

import math

import pytest

from bbrbench.analysis.sharemodel import ShareInputs, bbr_share, l2_error, share_for_link
from bbrbench.analysis.stats import pearson


def share(n: int, q: float) -> float:
    return bbr_share(ShareInputs(n_bbr=n, queue_packets=q, capacity_pps=1000, base_rtt_s=0.1, duration_s=60)).bbr_share


def test_four_bdp_five_flows() -> None:
    # X = 4: p = 1/2 - 1/8 - 20/400 = 0.325; Probe/d = (0.4 + 0.2 + 0.1)/10 = 0.07; 0.675 x 0.93.
    r = bbr_share(ShareInputs(5, 400, 1000, 0.1, 60))
    assert r.queue_bdp == pytest.approx(4.0)
    assert r.loss_based_share == pytest.approx(0.325)
    assert r.probe_time_s == pytest.approx(4.2)
    assert r.bbr_share == pytest.approx(0.62775)


def test_large_queue_one_flow() -> None:
    # X = 32: p = 1/2 - 1/64 - 4/3200 = 0.4831250; Probe/d = (3.2 + 0.3)/10 = 0.35; 0.516875 x 0.65.
    assert share(1, 3200) == pytest.approx(0.33596875)


def test_one_bdp_stays_below_one() -> None:
    # X = 1: p = 1/2 - 1/2 - 4/100 = -0.04; Probe/d = 0.04; (1.04)(0.96) = 0.9984, not capped.
    assert share(1, 100) == pytest.approx(0.9984)


def test_small_queue_capped_to_one() -> None:
    # X = 0.25: p = 1/2 - 2 - 4/25 = -1.66; 2.66 x (1 - 0.0325) = 2.57 -> capped to 1 as the seed does.
    r = bbr_share(ShareInputs(1, 25, 1000, 0.1, 60))
    assert r.raw_bbr_frac == pytest.approx(2.57355)
    assert r.bbr_share == 1.0


def test_share_grows_with_bbr_count_and_falls_with_queue() -> None:
    assert share(1, 800) < share(9, 800) < share(21, 800)
    assert share(5, 400) > share(5, 800) > share(5, 1600)


def test_link_units() -> None:
    # 12.112 Mbit/s in 1514-byte frames is exactly 1000 packets/s; 100 ms; 4 BDP = 400 packets.
    assert share_for_link(5, 4.0, 12.112, 100.0, 60.0) == pytest.approx(0.62775)
    with pytest.raises(ValueError):
        bbr_share(ShareInputs(0, 400, 1000, 0.1, 60))


def test_error_measures() -> None:
    assert l2_error([0.5, 0.6], [0.2, 0.2]) == pytest.approx(0.5)          # sqrt(0.09 + 0.16)
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 1, 2]) == pytest.approx(-0.5)
    with pytest.raises(ValueError):
        l2_error([1.0], [])
    assert not math.isnan(pearson([0, 1], [1, 0]))
