"""bbrbench reproduce: the scenario catalogue, --only, and the report built from a fixed fake results tree."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bbrbench.analysis import sharemodel, stats
from bbrbench.errors import HarnessError
from bbrbench.experiments import sweep
from bbrbench.repro import papers, reproduce
from bbrbench.results import write_json
from bbrbench.scenario import ScenarioError, prepare_raw, validate
from bbrbench.testbed import system
from benchutil import run_cli

BBRKIT = {"bbr1", "bbr_rttgain", "bbr_acd"}
# `make reproduce` must finish in about an hour; per-run set-up and tear-down measured at 2-4 s here.
QUICK_BUDGET_S = 3600
RUN_OVERHEAD_S = 4
# The standard profile: the whole catalogue in about 4.5 h, every run three of BBRv1's 10 s PROBE_RTT
# periods past the last flow's start (or the paper's run, if shorter), at least 3 repetitions.
STANDARD_BUDGET_S = 4.75 * 3600
PROBE_RTT_PERIODS_S = 3 * 10
STANDARD_MIN_REPS = 3


@pytest.fixture(scope="module")
def catalog() -> Any:
    cat = system.catalog()
    if not BBRKIT <= cat.bbrkit:
        pytest.skip("bbrctl not built (make): the scenarios use bbrkit's algorithms")
    return cat


def test_catalogue_covers_every_seed() -> None:
    keys = {e.key for e in reproduce.experiments()}
    for needed in ("seed000/table3.1", "seed000/table3.2", "seed000/fig4.12", "seed000/fig4.13", "seed000/table4.1",
                   "seed002/testbed", "seed002/simulation", "seed001/fig8", "seed001/fig9", "seed001/fig10",
                   "seed001/fig11-12", "seed001/fig13", "seed001/fig14-15", "seed001/fig16", "seed001/fig21",
                   "seed004/share", "seed004/cubic-count", "seed004/loss"):
        assert needed in keys


@pytest.mark.parametrize("profile", reproduce.PROFILES)
def test_every_scenario_validates(profile: str, catalog: Any) -> None:
    for e in reproduce.experiments():
        plan = sweep.plan(prepare_raw(e.path, profile, []), catalog, [], None)
        assert plan.points, e.key


def test_quick_profile_is_labelled_and_fits_the_hour(catalog: Any) -> None:
    total_s = 0.0
    for e in reproduce.experiments():
        quick = prepare_raw(e.path, "quick", [])
        paper = prepare_raw(e.path, "paper", [])
        assert "quick" in quick["description"], e.key
        if quick["bottleneck"]["rate_mbit"] < paper["bottleneck"]["rate_mbit"]:
            assert "scaled" in quick["description"], f"{e.key}: rate scaled down without saying so"
        plan = sweep.plan(quick, catalog, [], None)
        for point in plan.points:
            duration = point.overrides.get("duration_s", quick["duration_s"])
            total_s += plan.repetitions * (duration + RUN_OVERHEAD_S)
        # The paper profile never runs shorter than the quick one (repetitions may be fewer: seed 002's
        # testbed and seed 004 report single runs).
        assert sweep.plan(paper, catalog, [], None).duration_s >= plan.duration_s, e.key
    assert total_s <= QUICK_BUDGET_S, f"quick profile needs about {total_s / 60:.0f} min"


def _after_last_start_s(raw: dict[str, Any], catalog: Any) -> tuple[float, bool]:
    """Seconds the run goes on after its last flow starts, and whether its flows are sized (FCT runs)."""
    scenario = validate(raw, catalog)
    return (scenario.duration_s - max(f.start_s for f in scenario.flows),
            any(f.bytes is not None for f in scenario.flows))


def test_standard_profile_is_long_enough_and_fits_the_budget(catalog: Any) -> None:
    total_s = 0.0
    for e in reproduce.experiments():
        standard = prepare_raw(e.path, "standard", [])
        paper = prepare_raw(e.path, "paper", [])
        assert "standard" in standard["description"], e.key
        if standard["bottleneck"]["rate_mbit"] < paper["bottleneck"]["rate_mbit"]:
            assert "scaled" in standard["description"], f"{e.key}: rate scaled down without saying so"
        plan = sweep.plan(standard, catalog, [], None)
        assert plan.repetitions >= STANDARD_MIN_REPS, e.key
        paper_after_s, _ = _after_last_start_s(paper, catalog)
        for point in plan.points:
            after_s, sized = _after_last_start_s(sweep.point_raw(standard, point.overrides), catalog)
            if not sized:  # a completion-time run ends with its flows, not at a time scale of BBR's
                assert after_s >= min(PROBE_RTT_PERIODS_S, paper_after_s), f"{e.key} {point.label}"
            duration = point.overrides.get("duration_s", standard["duration_s"])
            total_s += plan.repetitions * (duration + RUN_OVERHEAD_S)
    assert total_s <= STANDARD_BUDGET_S, f"standard profile needs about {total_s / 3600:.1f} h"


def test_only_selects_seeds_and_experiments() -> None:
    all_ = reproduce.experiments()
    seed000 = reproduce.select(all_, ["seed000"])
    assert seed000 and all(e.seed == "seed000" for e in seed000)
    assert len(seed000) == len([e for e in all_ if e.seed == "seed000"])
    one = reproduce.select(all_, ["seed000/table4.1"])
    assert [e.key for e in one] == ["seed000/table4.1"]
    two = reproduce.select(all_, ["seed004/loss", "seed002"])
    assert {e.key for e in two} == {"seed004/loss"} | {e.key for e in all_ if e.seed == "seed002"}
    assert reproduce.select(all_, []) == all_
    with pytest.raises(ScenarioError, match="--only seed999"):
        reproduce.select(all_, ["seed999"])


def test_only_unknown_is_a_clean_error(tmp_path: Path) -> None:
    out = tmp_path / "repro"
    res = run_cli("reproduce", "--only", "seed000/nothing", "--out", str(out))
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "seed000/nothing" in res.stderr
    assert not out.exists()


# ---------------------------------------------------------------- fake results


def _summary(flows: list[dict[str, Any]], total: dict[str, Any]) -> dict[str, Any]:
    goodput = sum(f["goodput_mbps"] for f in flows)
    by_algo: dict[str, Any] = {}
    for f in flows:
        a = by_algo.setdefault(f["algo"], {"flows": 0, "goodput_mbps": 0.0})
        a["flows"] += 1
        a["goodput_mbps"] += f["goodput_mbps"]
    for a in by_algo.values():
        a["share"] = a["goodput_mbps"] / goodput
    return {"flows": flows, "total": total, "by_algo": by_algo}


def _flow(label: str, algo: str, goodput: float, sent: int = 1_448_000, retrans: int = 0) -> dict[str, Any]:
    return {"label": label, "algo": algo, "goodput_mbps": goodput, "bytes_sent": sent, "bytes_retrans": retrans}


def _experiment(root: Path, key: str, duration_s: float, points: list[tuple[dict[str, Any], list[dict[str, Any]]]],
                reps: int) -> None:
    d = root / key
    plan_points = []
    for i, (overrides, summaries) in enumerate(points):
        pid = f"p{i}"
        plan_points.append({"id": pid, "overrides": overrides})
        for r, s in enumerate(summaries):
            rd = d / "points" / pid / f"rep{r}"
            rd.mkdir(parents=True)
            write_json(rd / "summary.json", "summary", s)
            (rd / sweep.DONE_MARK).write_text("")
    d.mkdir(parents=True, exist_ok=True)
    write_json(d / "plan.json", "plan", {"name": key, "raw": {"duration_s": duration_s}, "points": plan_points,
                                         "repetitions": reps, "metrics": [], "duration_s": duration_s})


def _fake_tree(root: Path) -> dict[str, Any]:
    (root / "meta.json").write_text(json.dumps({"profile": "quick", "runs": [
        {"command": "bbrbench reproduce --profile quick", "revision": "abc123", "started": "t0", "finished": "t1",
         "elapsed_s": 60.0}]}))
    # Table 4.1: original BBR at 20 Mbit/s retransmits 30% and 32% in two repetitions; alpha 0.5 0.2%.
    t41 = []
    for label, algo, rates in (("bbr", "bbr", (0.30, 0.32)), ("rttgain_a0.5", "bbr_rttgain", (0.002, 0.002))):
        reps = [_summary([_flow(f"{label}#0", algo, 9.0)],
                         {"retrans_rate": r, "goodput_mbps": 18.0, "rtt_ms_mean": 30.0}) for r in rates]
        t41.append(({"flows.0.algo": algo, "flows.0.label": label, "bottleneck.rate_mbit": 20}, reps))
    _experiment(root, "seed000/table4.1", 12, t41, 2)
    # AQM point the kernel could not run.
    fig21 = root / "seed001/fig21"
    (fig21 / "points" / "p0").mkdir(parents=True)
    (fig21 / "points" / "p0" / sweep.NOT_RUNNABLE).write_text("bottleneck.aqm = 'fq_codel': no fq_codel qdisc\n")
    write_json(fig21 / "plan.json", "plan", {"name": "fig21", "raw": {"duration_s": 10}, "repetitions": 1,
                                             "metrics": [], "duration_s": 10,
                                             "points": [{"id": "p0", "overrides": {"bottleneck.aqm": "fq_codel"}}]})
    # Seed 004: measured BBR shares for N = 1 at three queue sizes, one repetition each.
    measured = {0.5: 0.9, 1: 0.6, 4: 0.3}
    share = [({"flows.0.count": 1, "bottleneck.buffer_bdp": q},
              [_summary([_flow("bbr", "bbr", s * 10), _flow("cubic", "cubic", (1 - s) * 10)], {})])
             for q, s in measured.items()]
    _experiment(root, "seed004/share", 18, share, 1)
    cubic_shares = {1: 0.50, 5: 0.52, 9: 0.47}
    cubic = [({"flows.1.count": m}, [_summary([_flow("bbr", "bbr", s * 10)] +
                                              [_flow(f"cubic#{k}", "cubic", (1 - s) * 10 / m) for k in range(m)], {})])
             for m, s in cubic_shares.items()]
    _experiment(root, "seed004/cubic-count", 18, cubic, 1)
    loss = [({"bottleneck.loss_pct": p},
             [_summary([_flow("bbr", "bbr", s * 10), _flow("cubic", "cubic", (1 - s) * 10)], {})])
            for p, s in ((0, 0.4), (10, 0.7))]
    _experiment(root, "seed004/loss", 18, loss, 1)
    return {"measured": measured, "cubic": cubic_shares}


def test_report_from_fixed_results(tmp_path: Path) -> None:
    truth = _fake_tree(tmp_path)
    path = reproduce.report_only(tmp_path)
    text = path.read_text()
    assert "`bbrbench reproduce --profile quick` at revision `abc123`" in text
    # Table 4.1: the paper's 36.3% beside our 31% ± t(1) x sd / sqrt(2) over two repetitions.
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]
    row = next(r for r in rows if r[:2] == ["bbr", "20"])
    assert "36.3" in row and "31 ± 13 (n=2)" in row
    row = next(r for r in rows if r[:2] == ["rttgain_a0.5", "20"])
    assert "0.1" in row and "0.2 ± 0 (n=2)" in row
    assert "RTT-gain BBR cuts it to a small fraction (about 0.1%): **holds**" in text
    assert "not runnable: bottleneck.aqm = 'fq_codel'" in text
    summary = json.loads((tmp_path / "summary.json").read_text())
    # Seed 004: the L2 error the seed's way, against the model at the run's 18 s.
    model = [sharemodel.share_for_link(1, q, 10, 40, 18) for q in truth["measured"]]
    expected = math.sqrt(sum((m - o) ** 2 for m, o in zip(model, truth["measured"].values())))
    assert summary["experiments"]["seed004"]["l2"]["1"] == pytest.approx(expected, rel=1e-9)
    xs, ys = list(truth["cubic"]), list(truth["cubic"].values())
    cubic = summary["experiments"]["seed004"]["cubic_count"]
    assert cubic["pearson"] == pytest.approx(stats.pearson(xs, ys))
    assert cubic["regression"]["slope"] == pytest.approx(-0.00375)
    assert summary["experiments"]["seed004"]["loss"][0]["l1"] == pytest.approx(0.3)
    assert (tmp_path / "figures" / "seed004_share.png").stat().st_size > 1000
    assert (tmp_path / "figures" / "seed000_table4.1.png").is_file()


def test_regression_p_value_matches_known_quantiles() -> None:
    # By hand: b = 9/10, SSE = 1.9, se = sqrt(1.9 / 3 / 10), t = 3.576 with 3 df, which t tables put
    # between the two-sided 5% (3.182) and 2% (4.541) points: p = 0.0374.
    reg = stats.regression([0, 1, 2, 3, 4], [0.0, 2.0, 1.0, 3.0, 4.0])
    assert reg["slope"] == pytest.approx(0.9) and reg["n"] == 5
    assert reg["p"] == pytest.approx(0.0374, abs=1e-3)
    assert stats.regression([1, 1, 1], [1.0, 2.0, 3.0])["p"] is None


def test_paper_data_files_load_beside_their_scenarios(tmp_path: Path) -> None:
    keys = {e.key for e in reproduce.experiments()}
    specs = papers.specs()
    assert len(specs) == 16 and {s.key for s in specs} <= keys
    table41 = papers.spec_for("seed000/table4.1")
    assert table41 is not None and table41.paper[("bbr", 20, "total.retrans_rate")] == 36.3
    assert papers.seed004("share")["l2"][1] == 1.070
    broken = tmp_path / "x.paper.toml"
    broken.write_text('title = "t"\nmeasures = []\n[[claims]]\ntext = "c"\ncheck = "nosuch"\n')
    with pytest.raises(HarnessError, match="no check named 'nosuch'"):
        papers._load(broken)
