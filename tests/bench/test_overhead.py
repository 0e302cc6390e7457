"""The pure parts of the overhead benchmark: reading struct_ops programs from bpftool, per-callback
deltas, the rotated order's pairing into per-repetition ratios, and the summary's shape."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bbrbench.errors import HarnessError
from bbrbench.experiments.overhead import (
    FLOOR,
    RESULT_FILE,
    intervals_and_ratios,
    paired_ratio,
    pooled,
    ratio_pairs,
    stats_delta,
    struct_ops_programs,
)
from bbrbench.results import write_json


def _ops(name: str, state: str, progs: dict[str, int]) -> list[dict[str, Any]]:
    data: dict[str, Any] = {"name": name, "flags": 1, "cong_avoid": "void (struct sock *, u32, u32) 0"}
    data.update({cb: f"void (struct sock *) x/prog_id:{i}" for cb, i in progs.items()})
    return [{"bpf_map_info": {"type": 26, "name": "ops"}},
            {"bpf_struct_ops_tcp_congestion_ops": {"common": {"state": state}, "data": data}}]


def test_struct_ops_programs_reads_callbacks_and_skips_dying_maps() -> None:
    dump = (_ops("bbr1", "BPF_STRUCT_OPS_STATE_TOBEFREE", {"cong_control": 1})
            + _ops("bbr1", "BPF_STRUCT_OPS_STATE_READY", {"cong_control": 7, "min_tso_segs": 8})
            + _ops(FLOOR, "BPF_STRUCT_OPS_STATE_INUSE", {"init": 9}))
    # A map on its way out (an earlier registration) must not shadow the live one of the same name.
    assert struct_ops_programs(dump) == {"bbr1": {"cong_control": 7, "min_tso_segs": 8}, FLOOR: {"init": 9}}


def test_stats_delta_per_call_and_callbacks_without_calls() -> None:
    delta = stats_delta({"cong_control": (1000, 10), "init": (50, 1)},
                        {"cong_control": (4000, 20), "init": (50, 1), "ssthresh": (300, 2)})
    assert delta["cong_control"] == {"calls": 10, "ns": 3000, "ns_per_call": 300.0}
    assert delta["init"]["ns_per_call"] is None
    assert delta["ssthresh"] == {"calls": 2, "ns": 300, "ns_per_call": 150.0}


def test_ratio_pairs_split_trampoline_and_own_logic() -> None:
    assert ratio_pairs(["bbr", FLOOR, "bbr1", "bbr3"]) == [
        (FLOOR, "bbr"), ("bbr1", "bbr"), ("bbr3", "bbr"), ("bbr1", FLOOR), ("bbr3", FLOOR)]


def _run(rep: int, algo: str, cpu: float, cong_ns: float | None) -> dict[str, Any]:
    callbacks = {} if cong_ns is None else {"cong_control": {"calls": 100, "ns": cong_ns * 100,
                                                             "ns_per_call": cong_ns}}
    return {"rep": rep, "algo": algo, "process_ns_per_byte": cpu, "system_ns_per_byte": cpu,
            "gbit_s": 10.0, "bpf_ns_per_byte": None if cong_ns is None else cong_ns / 1000,
            "callbacks": callbacks}


def test_paired_ratios_cancel_load_that_drifts_between_repetitions() -> None:
    # The machine gets twice as slow in repetition 1; within each repetition bbr1 costs 1.02 x bbr.
    runs = [_run(0, "bbr", 1.0, None), _run(0, "bbr1", 1.02, 300.0),
            _run(1, "bbr", 2.0, None), _run(1, "bbr1", 2.04, 306.0)]
    r = paired_ratio(runs, "bbr1", "bbr", lambda run: run["process_ns_per_byte"])
    assert r is not None and r["mean"] == pytest.approx(1.02) and r["ci95"] == pytest.approx(0.0, abs=1e-12)
    assert paired_ratio(runs, "bbr1", "bbr", lambda run: run["bpf_ns_per_byte"]) is None


def test_paired_ratio_is_the_geometric_mean_so_noise_does_not_bias_it() -> None:
    # Two repetitions where bbr1 is 25% dearer and then 20% cheaper: the same cost, as 1.25 x 0.8 = 1.
    # The arithmetic mean of the ratios would say 1.025.
    runs = [_run(0, "bbr", 1.0, None), _run(0, "bbr1", 1.25, 300.0),
            _run(1, "bbr", 1.0, None), _run(1, "bbr1", 0.8, 300.0)]
    r = paired_ratio(runs, "bbr1", "bbr", lambda run: run["process_ns_per_byte"])
    assert r is not None and r["mean"] == pytest.approx(1.0)
    assert r["low"] < 1.0 < r["high"] and r["ci95"] == pytest.approx(r["high"] - 1.0)
    assert math.log(r["high"]) == pytest.approx(-math.log(r["low"]))


def _results(path: Path, algos: list[str], reps: int, seconds: int = 4) -> Path:
    runs = [_run(rep, a, 1.0 + 0.01 * i, None if a == "bbr" else 300.0)
            for rep in range(reps) for i, a in enumerate(algos)]
    path.mkdir()
    write_json(path / RESULT_FILE, "overhead", {
        "kernel": "k", "seconds": seconds, "pinned": False, "repetitions": reps,
        "loadavg_1min_before_each_run": [0.5] * len(runs), "summary": {"algorithms": algos}, "runs": runs})
    return path


def test_pool_joins_runs_with_and_without_the_floor(tmp_path: Path) -> None:
    with_floor = _results(tmp_path / "a", ["bbr", FLOOR, "bbr1"], 2)
    without = _results(tmp_path / "b", ["bbr", "bbr1"], 3)
    text = pooled([with_floor, without])
    assert text.startswith("5 repetitions from 2 runs")
    # bbr1/bbr over all five repetitions, the floor's ratios over the two that had it.
    assert f"{FLOOR}/bbr" in text and "bbr1/bbr" in text


def test_pool_refuses_unlike_runs(tmp_path: Path) -> None:
    a = _results(tmp_path / "a", ["bbr", "bbr1"], 2, seconds=4)
    b = _results(tmp_path / "b", ["bbr", "bbr1"], 2, seconds=8)
    with pytest.raises(HarnessError, match="seconds 8 differs"):
        pooled([a, b])
    with pytest.raises(HarnessError, match="cannot read"):
        pooled([tmp_path / "missing"])


def test_summary_has_every_algorithm_metric_and_callback() -> None:
    runs = [_run(rep, algo, cpu * (1 + rep / 10), ns)
            for rep in range(3) for algo, cpu, ns in (("bbr", 1.0, None), (FLOOR, 1.01, 290.0), ("bbr1", 1.03, 300.0))]
    s = intervals_and_ratios(runs, ["bbr", FLOOR, "bbr1"])
    assert s["metrics"]["process_ns_per_byte"]["bbr"]["n"] == 3
    assert set(s["ratios"]["process_ns_per_byte"]) == {f"{FLOOR}/bbr", "bbr1/bbr", f"bbr1/{FLOOR}"}
    assert s["ratios"]["process_ns_per_byte"][f"bbr1/{FLOOR}"]["mean"] == pytest.approx(1.03 / 1.01)
    assert "bbr" not in s["callbacks"]  # the kernel's own bbr has no BPF programs
    assert s["callbacks"]["bbr1"]["cong_control"]["ns_per_call"]["mean"] == pytest.approx(300.0)
    assert s["callback_ratios"][f"bbr1/{FLOOR}"]["cong_control"]["mean"] == pytest.approx(300 / 290)
    # bbr1's programs take 0.01 ns/byte more than the floor's: 1% of the floor's 1.01 ns/byte (first
    # repetition), less as the machine slows down in the later ones.
    own = s["own_logic_pct_of_cpu"]["bbr1"]
    assert own["n"] == 3 and own["mean"] == pytest.approx(sum(1 / 1.01 / (1 + rep / 10) for rep in range(3)) / 3)
