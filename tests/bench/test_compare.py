"""bbrbench compare: the table's statistics from a sweep, the choice of algorithms, and (root) a real compare
whose HTML page a headless browser opens."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import bbrbench
from bbrbench.analysis import comparison
from bbrbench.errors import UsageError
from bbrbench.experiments import compare
from bbrbench.results import read_json
from bbrbench.scenario import AlgoCatalog
from benchutil import needs_net, run_cli
from netutil import namespaces

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr", "reno"}), bbrkit=frozenset({"bbr1"}))


def _stat(values: list[float]) -> dict[str, Any]:
    return {"mean": sum(values) / len(values), "ci95": 0.1, "n": len(values), "values": values}


def _point(algo: str, count: int, goodput: list[float], jain: list[float]) -> dict[str, Any]:
    return {"id": f"{algo}{count}", "status": f"{len(goodput)}/3 repetitions",
            "overrides": {"flows.0.count": count, "flows.0.algo": algo},
            "metrics": {"steady.goodput_mbps": _stat(goodput), "steady.jain": _stat(jain)}}


def test_rows_carry_ratios_to_bbr_and_jain_only_where_flows_share() -> None:
    sweep = {"points": [_point("cubic", 1, [44.0, 45.0, 46.0], [1.0, 1.0, 1.0]),
                        _point("bbr", 1, [40.0, 40.5, 39.5], [1.0, 1.0, 1.0]),
                        _point("cubic", 2, [47.0, 47.0, 47.5], [0.7, 0.8, 0.9]),
                        _point("bbr", 2, [47.0, 47.5, 47.0], [0.99, 0.98, 0.99])]}
    rows = comparison.rows_against_reference(sweep)
    assert [(r["case"], r["algo"]) for r in rows] == [("1 flow", "bbr"), ("1 flow", "cubic"),
                                                      ("2 flows", "bbr"), ("2 flows", "cubic")]
    cubic1 = rows[1]["metrics"]["steady.goodput_mbps"]["ratio_to_reference"]
    assert cubic1["ratio"] == pytest.approx(45 / 40)
    assert rows[0]["metrics"]["steady.goodput_mbps"]["ratio_to_reference"] is None
    assert "steady.jain" not in rows[0]["metrics"] and "steady.jain" in rows[3]["metrics"]
    text = comparison.table(rows)
    # 45 vs 40 with these spreads: an interval that excludes 1, so starred.
    assert "45.0 ± 0.1 (1.12*)" in text
    assert "0.800 ± 0.100 (0.81" in text


def test_rows_name_the_loss_decision_path_where_their_runs_recorded_one() -> None:
    sweep = {"points": [_point("bbr", 1, [40.0, 40.5, 39.5], [1.0, 1.0, 1.0]),
                        _point("bbr3", 1, [30.0, 31.0, 29.0], [1.0, 1.0, 1.0])]}
    rows = comparison.rows_against_reference(sweep)
    rows[1]["loss_decisions"] = "per-packet"
    lines = comparison.table(rows).splitlines()
    assert any("bbr3 (per-packet)" in line for line in lines)
    assert not any("bbr (" in line for line in lines)


def test_ratio_marks_do_not_show_a_quantised_zero_as_certainty() -> None:
    """A candidate with 0 retransmissions in every run against bbr's 0.32 +- 1.38 was "(0.00*)",
    the delta method's zero width read as certainty. Against so uncertain a reference Fieller's interval is
    unbounded ('?'); against a tight one the zero width is the count's resolution ('='), never '*'."""
    def rows(candidate: list[float], reference: list[float]) -> str:
        sweep = {"points": [_point("cubic", 1, candidate, [1.0, 1.0, 1.0]),
                            _point("bbr", 1, reference, [1.0, 1.0, 1.0])]}
        return comparison.table(comparison.rows_against_reference(sweep))
    assert "(0.00?)" in rows([0.0, 0.0, 0.0], [0.0, 0.0, 0.96])
    assert "(0.00=)" in rows([0.0, 0.0, 0.0], [0.31, 0.32, 0.33])
    assert "(1.00=)" in rows([2.0, 2.0, 2.0], [2.0, 2.0, 2.0])


def test_algorithms_bbr_always_and_unknown_refused() -> None:
    assert compare.choose_algos([], CATALOG) == ["cubic", "bbr", "bbr1"]
    assert compare.choose_algos(["bbr1", "cubic", "bbr1"], CATALOG) == ["bbr", "bbr1", "cubic"]
    with pytest.raises(UsageError, match="unknown congestion control nosuchcc"):
        compare.choose_algos(["nosuchcc"], CATALOG)


def test_cli_refuses_an_unknown_algorithm_before_anything(tmp_path: Path) -> None:
    res = run_cli("compare", "nosuchcc", "--out", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "nosuchcc" in res.stderr
    assert not (tmp_path / "out").exists()


def test_cli_refuses_a_single_repetition(tmp_path: Path) -> None:
    res = run_cli("-q", "compare", "cubic", "--reps", "1", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and "at least 2 repetitions" in res.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.net
@needs_net
@pytest.mark.skipif(shutil.which("chromedriver") is None, reason="needs chromium-driver (install-deps.sh --test)")
def test_real_compare_table_figures_and_page_in_a_browser(tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    out = tmp_path / "cmp"
    res = run_cli("compare", "cubic", "--reps", "2", "--set", "duration_s=4", "--out", str(out), timeout=300)
    assert res.returncode == 0, res.stderr
    assert not namespaces("bbrb-")
    lines = res.stdout.splitlines()
    assert sum(1 for line in lines if line.startswith(("1 flow", "2 flows"))) == 4
    rows = comparison.rows_against_reference(read_json(out / "sweep.json", "sweep"))
    by = {(r["case"], r["algo"]): r["metrics"] for r in rows}
    for metrics in by.values():
        # One or two flows fill the 50 Mbit/s link: goodput near 50 x 1448/1514 = 47.8 Mbit/s. A 4 s run's
        # steady window is about 2 s, and an ss sample's stamp may be 50 ms off at each end: up to 5% over.
        assert 40 < metrics["steady.goodput_mbps"]["mean"] <= 47.8 * 1.05
    # Every run records the bbrbench and the command that made it, and its senders' TCP counters: segments
    # sent, at least the bytes the receivers got over the MSS (not iperf3's bytes written: the send buffer may
    # still hold some when the run stops; CI once saw 16763 segments for 16797 MSS written).
    for run_meta in out.glob("points/*/rep*/scenario.json"):
        made_by = read_json(run_meta, "run")["bbrbench"]
        assert made_by["version"] == bbrbench.__version__ and made_by["command"].startswith("bbrbench compare cubic")
        run_summary = read_json(run_meta.parent / "summary.json", "summary")
        received = sum(f["received_bytes"] for f in run_summary["flows"])
        assert run_summary["tcp"]["OutSegs"] >= received / 1448 > 0
    # cubic fills the 2 BDP FIFO; bbr aims at an empty queue.
    assert (by[("1 flow", "cubic")]["steady.queueing_delay_ms_mean"]["mean"]
            > by[("1 flow", "bbr")]["steady.queueing_delay_ms_mean"]["mean"])

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--allow-file-access-from-files"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        driver.get((out / compare.PAGE).as_uri())
        results, *rest = driver.find_elements(By.TAG_NAME, "table")
        body_rows = results.find_elements(By.CSS_SELECTOR, "tbody tr")
        assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in body_rows] == ["bbr", "cubic", "bbr", "cubic"]
        # Every run went through delay lines: the trust check's verdict for each of the 8 is on the page.
        verdict_rows = rest[-1].find_elements(By.CSS_SELECTOR, "tbody tr")
        assert len(verdict_rows) == 8 and all(
            r.find_elements(By.TAG_NAME, "td")[2].text.startswith(("trusted", "UNTRUSTED")) for r in verdict_rows)
        images = driver.find_elements(By.TAG_NAME, "img")
        # Per case a throughput/delay picture and an RTT CDF, and one time series per algorithm, all decoded.
        assert len(images) == 6
        assert all(driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
                   for img in images)
    finally:
        driver.quit()
