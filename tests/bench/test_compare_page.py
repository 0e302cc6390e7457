"""compare's page and figures from synthetic runs (no root, no traffic): the facts come from the resolved
scenario (profile, --set overrides, defaults) and the runs' host.json; the throughput-delay picture has no
negative delays and no overprinted labels; figures come as PNG and SVG; significant ratios are marked."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from bbrbench import cli, sweep
from bbrbench.analysis import comparison, plots
from bbrbench.experiments import compare
from bbrbench.results import read_json, write_json
from bbrbench.scenario import AlgoCatalog
from benchutil import write_fake_run

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr", "reno"}), bbrkit=frozenset({"bbr1"}))


def compare_plan(*argv: str, catalog: AlgoCatalog = CATALOG) -> sweep.Plan:
    """The plan `bbrbench compare ARGV` would run, through the command line's own resolution."""
    args = cli.build_parser().parse_args(["compare", *argv])
    _, raw = cli.common.load_scenario(args)
    return compare.plan_runs(raw, catalog, args.algos, args.reps)


def fake_compare(out: Path, plan_: sweep.Plan, reps: int | None = None) -> None:
    """`reps` repetitions of every point done (default all), as `compare` leaves them, plus compare.json."""
    rng = np.random.default_rng(23)
    sweep.open_plan(plan_, out)
    for rep in range(plan_.repetitions if reps is None else reps):
        for point in plan_.points:
            write_fake_run(out / "points" / point.id / f"rep{rep}", sweep.point_raw(plan_.raw, point.overrides), rng,
                           spread_ms=2.0 + rep)
    sweep.aggregate(out)
    write_json(out / compare.RESULT_FILE, "compare", {"algorithms": compare.algorithms(plan_),
                                                      "started": "2026-01-01 10:00:00 UTC",
                                                      "finished": "2026-01-01 10:04:00 UTC"})


def test_the_sweep_aggregates_the_tables_columns_and_nothing_else() -> None:
    """compare.toml names no metrics: the plan's are COLUMNS', so a column added is a metric aggregated."""
    assert compare_plan("cubic", "--reps", "2").metrics == [c.metric for c in comparison.COLUMNS]
    assert "metrics" not in cli.common.load_scenario(cli.build_parser().parse_args(["compare"]))[1]["sweep"]


def test_page_facts_follow_overrides_and_host(tmp_path: Path) -> None:
    plan_ = compare_plan("cubic", "--reps", "2", "--set", "bottleneck.buffer_packets=100",
                         "--set", "flows.0.start_step_s=5", "--set", "duration_s=10", "--set", "metrics.warmup_s=3")
    out = tmp_path / "cmp"
    fake_compare(out, plan_)
    compare.report(out)
    page = (out / compare.PAGE).read_text()
    # The window the table covers, on the page and under the console table.
    window = "steady state: from 3 s after the last flow&#x27;s start to the end of the run (1 flow: 3-10 s; " \
             "2 flows: 8-10 s)"
    assert f"Table and figures cover the {window}." in page
    assert "Over the steady state: from 3 s after" in (out / "table.txt").read_text()
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
    rows = comparison.rows_against_reference(read_json(out / "sweep.json", "sweep"))
    facts = comparison.describe(compare.resolved_cases(plan_), plan_.repetitions, compare.run_hosts(out, rows), {})
    # compare.toml: 2 BDP of 125,000 bytes = 165 packets; 5 s runs and 3 repetitions from the profile.
    assert facts[0] == "Path: 50 Mbit/s tbf bottleneck, base RTT 20 ms, FIFO of 165 packets (2 BDP at 20 ms)."
    assert facts[1].startswith("Each run 5 s; cases: 1 flow; 2 flows, the second starting 2 s after the first. "
                               "3 repetitions")


def _label_boxes(fig: Figure) -> list[Bbox]:
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in fig.axes[0].texts]


def test_throughput_delay_has_no_negative_delay_and_labels_apart(tmp_path: Path) -> None:
    # Three runs each, as the quick profile; bbr's delays scatter across zero (the delay line's jitter) and
    # four algorithms share one mean, the case where labels used to overprint.
    points = {"bbr": [(-3.0, 47.5), (1.0, 47.9), (14.0, 47.7)], "cubic": [(30.0, 47.8), (30.5, 47.8), (29.5, 47.9)]}
    points |= {algo: [(5.0, 47.6), (5.2, 47.6), (4.8, 47.6)] for algo in ("bbr1", "bbr2", "bbr3", "bbr_acd")}
    fig = plots.throughput_delay_figure(points, "t", "95th-percentile queueing delay", 50.0)
    try:
        ax = fig.axes[0]
        assert min(ax.get_xlim()) == 0.0 and min(ax.get_ylim()) >= 0.0 and max(ax.get_ylim()) <= 51.0
        # Everything drawn lies at a delay >= 0: the runs' dots, the means and the crosses' bars.
        xs = [x for c in ax.collections if isinstance(c, PathCollection) for x in c.get_offsets()[:, 0]]
        xs += [x for c in ax.collections if isinstance(c, LineCollection)
               for segment in c.get_segments() for x in segment[:, 0]]
        xs += [x for line in ax.lines for x in np.asarray(line.get_xdata(), dtype=float)]
        assert len(xs) > 18 and min(xs) >= 0.0
        boxes = _label_boxes(fig)
        assert [t.get_text() for t in ax.texts] == list(points)
        assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
        legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
        assert legend.x0 >= ax.get_window_extent(fig.canvas.get_renderer()).x1, "legend outside the axes"
    finally:
        plt.close(fig)


def test_figures_written_as_png_and_svg(tmp_path: Path) -> None:
    made = plots.rtt_cdf({"bbr": np.array([20.0, 21.0, np.nan, 25.0]), "cubic": np.array([])}, tmp_path / "c.png",
                         "t")
    assert made == tmp_path / "c.png" and made.stat().st_size > 0 and (tmp_path / "c.svg").stat().st_size > 0
    plan_ = compare_plan("bbr1", "--reps", "2", "--set", "duration_s=4")
    out = tmp_path / "cmp"
    fake_compare(out, plan_)
    compare.report(out, "mean")
    names = sorted(p.name for p in (out / "plots").iterdir())
    for case in ("1flow", "2flow"):
        for kind in ("throughput-delay", "rtt-cdf"):
            assert f"{kind}-{case}.png" in names and f"{kind}-{case}.svg" in names
    page = (out / compare.PAGE).read_text()
    assert "Throughput and mean queueing delay, 1 flow" in page and "RTT distribution, 2 flows" in page
    assert 'href="plots/rtt-cdf-1flow.svg"' in page


def test_html_table_marks_significant_ratios_only(tmp_path: Path) -> None:
    plan_ = compare_plan("cubic", "bbr1", "--reps", "3", "--set", "duration_s=4")
    out = tmp_path / "cmp"
    fake_compare(out, plan_)
    rows = comparison.rows_against_reference(read_json(out / "sweep.json", "sweep"))
    html_table = comparison.table(rows, "html")
    marked = re.findall(r'<span class="sig" title="([^"]*)">([^<]*)</span>', html_table)
    cubic = next(r for r in rows if r["algo"] == "cubic" and r["flows"] == 1)
    ratio = cubic["metrics"]["steady.queueing_delay_ms_mean"]["ratio_to_reference"]
    # cubic's 30 ms against bbr's 4: significant, marked, with its interval in the tooltip.
    assert (f"ratio to bbr {ratio['ratio']:.3f} ± {ratio['ci95']:.3f}: its 95% interval excludes 1",
            comparison._format(cubic["metrics"]["steady.queueing_delay_ms_mean"], comparison.COLUMNS[4])
            + f" ({ratio['ratio']:.2f}*)") in marked
    # Exactly the starred cells of the text table are marked.
    assert len(marked) == comparison.table(rows).count("*)")
    assert all(text.endswith("*)") for _, text in marked)


@pytest.mark.skipif(shutil.which("chromedriver") is None, reason="needs chromium-driver (install-deps.sh --test)")
def test_page_table_cells_do_not_wrap_at_1280_px(tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    # Eight algorithms, as the main job's run: the widest table compare makes by default.
    algos = ("cubic", "bbr1", "bbr2", "bbr3", "bbr_acd", "bbr_draft", "bbr_rttgain")
    catalog = AlgoCatalog(kernel=frozenset({"cubic", "bbr"}), bbrkit=frozenset(algos[1:]))
    plan_ = compare_plan(*algos, "--reps", "3", "--set", "duration_s=4", catalog=catalog)
    out = tmp_path / "cmp"
    fake_compare(out, plan_)
    compare.report(out)
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        driver.get((out / compare.PAGE).as_uri())
        assert driver.execute_script("return window.innerWidth") <= 1280
        # A cell whose text wrapped has boxes on more than one line (more than one distinct top).
        lines = driver.execute_script("""
            return Array.from(document.querySelectorAll('th, td')).map(cell => {
                const range = document.createRange(); range.selectNodeContents(cell);
                const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
                return [cell.textContent, tops.size]; });""")
        assert len(lines) == (1 + 2 * 8) * 10 and not [text for text, n in lines if n > 1]
        # And the table fits the window: nothing to scroll sideways.
        assert driver.execute_script("const box = document.querySelector('.table'); "
                                     "return box.scrollWidth <= box.clientWidth")
    finally:
        driver.quit()


def test_runs_csv_has_a_row_per_run_and_points_have_readable_names(tmp_path: Path) -> None:
    """runs.csv: one row per finished run with its overrides, metrics and host; points/by-label links the
    point directories under their labels."""
    plan_ = compare_plan("cubic", "bbr1", "--reps", "2")
    out = tmp_path / "cmp"
    fake_compare(out, plan_)
    with (out / "runs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * len(plan_.points)
    assert {r["rep"] for r in rows} == {"0", "1"}
    metric = plan_.metrics[0]
    assert all(r["host_kernel"] == "6.18.0-test" and r[metric] for r in rows), rows[0]
    for point in plan_.points:
        link = next(p for p in (out / "points" / "by-label").iterdir() if p.resolve().name == point.id)
        assert link.is_symlink() and (link / "rep0").is_dir()


def test_the_page_gives_each_runs_trust_verdict_and_marks_the_cells_it_left(tmp_path: Path) -> None:
    """A run that failed the trust check is named with its reason in the per-run verdicts, and every
    cell of its point is marked (class "untrusted", the run and reason in the tooltip); other points' cells
    are not."""
    plan_ = compare_plan("cubic", "bbr1", "--reps", "2", "--set", "duration_s=4")
    out = tmp_path / "cmp"
    fake_compare(out, plan_)
    point = plan_.points[0]
    for rep, ok in ((0, True), (1, False)):
        run = out / "points" / point.id / f"rep{rep}" / "summary.json"
        summary = read_json(run, "summary")
        summary["trust"] = {"ok": ok, "failed": [] if ok else ["frames over 1 ms in the socket buffer: 900"]}
        write_json(run, "summary", summary)
    sweep.aggregate(out)
    rows = comparison.rows_against_reference(read_json(out / "sweep.json", "sweep"))
    html_table = comparison.table(rows, "html")
    untrusted = re.findall(r'<span class="(?:sig )?untrusted" title="([^"]*)">', html_table)
    bad = next(r for r in rows if r["point"] == point.id)
    assert len(untrusted) == sum(1 for m in bad["metrics"].values() if m) > 0
    assert all("rep 1: frames over 1 ms in the socket buffer: 900" in t for t in untrusted)
    verdicts = comparison.verdicts(rows, {row["point"]: sweep.done_runs(out, row["point"]) for row in rows})
    assert verdicts.count("<tr>") == 3  # the header and the two runs given a verdict
    assert re.search(r">trusted *<", verdicts) and "UNTRUSTED: frames over 1 ms in the socket buffer: 900" in verdicts
