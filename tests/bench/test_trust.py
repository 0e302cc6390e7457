"""The per-run trust check (analysis/trust.py): bbrkit-link's exit counters, the receivers' rate
against the configured one, the link's and each delay line's added delay against the base RTT, on synthetic
figures."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from bbrbench.analysis import trust
from bbrbench.analysis.report import write_summary
from benchutil import summary, write_fake_run

GOOD = {"in_pkts": 100000, "out_pkts": 100000, "wall_us": 10_000_000, "cpu_fwd_us": 3_000_000,
        "cpu_rev_us": 500_000, "late_wakeups": 20, "late_max_us": 900, "rx_waited_pkts": 10, "spin_us": 0,
        "added_p50_us": 40, "added_p99_us": 400}
# A 100 Mbit/s link kept busy: 1448 of every 1514 bytes are payload, so the receivers get 95.6 Mbit/s.
PATH = {"rate_mbit": 100, "goodput_mbps": 95.6, "queue_busy_share": 0.99, "base_rtt_ms": 10}


def test_a_link_with_room_to_spare_passes() -> None:
    verdict = trust.assess(GOOD, PATH)
    assert verdict["ok"] and verdict["failed"] == [] and verdict["not_reported"] == []
    assert verdict["checks"]["cpu_fwd_share"] == 0.3 and verdict["checks"]["receiver_rate_ratio"] == 0.956


def test_each_sign_of_a_link_falling_behind_fails_the_run() -> None:
    """A thread working over 90% of the run, over 1 in 1000 departures 200 us late, over 1 in 1000 frames over
    1 ms in the socket buffer, the receivers getting over 2% more than the rate, or over 15% less with the queue
    backlogged, half the frames over 200 us late, 1% over 1 ms (at a 10 ms RTT): each alone fails, with its
    own line."""
    for link, path, words in (({"cpu_fwd_us": 9_500_000}, {}, "CPU-bound"),
                              ({"late_wakeups": 101}, {}, "200 us late"),
                              ({"rx_waited_pkts": 101}, {}, "socket buffer"),
                              ({}, {"goodput_mbps": 102.5}, "more than its rate"),
                              ({}, {"goodput_mbps": 84.0}, "fell behind"),
                              ({"added_p50_us": 201}, {}, "added delay p50"),
                              ({"added_p99_us": 1001}, {}, "added delay p99")):
        verdict = trust.assess({**GOOD, **link}, {**PATH, **path})
        assert not verdict["ok"] and len(verdict["failed"]) == 1 and words in verdict["failed"][0], verdict


def test_what_the_link_cannot_be_blamed_for_passes() -> None:
    """Busy-polling is not work (a thread spinning 95% of the run is not CPU-bound); senders that leave the
    queue empty set their own rate (a 20 Mbit/s flow on a 100 Mbit/s link); the added-delay limits grow with
    the base RTT (10% of 100 ms: 10 ms at p99, 2% at p50)."""
    assert trust.assess({**GOOD, "cpu_fwd_us": 9_800_000, "spin_us": 9_500_000}, PATH)["ok"]
    assert trust.assess(GOOD, {**PATH, "goodput_mbps": 20.0, "queue_busy_share": 0.3})["ok"]
    assert trust.assess({**GOOD, "added_p50_us": 1900, "added_p99_us": 9000}, {**PATH, "base_rtt_ms": 100})["ok"]
    assert not trust.assess({**GOOD, "added_p99_us": 11000}, {**PATH, "base_rtt_ms": 100})["ok"]


def test_the_shares_count_the_threads_frames_not_the_idle_paths() -> None:
    """Frames the link's XDP idle path forwarded are in in_pkts and out_pkts but never leave late or wait in a
    socket: 80 late of the thread's 50000 departures is 0.16%, over the limit, though 0.08% of all 100000."""
    for key, words in (("late_wakeups", "200 us late"), ("rx_waited_pkts", "socket buffer")):
        link = {**GOOD, key: 80, "xdp_idle_pkts": 50_000}
        verdict = trust.assess(link, PATH)
        assert not verdict["ok"] and words in verdict["failed"][0], verdict
        assert trust.assess({**link, "xdp_idle_pkts": 0}, PATH)["ok"]


def test_every_threshold_says_why() -> None:
    assert all(t.reason and t.limit > 0 for t in trust.THRESHOLDS.values())


def test_counters_an_older_link_lacks_are_named_not_guessed() -> None:
    verdict = trust.assess({"in_pkts": 10, "out_pkts": 10})
    assert verdict["ok"] and set(verdict["not_reported"]) == {"cpu_fwd_us", "cpu_rev_us", "late_wakeups",
                                                              "rx_waited_pkts", "rate", "added_p50_us",
                                                              "added_p99_us"}


# A delay line that kept time: 20 of 100000 data frames and none of the ACKs over 200 us late.
LINE = {"sender": "s1", "lr_pkts": 100000, "lr_late_wakeups": 20, "lr_late_max_us": 900, "lr_added_p50_us": 30,
        "lr_added_p99_us": 300, "rl_pkts": 50000, "rl_late_wakeups": 0, "rl_late_max_us": 150,
        "rl_added_p50_us": 20, "rl_added_p99_us": 100}


def test_a_delay_line_that_kept_time_passes_with_or_without_a_link() -> None:
    for link in (None, GOOD):
        verdict = trust.assess(link, PATH, [LINE, {**LINE, "sender": "s2"}])
        assert verdict["ok"] and verdict["not_reported"] == [], verdict
        assert verdict["checks"]["delay_line_s2_lr_late_share"] == 20 / 100000


def test_a_late_delay_line_fails_the_run_naming_its_sender_and_direction() -> None:
    """Half the frames over 200 us late, or 1% over 1 ms (a 10 ms RTT): the link's added-delay limits, each
    alone failing the run, with the sender and the direction in its line."""
    for line, words in (({"lr_added_p50_us": 201}, "sender s2, data direction: added delay p50"),
                        ({"rl_added_p99_us": 1001}, "sender s2, ACK direction: added delay p99")):
        verdict = trust.assess(GOOD, PATH, [LINE, {**LINE, "sender": "s2", **line}])
        assert not verdict["ok"] and len(verdict["failed"]) == 1 and words in verdict["failed"][0], verdict


def test_a_delay_lines_late_departures_are_recorded_not_judged() -> None:
    """1% of a delay line's departures over 200 us late with its added delay inside the limits: a delay adds
    no queue and takes no capacity, so the run stands, and the share is in its checks."""
    verdict = trust.assess(GOOD, PATH, [{**LINE, "lr_late_wakeups": 1000}])
    assert verdict["ok"], verdict
    assert verdict["checks"]["delay_line_s1_lr_late_share"] == 0.01
    # the added-delay limits grow with the base RTT, as the link's
    assert trust.assess(None, {"base_rtt_ms": 100}, [{**LINE, "lr_added_p99_us": 9000}])["ok"]


def test_a_delay_line_recorded_before_its_check_is_not_checked_neither_passed_nor_failed() -> None:
    """An older record's delay line has its packet counts but no lateness: the run is not failed for it, and
    the verdict says the line was not checked instead of listing it as checked."""
    old = {k: v for k, v in LINE.items() if "late_wakeups" not in k and "added" not in k and "late_max" not in k}
    verdict = trust.assess(None, PATH, [old])
    assert verdict["ok"] and verdict["failed"] == [] and verdict["checks"] == {}
    assert verdict["not_reported"] == ["delay line not checked (sender s1, data direction)",
                                       "delay line not checked (sender s1, ACK direction)"]
    # A run through netem has no delay line: nothing to report.
    assert trust.assess(None, PATH, [])["not_reported"] == []


def test_a_runs_summary_checks_its_delay_lines_and_an_older_run_reads_not_checked(tmp_path: Path) -> None:
    """write_summary: each sender's delay line recorded with its counters is checked (here a p99 of 5 ms
    added); one recorded before the counters were kept (an empty list, as every run through the delay line
    had) is not checked, for each sender with a delay; a run through netem has no delay line to check."""
    raw = {"name": "t", "duration_s": 5, "bottleneck": {"rate_mbit": 10, "buffer_bdp": 1},
           "senders": [{"name": "a", "rtt_ms": 20}, {"name": "b", "rtt_ms": 0}],
           "flows": [{"algo": "cubic", "sender": "a"}, {"algo": "cubic", "sender": "b"}]}
    run = tmp_path / "run"
    write_fake_run(run, raw, np.random.default_rng(1))

    def trust_of(emulation: dict[str, Any]) -> dict[str, Any] | None:
        (run / "raw" / "events.json").write_text(json.dumps({"emulation": emulation}))
        write_summary(run)
        return summary(run).get("trust")

    late = {**LINE, "sender": "a", "lr_pkts": 100, "lr_added_p99_us": 5000}
    verdict = trust_of({"delay_mechanism": "delayline", "delay_lines": [late]})
    assert verdict is not None and not verdict["ok"] and verdict["failed"][0].startswith(
        "delay line of sender a, data direction: added delay p99"), verdict
    verdict = trust_of({"delay_mechanism": "delayline", "delay_lines": []})
    assert verdict is not None and verdict["ok"] and verdict["not_reported"] == [
        "delay line not checked (sender a, data direction)", "delay line not checked (sender a, ACK direction)"]
    assert trust_of({"delay_mechanism": "netem", "delay_lines": []}) is None
