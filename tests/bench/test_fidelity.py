"""The pure parts of the fidelity and overhead benchmarks: ratios of means with CIs, pairing of bbr1
points with their bbr twins, and the per-byte CPU arithmetic, on fixed numbers computed by hand."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bbrbench.analysis.stats import ratio_ci95
from bbrbench.experiments.fidelity import compare, failed_flow_runs, format_ratio, wrong_cc_samples
from bbrbench.experiments.overhead import per_run
from bbrbench.results import write_json


def test_ratio_of_means_with_delta_method_ci() -> None:
    # x: mean 300, var 2; y: mean 200, var 2 -> R = 1.5; terms 2/2 = 1 and 1.5^2 * 2/2 = 2.25;
    # Welch df = 3.25^2 / (1 + 2.25^2) = 1.74, so t(0.975, df) lies between the table's 4.303 (2 df) and
    # 12.706 (1 df); half-width t * sqrt(3.25) / 200. The reference's g (t^2 x 1 / 40000) is below 0.05.
    r = ratio_ci95([299.0, 301.0], [199.0, 201.0])
    assert r.ratio == pytest.approx(1.5) and r.method == "delta"
    assert r.df == pytest.approx(3.25 ** 2 / (1 + 2.25 ** 2))
    assert r.ci95 is not None and 4.303 < r.ci95 / (math.sqrt(3.25) / 200) < 12.706
    assert r.excludes_one


def test_an_uncertain_reference_gives_fieller_not_the_delta_method() -> None:
    # y: mean 2, sd 1.41 over 2 values: its own interval reaches 0, so any ratio is possible.
    r = ratio_ci95([2.0, 4.0], [1.0, 3.0])
    assert r.method == "fieller" and r.bounds is None and not r.excludes_one


def test_tight_samples_exclude_one_and_identical_samples_do_not() -> None:
    assert ratio_ci95([1.10, 1.11, 1.09, 1.10, 1.10], [1.0, 1.01, 0.99, 1.0, 1.0]).excludes_one
    same = ratio_ci95([5.0, 6.0, 7.0], [5.0, 6.0, 7.0])
    assert same.ratio == pytest.approx(1.0) and not same.excludes_one


def test_zero_reference_has_no_ratio_and_zero_candidate_stays_finite() -> None:
    none = ratio_ci95([0.01, 0.02], [0.0, 0.0])
    assert none.ratio is None and format_ratio({"ratio": None, "ci95": None, "df": None}).startswith("n/a")
    zero = ratio_ci95([0.0, 0.0, 0.0], [0.019, 0.02, 0.021])
    # 0 in every run: a zero width that is the count's resolution, not a ratio known to be 0.
    assert zero.ratio == 0.0 and zero.ci95 == 0.0 and zero.zero_spread and not zero.excludes_one
    # Against a reference whose own interval reaches 0 (0.02 +- 0.025) any ratio is possible.
    loose = ratio_ci95([0.0, 0.0, 0.0], [0.01, 0.02, 0.03])
    assert loose.bounds is None and not loose.excludes_one


def test_needs_two_values_per_side() -> None:
    with pytest.raises(ValueError):
        ratio_ci95([1.0], [1.0, 2.0])


def _point(algo: str, count: int, values: list[float]) -> dict[str, Any]:
    overrides = {"flows.0.count": count, "flows.0.algo": algo}
    return {"id": f"{algo}{count}", "label": f"count={count}, algo={algo}", "overrides": overrides,
            "metrics": {"total.goodput_mbps": {"mean": sum(values) / len(values), "ci95": 1.0,
                                               "n": len(values), "values": values}}}


def test_compare_pairs_each_bbr1_point_with_its_bbr_twin() -> None:
    sweep = {"metrics": ["total.goodput_mbps"], "points": [
        _point("bbr", 1, [40.0, 42.0]), _point("bbr1", 1, [44.0, 46.0]),
        _point("bbr", 4, [47.0, 47.0]), _point("bbr1", 4, [47.0, 47.0])]}
    rows = compare(sweep)
    assert [r["settings"] for r in rows] == [{"flows.0.count": 1}, {"flows.0.count": 4}]
    assert rows[0]["metrics"]["total.goodput_mbps"]["ratio"] == pytest.approx(45 / 41)
    assert rows[1]["metrics"]["total.goodput_mbps"]["ratio"] == pytest.approx(1.0)


def test_samples_of_another_congestion_control_are_counted(tmp_path: Path) -> None:
    run = tmp_path / "points" / "p1" / "rep0"
    (run / "raw").mkdir(parents=True)
    (run / "done").write_text("")
    (run / "raw" / "flows.csv").write_text("t_s,flow,algo\n0.1,0,bbr1\n0.2,0,cubic\n0.3,0,bbr1\n")
    sweep = {"points": [{"id": "p1", "label": "algo=bbr1", "overrides": {"flows.0.algo": "bbr1"}}]}
    assert wrong_cc_samples(tmp_path, sweep) == {"algo=bbr1": 1}


def test_runs_whose_flow_failed_to_start_are_found(tmp_path: Path) -> None:
    for rep, error in (("rep0", "unable to set TCP_CONGESTION"), ("rep1", None)):
        run = tmp_path / "points" / "p1" / rep
        run.mkdir(parents=True)
        (run / "done").write_text("")
        write_json(run / "summary.json", "summary", {"flows": [{"label": "bbr1", "error": error}]})
    assert failed_flow_runs(tmp_path) == [tmp_path / "points" / "p1" / "rep0"]


def test_cpu_per_byte_counts_both_iperf3_ends_and_ksoftirqd() -> None:
    client = {"end": {"sum_received": {"bytes": 1e9, "seconds": 8.0}, "sum_sent": {"retransmits": 0},
                      "cpu_utilization_percent": {"host_total": 50.0, "remote_total": 25.0}}}
    run = per_run(client, {}, busy_s=16.0, softirq_s=1.0)
    # (50% + 25%) of 8 s = 6 s, plus 1 s of ksoftirqd = 7 s for 1e9 bytes.
    assert run["process_ns_per_byte"] == pytest.approx(7.0)
    assert run["system_ns_per_byte"] == pytest.approx(16.0)
    assert run["gbit_s"] == pytest.approx(1.0)
