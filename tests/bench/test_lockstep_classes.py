"""The pure parts of `bbrbench lockstep`: sorting mismatch records into known causes (with the PROBE_RTT
offset bounded), grouping them into runs that outlived a re-sync, counting the unexplained ones (also those
the tool could not record), the table, and the scripted flow's own behaviour on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from bbrbench.experiments import lockstep_flow
from bbrbench.experiments.lockstep import (
    ALGO,
    MIN_RTT_WIN_US,
    SCENARIOS,
    TICK_US,
    analyse,
    classify,
    mismatch_runs,
    table,
    unexplained,
)
from bbrbench.testbed.procs import wait_listening

STARTUP, PROBE_BW, PROBE_RTT = 0, 2, 3
JIFFY_US = 4000  # HZ=250
SHADOW_WIN_US = -(-MIN_RTT_WIN_US // TICK_US) * TICK_US  # 10 s in whole core ticks
ENTRY_FIELDS = ["mode", "cwnd", "gains", "min_rtt", "min_rtt_stamp", "app_limited", "prior_cwnd"]


def side(mode: int, **hidden: Any) -> dict[str, Any]:
    return {"mode": mode, "min_rtt_stamp_us": -1_000_000, "probe_rtt_armed": 0, "probe_rtt_done_us": 0,
            "probe_rtt_round_done": 0, **hidden}


def record(kernel: dict[str, Any], shadow: dict[str, Any], mode_before: int = PROBE_BW,
           fields: list[str] | None = None, srtt_us: int = 20_000, seq: int = 1, sport: int = 40000,
           callback: str = "ack", t_ns: int = 0) -> dict[str, Any]:
    return {"kernel": kernel, "shadow": shadow, "mode_before": mode_before, "jiffy_us": JIFFY_US,
            "srtt_us": srtt_us, "fields": ENTRY_FIELDS if fields is None else fields, "seq": seq, "sport": sport,
            "dport": 5201, "callback": callback, "t_ns": t_ns}


def shadow_lags_entry(by_us: int, srtt_us: int = 20_000) -> dict[str, Any]:
    """The kernel entered PROBE_RTT; the shadow's own window expires by_us later (its stamp is the
    window plus one tick before that)."""
    stamp = by_us - SHADOW_WIN_US - TICK_US
    return record(side(PROBE_RTT), side(PROBE_BW, min_rtt_stamp_us=stamp), srtt_us=srtt_us)


def kernel_lags_entry(by_us: int) -> dict[str, Any]:
    stamp = by_us - MIN_RTT_WIN_US - JIFFY_US
    return record(side(PROBE_BW, min_rtt_stamp_us=stamp), side(PROBE_RTT))


def summary(mismatched: int, classes: dict[str, int]) -> dict[str, Any]:
    zero_fields = {"mode": 0, "cwnd": 0}
    return {"compared": {"ack": 100, "init": 1}, "mismatched": {"ack": mismatched, "init": 0},
            "fields": {**zero_fields, "mode": mismatched}, "classes": classes,
            "class_fields": {c: {"mode": n} for c, n in classes.items()}, "resyncs": mismatched, "stamp_gap_us": 4100,
            "runs": {"count": mismatched, "longest": 1, "longest_ms": 0.0, "after_resync": 0},
            "probe_rtt_offset_ms": None, "acks_by_mode": {"PROBE_BW": 90, "PROBE_RTT": 10},
            "mismatched_acks_by_mode": {"PROBE_BW": mismatched, "PROBE_RTT": 0},
            "covered_acks": {"recovery": 5, "idle_restart": 0},
            "min_rtt_window_s": {"min_rtt_lowered": 0.41, "probe_rtt_entered": 10.41}}


def test_entry_within_a_round_is_the_clock_class() -> None:
    assert classify(shadow_lags_entry(2_000)) == "probe_rtt_clock"
    assert classify(shadow_lags_entry(19_000)) == "probe_rtt_clock"  # under one 20 ms round
    assert classify(kernel_lags_entry(3_000)) == "probe_rtt_clock"


def test_an_unbounded_entry_offset_is_not_explained() -> None:
    assert classify(shadow_lags_entry(50_000)) == "probe_rtt_offset"  # 2.5 rounds
    assert classify(kernel_lags_entry(50_000)) == "probe_rtt_offset"
    # The lagging side took a fresh min_rtt sample: its window runs 10 s more, PROBE_RTT would be skipped.
    fresh = record(side(PROBE_RTT), side(PROBE_BW, min_rtt_stamp_us=0))
    assert classify(fresh) == "probe_rtt_offset"
    # Its window expired long ago and it still did not move.
    assert classify(shadow_lags_entry(-50_000)) == "probe_rtt_offset"


def test_below_a_jiffy_per_round_the_clocks_bound_the_offset() -> None:
    # Sub-ms RTT: one tick of the two clocks (two jiffies, two core ticks, the window's 384 us rounding:
    # 10.4 ms at HZ=250) is longer.
    assert classify(shadow_lags_entry(10_000, srtt_us=300)) == "probe_rtt_clock"
    assert classify(shadow_lags_entry(11_000, srtt_us=300)) == "probe_rtt_offset"


def test_exit_is_bounded_by_the_lagging_side_s_armed_end() -> None:
    lagging = side(PROBE_RTT, probe_rtt_armed=1, probe_rtt_round_done=1, probe_rtt_done_us=1_500)
    exit_fields = ["mode", "cwnd", "gains", "pacing_rate", "cycle_idx", "cycle_stamp", "min_rtt_stamp"]
    assert classify(record(side(PROBE_BW), lagging, PROBE_RTT, exit_fields)) == "probe_rtt_clock"
    late = {**lagging, "probe_rtt_done_us": 150_000}
    assert classify(record(side(PROBE_BW), late, PROBE_RTT, exit_fields)) == "probe_rtt_offset"
    unarmed = {**lagging, "probe_rtt_armed": 0}
    assert classify(record(side(PROBE_BW), unarmed, PROBE_RTT, exit_fields)) == "probe_rtt_offset"
    no_round = {**lagging, "probe_rtt_round_done": 0}
    assert classify(record(lagging, side(STARTUP), PROBE_RTT, exit_fields)) == "probe_rtt_clock"
    assert classify(record(no_round, side(STARTUP), PROBE_RTT, exit_fields)) == "probe_rtt_offset"


def test_a_field_probe_rtt_does_not_set_is_unexplained_even_beside_it() -> None:
    assert classify(record(side(PROBE_RTT), side(PROBE_BW), fields=[*ENTRY_FIELDS, "bw"])) == "unexplained"
    assert classify(record(side(PROBE_RTT), side(PROBE_BW), fields=["mode", "bw_slots"])) == "unexplained"


def test_any_other_difference_is_unexplained() -> None:
    assert classify(record(side(PROBE_BW), side(PROBE_BW), fields=["cwnd"])) == "unexplained"
    assert classify(record(side(PROBE_RTT), side(PROBE_RTT), fields=["probe_rtt_stamp"])) == "unexplained"
    assert classify(record(side(STARTUP), side(PROBE_BW), fields=["mode"])) == "unexplained"
    assert classify(record(side(PROBE_BW), side(PROBE_BW), fields=["ack_epoch"])) == "unexplained"


def test_runs_are_consecutive_state_callbacks_on_one_socket() -> None:
    records = [record(side(PROBE_BW), side(PROBE_BW), fields=["cwnd"], seq=s, t_ns=s * 1_000_000)
               for s in (5, 6, 7, 9)]
    records.append(record(side(PROBE_BW), side(PROBE_BW), fields=["cwnd"], seq=6, sport=40001))
    # min_tso_segs carries the number of the callback before it: neither a link nor a break in a run.
    records.append(record(side(PROBE_BW), side(PROBE_BW), fields=["min_tso_segs"], seq=9, callback="min_tso_segs"))
    runs = mismatch_runs(records)
    assert sorted(len(r) for r in runs) == [1, 1, 3]
    stats = analyse(records)["runs"]
    assert stats == {"count": 3, "longest": 3, "longest_ms": 2.0, "after_resync": 2}


def test_analyse_counts_classes_fields_and_the_worst_offset() -> None:
    out = analyse([shadow_lags_entry(2_000), shadow_lags_entry(50_000),
                   record(side(PROBE_BW), side(PROBE_BW), fields=["next_rtt_delivered"])])
    assert out["classes"] == {"probe_rtt_clock": 1, "probe_rtt_offset": 1, "unexplained": 1}
    assert out["class_fields"]["unexplained"] == {"next_rtt_delivered": 1}
    assert out["probe_rtt_offset_ms"] == {"max": 50.0, "bound": 20.0}


def test_unrecorded_and_offset_mismatches_count_as_unexplained() -> None:
    assert unexplained(summary(3, {"probe_rtt_clock": 3})) == 0
    assert unexplained(summary(3, {"probe_rtt_clock": 1, "unexplained": 1})) == 2
    assert unexplained(summary(4, {"probe_rtt_clock": 2})) == 2  # two lost to a full ring buffer
    assert unexplained(summary(3, {"probe_rtt_clock": 1, "probe_rtt_offset": 2})) == 2


def test_table_totals() -> None:
    text = table({"a": summary(2, {"probe_rtt_clock": 2}), "b": summary(1, {"unexplained": 1})})
    assert text.splitlines()[-1] == "all: 200 ACKs compared, 3 callbacks with a difference, 1 unexplained"
    assert "probe_rtt_clock=2 (mode)" in text and "recovery=5" in text and "re-syncs" in text
    assert "stamps <= 4.1 ms apart" in text
    assert "last new min_rtt at 0.41 s, first entered at 10.41 s" in text
    never = {**summary(0, {}), "min_rtt_window_s": {"min_rtt_lowered": None, "probe_rtt_entered": None}}
    assert "min_rtt at" not in table({"d": never}) and "entered at" not in table({"d": never})
    unarmed = {**summary(1, {"probe_rtt_offset": 1}), "probe_rtt_offset_ms": {"max": None, "bound": 20.0}}
    assert "end not armed (bound 20.0 ms)" in table({"c": unarmed})


def test_every_scenario_runs_the_lockstep_algorithm() -> None:
    for name, spec in SCENARIOS.items():
        for i, flow in enumerate(spec.raw["flows"]):
            args = spec.script_args.get(i, ())
            assert flow["algo"] == ALGO or ("--switch-to" in args and ALGO in args), name


def test_scripted_flows_fit_their_scenario() -> None:
    parser = lockstep_flow.build_parser()
    for name, spec in SCENARIOS.items():
        for args in spec.script_args.values():
            parsed = parser.parse_args(["send", "198.19.0.1", "5201", "40000", "--cc", ALGO, *args])
            assert parsed.send_s + parsed.idle_s + parsed.then_s <= spec.min_seconds, name
    assert SCENARIOS["long_idle"].script_args[0][3] == "11"  # idle past the 10 s min_rtt window
    assert SCENARIOS["probe_rtt_twice"].min_seconds >= 25
    for name in ("rto", "undo"):
        hole = SCENARIOS[name].blackhole
        assert hole is not None and hole.at_s + hole.for_s + 1 <= SCENARIOS[name].min_seconds, name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_scripted_flow_idles_switches_and_delivers_everything() -> None:
    # reno is always allowed; the switch goes to a built-in one this user may also set.
    which = "available" if os.geteuid() == 0 else "allowed"
    usable = open(f"/proc/sys/net/ipv4/tcp_{which}_congestion_control").read().split()
    target = next((cc for cc in ("cubic", "bbr") if cc in usable), None)
    if target is None:
        pytest.skip(f"neither cubic nor bbr is {which} here: {usable}")
    port, module = free_port(), "bbrbench.experiments.lockstep_flow"
    server = subprocess.Popen([sys.executable, "-m", module, "serve", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        # ss, not a test connect: the server takes one connection.
        wait_listening(None, [port], servers=[server], what="lockstep_flow's server")
        start = time.monotonic()
        sent = subprocess.run([sys.executable, "-m", module, "send", "127.0.0.1", str(port), str(free_port()),
                               "--cc", "reno", "--send-s", "0.3", "--idle-s", "0.4", "--then-s", "0.2",
                               "--switch-to", target, "--switch-after-s", "0.1"],
                              capture_output=True, text=True, timeout=30, check=True)
        took = time.monotonic() - start
        received = json.loads(server.communicate(timeout=10)[0])
    finally:
        server.kill()
        server.wait()
    report = json.loads(sent.stdout)
    assert report["bytes"] == received["bytes"] > 0
    assert report["cc"] == target and report["events"][0]["cc"] == target
    assert 0.1 <= report["events"][0]["switched_s"] < 0.3
    assert took >= 0.9
