"""bbrbench reproduce: the scenario catalogue, --only, and the report built from a fixed fake results tree."""

from __future__ import annotations

import json
import math
import os
import platform
import re
import time
from pathlib import Path
from typing import Any

import pytest

from bbrbench import sweep
from bbrbench.analysis import sharemodel, stats
from bbrbench.errors import HarnessError
from bbrbench.repro import claims, papers, points, quantities, readme, report, reproduce, seed004, timeseries
from bbrbench.repro.claims import Outcome, Stat
from bbrbench.repro.points import RecordedPoint
from bbrbench.results import write_json
from bbrbench.scenario import ScenarioError, prepare_raw, time_after_last_start_s
from bbrbench.testbed import system
from benchutil import run_cli

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


# ---------------------------------------------------------------- fake results


def _summary(flows: list[dict[str, Any]], total: dict[str, Any],
             steady: dict[str, Any] | None = None) -> dict[str, Any]:
    goodput = sum(f["goodput_mbps"] for f in flows)
    by_algo: dict[str, Any] = {}
    for f in flows:
        a = by_algo.setdefault(f["algo"], {"flows": 0, "goodput_mbps": 0.0})
        a["flows"] += 1
        a["goodput_mbps"] += f["goodput_mbps"]
    for a in by_algo.values():
        a["share"] = a["goodput_mbps"] / goodput
    return {"flows": flows, "total": total, "steady": steady or {}, "by_algo": by_algo}


def _flow(label: str, algo: str, goodput: float, sent: int = 1_448_000, retrans: int = 0) -> dict[str, Any]:
    return {"label": label, "algo": algo, "goodput_mbps": goodput, "bytes_sent": sent, "bytes_retrans": retrans}


def _raw(duration_s: float, flows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A plan's base scenario as far as the report reads it: its description, the run time and the flows'
    starts."""
    return {"description": f"test set-up, {duration_s:g} s runs", "duration_s": duration_s,
            "flows": flows or [{"algo": "bbr"}]}


def _experiment(root: Path, key: str, duration_s: float, points: list[tuple[dict[str, Any], list[dict[str, Any]]]],
                reps: int, flows: list[dict[str, Any]] | None = None) -> None:
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
    write_json(d / "plan.json", "plan", {"name": key, "raw": _raw(duration_s, flows), "points": plan_points,
                                         "repetitions": reps, "metrics": [], "duration_s": duration_s})


SEED004_FLOWS = [{"algo": "bbr", "label": "bbr"}, {"algo": "cubic", "label": "cubic"}]


def _fake_tree(root: Path) -> dict[str, Any]:
    (root / "meta.json").write_text(json.dumps({"profile": "quick", "runs": [
        {"command": "bbrbench reproduce --profile quick", "revision": "abc123", "started": "t0", "finished": "t1",
         "elapsed_s": 60.0, "kernel": "6.18.0", "cpus": 2,
         "load_1min": {"interval_s": 10, "min": 0.5, "mean": 1.25, "max": 2.0, "samples": [[0, 0.5], [10, 2.0]]}}]}))
    # Table 4.1: original BBR at 20 Mbit/s retransmits 30% and 32% in two repetitions; alpha 0.5 0.2%.
    t41 = []
    for label, algo, rates in (("bbr", "bbr", (0.30, 0.32)), ("rttgain_a0.5", "bbr_rttgain", (0.002, 0.002))):
        reps = [_summary([_flow(f"{label}#0", algo, 9.0)],
                         {"retrans_rate": r, "goodput_mbps": 18.0, "rtt_ms_mean": 30.0}) for r in rates]
        t41.append(({"flows.0.algo": algo, "flows.0.label": label, "bottleneck.rate_mbit": 20}, reps))
    _experiment(root, "seed000/table4.1", 12, t41, 2, [{"algo": "bbr", "count": 2, "start_step_s": 1.5}])
    # AQM point the kernel could not run.
    fig21 = root / "seed001/fig21"
    (fig21 / "points" / "p0").mkdir(parents=True)
    (fig21 / "points" / "p0" / sweep.NOT_RUNNABLE).write_text("bottleneck.aqm = 'fq_codel': no fq_codel qdisc\n")
    write_json(fig21 / "plan.json", "plan", {"name": "fig21", "raw": _raw(10), "repetitions": 1,
                                             "metrics": [], "duration_s": 10,
                                             "points": [{"id": "p0", "overrides": {"bottleneck.aqm": "fq_codel"}}]})
    # Seed 004: measured BBR shares for N = 1 at three queue sizes and N = 5 at two, one repetition each.
    measured = {(1, 0.5): 0.9, (1, 1): 0.6, (1, 4): 0.3, (5, 1): 0.8, (5, 4): 0.7}
    share = [({"flows.0.count": n, "bottleneck.buffer_bdp": q},
              [_summary([_flow("bbr", "bbr", s * 10), _flow("cubic", "cubic", (1 - s) * 10)], {})])
             for (n, q), s in measured.items()]
    _experiment(root, "seed004/share", 18, share, 1, SEED004_FLOWS)
    cubic_shares = {1: 0.50, 5: 0.52, 9: 0.47}
    # BBR's flow holds a cwnd of 25 packets, CUBIC's m flows 30 between them.
    cubic = [({"flows.1.count": m}, [_summary([{**_flow("bbr", "bbr", s * 10), "cwnd_mean": 25.0}] +
                                              [{**_flow(f"cubic#{k}", "cubic", (1 - s) * 10 / m), "cwnd_mean": 30 / m}
                                               for k in range(m)], {})])
             for m, s in cubic_shares.items()]
    _experiment(root, "seed004/cubic-count", 18, cubic, 1, SEED004_FLOWS)
    loss = [({"bottleneck.loss_pct": p},
             [_summary([_flow("bbr", "bbr", s * 10), _flow("cubic", "cubic", (1 - s) * 10)], {})])
            for p, s in ((0, 0.4), (10, 0.7))]
    _experiment(root, "seed004/loss", 18, loss, 1, SEED004_FLOWS)
    return {"measured": measured, "cubic": cubic_shares}


def test_report_from_fixed_results(tmp_path: Path) -> None:
    truth = _fake_tree(tmp_path)
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


# ---------------------------------------------------------------- verdicts


class FakeLookup:
    """Aggregated results given directly: (series, x, metric) -> the repetitions' values; the paper's numbers
    as (series, x, metric) -> value."""

    def __init__(self, data: dict[tuple[str, Any, str], list[float]],
                 paper: dict[tuple[str, Any, str], float] | None = None) -> None:
        self.data = data
        self.papers = paper or {}

    def stat(self, series: str, x: Any, metric: str) -> Stat | None:
        values = self.data.get((series, x, metric))
        if not values:
            return None
        m, ci = stats.mean_ci95(values)
        return Stat(m, ci, len(values), tuple(values))

    def xs(self, series: str) -> list[Any]:
        return sorted({x for s, x, _ in self.data if s == series})

    def x_name(self, x: Any) -> str:
        return f"{x} flows"

    def paper(self, series: str, x: Any, metric: str) -> float | None:
        return self.papers.get((series, x, metric))


def _rtt(points: dict[int, tuple[list[float], list[float]]]) -> FakeLookup:
    """Original and alpha 1 RTTs per flow count, for "RTT-gain BBR reduces the RTT to around half"."""
    data: dict[tuple[str, Any, str], list[float]] = {}
    for n, (bbr, gain) in points.items():
        data[("bbr", n, quantities.RTT)] = bbr
        data[("rttgain_a1", n, quantities.RTT)] = gain
    return FakeLookup(data)


BASE = [40.0, 41.0, 39.0]
HALF = [20.0, 21.0, 19.0]
SAME = [38.0, 39.0, 40.0]
WIDE = [20.0, 40.0, 30.0]
TINY = [1.0, 1.1, 0.9]
HALVES = claims.Rule(band=(0.4, 0.625))


def _judge(lk: FakeLookup, rule: claims.Rule, quantity: quantities.Quantity = quantities.rttgain_over_original_rtt,
           run_s: float = 60) -> claims.Verdict:
    return claims.combine(claims.decide(e, rule, run_s) for e in quantity(lk))


def test_verdict_outcomes_from_intervals() -> None:
    held = _judge(_rtt({2: (BASE, HALF)}), HALVES)
    assert held.outcome is Outcome.HOLDS
    r = stats.ratio_ci95(HALF, BASE)
    assert held.text == (f"2 flows, alpha 1 / original RTT: ratio {r.ratio:.3g} ± {r.ci95:.2g} "
                         "(95% CI, n = 3 each) inside [0.4, 0.625]")
    failed = _judge(_rtt({2: (BASE, SAME)}), HALVES)
    assert failed.outcome is Outcome.FAILS and "outside [0.4, 0.625]" in failed.text
    # The ratio's interval (about 0.75 ± 0.6) reaches into the band: neither way.
    undecided = _judge(_rtt({2: (BASE, WIDE)}), HALVES)
    assert undecided.outcome is Outcome.UNDECIDED and "straddles an edge of [0.4, 0.625]" in undecided.text
    few = _judge(_rtt({2: (BASE, HALF[:2])}), HALVES)
    assert few.outcome is Outcome.TOO_FEW_RUNS and few.min_n == 2
    assert "not decided: n = 2, needs 3" in few.text
    assert _judge(FakeLookup({}), HALVES).outcome is Outcome.TOO_FEW_RUNS


def test_a_tiny_effect_cannot_hold_at_the_papers_magnitude() -> None:
    """"Around half": an RTT cut to a fortieth is a far larger effect than the paper's, not the same."""
    assert _judge(_rtt({2: (BASE, TINY)}), HALVES).outcome is Outcome.FAILS
    # The rule before margins (below 0.75) let it hold.
    assert _judge(_rtt({2: (BASE, TINY)}), claims.Rule(at_most=0.75)).outcome is Outcome.HOLDS


def test_a_missing_effect_can_fail_a_minimum_effect() -> None:
    """A difference whose interval sits wholly short of the minimum effect does not hold; one that reaches
    it is undecided; one beyond it holds."""
    # The difference of two ratios' interval: with the senders' counts constant, it is Welch's on the drops.
    d, low, high = stats.diff_of_ratios(stats.Moments(3.0, 1.0, 3), stats.Moments(10.0, 0.0, 3),
                                        stats.Moments(2.0, 1.0, 3), stats.Moments(10.0, 0.0, 3))
    assert (d, low, high) == pytest.approx(stats.diff_of_moments(stats.Moments(0.3, 0.1, 3),
                                                                 stats.Moments(0.2, 0.1, 3)))
    sent = [10000.0, 10000.0, 10000.0]

    def sim(acd: list[float], bbr: tuple[float, ...] = (0.22, 0.23, 0.21)) -> claims.Verdict:
        """Drop rates as drops over a constant 10000 packets sent (seed 002's loss)."""
        lk = FakeLookup({("bbr", None, quantities.DROPS): [x * 1e4 for x in bbr], ("bbr", None, quantities.SENT): sent,
                         ("acd_tol1000", None, quantities.DROPS): [x * 1e4 for x in acd],
                         ("acd_tol1000", None, quantities.SENT): sent})
        return _judge(lk, claims.Rule(band=(-48.4, -31)), quantities.sim_drop_diff)
    # Seed 002's simulation: the paper's 3.3% against 42%; ours without the effect.
    none = sim([0.22, 0.24, 0.21])
    assert none.outcome is Outcome.FAILS and "outside [-48.4 points, -31 points]" in none.text
    assert sim([0.01, 0.50, 0.02]).outcome is Outcome.UNDECIDED
    assert sim([0.033, 0.030, 0.036], (0.42, 0.41, 0.43)).outcome is Outcome.HOLDS
    # At least / at most: wholly short fails, reaching the bound is undecided.
    rtt = _rtt({2: (BASE, SAME)})
    assert _judge(rtt, claims.Rule(at_most=0.8)).outcome is Outcome.FAILS
    assert _judge(_rtt({2: (BASE, WIDE)}), claims.Rule(at_most=0.8)).outcome is Outcome.UNDECIDED
    assert _judge(rtt, claims.Rule(at_least=0.8)).outcome is Outcome.HOLDS


def test_a_tie_at_zero_is_undecided() -> None:
    """No retransmission on either side: a difference or ratio of two zeros decides nothing, whatever the
    bound (before margins it "held" as 0 <= 0)."""
    key = "derived.retrans_packets"
    lk = FakeLookup({("bbr", (100, 0), key): [0.0] * 5, ("bbr_acd", (100, 0), key): [0.0] * 5})
    for rule in (claims.Rule(band=(0.4, 0.625)), claims.Rule(at_most=1.0), claims.Rule(at_least=0.0)):
        v = _judge(lk, rule, quantities.QUANTITIES["acd_retrans_small_buffer"])
        assert v.outcome is Outcome.UNDECIDED and "0 on both sides (n = 5 each): nothing to compare" in v.text
    d = claims.diff(lk, "#3", ("bbr_acd", (100, 0), key), ("bbr", (100, 0), key))
    assert isinstance(d, claims.Verdict) and d.outcome is Outcome.UNDECIDED


def test_decisions_relative_to_the_papers_number() -> None:
    """paper_factor: x/÷ f around each point's paper value; startup_over_s widens the upper edge for a
    count of start-up events spread over a shorter run; a point without a paper number decides nothing."""
    key = quantities.RETRANS
    lk = FakeLookup({("rttgain_a0.5", 20, key): [0.002, 0.0021, 0.0019]}, {("rttgain_a0.5", 20, key): 0.1})
    rule = claims.Rule(paper_factor=1.25)
    assert _judge(lk, rule, quantities.rttgain_retrans).outcome is Outcome.FAILS
    # 0.2% is what 0.1% over 87 s becomes over 43.5 s, inside the widened band.
    widened = claims.Rule(paper_factor=1.25, startup_over_s=87)
    assert _judge(lk, widened, quantities.rttgain_retrans, run_s=43.5).outcome is Outcome.HOLDS
    assert _judge(lk, widened, quantities.rttgain_retrans, run_s=87).outcome is Outcome.FAILS
    no_paper = FakeLookup({("rttgain_a0.5", 20, key): [0.002, 0.0021, 0.0019]})
    assert _judge(no_paper, rule, quantities.rttgain_retrans).outcome is Outcome.UNDECIDED
    margin = claims.Rule(paper_margin=5)
    assert margin.bounds(80.0, 30) == (75.0, 85.0)


def test_intervals_keep_to_physical_bounds() -> None:
    """A Jain index of 100 ± 0.03% is inside [95, 100]: the interval is cut at 100%."""
    lk = FakeLookup({("bbr2 + cubic", ("fq_codel", 1), quantities.JAIN): [1.0, 0.9998, 1.0]})
    v = _judge(lk, claims.Rule(band=(95, 100)), quantities.QUANTITIES["fqcodel_jain"])
    assert v.outcome is Outcome.HOLDS and "95% CI cut to [" in v.text


def test_rules_come_from_the_data() -> None:
    assert claims.Rule.from_data({"band": [1, 2]}) == claims.Rule(band=(1.0, 2.0))
    for bad in ({}, {"band": [1, 2], "at_most": 3}, {"band": [2, 1]}, {"at_most": 1, "startup_over_s": 9},
                {"paper_factor": 1}):
        with pytest.raises(ValueError):
            claims.Rule.from_data(bad)
    assert claims.Rule(band=(0.4, 0.625)).describe() == "inside [0.4, 0.625]"
    # Every claim of the catalogue decides by a rule of its data file and says why its margin is what it is.
    specs = papers.specs()
    assert all(c.margin and c.rule.describe() for s in specs for c in s.claims)


def test_moments_from_an_interval_decide_as_the_values_do() -> None:
    """A summary.json's mean, half-width and n give the same ratio and difference intervals as the
    repetitions' values: what rebuilding a report from its summary.json rests on."""
    x, y = [20.0, 21.5, 19.0, 20.2], [40.0, 41.0, 39.0]
    recorded = [Stat(*stats.mean_ci95(v), len(v)) for v in (x, y)]  # type: ignore[misc]
    r, again = stats.ratio_ci95(x, y), stats.ratio_of_moments(recorded[0].moments(), recorded[1].moments())
    assert again.ratio == pytest.approx(r.ratio) and again.ci95 == pytest.approx(r.ci95)
    assert stats.diff_of_moments(recorded[0].moments(), recorded[1].moments()) == pytest.approx(stats.diff_ci95(x, y))


def test_not_testable_comes_before_the_numbers() -> None:
    spec = papers.spec_for("seed000/fig4.12")
    assert spec is not None
    claim = next(c for c in spec.claims if c.check is quantities.rttgain_over_original_rtt)
    lk = _rtt({2: (BASE, HALF)})
    short = claim.judge(lk, claim.needs_s - 0.5)
    assert short.outcome is Outcome.NOT_TESTABLE
    assert short.text.startswith(f"needs {claim.needs_s:g} s after the last flow starts, runs give "
                                 f"{claim.needs_s - 0.5:g} s")
    assert claim.judge(lk, claim.needs_s).outcome is Outcome.HOLDS
    assert "**not testable in this profile** (needs" in claims.verdict_line(claim.text, short)


def test_several_points_combine() -> None:
    def outcome(second: tuple[list[float], list[float]]) -> Outcome:
        return _judge(_rtt({2: (BASE, HALF), 6: second}), HALVES).outcome

    assert outcome((BASE, HALF)) is Outcome.HOLDS
    assert outcome((BASE, SAME)) is Outcome.FAILS
    assert outcome((BASE, WIDE)) is Outcome.UNDECIDED
    assert outcome((BASE, HALF[:1])) is Outcome.TOO_FEW_RUNS
    # A decided failure stands even where another point lacks repetitions.
    assert _judge(_rtt({2: (BASE, SAME), 6: (BASE, HALF[:1])}), HALVES).outcome is Outcome.FAILS


def test_difference_and_single_mean_checks() -> None:
    # Smaller alpha, lower queueing delay: alpha 0.75's RTT - 20 ms over alpha 1's.
    lk = FakeLookup({("bbr", 2, quantities.RTT): BASE, ("rttgain_a1", 2, quantities.RTT): [30.0, 31.0, 29.0],
                     ("rttgain_a0.75", 2, quantities.RTT): [24.0, 25.0, 23.0]})
    order = _judge(lk, claims.Rule(at_most=0.8), quantities.alpha_queueing_ratio)
    assert order.outcome is Outcome.HOLDS and "ratio 0.4 ± " in order.text
    # Original BBR's RTT / 20 ms: 2 ± 0.12 is inside a band of 1.8-2.7, 1 ± 0.12 wholly outside it.
    assert _judge(lk, claims.Rule(band=(1.8, 2.7)), quantities.original_rtt_over_min).outcome is Outcome.HOLDS
    half = FakeLookup({("bbr", 2, quantities.RTT): HALF})
    assert _judge(half, claims.Rule(band=(1.8, 2.7)), quantities.original_rtt_over_min).outcome is Outcome.FAILS


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


def _long_table41(root: Path) -> None:
    """Table 4.1 with three 60 s repetitions (second flow at 3 s), original BBR near the paper's 36.3% in
    steady state and RTT-gain BBR at 0.1% over the whole run, none of it after start-up."""
    (root / "meta.json").write_text(json.dumps({"profile": "paper", "runs": [
        {"command": "bbrbench reproduce", "revision": "abc", "started": "t0"}]}))
    rates = {"bbr": ((0.30, 0.31, 0.32), (0.34, 0.35, 0.36)), "rttgain_a0.75": ((0.001, 0.0012, 0.0011), (0, 0, 0)),
             "rttgain_a0.5": ((0.0011, 0.001, 0.0012), (0, 0, 0))}
    points = [({"flows.0.label": label, "bottleneck.rate_mbit": 20},
               [_summary([_flow(label, "bbr", 9.0)], {"retrans_rate": r}, {"retrans_rate": st})
                for r, st in zip(*rs)]) for label, rs in rates.items()]
    _experiment(root, "seed000/table4.1", 60, points, 3, [{"algo": "bbr", "count": 2, "start_step_s": 3}])


def test_report_decides_on_long_runs(tmp_path: Path) -> None:
    _long_table41(tmp_path)
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
    _long_table41(runs)
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
    reps = [_summary([_flow("rttgain_a1", "bbr_rttgain", 9.0)], {"rtt_ms_mean": 77.0, "rtt_ms_p95": p95})
            for p95 in (99.0, 100.0, 101.0)]
    _experiment(runs, "seed000/table3.2", 45, [({"senders.0.rtt_ms": 60}, reps)], 3,
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
    _long_table41(runs)
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
    _long_table41(runs)
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
        **_summary([_flow("bbr", "bbr", 9.0)], {"retrans_rate": 0.9}, {"retrans_rate": 0.9}),
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
    reps = [_summary([_flow("bbr", "bbr", 9.0)], {"retrans_rate": r}) for r in (0.30, 0.31, 0.32)]
    _experiment(tmp_path, "seed000/table4.1", 60, [({"flows.0.label": "bbr"}, reps)], 3)
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


def test_fieller_interval_matches_its_closed_form_and_inverts_its_test() -> None:
    """Fieller's interval (Fieller 1954, independent samples, no covariance) against the closed form as the
    literature writes it, (r -+ (t / m_y) sqrt(v_x (1 - g) + r^2 v_y)) / (1 - g), g = t^2 v_y / m_y^2, and
    against its definition: at each end, x - rho y is exactly t standard errors from 0."""
    x, y = stats.Moments(0.43, 0.30, 3), stats.Moments(1.0, 0.35, 3)
    r = stats.fieller_of_moments(x, y)
    vx, vy = x.sd ** 2 / x.n, y.sd ** 2 / y.n
    assert r.df is not None and r.bounds is not None
    t = float(stats.stats.t.ppf(0.975, r.df))
    g = t * t * vy / y.mean ** 2
    q = x.mean / y.mean
    half = t / y.mean * math.sqrt(vx * (1 - g) + q * q * vy)
    assert r.bounds == pytest.approx(((q - half) / (1 - g), (q + half) / (1 - g)))
    for rho in r.bounds:
        assert abs(x.mean - rho * y.mean) / math.sqrt(vx + rho * rho * vy) == pytest.approx(t)
    # Skewed away from the small denominators: the upper end lies further from the estimate than the lower.
    assert r.bounds[1] - q > q - r.bounds[0]
    # A denominator whose own interval reaches 0: unbounded, no decision.
    assert stats.fieller_of_moments(x, stats.Moments(1.0, 2.0, 3)).bounds is None
    # g far below FIELLER_G: the ratio keeps the delta method, and the two agree closely.
    tight = stats.Moments(100.0, 1.0, 5)
    delta = stats.ratio_of_moments(stats.Moments(50.0, 1.0, 5), tight)
    fieller = stats.fieller_of_moments(stats.Moments(50.0, 1.0, 5), tight)
    assert delta.method == "delta" and delta.bounds is not None and fieller.bounds is not None
    assert delta.bounds == pytest.approx(fieller.bounds, rel=1e-3)
    # A ratio of 0.43 whose reference's CV is large goes to Fieller's. (A review read seed 002 #4 so; there the
    # large CV is the numerator's, BBR's count being precise, g about 0.02, where the two intervals agree.)
    assert stats.ratio_of_moments(x, y).method == "fieller"


def test_a_single_point_experiment_names_only_its_measure() -> None:
    """fig21-long has one point and no x to name: its verdict reads 'Tail Drop, 100 BDP, Jain: mean ...', not
    ': , Tail Drop'."""
    class OnePoint(FakeLookup):
        def x_name(self, x: Any) -> str:
            return ""
    lk = OnePoint({(quantities.FIG21, None, quantities.JAIN): [0.90, 0.91, 0.92]})
    (est,) = quantities.QUANTITIES["taildrop_jain_long"](lk)
    assert est.label == "Tail Drop, 100 BDP, Jain"


def test_a_zero_width_interval_is_not_certainty() -> None:
    """Identical repetitions (a quantised measure) give a zero-width interval: the verdict says so and counts
    as fragile; an edge at the quantity's physical bound (Jain's 100%) is not one a rerun could cross."""
    lk = FakeLookup({("bbr", 2, "total.rtt_ms_mean"): [40.0, 40.0, 40.0]})
    v = _judge(lk, claims.Rule(band=(1.9, 2.5)), quantities.original_rtt_over_min)
    assert v.outcome is Outcome.HOLDS and "zero width" in v.text and v.fragile == "zero-width interval"
    jain = FakeLookup({("bbr2", 5, "total.jain"): [0.9999, 0.9998, 1.0]})
    held = _judge(jain, claims.Rule(band=(95, 100)), quantities.bbr2_rtt_jain)
    assert held.outcome is Outcome.HOLDS and held.fragile == ""
    near = FakeLookup({("bbr2", 5, "total.jain"): [0.962, 0.965, 0.968]})
    assert _judge(near, claims.Rule(band=(95, 100)), quantities.bbr2_rtt_jain).fragile.startswith("0.")


def test_the_second_margin_family() -> None:
    """x/÷ 1.5 for 'about', +- 10 points for shares, stated bounds unchanged, a minimum effect grown with the
    margin, and the data file's own where it writes one."""
    about = claims.Rule.from_data({"band": [0.4, 0.625], "family": "factor"}).widened()
    assert about.band == pytest.approx((0.5 / 1.5, 0.5 * 1.5))
    assert claims.Rule.from_data({"at_most": 0.8, "family": "factor"}).widened().at_most == pytest.approx(1 / 1.5)
    share = claims.Rule.from_data({"band": [55, 65], "family": "points"}).widened()
    assert share.band == (50, 70)
    assert claims.Rule.from_data({"at_least": 5, "family": "points"}).widened().at_least == 10
    assert claims.Rule.from_data({"paper_factor": 1.25}).widened().paper_factor == pytest.approx(1.5)
    assert claims.Rule.from_data({"paper_margin": 5}).widened().paper_margin == 10
    stated = claims.Rule.from_data({"at_least": 85, "family": "stated"})
    assert stated.widened() == stated
    negative = claims.Rule.from_data({"band": [-48.4, -31], "family": "factor"}).widened()
    assert negative.band is not None and negative.band[0] < -48.4 and -31 < negative.band[1] < 0
    own = claims.Rule.from_data({"band": [0.9375, 0.96], "family": "factor", "wide": {"band": [0.925, 0.9667]}})
    assert own.widened().band == (0.925, 0.9667)
    with pytest.raises(ValueError, match="family"):
        claims.Rule.from_data({"band": [1, 2], "family": "loose"})


def test_every_claim_file_claim_names_its_family_and_its_n() -> None:
    """The second family needs each band's or bound's family; the next run needs each claim's n, declared
    before it."""
    for spec in papers.specs():
        for c in spec.claims:
            assert c.rule.family in claims.FAMILIES, (spec.key, c.text)
            assert c.n is not None and c.n >= claims.MIN_N, (spec.key, c.text)


def test_claim_lines_show_scaling_post_hoc_hedges_and_the_second_family() -> None:
    """What the data file says of a claim stands at its verdict."""
    base = papers.spec_for("seed001/fig14-15")
    assert base is not None
    c = papers.Claim("c", quantities.bbr2_rtt_jain, 10, "w", claims.Rule(band=(55, 65), family="points"), "m", 5,
                     post_hoc="margin written on 2026-11-26, after the data", scaled="100 Mbit/s for 1 Gbit/s (x 0.1)",
                     hedge="no run isolates it")
    lk = FakeLookup({("bbr2", 5, "total.jain"): [0.69, 0.70, 0.71]})
    lines, js = report.claim_lines(c, lk, 60)
    text = "\n".join(lines)
    assert "**does not hold**" in lines[0]
    assert "(Second margins, inside [50, 70]: **undecided** (differs: depends on the margin).)" in text
    assert "(Scaled: 100 Mbit/s for 1 Gbit/s (x 0.1).)" in text and "(Post-hoc: margin written" in text
    assert "(Unproven: no run isolates it.)" in text and "(n declared for the next run: 5.)" in text
    assert js["wide"]["verdict"]["outcome"] == "undecided" and js["post_hoc"].startswith("margin")
    untestable = papers.Claim("c", quantities.bbr2_rtt_jain, 10, "w", claims.Rule(band=(55, 65)), "m",
                              untestable="not testable at this scale: why")
    assert untestable.judge(lk, 60).outcome is Outcome.NOT_TESTABLE


def test_each_experiment_of_a_merged_summary_keeps_its_invocation(tmp_path: Path) -> None:
    """A rebuilt report lists, per experiment, the invocations that produced it: those its summary keeps, else
    those of its summary's meta whose --only covers it."""
    runs = tmp_path / "runs"
    runs.mkdir()
    _long_table41(runs)
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


README = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "README.md"


def test_the_readme_states_only_what_its_summary_holds() -> None:
    """The reproduction README once contradicted its report. Its verdicts are now generated from the
    summary it cites, and outside that block it states no measured figure (no interval, no measured
    decimal in ms or Mbit/s, no verdict in bold): a README figure that differs from the summary fails here."""
    text = README.read_text()
    head, _, rest = text.partition(readme.README_BEGIN)
    block, _, tail = rest.partition(readme.README_END)
    cited = next(line for line in block.splitlines() if line.startswith("From `"))
    summary = Path(__file__).resolve().parents[2] / cited.split("`")[1]
    expected = readme.readme_overview(json.loads(summary.read_text()), cited.split("`")[1])
    assert readme.README_BEGIN + block + readme.README_END == "\n".join(expected), \
        "README's overview differs from its summary: rebuild with bbrbench reproduce --readme"
    prose = "\n".join(part for i, part in enumerate((head + tail).split("```")) if i % 2 == 0)
    assert "±" not in prose and "+-" not in prose.replace("+- 5", "").replace("+- 10", "")
    assert not re.search(r"\d+\.\d+\s?(ms|Mbit/s)\b", prose)
    assert not re.search(r"\*\*(holds|does not hold|undecided|not decided)\*\*", prose)


def test_docs_hold_documents_and_data_reproduction_the_results_they_cite() -> None:
    """Recorded results (summaries, metadata, figures) live in data/reproduction/, documents in
    docs/; every summary the README's build command reads is there."""
    root = Path(__file__).resolve().parents[2]
    assert not [p for p in (root / "docs").rglob("*") if p.suffix in (".json", ".png", ".svg", ".csv")]
    inputs = re.findall(r"--from-summary (\S+)", README.read_text())
    assert inputs and all(p.startswith("data/reproduction/") and (root / p).is_file() for p in inputs), inputs


def test_readme_overview_is_rewritten_in_place(tmp_path: Path) -> None:
    readme_md = tmp_path / "README.md"
    readme_md.write_text(f"intro\n\n{readme.README_BEGIN}\nstale\n{readme.README_END}\n\noutro\n")
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"experiments": {"seed000/fig4.12": {"claims": [
        {"claim": "c", "verdict": {"outcome": "holds", "text": "t"}, "post_hoc": "after",
         "wide": {"rule": "r", "verdict": {"outcome": "undecided", "text": "t"}}}]}}}))
    readme.write_readme_overview(readme_md, summary)
    text = readme_md.read_text()
    assert text.startswith("intro\n\n") and text.endswith("\n\noutro\n") and "stale" not in text
    assert "**seed000**: holds 1." in text and "| fig4.12      | c       |     holds |        undecided | post-hoc |" \
        in text
    readme_md.write_text("no markers\n")
    with pytest.raises(HarnessError, match="no generated overview"):
        readme.write_readme_overview(readme_md, summary)


def test_table2s_best_count_is_decided_on_rms_differences_with_intervals() -> None:
    """Seed 004 Table 2's 'best at 13 BBR flows': with one queue size per count each RMS error is
    |measured - model|, so the difference's interval is Welch's on the two measured means."""
    def row(n: int, values: list[float], model: float) -> dict[str, Any]:
        m, ci = stats.mean_ci95(values)
        return {"n_bbr": n, "queue_bdp": 4.0, "model": model, "measured": {"mean": m, "ci95": ci, "n": len(values)}}
    five, thirteen = [0.70, 0.72, 0.71], [0.64, 0.65, 0.66]
    rows = [row(5, five, 0.60), row(13, thirteen, 0.60)]
    (est,) = seed004.best_fit_estimates(rows, 13)
    assert isinstance(est.value, claims.Interval)
    d, low, high = stats.diff_ci95(five, thirteen)
    assert est.value.estimate == pytest.approx(d) and est.value.half == pytest.approx((high - low) / 2)
    rule = claims.Rule(at_least=0)
    assert claims.decide(est, rule, 60).outcome is Outcome.HOLDS
    # Five flows nearer the model than thirteen: 13 is not the best.
    (worse,) = seed004.best_fit_estimates([row(5, thirteen, 0.60), row(13, five, 0.60)], 13)
    assert claims.decide(worse, rule, 60).outcome is Outcome.FAILS


def _inv(command: str, started: str) -> dict[str, Any]:
    return {"command": command, "revision": "0" * 40, "started": started, "finished": started}


def test_rerun_is_the_prescribed_from_scratch_run_and_the_newest_behind_the_claim() -> None:
    """Robustness: a fragile experiment counts as rerun only when its newest invocation is the run the section
    prescribes (--only exactly it, --reps at least n, a results/rerun* directory); the run that made it
    fragile, a smaller n or a later broader run do not count."""
    cmd = "bbrbench -q reproduce --profile standard --only seed001/fig14-15 --reps 8 --out results/"
    escalated = _inv(cmd + "standard-seed001-r8-fig14-15", "2026-11-25 21:06:09 UTC")
    rerun = _inv(cmd + "rerun2-seed001-fig14-15", "2026-11-26 18:04:00 UTC")
    assert report.rerun_of("seed001/fig14-15", set(), 8, [escalated]) is None
    assert report.rerun_of("seed001/fig14-15", set(), 8, [rerun, escalated]) is rerun
    assert report.rerun_of("seed001/fig14-15", set(), 9, [rerun, escalated]) is None
    broader = _inv("bbrbench reproduce --profile standard --only seed001 --out results/x", "2026-11-27 01:00:00 UTC")
    assert report.rerun_of("seed001/fig14-15", set(), 8, [rerun, broader]) is None
    other = _inv("bbrbench reproduce --profile standard --only seed001/fig8 --reps 3 --out results/rerun-f8",
                 "2026-11-27 02:00:00 UTC")
    assert report.rerun_of("seed001/fig14-15", set(), 8, [rerun, other]) is rerun
    # A claim drawing on two experiments (seed 004's share beside share-long) is rerun only with both.
    share = "bbrbench -q reproduce --profile standard --only seed004/share{} --reps 3 --out results/rerun2-s"
    both = _inv(share.format(" --only seed004/share-long"), "2026-11-26 19:00:00 UTC")
    alone = _inv(share.format(""), "2026-11-26 19:00:00 UTC")
    assert report.rerun_of("seed004/share", {"seed004/share-long"}, 3, [both]) is both
    assert report.rerun_of("seed004/share", {"seed004/share-long"}, 3, [alone]) is None


def test_robustness_says_which_fragile_experiments_were_rerun() -> None:
    fragile = {"outcome": "holds", "text": "", "fragile": "zero-width interval"}
    experiments = {key: {"points": [], "claims": [{"claim": f"claim of {key}", "n": 3, "verdict": fragile}]}
                   for key in ("seed001/fig8", "seed001/fig16")}
    done = _inv("bbrbench -q reproduce --profile standard --only seed001/fig8 --reps 3 --out results/rerun2-f8",
                "2026-11-26 17:38:03 UTC")
    lines = report.robustness_lines(experiments, "standard", {"seed001/fig8": [done]})
    fig8 = next(line for line in lines if line.startswith("- seed001/fig8"))
    fig16 = next(line for line in lines if line.startswith("- seed001/fig16"))
    assert "rerun from scratch at n 3" in fig8 and "its verdicts stand" in fig8 and done["command"] in fig8
    assert fig16.startswith("- seed001/fig16: to be rerun: `bbrbench -q reproduce --profile standard --only "
                            "seed001/fig16 --reps 3")


def _table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| table / figure")]


def test_the_report_overview_readme_and_index_agree_with_the_summary() -> None:
    """The committed report opens with the overview its summary gives (provenance last); every claim of the
    summary falls in exactly one row of the per-figure index, so that the rows' counts add up to the seed's
    count, which the README's overview states too; each row with verdicts names the folder its numbers come
    from, a folder of data/reproduction/ that holds a summary.json."""
    root = Path(__file__).resolve().parents[2]
    summary = json.loads((root / "data/reproduction/standard/summary.json").read_text())
    text = (root / "data/reproduction/standard/report.md").read_text()
    overview = "\n".join(report.overview_lines(summary))
    assert text.index(overview) < text.index("## How the claims are judged") < text.index("## Provenance")
    readme = README.read_text()
    for seed in ("seed000", "seed001", "seed002", "seed004"):
        claims = [c for k, js in summary["experiments"].items() if k.partition("/")[0] == seed
                  for c in js.get("claims", [])]
        rows = report.index_rows(summary, seed)
        held = [(k, c["claim"]) for cov in papers.coverage() if cov.seed == seed for k in cov.experiments
                if k in summary["experiments"] for c in summary["experiments"][k].get("claims", [])
                if cov.holds(c["claim"])]
        mine = [(k, c["claim"]) for k, js in summary["experiments"].items() if k.partition("/")[0] == seed
                for c in js.get("claims", [])]
        assert sorted(held) == sorted(mine), f"{seed}: a claim in no row of the index, or in two"
        counted: dict[str, int] = {}
        for row in rows:
            for part in row[1].split(", "):
                outcome, _, n = part.rpartition(" ")
                if n.isdigit():
                    counted[outcome] = counted.get(outcome, 0) + int(n)
            if row[1] not in ("not reproduced", "no claim"):
                assert all((root / f.strip("`") / "summary.json").is_file() for f in row[2].split(", ")), row
        totals = report.verdict_counts(claims)
        assert counted == totals
        words = ", ".join(f"{o} {n}" for o, n in totals.items())
        assert f"**{seed}**: {words}." in readme and f"All claims: {words}." in text
    # A section drawn from several experiments points each row at the folder of the part its claims read.
    loss = next(r for r in report.index_rows(summary, "seed004") if r[0].startswith("Table 4"))
    assert loss[2] == "`data/reproduction/rerun-2026-11-26/seed004-loss/`"


def test_a_claim_over_several_points_fails_only_under_holms_correction() -> None:
    """A claim that does not hold when any one point fails is a family of tests: a failure must stand at
    Holm's level (5% / m for the strongest of m points, n - 1 degrees of freedom), and a point the quantity
    lists twice is one test. Holding needs every point to hold (intersection-union: no correction)."""
    rule = claims.Rule(band=(10.0, 20.0))

    def point(label: str, mean: float, half: float) -> claims.Estimate:
        return claims.Estimate(label, claims.Interval("mean", mean, half, "n = 3"))
    barely = point("a", 22.0, 1.5)  # 20.5-23.5: outside at 95%, not at 97.5% (half x 1.44)
    clearly = point("b", 40.0, 1.0)
    inside = point("c", 15.0, 1.0)
    assert claims.decide_all([barely], rule, 30).outcome is Outcome.FAILS
    assert claims.decide_all([barely, barely], rule, 30).outcome is Outcome.FAILS  # one point, once
    v = claims.decide_all([barely, inside], rule, 30)
    assert v.outcome is Outcome.UNDECIDED and "Holm's level over the claim's 2 points" in v.text
    assert claims.decide_all([barely, clearly], rule, 30).outcome is Outcome.FAILS
    assert claims.decide_all([inside, point("d", 12.0, 1.0)], rule, 30).outcome is Outcome.HOLDS


def test_bbrs_equilibrium_at_scenario_3_is_held_to_the_papers_30_s() -> None:
    """Table 2's 'BBR takes about 30 s' (#3) is decided at that size, on BBR's own equilibrium time, not as
    'not at equilibrium 15 s after the last start'."""
    key = "censored.total.convergence_time_s"
    claim = next(c for c in papers.spec_for("seed002/testbed").claims if "BBR reaches equilibrium in" in c.text)
    at_30 = FakeLookup({("bbr", (100, 0), key): [29.0, 30.0, 31.0]}, {("bbr", (100, 0), key): 30.0})
    assert claim.judge(at_30, 76).outcome is Outcome.HOLDS
    at_60 = FakeLookup({("bbr", (100, 0), key): [59.0, 60.0, 61.0]},  # later than 15 s, yet not about 30 s
                       {("bbr", (100, 0), key): 30.0})
    assert claim.judge(at_60, 76).outcome is Outcome.FAILS


def test_a_claim_over_every_buffer_size_says_at_which_it_was_decided() -> None:
    """A claim the paper makes 'at every buffer size' that the standard profile runs at one or two sizes is
    marked so at its verdict (its scaled note), not read as covering the paper's range."""
    claims_ = [c for s in papers.specs() for c in s.claims
               if re.search(r"every buffer|independently of .*buffer size|always above", c.text)]
    assert len(claims_) >= 4
    assert all("decided at" in c.scaled for c in claims_), [c.text for c in claims_ if "decided at" not in c.scaled]


def test_seed004s_headline_compares_the_grids_span_with_the_cubic_counts_effect() -> None:
    """'Queue size and BBR count dominate the share': the span of the share over the grid less the CUBIC
    count's change over the counts run, at least 5 points."""
    def row(n_bbr: int, queue: float, mean: float) -> dict[str, Any]:
        return {"n_bbr": n_bbr, "queue_bdp": queue, "model": 0.5, "status": "3/3",
                "measured": {"mean": mean, "ci95": 0.02, "n": 3}}
    cubic = {"regression": {"slope": -0.01, "slope_ci95": 0.002, "n": 9}, "points": [[1.0, 0.8], [17.0, 0.64]]}
    wide = seed004.headline_claim([row(1, 16, 0.2), row(13, 0.5, 0.8)], cubic)
    assert wide is not None and wide["verdict"]["outcome"] == "holds"  # 0.6 against 0.16
    narrow = seed004.headline_claim([row(1, 16, 0.5), row(13, 0.5, 0.55)], cubic)
    assert narrow is not None and narrow["verdict"]["outcome"] == "does not hold"  # 0.05 against 0.16


def test_table3s_best_tolerance_leads_each_other_in_goodput() -> None:
    """Table 3: 1000 us gives the highest goodput: above 500 us's and 1500 us's, each."""
    key = quantities.GOODPUT
    claim = next(c for c in papers.spec_for("seed002/simulation").claims if "highest of the three" in c.text)
    def lookup(at_1000: list[float]) -> FakeLookup:
        return FakeLookup({("acd_tol1000", None, key): at_1000, ("acd_tol500", None, key): [0.82, 0.821, 0.822],
                           ("acd_tol1500", None, key): [0.85, 0.855, 0.86]})
    assert claim.judge(lookup([0.90, 0.901, 0.902]), 45).outcome is Outcome.HOLDS
    assert claim.judge(lookup([0.83, 0.831, 0.832]), 45).outcome is Outcome.FAILS  # below 1500 us's


def test_fig46s_probe_phase_rtt_is_read_on_the_steady_rtts_peak() -> None:
    """Fig 4.6: the RTT grows in each probe phase to around 30 ms: alpha 1, 2 flows, the steady window's
    95th percentile, x/÷ 1.25 of 30 ms."""
    key = quantities.STEADY_RTT_P95
    claim = next(c for c in papers.spec_for("seed000/fig4.12").claims if "Fig 4.6" in c.text)
    paper = {("rttgain_a1", 2, key): float(papers.spec_for("seed000/fig4.12").paper[("rttgain_a1", 2, key)])}
    assert claim.judge(FakeLookup({("rttgain_a1", 2, key): [29.0, 30.0, 31.0]}, paper), 30).outcome is Outcome.HOLDS
    assert claim.judge(FakeLookup({("rttgain_a1", 2, key): [49.0, 50.0, 51.0]}, paper), 30).outcome is Outcome.FAILS


def test_a_fragile_verdict_names_the_n_that_would_decide_it() -> None:
    """At the recorded spread (sd from the half-width and n), the smallest n whose interval clears the edge
    with 80% power: (t(0.975, n-1) + t(0.8, n-1)) sd / sqrt(n) <= the estimate's distance to the edge."""
    est = claims.Estimate("x", claims.Interval("mean", 10.0, 1.5, "n = 3"))
    v = claims.decide(est, claims.Rule(at_least=8.4), 30)
    # sd 0.604, distance 1.6: n 3 gives 1.87, n 4 gives 1.26.
    assert v.outcome is Outcome.HOLDS and v.fragile.endswith("80% power to decide it again needs n 4 at this spread")


def _fig8_bbr1_bbr2(runs: Path) -> None:
    """Fig 8's experiment at n 3, bbr1 and bbr2 at one and ten flows (points p0-p3), every run alike."""
    runs.mkdir()
    (runs / "meta.json").write_text(json.dumps({"profile": "standard", "runs": [
        {"command": "bbrbench reproduce", "revision": "abc", "started": "t0"}]}))
    points = [({"flows.0.algo": algo, "flows.0.count": n},
               [_summary([_flow("f", algo, 9.0, retrans=14_480)], {"retrans_rate": 0.01}) for _ in range(3)])
              for algo in ("bbr1", "bbr2") for n in (1, 10)]
    _experiment(runs, "seed001/fig8", 60, points, 3, [{"algo": "bbr1"}])


def test_verdicts_over_bbr2_runs_name_their_loss_decision_path(tmp_path: Path) -> None:
    """A verdict that reads bbr2, bbr3 or bbr_draft runs names the loss-decision path their host.json recorded
    (bbrctl list while attached), "not recorded" where it has none; one over bbr1 alone names none. Rebuilt
    from a summary written before points carried the path, the scenario names the algorithm: "not recorded"."""
    runs, again = tmp_path / "runs", tmp_path / "again"
    _fig8_bbr1_bbr2(runs)
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
