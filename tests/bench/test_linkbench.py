"""linkbench's judgement of its runs, without running any (no root, no namespaces): each link run's ratio to
the kernel bridge and to tail drop under the same load, each speed goal met or not against the bridge in the
same run, and a run on a loaded machine marked."""

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
    assert all(g.run in CAPACITY_RUNS for g in GOALS if g.run is not None)
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


def pings(added_p99_us: float) -> dict[str, Any]:
    """A ping series whose p99 is @added_p99_us above the bridge's median of 100 us."""
    return {"p50_us": 140.0, "p99_us": 100.0 + added_p99_us, "added_p50_us": 40.0, "added_p99_us": added_p99_us}


def delay(added_p99_us: float | None, floor_us: float | None = 30.0) -> dict[str, Any]:
    """The delay runs' result with the bridge's median at 100 us, the idle link's p99 @added_p99_us above it and
    the bridge's second series' p99 @floor_us above it."""
    return {"rate_mbit": 100.0, "bridged": {"p50_us": 100.0, "p99_us": 150.0},
            "bridged_again": None if floor_us is None else pings(floor_us),
            "idle": None if added_p99_us is None else pings(added_p99_us), "half load": None}


def goals_of(rows: list[dict[str, Any]], added_p99_us: float | None = 60.0, floor_us: float | None = 30.0
             ) -> dict[str, dict[str, Any]]:
    compare_runs(rows)
    return {g["check"]: g for g in judge_goals(rows, delay(added_p99_us, floor_us), FLOWS)}


def test_each_capacity_goal_is_its_ratio_to_the_bridge_in_the_same_run_met_at_its_bound() -> None:
    rows = quiet_run()
    by(rows, "one_flow", "fifo")["rx_pps"] = 0.8 * 117_000  # exactly 0.8 x the bridge: met
    by(rows, "many_flows", "fq_codel")["rx_pps"] = 19_999  # just under 0.5 x the bridge's 40000
    by(rows, "small", "fifo")["rx_pps"] = 58_000  # exactly 0.5 x 116000
    goals = goals_of(rows)
    assert list(goals) == ["idle_added_delay_p99_within_50us", "taildrop_at_least_0.8x_bridge",
                           "fq_codel_1024_flows_at_least_0.5x_bridge", "64_byte_payloads_at_least_0.5x_bridge"]
    taildrop = goals["taildrop_at_least_0.8x_bridge"]
    assert taildrop["met"] and taildrop["figure"] == 0.8 * 117_000 / 117_000
    assert (taildrop["link"], taildrop["bridge"]) == (0.8 * 117_000, 117_000)
    fq = goals["fq_codel_1024_flows_at_least_0.5x_bridge"]
    assert not fq["met"] and fq["figure"] == 19_999 / 40_000 and fq["bridge"] == 40_000
    assert goals["64_byte_payloads_at_least_0.5x_bridge"]["met"]


def test_a_capacity_goal_follows_the_bridge_of_its_own_run_not_an_absolute_rate() -> None:
    rows = quiet_run()  # the link at 142 kpps with one flow: 1.21 x a bridge at 117 kpps
    assert goals_of(rows)["taildrop_at_least_0.8x_bridge"]["met"]
    rows = quiet_run()
    by(rows, "one_flow", BRIDGE)["rx_pps"] = 200_000  # the same link figure, a faster bridge: 0.71 x
    assert not goals_of(rows)["taildrop_at_least_0.8x_bridge"]["met"]


def test_the_idle_delay_goal_bounds_what_the_link_adds_to_the_bridge_and_fails_unmeasured() -> None:
    assert goals_of(quiet_run(), 50.0)["idle_added_delay_p99_within_50us"]["met"]
    over = goals_of(quiet_run(), 50.5)["idle_added_delay_p99_within_50us"]
    assert not over["met"] and over["at_most"] and (over["link"], over["bridge"]) == (150.5, 100.0)
    assert goals_of(quiet_run(), None)["idle_added_delay_p99_within_50us"]["met"] is False


def test_the_idle_goal_is_not_decided_where_the_bridge_against_itself_breaks_its_bound() -> None:
    # the floor exactly at the bound still decides; a floor above it, or none, leaves a pass and a failure open
    assert goals_of(quiet_run(), 60.0, 50.0)["idle_added_delay_p99_within_50us"]["met"] is False
    for added in (40.0, 60.0):
        for floor in (50.5, None):
            goal = goals_of(quiet_run(), added, floor)["idle_added_delay_p99_within_50us"]
            assert goal["met"] is None and goal["floor"] == floor
    # a capacity goal has no floor
    assert goals_of(quiet_run(), 60.0, 80.0)["taildrop_at_least_0.8x_bridge"]["met"] is True


def test_a_capacity_goal_whose_bridge_received_nothing_is_not_met() -> None:
    rows = quiet_run()
    by(rows, "small", BRIDGE)["rx_pps"] = 0
    small = goals_of(rows)["64_byte_payloads_at_least_0.5x_bridge"]
    assert small["figure"] is None and not small["met"]


def test_a_run_is_marked_loaded_by_the_load_average_per_vcpu_at_its_start_or_end() -> None:
    assert not linkbench.machine_loaded((2.0, 0, 0), (6.0, 0, 0), 2)  # the benchmark's own load at the end
    assert linkbench.machine_loaded((2.1, 0, 0), (1.0, 0, 0), 2)
    assert linkbench.machine_loaded((0.5, 0, 0), (6.1, 0, 0), 2)
    assert not linkbench.machine_loaded((3.9, 0, 0), (11.9, 0, 0), 4)


def test_report_prints_each_goal_with_its_figures_ratio_and_verdict_and_marks_a_loaded_run() -> None:
    rows = quiet_run()
    goals = list(goals_of(rows, 81.0).values())
    stats = {"p50_us": 100.0, "p99_us": 150.0, "added_p50_us": 0.0, "added_p99_us": 50.0}
    result: dict[str, Any] = {"machine": {"kernel": "6.18", "cpus": 2}, "started_utc": "2026-11-29 07:00:00",
              "load": {"start": (3.0, 1.0, 1.0), "end": (4.0, 1.0, 1.0), "loaded": True},
              "capacity": rows, "goals": goals, "checks": {g["check"]: g["met"] for g in goals},
              "delay": {**delay(81.0), "idle_gap_poll": {**stats, "busy_poll_us": linkbench.GAP_POLL_US,
                                                         "cpu_fwd_share": 0.97, "spin_share": 0.9},
                        "idle_cpu_latency_0": linkbench._with_link_figures(
                            stats, {"added_p50_us": 5, "added_p99_us": 30}, held=False),
                        "idle_thread": linkbench._with_link_figures(stats, {"added_p50_us": 70, "added_p99_us": 140})}}
    result["delay"]["idle"].update(linkbench._idle_path_counts({"in_pkts": 3, "xdp_idle_pkts": 1},
                                                              {"in_pkts": 1003, "xdp_idle_pkts": 998},
                                                              {"xdp_idle_us": 10, "xdp_idle_off": ""}))
    lines = list(report(result))
    assert ("kernel 6.18, 2 CPUs, started 2026-11-29 07:00:00 UTC, load average at the start 3.0, at the end 4.0 "
            "(A LOADED MACHINE") in lines[0]
    assert ("  NOT MET idle_added_delay_p99_within_50us: link p99 181 us less the bridge's p50 100 us: 81 us, "
            "goal <= 50 us; the bridge's second series judged the same way: 30 us") in lines
    assert "  ping through a kernel bridge: p50 100  p99 150 us; a second series: p50 140  p99 130 us" in lines
    assert ("  met taildrop_at_least_0.8x_bridge: link 142 kpps against the bridge's 117 kpps in this run: "
            "1.21 x, goal >= 0.8 x") in lines
    assert ("  met fq_codel_1024_flows_at_least_0.5x_bridge: link 32 kpps against the bridge's 40 kpps in this "
            "run: 0.80 x, goal >= 0.5 x") in lines
    fq = next(line for line in lines if "capacity, fq_codel" in line)
    assert "0.80 x the bridge's, 0.89 x tail drop's" in fq
    assert any("busy-poll 20000 us (the whole ping gap)" in line and "CPU 97% (busy-polling 90%)" in line
               for line in lines)
    # the ping's added delay and the link's own at departure, each under its own name
    assert any("idle, through the thread, CPU latency request 0 us: p50 100  p99 150 us; added p50 0  p99 50 us "
               "(REFUSED: the CPUs could halt); added delay at departure p50 5 p99 30 us" in line for line in lines)
    # the idle row says how many of its frames the idle path forwarded; the thread's row its own lateness
    assert any(line.endswith("idle: p50 140  p99 181 us; added p50 40  p99 81 us; idle path 10 us: 997 of 1000 "
                             "frames") for line in lines)
    assert any("idle, through the thread (--xdp-idle-us 0): p50 100  p99 150 us" in line
               and line.endswith("added delay at departure p50 70 p99 140 us") for line in lines)
    result["delay"]["idle"].update(xdp_idle_us=-1, xdp_idle_off="an AQM or step marking")
    assert any(line.endswith("; idle path off (an AQM or step marking)") for line in report(result))
    result["load"]["loaded"] = False
    assert "LOADED" not in next(report(result))
    result["goals"] = list(goals_of(quiet_run(), 81.0, 51.0).values())
    assert any(line.startswith("  NOT DECIDED idle_added_delay_p99_within_50us: link p99 181 us")
               and line.endswith("judged the same way: 51 us") for line in report(result))


def test_the_wait_share_is_the_busiest_threads_run_queue_wait_over_the_window() -> None:
    before = {1: (0, 0), 2: (1_000, 5_000), 3: (0, 0)}
    # thread 2 ran most (3 s) and waited 1 s of the 4 s window; thread 1 waited longer but ran less; thread 3 is
    # gone and thread 4 is new: neither has a difference
    after = {1: (1_000_000_000, 2_000_000_000), 2: (3_000_001_000, 1_000_005_000), 4: (9_000_000_000, 9_000_000_000)}
    assert linkbench.busiest_wait_share(before, after, 4e9) == 0.25
    assert linkbench.busiest_wait_share({}, after, 4e9) is None
