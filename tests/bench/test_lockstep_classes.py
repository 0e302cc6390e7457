"""The pure parts of `bbrbench lockstep`: sorting mismatch records into known causes, counting the
unexplained ones (also those the tool could not record), and the table."""

from __future__ import annotations

from typing import Any

from bbrbench.experiments.lockstep import SCENARIOS, classify, table, unexplained

PROBE_BW, PROBE_RTT = 2, 3


def record(kernel_mode: int, shadow_mode: int) -> dict[str, Any]:
    return {"kernel": {"mode": kernel_mode}, "shadow": {"mode": shadow_mode}}


def summary(mismatched: int, classes: dict[str, int]) -> dict[str, Any]:
    zero_fields = {"mode": 0, "cwnd": 0}
    return {"compared": {"ack": 100, "init": 1}, "mismatched": {"ack": mismatched, "init": 0},
            "fields": {**zero_fields, "mode": mismatched}, "classes": classes,
            "acks_by_mode": {"PROBE_BW": 90, "PROBE_RTT": 10},
            "mismatched_acks_by_mode": {"PROBE_BW": mismatched, "PROBE_RTT": 0},
            "covered_acks": {"recovery": 5, "idle_restart": 0}}


def test_probe_rtt_on_one_side_only_is_the_clock_class() -> None:
    assert classify(record(PROBE_RTT, PROBE_BW)) == "probe_rtt_clock"
    assert classify(record(PROBE_BW, PROBE_RTT)) == "probe_rtt_clock"


def test_any_other_difference_is_unexplained() -> None:
    assert classify(record(PROBE_BW, PROBE_BW)) == "unexplained"
    assert classify(record(PROBE_RTT, PROBE_RTT)) == "unexplained"
    assert classify(record(0, PROBE_BW)) == "unexplained"


def test_unrecorded_mismatches_count_as_unexplained() -> None:
    assert unexplained(summary(3, {"probe_rtt_clock": 3})) == 0
    assert unexplained(summary(3, {"probe_rtt_clock": 1, "unexplained": 1})) == 2
    assert unexplained(summary(4, {"probe_rtt_clock": 2})) == 2  # two lost to a full ring buffer


def test_table_totals() -> None:
    text = table({"a": summary(2, {"probe_rtt_clock": 2}), "b": summary(1, {"unexplained": 1})})
    assert text.splitlines()[-1] == "all: 200 ACKs compared, 3 callbacks with a difference, 1 unexplained"
    assert "mode=2" in text and "recovery=5" in text


def test_every_scenario_uses_the_lockstep_algorithm() -> None:
    for name, spec in SCENARIOS.items():
        assert all(f["algo"] == "bbr_lockstep" for f in spec.raw["flows"]), name
