"""linkbench's judgement of its capacity runs, without running any (no root, no namespaces): each link run's
ratio to the kernel bridge and to tail drop under the same load, and which of the link's capacity goals the
bridge's own figure lets this machine judge at all."""

from __future__ import annotations

from typing import Any

from bbrbench.experiments import linkbench
from bbrbench.experiments.linkbench import BRIDGE, CAPACITY_RUNS, GOALS, LOADS, compare_runs, judge_goals, report

FLOWS = 1024


def row(load: str, middle: str, pps: float) -> dict[str, Any]:
    payload = LOADS[load].payload
    return {"name": f"{middle}, {payload}-byte payloads", "load": load, "middle": middle,
            "flows": LOADS[load].flows(FLOWS), "payload_bytes": payload, "rx_pps": pps,
            "rx_bps": pps * (payload + 42) * 8}


def quiet_run() -> list[dict[str, Any]]:
    """The shape of the 16:52 UTC quiet run: the link above the bridge with one flow, FQ-CoDel far below."""
    return [row("one_flow", BRIDGE, 117_000), row("many_flows", BRIDGE, 40_000), row("small", BRIDGE, 116_000),
            row("one_flow", "fifo", 142_000), row("many_flows", "fifo", 36_000),
            row("many_flows", "fq_codel", 32_000), row("small", "fifo", 125_000)]


def by(rows: list[dict[str, Any]], load: str, middle: str) -> dict[str, Any]:
    return next(r for r in rows if r["load"] == load and r["middle"] == middle)


def test_every_link_run_and_goal_has_a_bridge_run_under_its_load() -> None:
    bridged = {load for load, middle in CAPACITY_RUNS if middle == BRIDGE}
    assert {load for load, _ in CAPACITY_RUNS} == bridged == set(LOADS)
    assert all((g.load, g.aqm) in CAPACITY_RUNS for g in GOALS)
    # FQ-CoDel's own cost needs tail drop under its load
    assert all((load, "fifo") in CAPACITY_RUNS for load, middle in CAPACITY_RUNS if middle not in (BRIDGE, "fifo"))


def test_link_runs_get_their_ratio_to_the_bridge_and_fq_codel_to_tail_drop_under_the_same_load() -> None:
    rows = quiet_run()
    compare_runs(rows)
    assert by(rows, "one_flow", "fifo")["to_bridge"] == 142_000 / 117_000
    assert by(rows, "many_flows", "fifo")["to_bridge"] == 36_000 / 40_000
    fq = by(rows, "many_flows", "fq_codel")
    assert fq["to_bridge"] == 32_000 / 40_000 and fq["to_fifo"] == 32_000 / 36_000
    assert "to_fifo" not in by(rows, "one_flow", "fifo")
    assert all("to_bridge" not in r for r in rows if r["middle"] == BRIDGE)


def test_a_ratio_to_a_run_that_received_nothing_is_none() -> None:
    rows = quiet_run()
    by(rows, "small", BRIDGE)["rx_pps"] = 0
    compare_runs(rows)
    assert by(rows, "small", "fifo")["to_bridge"] is None


def test_a_goal_is_judgeable_only_where_the_bridge_reaches_it() -> None:
    rows = quiet_run()
    one_flow_bridge = by(rows, "one_flow", BRIDGE)
    one_flow_bridge["rx_bps"] = 2_500_000_000  # exactly the tail-drop goal: judgeable
    goals = {g["check"]: g for g in judge_goals(rows, FLOWS)}
    assert list(goals) == ["taildrop_at_least_2.5gbps", "fq_codel_1024_flows_at_least_2gbps",
                           "64_byte_payloads_at_least_300kpps"]
    taildrop = goals["taildrop_at_least_2.5gbps"]
    assert taildrop["judgeable"] and not taildrop["met"]
    assert taildrop["bridge"] == 2_500_000_000 and taildrop["link"] == by(rows, "one_flow", "fifo")["rx_bps"]
    small = goals["64_byte_payloads_at_least_300kpps"]
    assert not small["judgeable"] and small["metric"] == "rx_pps" and small["target"] == 300_000
    one_flow_bridge["rx_bps"] = 2_499_999_999
    assert not judge_goals(rows, FLOWS)[0]["judgeable"]


def test_a_goal_is_met_on_the_link_figure_not_the_bridge() -> None:
    rows = quiet_run()
    by(rows, "small", "fifo")["rx_pps"] = 300_000
    by(rows, "small", BRIDGE)["rx_pps"] = 299_999
    small = judge_goals(rows, FLOWS)[2]
    assert small["met"] and not small["judgeable"]


def test_report_says_each_goal_is_judgeable_or_sender_bound_and_gives_the_ratios() -> None:
    rows = quiet_run()
    compare_runs(rows)
    goals = judge_goals(rows, FLOWS)
    goals[0]["judgeable"] = True
    stats = {"p50_us": 100.0, "p99_us": 150.0, "added_p50_us": 0.0, "added_p99_us": 50.0}
    result = {"machine": "m", "load": (1.0, 1.0, 1.0), "capacity": rows, "goals": goals,
              "checks": {g["check"]: g["met"] for g in goals},
              "delay": {"rate_mbit": 100.0, "bridged": stats, "idle": stats, "half load": None,
                        "idle_gap_poll": {**stats, "busy_poll_us": linkbench.GAP_POLL_US, "cpu_fwd_share": 0.97,
                                          "spin_share": 0.9}}}
    lines = list(report(result))
    assert any(line.startswith("  judgeable taildrop_at_least_2.5gbps: the bridge carries 1417 Mbit/s")
               for line in lines)
    assert any(line.startswith("  sender-bound 64_byte_payloads_at_least_300kpps: the bridge carries 116 kpps")
               for line in lines)
    fq = next(line for line in lines if "capacity, fq_codel" in line)
    assert "0.80 x the bridge's, 0.89 x tail drop's" in fq
    assert any("busy-poll 20000 us (the whole ping gap)" in line and "CPU 97% (busy-polling 90%)" in line
               for line in lines)
