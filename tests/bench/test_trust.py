"""bbrkit-link's per-run trust check (analysis/trust.py) on the link's exit counters."""
from __future__ import annotations

from bbrbench.analysis import trust

GOOD = {"in_pkts": 100000, "out_pkts": 100000, "wall_us": 10_000_000, "cpu_fwd_us": 3_000_000,
        "cpu_rev_us": 500_000, "late_wakeups": 20, "late_max_us": 900, "rx_waited_pkts": 10}


def test_a_link_with_room_to_spare_passes() -> None:
    verdict = trust.assess(GOOD)
    assert verdict["ok"] and verdict["failed"] == [] and verdict["not_reported"] == []
    assert verdict["checks"]["cpu_fwd_share"] == 0.3


def test_each_sign_of_a_link_falling_behind_fails_the_run() -> None:
    """A thread busy over 90% of the run, over 1 in 1000 departures 200 us late, over 1 in 1000 frames over
    1 ms in the socket buffer: each alone fails, with its own line."""
    for change, words in (({"cpu_fwd_us": 9_500_000}, "CPU-bound"), ({"late_wakeups": 101}, "200 us late"),
                          ({"rx_waited_pkts": 101}, "socket buffer")):
        verdict = trust.assess({**GOOD, **change})
        assert not verdict["ok"] and len(verdict["failed"]) == 1 and words in verdict["failed"][0], verdict


def test_counters_an_older_link_lacks_are_named_not_guessed() -> None:
    verdict = trust.assess({"in_pkts": 10, "out_pkts": 10})
    assert verdict["ok"] and set(verdict["not_reported"]) == {"cpu_fwd_us", "cpu_rev_us", "late_wakeups",
                                                              "rx_waited_pkts"}
