"""Fake results trees and summaries for the reproduce tests: what bbrbench sweep writes, at the sizes a
test needs, and the reproduction README they check against."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bbrbench import sweep
from bbrbench.results import write_json


def fake_summary(flows: list[dict[str, Any]], total: dict[str, Any],
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


def fake_flow(label: str, algo: str, goodput: float, sent: int = 1_448_000, retrans: int = 0) -> dict[str, Any]:
    return {"label": label, "algo": algo, "goodput_mbps": goodput, "bytes_sent": sent, "bytes_retrans": retrans}


def fake_raw(duration_s: float, flows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A plan's base scenario as far as the report reads it: its description, the run time and the flows'
    starts."""
    return {"description": f"test set-up, {duration_s:g} s runs", "duration_s": duration_s,
            "flows": flows or [{"algo": "bbr"}]}


def fake_experiment(root: Path, key: str, duration_s: float, points: list[tuple[dict[str, Any], list[dict[str, Any]]]],
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
    write_json(d / "plan.json", "plan", {"name": key, "raw": fake_raw(duration_s, flows), "points": plan_points,
                                         "repetitions": reps, "metrics": [], "duration_s": duration_s})


SEED004_FLOWS = [{"algo": "bbr", "label": "bbr"}, {"algo": "cubic", "label": "cubic"}]


def fake_tree(root: Path) -> dict[str, Any]:
    (root / "meta.json").write_text(json.dumps({"profile": "quick", "runs": [
        {"command": "bbrbench reproduce --profile quick", "revision": "abc123", "started": "t0", "finished": "t1",
         "elapsed_s": 60.0, "kernel": "6.18.0", "cpus": 2,
         "load_1min": {"interval_s": 10, "min": 0.5, "mean": 1.25, "max": 2.0, "samples": [[0, 0.5], [10, 2.0]]}}]}))
    # Table 4.1: original BBR at 20 Mbit/s retransmits 30% and 32% in two repetitions; alpha 0.5 0.2%.
    t41 = []
    for label, algo, rates in (("bbr", "bbr", (0.30, 0.32)), ("rttgain_a0.5", "bbr_rttgain", (0.002, 0.002))):
        reps = [fake_summary([fake_flow(f"{label}#0", algo, 9.0)],
                         {"retrans_rate": r, "goodput_mbps": 18.0, "rtt_ms_mean": 30.0}) for r in rates]
        t41.append(({"flows.0.algo": algo, "flows.0.label": label, "bottleneck.rate_mbit": 20}, reps))
    fake_experiment(root, "seed000/table4.1", 12, t41, 2, [{"algo": "bbr", "count": 2, "start_step_s": 1.5}])
    # AQM point the kernel could not run.
    fig21 = root / "seed001/fig21"
    (fig21 / "points" / "p0").mkdir(parents=True)
    (fig21 / "points" / "p0" / sweep.NOT_RUNNABLE).write_text("bottleneck.aqm = 'fq_codel': no fq_codel qdisc\n")
    write_json(fig21 / "plan.json", "plan", {"name": "fig21", "raw": fake_raw(10), "repetitions": 1,
                                             "metrics": [], "duration_s": 10,
                                             "points": [{"id": "p0", "overrides": {"bottleneck.aqm": "fq_codel"}}]})
    # Seed 004: measured BBR shares for N = 1 at three queue sizes and N = 5 at two, one repetition each.
    measured = {(1, 0.5): 0.9, (1, 1): 0.6, (1, 4): 0.3, (5, 1): 0.8, (5, 4): 0.7}
    share = [({"flows.0.count": n, "bottleneck.buffer_bdp": q},
              [fake_summary([fake_flow("bbr", "bbr", s * 10), fake_flow("cubic", "cubic", (1 - s) * 10)], {})])
             for (n, q), s in measured.items()]
    fake_experiment(root, "seed004/share", 18, share, 1, SEED004_FLOWS)
    cubic_shares = {1: 0.50, 5: 0.52, 9: 0.47}
    # BBR's flow holds a cwnd of 25 packets, CUBIC's m flows 30 between them.
    def cubic_point(m: int, s: float) -> list[dict[str, Any]]:
        bbr = {**fake_flow("bbr", "bbr", s * 10), "cwnd_mean": 25.0}
        cubics = [{**fake_flow(f"cubic#{k}", "cubic", (1 - s) * 10 / m), "cwnd_mean": 30 / m} for k in range(m)]
        return [fake_summary([bbr, *cubics], {})]

    cubic = [({"flows.1.count": m}, cubic_point(m, s)) for m, s in cubic_shares.items()]
    fake_experiment(root, "seed004/cubic-count", 18, cubic, 1, SEED004_FLOWS)
    loss = [({"bottleneck.loss_pct": p},
             [fake_summary([fake_flow("bbr", "bbr", s * 10), fake_flow("cubic", "cubic", (1 - s) * 10)], {})])
            for p, s in ((0, 0.4), (10, 0.7))]
    fake_experiment(root, "seed004/loss", 18, loss, 1, SEED004_FLOWS)
    return {"measured": measured, "cubic": cubic_shares}


def long_table41(root: Path) -> None:
    """Table 4.1 with three 60 s repetitions (second flow at 3 s), original BBR near the paper's 36.3% in
    steady state and RTT-gain BBR at 0.1% over the whole run, none of it after start-up."""
    (root / "meta.json").write_text(json.dumps({"profile": "paper", "runs": [
        {"command": "bbrbench reproduce", "revision": "abc", "started": "t0"}]}))
    rates = {"bbr": ((0.30, 0.31, 0.32), (0.34, 0.35, 0.36)), "rttgain_a0.75": ((0.001, 0.0012, 0.0011), (0, 0, 0)),
             "rttgain_a0.5": ((0.0011, 0.001, 0.0012), (0, 0, 0))}
    points = [({"flows.0.label": label, "bottleneck.rate_mbit": 20},
               [fake_summary([fake_flow(label, "bbr", 9.0)], {"retrans_rate": r}, {"retrans_rate": st})
                for r, st in zip(*rs)]) for label, rs in rates.items()]
    fake_experiment(root, "seed000/table4.1", 60, points, 3, [{"algo": "bbr", "count": 2, "start_step_s": 3}])


REPRO_README = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "README.md"


def fig8_bbr1_bbr2(runs: Path) -> None:
    """Fig 8's experiment at n 3, bbr1 and bbr2 at one and ten flows (points p0-p3), every run alike."""
    runs.mkdir()
    (runs / "meta.json").write_text(json.dumps({"profile": "standard", "runs": [
        {"command": "bbrbench reproduce", "revision": "abc", "started": "t0"}]}))
    points = [({"flows.0.algo": algo, "flows.0.count": n},
               [fake_summary([fake_flow("f", algo, 9.0, retrans=14_480)], {"retrans_rate": 0.01}) for _ in range(3)])
              for algo in ("bbr1", "bbr2") for n in (1, 10)]
    fake_experiment(runs, "seed001/fig8", 60, points, 3, [{"algo": "bbr1"}])
