"""compare's page and figures from synthetic runs (no root, no traffic): the facts come from the resolved
scenario (profile, --set overrides, defaults) and the runs' host.json."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from bbrbench import cli
from bbrbench.analysis.report import summarize
from bbrbench.experiments import compare, sweep
from bbrbench.results import FLOW_FIELDS, read_json, write_json
from bbrbench.scenario import AlgoCatalog, validate

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr", "reno"}), bbrkit=frozenset({"bbr1"}))
HOST = {"hostname": "testhost", "kernel": "6.18.0-test", "cpus": 4, "machine": "x86_64",
        "bbrctl_version": "bbrctl test", "objects_sha256": "0" * 64, "algorithms_sha256": "1" * 64,
        "loadavg_start": [0.25, 0.2, 0.1], "loadavg_end": [1.5, 0.4, 0.2]}
# Per algorithm: mean queueing delay (ms) the synthetic flows add to the base RTT, and their goodput share.
BEHAVIOUR = {"bbr": (4.0, 0.99), "cubic": (30.0, 0.995), "bbr1": (4.2, 0.98), "reno": (28.0, 0.99)}


def compare_plan(*argv: str, catalog: AlgoCatalog = CATALOG) -> sweep.Plan:
    """The plan `bbrbench compare ARGV` would run, through the command line's own resolution."""
    args = cli.build_parser().parse_args(["compare", *argv])
    _, raw = cli._load(args)
    return compare.plan(raw, catalog, args.algos, args.reps)


def _write_run(run_dir: Path, raw: dict, rng: np.random.Generator, reps_seed: int) -> None:
    """A run directory as the runner leaves it (scenario.json, raw/flows.csv, host.json), summarised by the
    real code: ss samples every 100 ms with an RTT of base + the algorithm's queueing delay, and a
    steady delivery rate."""
    scenario = validate(raw, AlgoCatalog(kernel=frozenset(BEHAVIOUR), bbrkit=frozenset()))
    (run_dir / "raw").mkdir(parents=True)
    write_json(run_dir / "scenario.json", "run", {"resolved": scenario.to_dict(), "raw": raw, "prefix": "t",
                                                  "kernel": HOST["kernel"]})
    rate = scenario.bottleneck.rate_mbit * 1e6 / 8 * 1448 / 1514 / len(scenario.flows)
    with (run_dir / "raw" / "flows.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, FLOW_FIELDS)
        writer.writeheader()
        for flow in scenario.flows:
            qdelay, share = BEHAVIOUR[flow.algo]
            base = scenario.sender(flow.sender).rtt_ms
            for t in np.arange(flow.start_s + 0.1, scenario.duration_s, 0.1):
                acked = rate * share * (t - flow.start_s)
                writer.writerow({"t_s": f"{t:.3f}", "flow": flow.index, "algo": flow.algo,
                                 "srtt_us": round((base + max(0.0, rng.normal(qdelay, 2.0 + reps_seed))) * 1000),
                                 "cwnd": 40, "bytes_acked": int(acked), "bytes_sent": int(acked * 1.001),
                                 "bytes_retrans": int(acked * 0.001), "mss": 1448})
    (run_dir / "raw" / "events.json").write_text("{}\n")
    write_json(run_dir / "host.json", "host", HOST)
    summarize(run_dir)
    (run_dir / sweep.DONE_MARK).write_text("")


def fake_compare(out: Path, plan_: sweep.Plan, reps: int | None = None) -> None:
    """`reps` repetitions of every point done (default all), as `compare` leaves them, plus compare.json."""
    rng = np.random.default_rng(23)
    sweep._open_plan(plan_, out)
    for rep in range(plan_.repetitions if reps is None else reps):
        for point in plan_.points:
            _write_run(out / "points" / point.id / f"rep{rep}", sweep.point_raw(plan_.raw, point.overrides), rng,
                       rep)
    sweep.aggregate(out)
    write_json(out / compare.RESULT_FILE, "compare", {"algorithms": compare.algorithms(plan_),
                                                      "started": "2026-01-01 10:00:00 UTC",
                                                      "finished": "2026-01-01 10:04:00 UTC"})


def test_page_facts_follow_overrides_and_host(tmp_path: Path) -> None:
    plan_ = compare_plan("cubic", "--reps", "2", "--set", "bottleneck.buffer_packets=100",
                         "--set", "flows.0.start_step_s=5", "--set", "duration_s=10")
    out = tmp_path / "cmp"
    fake_compare(out, plan_)
    compare.report(out)
    page = (out / compare.PAGE).read_text()
    # 100 x 1514 bytes over 50 Mbit/s x 20 ms = 125,000 bytes: 1.2 BDP. The file's 2 BDP is gone.
    assert "50 Mbit/s tbf bottleneck, base RTT 20 ms, FIFO of 100 packets (1.2 BDP at 20 ms)." in page
    assert "Each run 10 s; cases: 1 flow; 2 flows, the second starting 5 s after the first." in page
    assert "2 repetitions, interleaved" in page
    assert "Ran on testhost (kernel 6.18.0-test, 4 CPUs); 1-minute load average at the runs&#x27; starts and " \
           "ends 0.25 to 1.50." in page
    assert "(2 BDP" not in page and "2 s after" not in page and "shared" not in page


def test_page_facts_of_the_quick_profile_defaults(tmp_path: Path) -> None:
    plan_ = compare_plan("--profile", "quick")
    out = tmp_path / "cmp"
    fake_compare(out, plan_, reps=1)
    rows = compare.summarise(read_json(out / "sweep.json", "sweep"))
    facts = compare.describe(plan_, compare.run_hosts(out, rows), {})
    # compare.toml: 2 BDP of 125,000 bytes = 165 packets; 5 s runs and 3 repetitions from the profile.
    assert facts[0] == "Path: 50 Mbit/s tbf bottleneck, base RTT 20 ms, FIFO of 165 packets (2 BDP at 20 ms)."
    assert facts[1].startswith("Each run 5 s; cases: 1 flow; 2 flows, the second starting 2 s after the first. "
                               "3 repetitions")
