"""bbrbench reproduce: the scenario catalogue, --only, the report built from fixed fake results trees, its
rebuilds, and the load record."""

from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

import pytest

from bbrbench import sweep
from bbrbench.analysis import sharemodel, stats
from bbrbench.errors import HarnessError
from bbrbench.repro import claims, papers, points, readme, report, reproduce, seed004, timeseries
from bbrbench.repro.points import RecordedPoint
from bbrbench.results import write_json
from bbrbench.scenario import ScenarioError, prepare_raw, time_after_last_start_s
from bbrbench.testbed import system
from benchutil import run_cli
from reprofakes import fake_experiment, fake_flow, fake_summary, fake_tree, fig8_bbr1_bbr2, long_table41

BBRKIT = {"bbr1", "bbr_rttgain", "bbr_acd"}
# `make reproduce` must finish in about an hour; per-run set-up and tear-down measured at 2-4 s here.
QUICK_BUDGET_S = 3600
RUN_OVERHEAD_S = 4
# The standard profile: the whole catalogue in about 4.3 h (measured before the AQM experiments; about 5 h
# planned with them; 5.4 h since fig21-long's 145 s runs, which Tail Drop at 100 BDP needs), every
# run three of BBRv1's 10 s PROBE_RTT periods past the last flow's start (or the paper's run, if shorter), at
# least 3 repetitions.
STANDARD_BUDGET_S = 5.5 * 3600
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
        plan = sweep.plan_runs(prepare_raw(e.path, profile, []), catalog, [], None)
        assert plan.points, e.key


def _labelled(e: reproduce.Experiment, profile: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The experiment's raw scenario in `profile` and in the paper's, after checking that the profile's
    description names it and says "scaled" where it lowers the paper's rate."""
    raw, paper = prepare_raw(e.path, profile, []), prepare_raw(e.path, "paper", [])
    assert profile in raw["description"], e.key
    if raw["bottleneck"]["rate_mbit"] < paper["bottleneck"]["rate_mbit"]:
        assert "scaled" in raw["description"], f"{e.key}: rate scaled down without saying so"
    return raw, paper


def _planned_s(plan: sweep.Plan, raw: dict[str, Any]) -> float:
    """Wall time of a plan's runs, set-up and tear-down included."""
    return sum(plan.repetitions * (p.overrides.get("duration_s", raw["duration_s"]) + RUN_OVERHEAD_S)
               for p in plan.points)


def test_quick_profile_is_labelled_and_fits_the_hour(catalog: Any) -> None:
    total_s = 0.0
    for e in reproduce.experiments():
        quick, paper = _labelled(e, "quick")
        plan = sweep.plan_runs(quick, catalog, [], None)
        total_s += _planned_s(plan, quick)
        # The paper profile never runs shorter than the quick one (repetitions may be fewer: seed 002's
        # testbed and seed 004 report single runs).
        assert sweep.plan_runs(paper, catalog, [], None).duration_s >= plan.duration_s, e.key
    assert total_s <= QUICK_BUDGET_S, f"quick profile needs about {total_s / 60:.0f} min"


def test_standard_profile_is_long_enough_and_fits_the_budget(catalog: Any) -> None:
    total_s = 0.0
    for e in reproduce.experiments():
        standard, paper = _labelled(e, "standard")
        plan = sweep.plan_runs(standard, catalog, [], None)
        assert plan.repetitions >= STANDARD_MIN_REPS, e.key
        paper_after_s = time_after_last_start_s(paper)
        for point in plan.points:
            raw = sweep.point_raw(standard, point.overrides)
            # A completion-time run (sized flows) ends with its flows, not at a time scale of BBR's.
            if not any("bytes" in f for f in raw["flows"]):
                assert time_after_last_start_s(raw) >= min(PROBE_RTT_PERIODS_S, paper_after_s), \
                    f"{e.key} {point.label}"
        total_s += _planned_s(plan, standard)
    assert total_s <= STANDARD_BUDGET_S, f"standard profile needs about {total_s / 3600:.1f} h"


def test_reps_tops_up_an_experiment(catalog: Any) -> None:
    chosen = reproduce.select(reproduce.experiments(), ["seed000/table4.1"])
    (_, standard), = reproduce.plans(chosen, "standard")
    (_, more), = reproduce.plans(chosen, "standard", 5)
    assert (standard.repetitions, more.repetitions) == (3, 5)
    # The same sweep (raw scenario and points), so an existing results directory accepts it and only
    # the missing repetitions run.
    assert more.raw == standard.raw and [p.id for p in more.points] == [p.id for p in standard.points]


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


def test_report_from_fixed_results(tmp_path: Path) -> None:
    truth = fake_tree(tmp_path)
    path = reproduce.report_only(tmp_path)
    text = path.read_text()
    lines = text.splitlines()
    assert "smoke result" in lines[0] and lines[2].startswith("**Smoke result**")
    assert ("`bbrbench reproduce --profile quick` at revision `abc123`: t0 - t1, wall time 1.0 min, "
            "load 0.50-1.25-2.00 (2 samples), kernel 6.18.0, 2 CPUs") in text
    assert "needs n >= 3" in text and "so a missing effect fails" in text
    # Table 4.1: the paper's 36.3% beside our 31% ± t(1) x sd / sqrt(2) over two repetitions.
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]
    row = next(r for r in rows if r[:2] == ["bbr", "20 Mbit/s"])
    assert "36.3 (Table 4.1, p. 32)" in row and "31 ± 13 (n=2)" in row
    row = next(r for r in rows if r[:2] == ["rttgain_a0.5", "20 Mbit/s"])
    assert "0.1 (Table 4.1, p. 32)" in row and "0.2 ± 0 (n=2)" in row
    # 12 s runs whose second flow starts at 1.5 s are too short for a 30 s claim, whatever the means say.
    assert ("RTT-gain BBR retransmits around 0.1% (Table 4.1, p. 32: 0.1% in 5 of 6 cells, 1.7% at 50 Mbit/s with "
            "alpha 0.5; 'around 0.1% in most cases', p. 31): **not testable in this profile** (needs 30 s after the "
            "last flow starts, runs give 10.5 s — losses of both flows' start-up") in text
    assert "not runnable: bottleneck.aqm = 'fq_codel'" in text
    # Each experiment says how it ran in this profile, from its own plan, and over how many repetitions.
    assert "### Seed 000, Table 4.1" in text
    assert "Run here: test set-up, 12 s runs; the table's means are over 2 repetitions per point." in text
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["experiments"]["seed000/table4.1"]["setup"] == "test set-up, 12 s runs"
    claim = summary["experiments"]["seed000/table4.1"]["claims"][1]
    assert claim["needs_s"] == 30 and claim["verdict"]["outcome"] == "not testable"
    # Seed 004: the L2 error the seed's way for each BBR count, against the model at the run's 18 s.
    l2 = summary["experiments"]["seed004"]["l2"]
    for n in (1, 5):
        mine = {q: s for (k, q), s in truth["measured"].items() if k == n}
        model = [sharemodel.share_for_link(n, q, 10, 40, 18) for q in mine]
        expected = math.sqrt(sum((m - o) ** 2 for m, o in zip(model, mine.values())))
        assert l2[str(n)]["ours"] == pytest.approx(expected, rel=1e-9)
        assert l2[str(n)]["ours_rms"] == pytest.approx(expected / math.sqrt(len(mine)), rel=1e-9)
        row = next(r for r in rows if r[0] == str(n) and len(r) == 6)
        assert row[1] == f"{papers.section_data('seed004/share')['l2'][n]:.3f}" and row[3] == f"{expected:.3f}"
        assert row[5] == ", ".join(f"{q:g}" for q in mine)
    assert next(r for r in rows if r[0] == "9" and len(r) == 6)[3] == "not run in this profile"
    xs, ys = list(truth["cubic"]), list(truth["cubic"].values())
    cubic = summary["experiments"]["seed004"]["cubic_count"]
    assert cubic["pearson"] == pytest.approx(stats.pearson(xs, ys))
    assert cubic["regression"]["slope"] == pytest.approx(-0.00375)
    # The mechanism table, per CUBIC count from every run: CUBIC's summed cwnd over BBR's, and the share.
    assert cubic["mechanism"]["5"]["summed CUBIC / BBR cwnd"] == [pytest.approx(1.2)]
    assert cubic["mechanism"]["9"]["cwnd per CUBIC flow"] == [pytest.approx(30 / 9)]
    assert cubic["mechanism"]["9"]["BBR share %"] == [pytest.approx(0.47)]
    assert "Why the CUBIC count matters" in text
    # A section drawn from several experiments names the invocations that produced it, as an experiment's does,
    # and its claims carry their second-margin verdict and their declared n.
    seed004_text = text.split("### Seed 004: BBR's share against CUBIC, model vs measured\n\n", 1)[1]
    assert seed004_text.startswith("Produced by `bbrbench reproduce --profile quick` at `abc123`, t0.")
    count_claim = summary["experiments"]["seed004"]["claims"][0]
    assert count_claim["wide"]["rule"].startswith("inside ±0.1 ") and count_claim["n"] == 3
    assert "(n declared for the next run: 3.)" in seed004_text
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
    assert len(specs) == 19 and {s.key for s in specs} <= keys
    table41 = papers.spec_for("seed000/table4.1")
    assert table41 is not None and table41.paper[("bbr", 20, "total.retrans_rate")] == 36.3
    assert papers.section_data("seed004/share")["l2"][1] == 1.070
    broken = tmp_path / "x.paper.toml"
    claim = 'title = "t"\nmeasures = []\n[[claims]]\ntext = "c"\nneeds_s = 1\nwhy = "w"\nmargin = "m"\n'
    broken.write_text(claim + 'check = "nosuch"\nband = [0, 1]\n')
    with pytest.raises(HarnessError, match="no check named 'nosuch'"):
        papers._load(broken)
    broken.write_text('title = "t"\nmeasures = []\n[[claims]]\ntext = "c"\ncheck = "original_goodput"\n')
    with pytest.raises(HarnessError, match="claims\\[0\\]: missing needs_s, why, margin"):
        papers._load(broken)
    broken.write_text(claim + 'check = "original_goodput"\n')
    with pytest.raises(HarnessError, match="claims\\[0\\]: a claim decides by exactly one of band"):
        papers._load(broken)
    # Every claim carries its time scale.
    assert all(c.needs_s > 0 and c.why for s in specs for c in s.claims)


def test_transcriptions_match_the_seed_texts() -> None:
    """Values an audit of the transcriptions found misplaced stay where the texts put them; every paper value says
    where it comes from."""
    def paper(key: str) -> dict[tuple[str, Any, str], Any]:
        spec = papers.spec_for(key)
        assert spec is not None and set(spec.refs) == set(spec.paper)
        return spec.paper

    rtt = "total.rtt_ms_mean"
    fig9 = paper("seed001/fig9")
    # The text's 300 ms and 60 ms are Fig 9(a)'s, two flows; ten flows: 50-75 ms, CUBIC lower than with two.
    assert fig9[("cubic", (2, 10), rtt)] == 300 and fig9[("bbr1", (10, 10), rtt)] == "50-75"
    assert ("cubic", (10, 10), rtt) in fig9 and fig9[("cubic", (10, 10), rtt)] != 300
    fig10 = paper("seed001/fig10")
    # 900 and 600 Mbit/s are the 0.1 BDP panel's; at 1 BDP BBRv2 falls to 800 at 1% and collapses at 10%.
    assert fig10[("bbr1", (0.1, 10), "total.utilisation")] == 60 and fig10[("bbr2", (1, 1), "total.utilisation")] == 80
    assert fig10[("bbr2", (1, 10), "total.utilisation")] == "collapses"
    assert not any(v == "60-90" for v in fig10.values())
    fig14 = paper("seed001/fig14-15")
    assert fig14[("bbr1", 5, "total.jain")] == 60 and ("bbr1", 1, "derived.share.rtt50") not in fig14
    fig16 = paper("seed001/fig16")
    assert ("bbr1", 0.1, "total.fct_mean_s") not in fig16 and ("bbr1", 1, "total.fct_mean_s") in fig16
    fig11 = paper("seed001/fig11-12")
    assert fig11[("", (0.1, None, None, None), "algo.bbr1.share")] == 90
    table31 = paper("seed000/table3.1")
    assert "no average" in table31[("bbr", (None, None, 1), rtt)]
    sim = paper("seed002/simulation")
    assert "not retransmissions" in sim[("bbr", None, "total.retrans_rate")]
    assert isinstance(sim[("bbr", None, "derived.throughput_mbps")], str)


def test_coverage_lists_every_experiment_and_names_only_real_ones() -> None:
    """The overview's data: every experiment of the catalogue decides some table or figure (a section's through
    its key), and every entry either names experiments or says why it is not reproduced."""
    keys = {e.key for e in reproduce.experiments()}
    rendered = {papers.section_of(k) or k for k in keys} | {f"{f['seed']}/timeseries" for f in timeseries.figures()}
    listed = {k for c in papers.coverage() for k in c.experiments}
    assert listed == rendered
    assert all(c.experiments or c.not_reproduced for c in papers.coverage())
    assert {c.seed for c in papers.coverage()} == {k.partition("/")[0] for k in keys}


def test_overview_counts_the_verdicts_of_the_claims_on_each_item() -> None:
    experiments = {"seed001/fig14-15": {"claims": [
        {"claim": "x (Fig 14(a))", "verdict": {"outcome": "holds"}},
        {"claim": "y (Fig 14(b))", "verdict": {"outcome": "too few runs"}}]},
        "seed001/fig14-15-fqcodel": {"claims": [
            {"claim": "z (Fig 14(c, d))", "verdict": {"outcome": "does not hold"}, "n": 5},
            {"claim": "w (Fig 15(b))", "verdict": {"outcome": "holds"}}]}}
    sources = {"seed001/fig14-15": {"": {"folder": "data/a", "runs": []}},
               "seed001/fig14-15-fqcodel": {"": {"folder": "data/b", "runs": []}}}
    text = "\n".join(report.overview_lines({"meta": {"profile": "standard"}, "experiments": experiments,
                                            "sources": sources}))
    rows = {r[0]: r for r in ([c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
                              if line.startswith("| Fig"))}
    fig14 = rows["Fig 14 (RTT unfairness, Tail Drop and FQ-CoDel)"]
    assert fig14[1:4] == ["holds 1, does not hold 1, too few runs 1", "`data/a/`, `data/b/`",
                          "`bbrbench -q reproduce --profile standard --only seed001/fig14-15 --only "
                          "seed001/fig14-15-fqcodel --reps 5 --out results/rerun-seed001-fig14-15`"]
    assert rows["Fig 15 (retransmissions, Tail Drop and FQ-CoDel)"][1:3] == ["holds 1", "`data/b/`"]
    assert rows["Fig 22 (CUBIC with fixed-rate pacing)"][1:4] == ["not reproduced", "-", "-"]
    assert rows["Fig 8 (retransmissions vs flow count)"][1] == "not reproduced"
    assert "All claims: holds 2, does not hold 1, too few runs 1." in text


def test_points_that_would_read_alike_are_told_apart() -> None:
    """Fig 21's table once showed the same AQM twice: points of one series and x get the overrides that differ."""
    spec = papers.spec_for("seed001/fig21")
    assert spec is not None
    points = [RecordedPoint({"bottleneck.aqm": "fq_codel", "bottleneck.buffer_bdp": 1, "flows.*.algo": a}, "", "",
                            35, {}) for a in ("bbr1", "cubic")]
    assert report._row_names(report.Results(spec, points)) == ["fq_codel, 1 BDP (flows.*.algo=bbr1)",
                                                               "fq_codel, 1 BDP (flows.*.algo=cubic)"]


def test_report_sections_render_the_experiments_their_data_names() -> None:
    """Seed 004's experiments have no generic table: their data files name the section that renders them, and
    every section a data file names is registered."""
    keys = {e.key for e in reproduce.experiments()}
    named = {k: papers.section_of(k) for k in keys}
    assert {k for k, s in named.items() if s} == {"seed004/share", "seed004/share-long", "seed004/cubic-count",
                                                   "seed004/loss"}
    assert set(named.values()) - {None} <= {s.key for s in report.SECTIONS}
    assert all(papers.spec_for(k) is None for k, s in named.items() if s)


def test_time_after_last_start_from_the_scenarios() -> None:
    root = reproduce.REPRO_DIR
    quick = prepare_raw(root / "seed000" / "fig4.12.toml", "quick", [])
    # 12 s runs, flows 1.5 s apart: two flows leave 10.5 s, six 4.5 s.
    assert time_after_last_start_s(sweep.point_raw(quick, {"flows.0.count": 2})) == 10.5
    assert time_after_last_start_s(sweep.point_raw(quick, {"flows.0.count": 6})) == 4.5
    # Seed 002's second sender starts five flows 1 s apart at 8 s (quick) or 55 s (paper).
    assert time_after_last_start_s(prepare_raw(root / "seed002" / "testbed.toml", "quick", [])) == 8
    assert time_after_last_start_s(prepare_raw(root / "seed002" / "testbed.toml", "paper", [])) == 241
    assert time_after_last_start_s({"flows": [{"algo": "bbr"}]}) == 30


def test_report_decides_on_long_runs(tmp_path: Path) -> None:
    long_table41(tmp_path)
    text = reproduce.report_only(tmp_path).read_text()
    assert text.startswith("# Reproduction of the seed papers' experiments\n") and "Smoke" not in text
    assert "wall time -, load not recorded" in text
    assert "Claims (runs go on for 57 s after their last flow starts):" in text
    assert ("Original BBR's retransmission rate is extremely large: 36.3% at 20 Mbit/s, 28.4% at 50, 20.8% at 200 "
            "(Table 4.1, p. 32): **holds** on Linux here: 20 Mbit/s, original retransmissions, steady state: mean "
            "35 ± 2.5% (95% CI, n = 3) inside [29%, 45.4%]") in text
    # 0.1% held to the paper's size, x/÷ 1.25, whatever the run's length.
    assert "mean 0.11 ± 0.025% (95% CI, n = 3) straddles an edge of [0.08%, 0.125%]" in text
    verdicts = [c["verdict"]["outcome"] for c in
                json.loads((tmp_path / "summary.json").read_text())["experiments"]["seed000/table4.1"]["claims"]]
    # Fig 4.4's claim reads the RTT, which these runs do not record.
    assert verdicts == ["holds", "undecided", "holds", "too few runs"]


def test_rebuilt_from_its_summary_the_report_decides_as_the_runs_do(tmp_path: Path) -> None:
    """From summary.json alone (no runs): the same tables and verdicts, the meta saying what it was rebuilt
    from; a measure the summary did not record is not measured."""
    runs, again = tmp_path / "runs", tmp_path / "again"
    runs.mkdir()
    long_table41(runs)
    reproduce.report_only(runs)
    first = json.loads((runs / "summary.json").read_text())
    res = run_cli("reproduce", "--from-summary", str(runs / "summary.json"), "--out", str(again))
    assert res.returncode == 0, res.stderr
    rebuilt = json.loads((again / "summary.json").read_text())
    assert rebuilt["meta"]["rebuilt_from"] == [str(runs / "summary.json")]
    assert rebuilt["experiments"]["seed000/table4.1"]["claims"] == first["experiments"]["seed000/table4.1"]["claims"]
    # Every repetition's value travels with the summary, into the rebuilt one too.
    for doc in (first, rebuilt):
        for point in doc["experiments"]["seed000/table4.1"]["points"]:
            for stat in filter(None, point["metrics"].values()):
                assert len(stat["values"]) == stat["n"]
                assert stat["mean"] == pytest.approx(sum(stat["values"]) / stat["n"])
    text = (again / "report.md").read_text()
    assert "Rebuilt from " in text and (again / "figures" / "seed000_table4.1.png").is_file()
    # Drop a measure from the record: its claim is no longer measured.
    for point in first["experiments"]["seed000/table4.1"]["points"]:
        point["metrics"].pop("steady.retrans_rate")
    (runs / "summary.json").write_text(json.dumps(first))
    reproduce.rebuild([runs / "summary.json"], again)
    claim = json.loads((again / "summary.json").read_text())["experiments"]["seed000/table4.1"]["claims"][0]
    assert claim["verdict"]["outcome"] == "too few runs" and "not measured" in claim["verdict"]["text"]
    with pytest.raises(HarnessError, match="no such summary.json"):
        reproduce.rebuild([tmp_path / "nothing.json"], again)


def test_a_metric_only_a_claim_reads_is_recorded_for_the_rebuild(tmp_path: Path) -> None:
    """Fig 4.7's claim reads the RTT's 95th percentile, which Table 3.2's table does not show: the summary
    records it at the point the claim read, so that the report rebuilt from it decides the claim as the
    runs did instead of finding it not measured."""
    runs, again = tmp_path / "runs", tmp_path / "again"
    runs.mkdir()
    (runs / "meta.json").write_text(json.dumps({"profile": "standard", "runs": [
        {"command": "bbrbench reproduce", "revision": "abc", "started": "t0"}]}))
    reps = [fake_summary([fake_flow("rttgain_a1", "bbr_rttgain", 9.0)], {"rtt_ms_mean": 77.0, "rtt_ms_p95": p95})
            for p95 in (99.0, 100.0, 101.0)]
    fake_experiment(runs, "seed000/table3.2", 45, [({"senders.0.rtt_ms": 60}, reps)], 3,
                [{"algo": "bbr_rttgain", "count": 2, "start_step_s": 3}])
    reproduce.report_only(runs)
    first = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table3.2"]
    assert first["points"][0]["metrics"]["total.rtt_ms_p95"]["values"] == [99.0, 100.0, 101.0]
    peak = next(c for c in first["claims"] if "Fig 4.7" in c["claim"])
    assert peak["verdict"]["outcome"] == "does not hold"
    reproduce.rebuild([runs / "summary.json"], again)
    rebuilt = json.loads((again / "summary.json").read_text())["experiments"]["seed000/table3.2"]
    assert rebuilt["claims"] == first["claims"]


def test_a_record_pooled_before_the_trust_check_is_labelled_in_the_rebuild(tmp_path: Path) -> None:
    """--trust-unchecked: the points of a summary that pooled runs before the report left out untrusted ones say
    so in their status, every claim over them in its verdict's notes and the README overview, and a rebuild
    from the rebuilt summary keeps the label; the verdicts themselves stay as the numbers decide them."""
    runs, again, third = tmp_path / "runs", tmp_path / "again", tmp_path / "third"
    runs.mkdir()
    long_table41(runs)
    reproduce.report_only(runs)
    first = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]
    res = run_cli("reproduce", "--from-summary", str(runs / "summary.json"), "--trust-unchecked",
                  str(runs / "summary.json"), "--out", str(again))
    assert res.returncode == 0, res.stderr
    for out in (again, reproduce.rebuild([again / "summary.json"], third).parent):
        exp = json.loads((out / "summary.json").read_text())["experiments"]["seed000/table4.1"]
        assert all(p["status"] == "3/3 repetitions (not trust-checked)" for p in exp["points"]), exp["points"]
        assert [c["verdict"] for c in exp["claims"]] == [c["verdict"] for c in first["claims"]]
        decided = [c for c in exp["claims"] if c["verdict"]["outcome"] != "too few runs"]
        assert decided and all(c.get("trust_unchecked") for c in decided)
        assert "(Runs not trust-checked: pooled before the report left out runs" in (out / "report.md").read_text()
    overview = "\n".join(readme.readme_overview(json.loads((again / "summary.json").read_text()), "s.json"))
    assert "runs not trust-checked" in overview
    # Unlabelled, the same record reads as checked.
    reproduce.rebuild([runs / "summary.json"], third)
    exp = json.loads((third / "summary.json").read_text())["experiments"]["seed000/table4.1"]
    assert not any("not trust-checked" in p["status"] for p in exp["points"])
    assert not any(c.get("trust_unchecked") for c in exp["claims"])
    with pytest.raises(HarnessError, match="--trust-unchecked names no --from-summary file"):
        reproduce.rebuild([runs / "summary.json"], third, [again / "summary.json"])

def test_a_run_that_failed_the_link_trust_check_is_never_pooled(tmp_path: Path) -> None:
    """As a sweep does: a repetition the trust check failed is left out of the table, the
    verdicts and the time series, counted in the status and listed with its reasons, in the report and in a
    report rebuilt from its summary."""
    runs, again = tmp_path / "runs", tmp_path / "again"
    runs.mkdir()
    long_table41(runs)
    reproduce.report_only(runs)
    trusted = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]
    # A fourth repetition of original BBR that would pull its steady-state mean far off, failed by the check.
    exp = runs / "seed000/table4.1"
    plan = json.loads((exp / "plan.json").read_text())
    plan["repetitions"] = 4
    (exp / "plan.json").write_text(json.dumps(plan))
    rd = exp / "points" / "p0" / "rep3"
    rd.mkdir()
    why = "departures over 200 us late: 6927 (2.42%, over 0.1%)"
    write_json(rd / "summary.json", "summary", {
        **fake_summary([fake_flow("bbr", "bbr", 9.0)], {"retrans_rate": 0.9}, {"retrans_rate": 0.9}),
        "trust": {"ok": False, "failed": [why]}})
    (rd / sweep.DONE_MARK).write_text("")
    text = reproduce.report_only(runs).read_text()
    summary = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]
    assert summary["claims"] == trusted["claims"]
    assert summary["points"][0]["metrics"] == trusted["points"][0]["metrics"]
    assert summary["points"][0]["status"] == "3/4 repetitions (1 failed the trust check, not pooled)"
    assert summary["points"][0]["untrusted_runs"] == [{"rep": 3, "failed": [why]}]
    listed = f"- flows.0.label=bbr, bottleneck.rate_mbit=20, rep 3: {why}"
    assert "1 run(s) that failed the trust check" in text and listed in text
    assert [r.name for r in points.trusted_reps(exp / "points" / "p0", 4)] == ["rep0", "rep1", "rep2"]
    reproduce.rebuild([runs / "summary.json"], again)
    rebuilt = json.loads((again / "summary.json").read_text())["experiments"]["seed000/table4.1"]
    assert rebuilt["points"][0]["untrusted_runs"] == [{"rep": 3, "failed": [why]}]
    assert listed in (again / "report.md").read_text()
    # Too few runs says why: two of a point's three runs failed the trust check (which check: the delay line's
    # added delay for one, late departures for the other), so one is left ...
    delay_line = ("delay line of sender s1, data direction: added delay p99 1900 us against a base RTT of 10 ms "
                  "(over 1000 us): the path's delay is not the configured one")
    for r, failed in ((0, why), (1, delay_line)):
        rep = exp / "points" / "p2" / f"rep{r}" / "summary.json"
        write_json(rep, "summary", {**json.loads(rep.read_text()), "trust": {"ok": False, "failed": [failed]}})
    reproduce.report_only(runs)
    claims_ = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]["claims"]
    assert claims_[1]["verdict"]["outcome"] == "too few runs"
    assert "rttgain_a0.5 retransmissions, whole run: not decided: n = 1, needs 3: 2 more run(s) failed the trust " \
        "check (departures over 200 us late; delay line of sender s1, data direction: added delay p99)" \
        in claims_[1]["verdict"]["text"]
    # ... and a point whose every run failed stays in the claims over it, not measured: a claim over both
    # RTT-gain points cannot hold on alpha 0.75's alone.
    rep = exp / "points" / "p2" / "rep2" / "summary.json"
    write_json(rep, "summary", {**json.loads(rep.read_text()), "trust": {"ok": False, "failed": [why]}})
    reproduce.report_only(runs)
    claims_ = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]["claims"]
    assert [c["verdict"]["outcome"] for c in claims_] == ["holds", "too few runs", "too few runs", "too few runs"]
    # ... and says why: not a measure the record lacks, but every run failing the trust check, and which.
    assert "rttgain_a0.5 retransmissions, whole run: not measured: every run (3) failed the trust check " \
        "(departures over 200 us late; delay line of sender s1, data direction: added delay p99)" \
        in claims_[1]["verdict"]["text"]
    # Fewer runs made, none failed: said so.
    for r in range(3):
        rep = exp / "points" / "p2" / f"rep{r}" / "summary.json"
        write_json(rep, "summary", {k: v for k, v in json.loads(rep.read_text()).items() if k != "trust"})
    (exp / "points" / "p2" / "rep2" / sweep.DONE_MARK).unlink()
    reproduce.report_only(runs)
    claims_ = json.loads((runs / "summary.json").read_text())["experiments"]["seed000/table4.1"]["claims"]
    assert "rttgain_a0.5 retransmissions, whole run: not decided: n = 2, needs 3: fewer runs were made" \
        in claims_[1]["verdict"]["text"]


def test_a_partial_seed004_summary_replaces_only_the_parts_it_ran() -> None:
    """`--only seed004/cubic-count --only seed004/loss` records an empty share grid: rebuilt after a whole
    run, the report keeps that run's grid and takes the new CUBIC count, its claim and the loss rows."""
    whole = {"share": [{"n_bbr": 1}], "l2": {"1": {"ours": 0.4}}, "durations_s": [60.0],
             "cubic_count": {"points": [[1.0, 0.8]]}, "loss": [{"loss_pct": 1}], "loss_free": None, "claims": ["old"]}
    partial = {"share": [], "l2": {}, "durations_s": [], "cubic_count": {"points": [[1.0, 0.7]]},
               "loss": [{"loss_pct": 1, "share": {"mean": 0.8}}], "loss_free": {"mean": 0.78}, "claims": ["new"]}
    merged = seed004.merge_recorded(whole, partial)
    assert (merged["share"], merged["l2"], merged["durations_s"]) == (whole["share"], whole["l2"], [60.0])
    assert (merged["cubic_count"], merged["claims"]) == (partial["cubic_count"], ["new"])
    assert (merged["loss"], merged["loss_free"]) == (partial["loss"], partial["loss_free"])
    grid_only = {**partial, "share": [{"n_bbr": 5}], "l2": {"5": {}}, "cubic_count": {"points": []}, "loss": [],
                 "loss_free": None}
    merged = seed004.merge_recorded(whole, grid_only)
    assert merged["share"] == [{"n_bbr": 5}] and merged["claims"] == ["old"]
    assert (merged["cubic_count"], merged["loss"]) == (whole["cubic_count"], whole["loss"])


def test_report_pools_hosts_only_as_a_sweep_does(tmp_path: Path) -> None:
    """Repetitions of one point from two builds of the same BPF objects pool; from other objects, only with
    --mix-hosts; a refusal leaves the earlier report as it was."""
    (tmp_path / "meta.json").write_text(json.dumps({"profile": "standard", "runs": [
        {"command": "bbrbench reproduce", "revision": "abc", "started": "t0"}]}))
    reps = [fake_summary([fake_flow("bbr", "bbr", 9.0)], {"retrans_rate": r}) for r in (0.30, 0.31, 0.32)]
    fake_experiment(tmp_path, "seed000/table4.1", 60, [({"flows.0.label": "bbr"}, reps)], 3)
    run_dirs = sorted((tmp_path / "seed000/table4.1/points/p0").iterdir())

    def hosts(*objects: str) -> None:
        for run_dir, sha in zip(run_dirs, objects):
            write_json(run_dir / "host.json", "host", {"hostname": "vm", "kernel": "6.18.1", "cpus": 2,
                                                       "objects_sha256": sha, "algorithms_sha256": run_dir.name})

    hosts("ab", "ab", "ab")
    assert "(n=3)" in reproduce.report_only(tmp_path).read_text()
    hosts("ab", "ab", "cd")
    before = (tmp_path / "report.md").read_text()
    with pytest.raises(HarnessError, match="--mix-hosts"):
        reproduce.report_only(tmp_path)
    assert (tmp_path / "report.md").read_text() == before
    assert "(n=3)" in reproduce.report_only(tmp_path, mix_hosts=True).read_text()


def test_per_n_l2() -> None:
    rows = [{"n_bbr": n, "queue_bdp": q, "model": m, "measured": {"mean": o, "ci95": None, "n": 1} if o else None}
            for n, q, m, o in ((1, 1, 1.0, 0.6), (1, 4, 0.6, 0.3), (5, 1, 1.0, 0.8), (5, 4, 0.7, None))]
    per_n = seed004.per_n_l2(rows)
    assert per_n[1].l2 == pytest.approx(0.5) and per_n[1].queues_bdp == [1, 4]
    assert per_n[1].rms == pytest.approx(0.5 / math.sqrt(2))
    assert per_n[5].l2 == pytest.approx(0.2) and per_n[5].queues_bdp == [1]


# ---------------------------------------------------------------- load record


def test_load_sampler_records_min_mean_max() -> None:
    readings = iter([0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5])
    sampler = reproduce.LoadSampler(interval_s=0.01, read=lambda: next(readings, 7.0))
    sampler.start()
    while len(sampler.samples) < 3:
        time.sleep(0.005)
    sampler.stop()
    rec = sampler.record()
    loads = [v for _, v in rec["samples"]]
    assert len(loads) >= 4 and loads[:3] == [0.5, 1.5, 2.5]
    assert rec["min"] == 0.5 and rec["max"] == max(loads) and rec["mean"] == pytest.approx(sum(loads) / len(loads))
    assert [t for t, _ in rec["samples"]] == sorted(t for t, _ in rec["samples"])


def test_run_all_records_load_kernel_and_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def sweep_that_waits(*_: Any) -> str:
        time.sleep(0.05)
        return ""

    monkeypatch.setattr(system, "catalog", lambda: None)
    empty = sweep.Plan(name="t", raw={}, points=[], repetitions=1, metrics=[], duration_s=1)
    monkeypatch.setattr(reproduce, "plans", lambda selected, profile, reps=None: [(selected[0], empty)])
    monkeypatch.setattr(sweep, "run_sweep", sweep_that_waits)
    monkeypatch.setattr(reproduce, "report_only", lambda out, mix_hosts=False: out / "report.md")
    sampler = reproduce.LoadSampler
    monkeypatch.setattr(reproduce, "LoadSampler", lambda: sampler(interval_s=0.01, read=lambda: 1.0))
    reproduce.run_all("quick", ["seed000/table4.1"], tmp_path, tmp_path, "bbrbench reproduce")
    run = json.loads((tmp_path / reproduce.META).read_text())["runs"][0]
    assert run["kernel"] == platform.release() and run["cpus"] == os.cpu_count()
    assert run["load_1min"]["interval_s"] == 0.01 and len(run["load_1min"]["samples"]) >= 3
    assert run["load_1min"]["min"] == run["load_1min"]["max"] == 1.0 and "finished" in run
    assert "load 1.00-1.00-1.00" in "\n".join(report.provenance_lines({"profile": "quick", "runs": [run]}))


def test_a_failed_invocation_still_records_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def sweep_that_fails(*_: Any) -> str:
        raise HarnessError("point (x): repetitions ran on hosts whose kernels or algorithm objects differ")

    monkeypatch.setattr(system, "catalog", lambda: None)
    empty = sweep.Plan(name="t", raw={}, points=[], repetitions=1, metrics=[], duration_s=1)
    monkeypatch.setattr(reproduce, "plans", lambda selected, profile, reps=None: [(selected[0], empty)])
    monkeypatch.setattr(sweep, "run_sweep", sweep_that_fails)
    with pytest.raises(HarnessError):
        reproduce.run_all("quick", ["seed000/table4.1"], tmp_path, tmp_path, "bbrbench reproduce")
    run = json.loads((tmp_path / reproduce.META).read_text())["runs"][0]
    assert "finished" in run and run["elapsed_s"] >= 0 and "samples" in run["load_1min"]


def test_each_experiment_of_a_merged_summary_keeps_its_invocation(tmp_path: Path) -> None:
    """A rebuilt report lists, per experiment, the invocations that produced it: those its summary keeps, else
    those of its summary's meta whose --only covers it."""
    runs = tmp_path / "runs"
    runs.mkdir()
    long_table41(runs)
    reproduce.report_only(runs)
    doc = json.loads((runs / "summary.json").read_text())
    other = {"command": "bbrbench reproduce --only seed001", "only": ["seed001"], "revision": "abc",
             "started": "2026-11-25 10:00:00 UTC"}
    doc["meta"]["runs"].append(other)
    (runs / "summary.json").write_text(json.dumps(doc))
    out = tmp_path / "again"
    reproduce.rebuild([runs / "summary.json"], out)
    merged = json.loads((out / "summary.json").read_text())
    kept = merged["invocations"]["seed000/table4.1"]
    assert kept and all(r["command"] != other["command"] for r in kept)
    assert report.covers(other, "seed001/fig8") and not report.covers(other, "seed000/table4.1")
    assert report.covers({"only": ["seed004/loss"]}, "seed004") and not report.covers({"only": ["seed004/loss"]},
                                                                                        "seed004/share")
    assert "Produced by `" in (out / "report.md").read_text()
    # A later summary of the same experiment replaces its invocations too; rebuilt again from that merged
    # summary, whose meta lists both runs, the per-experiment record travels, not the whole meta.
    later = json.loads((runs / "summary.json").read_text())
    rerun = {"command": "bbrbench reproduce --only seed000 --reps 5", "only": ["seed000"], "revision": "def",
             "started": "2026-11-26 10:00:00 UTC"}
    later["meta"]["runs"] = [rerun]
    later.pop("invocations")
    (tmp_path / "later.json").write_text(json.dumps(later))
    merged_path = tmp_path / "merged"
    reproduce.rebuild([runs / "summary.json", tmp_path / "later.json"], merged_path)
    assert json.loads((merged_path / "summary.json").read_text())["invocations"]["seed000/table4.1"] == \
        [report.invocation(rerun)]
    again = tmp_path / "third"
    reproduce.rebuild([merged_path / "summary.json"], again)
    assert json.loads((again / "summary.json").read_text())["invocations"]["seed000/table4.1"] == \
        [report.invocation(rerun)]


def test_a_rebuild_keeps_the_time_series_figures_a_later_summary_did_not_run(tmp_path: Path) -> None:
    """As in the 2026-11-26 reruns: a summary of seed000/table4.1 alone holds only Fig 4.9 of seed 000's time series.
    Added to the build, it replaces that figure and keeps Figs 4.1 and 4.3 from the earlier summary, whose
    invocation the section keeps beside the rerun's."""
    def summary(name: str, started: str, items: list[str]) -> Path:
        figs = {}
        for item in items:
            fig = next(f for f in timeseries.figures() if f["item"] == item)
            figs[item] = {"title": fig["title"], "figure": None, "drawn_from": None, "claims": [
                {"claim": f"{fig['claims'][0]['claim']} [margin: {claims.Rule.from_data(fig['claims'][0]).describe()}]",
                 "verdict": {"outcome": "undecided", "text": f"{name}", "min_n": None}}]}
        run = {"command": f"bbrbench reproduce {name}", "revision": "abc", "started": started}
        doc = {"meta": {"profile": "standard", "runs": [run]},
               "experiments": {"seed000/timeseries": {"claims": [c for f in figs.values() for c in f["claims"]],
                                                      "figures": figs}},
               "invocations": {"seed000/timeseries": [run]}}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        return path
    earlier = summary("first", "t0", ["Fig 4.1", "Fig 4.3", "Fig 4.9"])
    later = summary("rerun", "t1", ["Fig 4.9"])
    reproduce.rebuild([earlier, later], tmp_path / "out")
    merged = json.loads((tmp_path / "out" / "summary.json").read_text())
    figs = merged["experiments"]["seed000/timeseries"]["figures"]
    assert list(figs)[:3] == ["Fig 4.1", "Fig 4.3", "Fig 4.9"]
    assert figs["Fig 4.1"]["claims"][0]["verdict"]["text"] == "first"
    assert figs["Fig 4.9"]["claims"][0]["verdict"]["text"] == "rerun"
    assert [r["started"] for r in merged["invocations"]["seed000/timeseries"]] == ["t0", "t1"]
    text = (tmp_path / "out" / "report.md").read_text()
    assert "### Time series\n\nProduced by `bbrbench reproduce first` at `abc`, t0; `bbrbench reproduce rerun`" in text
    # Once later summaries hold every figure, the first gives no value shown, and the section no longer
    # cites its runs; each figure names the folder it comes from, and a rebuild of the rebuilt summary keeps it.
    (tmp_path / "b").mkdir()
    rest = summary("b/rest", "t2", ["Fig 4.1", "Fig 4.3"])
    reproduce.rebuild([earlier, later, rest], tmp_path / "out")
    merged = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [r["started"] for r in merged["invocations"]["seed000/timeseries"]] == ["t1", "t2"]
    assert {item: part["folder"] for item, part in merged["sources"]["seed000/timeseries"].items()} == \
        {"Fig 4.1": str(tmp_path / "b"), "Fig 4.3": str(tmp_path / "b"), "Fig 4.9": str(tmp_path)}
    reproduce.rebuild([tmp_path / "out" / "summary.json"], tmp_path / "again")
    assert json.loads((tmp_path / "again" / "summary.json").read_text())["sources"] == merged["sources"]


def test_verdicts_over_bbr2_runs_name_their_loss_decision_path(tmp_path: Path) -> None:
    """A verdict that reads bbr2, bbr3 or bbr_draft runs names the loss-decision path their host.json recorded
    (bbrctl list while attached), "not recorded" where it has none; one over bbr1 alone names none. Rebuilt
    from a summary written before points carried the path, the scenario names the algorithm: "not recorded"."""
    runs, again = tmp_path / "runs", tmp_path / "again"
    fig8_bbr1_bbr2(runs)
    for rep in (runs / "seed001/fig8/points/p2").glob("rep*"):  # bbr2, one flow
        write_json(rep / "host.json", "host", {"bbrkit_attachments": {"bbr2": {"loss_decisions": "per-packet"}}})
    text = reproduce.report_only(runs).read_text()
    summary = json.loads((runs / "summary.json").read_text())
    fig8 = summary["experiments"]["seed001/fig8"]
    paths = [c.get("loss_decisions") for c in fig8["claims"]]
    # BBRv1 alone; BBRv2 at one flow; BBRv2 at every flow count it reads; BBRv2 at ten flows.
    assert paths == [None, {"bbr2": "per-packet"}, {"bbr2": "not recorded/per-packet"}, {"bbr2": "not recorded"}]
    assert [line for line in text.splitlines() if "Loss decisions" in line] == [
        "  (Loss decisions: bbr2 (per-packet).)", "  (Loss decisions: bbr2 (not recorded/per-packet).)",
        "  (Loss decisions: bbr2 (not recorded).)"]
    reproduce.rebuild([runs / "summary.json"], again)
    assert json.loads((again / "summary.json").read_text())["experiments"]["seed001/fig8"]["claims"] == fig8["claims"]
    for point in fig8["points"]:
        point.pop("loss_decisions", None)
    (runs / "summary.json").write_text(json.dumps(summary))
    reproduce.rebuild([runs / "summary.json"], again)
    rebuilt = json.loads((again / "summary.json").read_text())["experiments"]["seed001/fig8"]["claims"]
    assert [c.get("loss_decisions") for c in rebuilt] == [None] + [{"bbr2": "not recorded"}] * 3
