"""The seed papers' time-series figures (scenarios/repro/timeseries.toml): each drawn from the samples of one
repetition, each statement on it measured on every repetition of its point and decided by the claims'
rule. The measures read the samples the harness records for every run: the bottleneck's backlog every
10 ms (queue.csv), which gives the RTT a packet meets (propagation RTT + backlog / link rate), and each
flow's ss state every 100 ms (flows.csv: cwnd and unacknowledged packets, bytes sent, acknowledged and
retransmitted)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from ..analysis.metrics import window_rates_bps  # noqa: E402
from ..analysis.rundata import load_run  # noqa: E402
from ..analysis.stats import mean_ci95  # noqa: E402
from ..results import read_json  # noqa: E402
from .claims import FACTOR, MIN_N, Estimate, Interval, Outcome, Rule, Verdict, decide, too_short, verdict_line  # noqa: E402
from .papers import REPRO_DIR  # noqa: E402
from .points import MSS_BYTES, trusted_reps  # noqa: E402

FIGURES = REPRO_DIR / "timeseries.toml"
# Start-up, and the first PROBE_RTT after the last flow joins, are left out of the steady window.
SETTLE_S = 10.0
# The first flow's Startup and Drain: before a second flow joins, 3 s later in seed 000's set-ups.
STARTUP_S = 3.0
# A PROBE_RTT sample: cwnd at bbr_cwnd_min_target (4 packets).
PROBE_RTT_CWND = 4
BIN_S = 1.0
# ss samples every 100 ms; a finer grid would only interpolate.
CWND_GRID_S = 0.1
DPI = 90


@dataclass(frozen=True)
class Run:
    """One repetition's samples, as the measures read them."""

    directory: Path
    scenario: dict[str, Any]
    t_q: np.ndarray            # queue sample times, s
    backlog_bytes: np.ndarray
    backlog_packets: np.ndarray
    flows: dict[int, dict[str, np.ndarray]]
    drops: np.ndarray = field(default_factory=lambda: np.array([]))  # the bottleneck's cumulative drops
    limit_bytes: float = 0.0   # the bottleneck buffer's size

    @property
    def rate_bps(self) -> float:
        return float(self.scenario["bottleneck"]["rate_mbit"]) * 1e6

    @property
    def base_rtt_ms(self) -> float:
        s = self.scenario["senders"][0]
        return float(s["delay_fwd_ms"] + s["delay_rev_ms"])

    @property
    def rtt_ms(self) -> np.ndarray:
        """The RTT a packet entering the bottleneck meets: propagation RTT + the backlog's drain time."""
        return self.base_rtt_ms + self.backlog_bytes * 8 / self.rate_bps * 1e3

    def starts(self) -> list[float]:
        return sorted(float(f["start_s"]) for f in self.scenario["flows"])

    @property
    def steady(self) -> tuple[float, float]:
        return self.starts()[-1] + SETTLE_S, float(self.scenario["duration_s"])

    @classmethod
    def load(cls, directory: Path) -> Run:
        meta, data, _ = load_run(directory)
        q = data.queue
        flows = {i: {"t": f.t, **f.columns} for i, f in data.flows.items()}
        return cls(directory, meta["resolved"], q.get("t_s", np.array([])), q.get("backlog_bytes", np.array([])),
                   q.get("backlog_packets", np.array([])), flows, q.get("drops", np.array([])),
                   float(data.info.limit_bytes))


def _within(t: np.ndarray, window: tuple[float, float]) -> np.ndarray:
    return (t >= window[0]) & (t <= window[1])


def startup_rtt_peak_ms(run: Run) -> float | None:
    starts = run.starts()
    end = min(STARTUP_S, starts[1]) if len(starts) > 1 else STARTUP_S
    rtt = run.rtt_ms[_within(run.t_q, (0.0, end))]
    return float(rtt.max()) if rtt.size else None


def probe_rtt_peak_ms(run: Run) -> float | None:
    """The median over the steady window's 1 s bins of each bin's highest RTT: a bin holds several gain
    cycles, so its peak is a probe phase's; the median leaves out the bins of PROBE_RTT."""
    lo, hi = run.steady
    bins = (run.rtt_ms[_within(run.t_q, (t, t + BIN_S))] for t in np.arange(lo, hi - BIN_S, BIN_S))
    peaks = [b.max() for b in bins if b.size]
    return float(np.median(peaks)) if peaks else None


def steady_rtt_max_ms(run: Run) -> float | None:
    rtt = run.rtt_ms[_within(run.t_q, run.steady)]
    return float(rtt.max()) if rtt.size else None


def queue_packets_median(run: Run) -> float | None:
    q = run.backlog_packets[_within(run.t_q, run.steady)]
    return float(np.median(q)) if q.size else None


def _probe_rtt_entries(flow: dict[str, np.ndarray]) -> list[float]:
    """Times of the samples where cwnd first sits at PROBE_RTT's 4 packets, after Startup."""
    at_min = (flow["cwnd"] <= PROBE_RTT_CWND) & (flow["t"] > STARTUP_S)
    return [float(flow["t"][i]) for i in np.flatnonzero(at_min) if i == 0 or not at_min[i - 1]]


def probe_rtt_interval_s(run: Run) -> float | None:
    entries = _probe_rtt_entries(run.flows[0])
    return float(np.mean(np.diff(entries))) if len(entries) >= 2 else None


def probe_rtt_inflight_packets(run: Run) -> float | None:
    """The lowest unacknowledged count each flow reaches in the steady window, averaged over the flows."""
    lows = [f["unacked"][_within(f["t"], run.steady)].min(initial=np.inf) for f in run.flows.values()]
    lows = [x for x in lows if np.isfinite(x)]
    return float(np.mean(lows)) if lows else None


def inflight_over_cwnd(run: Run) -> float | None:
    """Flow 1's unacknowledged packets over its cwnd, median over the steady window outside PROBE_RTT."""
    f = run.flows[0]
    keep = _within(f["t"], run.steady) & (f["cwnd"] > PROBE_RTT_CWND)
    return float(np.median(f["unacked"][keep] / f["cwnd"][keep])) if keep.any() else None


def _per_second(f: dict[str, np.ndarray], column: str, edges: np.ndarray) -> np.ndarray:
    """A cumulative byte counter as full-sized packets per 1 s bin (a counter ss leaves out is 0)."""
    return window_rates_bps(f["t"], np.nan_to_num(f[column]), edges) / 8 / MSS_BYTES


def _bins(run: Run) -> np.ndarray:
    return np.arange(0.0, float(run.scenario["duration_s"]) + BIN_S / 2, BIN_S)


def queue_drops(run: Run) -> float | None:
    """Packets the bottleneck's queue dropped over the run (its own counter, not the senders' retransmissions:
    a sender retransmits on a timeout what was not lost, and its byte counters give fractional packets)."""
    return float(run.drops[-1] - run.drops[0]) if run.drops.size >= 2 else None


def drop_seconds_share(run: Run) -> float | None:
    """The share of the 1 s bins after the last flow starts in which the bottleneck dropped a packet."""
    if run.drops.size < 2:
        return None
    edges = _bins(run)
    at = np.interp(edges, run.t_q, run.drops)
    after = edges[:-1] >= run.starts()[-1]
    return float(np.mean(np.diff(at)[after] > 0)) if after.any() else None


def _steady_share_at_least(run: Run, backlog_bytes: float) -> float | None:
    """The share of the steady window's queue samples holding at least backlog_bytes."""
    keep = _within(run.t_q, run.steady)
    if not keep.any() or run.limit_bytes <= 0:
        return None
    return float(np.mean(run.backlog_bytes[keep] >= backlog_bytes))


def near_full_share(run: Run) -> float | None:
    """The share of the steady window's queue samples holding at least the buffer's size / 1.25: full within
    the report's margin for a number the paper gives as 'about' (a 10 ms sample rarely catches the last packet)."""
    return _steady_share_at_least(run, run.limit_bytes / FACTOR)


def full_buffer_share(run: Run) -> float | None:
    """The share of the steady window's queue samples with the buffer full (less than one full-sized packet
    free): what an RTT bound at the buffer's size cannot tell apart, since no algorithm exceeds it."""
    return _steady_share_at_least(run, run.limit_bytes - MSS_BYTES)


def cwnd_jain(run: Run) -> float | None:
    """The mean over the steady window of Jain's index of the flows' congestion windows (ss samples put on
    one 100 ms grid): how equally the flows hold the path, as seed 002's Figs 5(a) and 10(a) show it."""
    if len(run.flows) < 2:
        return None
    lo, hi = run.steady
    grid = np.arange(lo, hi, CWND_GRID_S)
    if grid.size == 0:
        return None
    cwnd = np.array([np.interp(grid, f["t"], f["cwnd"]) for f in run.flows.values()])
    return float(np.mean(cwnd.sum(axis=0) ** 2 / (len(cwnd) * (cwnd ** 2).sum(axis=0))))


# The window after the last flow starts in which a flow mix that converges at once is already fair: past
# the newest flows' start-up, within the paper's shortest equilibrium times (5-10 s for BBR-ACD).
FAIR_WINDOW_S = (5.0, 15.0)


def jain_after_last_start(run: Run) -> float | None:
    """The mean over FAIR_WINDOW_S's 1 s bins of Jain's index of the flows' delivery rates (bytes acked):
    how fair the mix is soon after the last flow starts, tolerating no dip and needing no run's end."""
    start = run.starts()[-1]
    edges = np.arange(start + FAIR_WINDOW_S[0], start + FAIR_WINDOW_S[1] + BIN_S / 2, BIN_S)
    if edges[-1] > float(run.scenario["duration_s"]) or not run.flows:
        return None
    rates = np.array([_per_second(f, "bytes_acked", edges) for f in run.flows.values()])
    total, squares = rates.sum(axis=0), (rates ** 2).sum(axis=0)
    keep = squares > 0
    return float(np.mean(total[keep] ** 2 / (len(rates) * squares[keep]))) if keep.any() else None


MEASURES: dict[str, tuple[Callable[[Run], float | None], str, tuple[float | None, float | None]]] = {
    # name: (function, unit, physical bounds)
    "startup_rtt_peak_ms": (startup_rtt_peak_ms, " ms", (0.0, None)),
    "probe_rtt_peak_ms": (probe_rtt_peak_ms, " ms", (0.0, None)),
    "steady_rtt_max_ms": (steady_rtt_max_ms, " ms", (0.0, None)),
    "probe_rtt_interval_s": (probe_rtt_interval_s, " s", (0.0, None)),
    "queue_packets_median": (queue_packets_median, " packets", (0.0, None)),
    "probe_rtt_inflight_packets": (probe_rtt_inflight_packets, " packets", (0.0, None)),
    "inflight_over_cwnd": (inflight_over_cwnd, "", (0.0, None)),
    "jain_after_last_start": (jain_after_last_start, "", (0.0, 1.0)),
    "queue_drops": (queue_drops, " packets", (0.0, None)),
    "drop_seconds_share": (drop_seconds_share, "", (0.0, 1.0)),
    "full_buffer_share": (full_buffer_share, "", (0.0, 1.0)),
    "near_full_share": (near_full_share, "", (0.0, 1.0)),
    "cwnd_jain": (cwnd_jain, "", (0.0, 1.0)),
}


def figures() -> list[dict[str, Any]]:
    with FIGURES.open("rb") as fh:
        return list(tomllib.load(fh)["figure"])


def _matches(overrides: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(overrides.get(k) == v for k, v in wanted.items())


def _reps(out: Path, experiment: str, wanted: dict[str, Any]) -> list[Path]:
    """The finished repetitions of the experiment's point whose overrides include `wanted`."""
    exp = out / experiment
    if not (exp / "plan.json").is_file():
        return []
    plan = read_json(exp / "plan.json", "plan")
    found = [p for p in plan["points"] if _matches(p["overrides"], wanted)]
    if len(found) != 1:
        return []
    # A repetition kept without its samples (its summary alone) has nothing to measure here.
    return [r for r in trusted_reps(exp / "points" / found[0]["id"], plan["repetitions"]) if (r / "raw").is_dir()]


def _judge(claim: dict[str, Any], runs: list[Run], rules: list[Rule]) -> list[Verdict]:
    """The claim decided on every repetition by each rule (its own, the second margin family's)."""
    fn = MEASURES[claim["measure"]][0]
    run_s = min(r.steady[1] - r.starts()[-1] for r in runs) if runs else 0.0
    if (short := too_short(float(claim["needs_s"]), claim["why"], run_s)) is not None and runs:
        return [short for _ in rules]
    values = [v for v in (fn(r) for r in runs) if v is not None]
    if len(values) < MIN_N:
        return [Verdict(Outcome.TOO_FEW_RUNS, f"{claim['measure']}: not decided: n = {len(values)}, needs {MIN_N}",
                        len(values)) for _ in rules]
    return [_decide(claim, values, run_s, rule) for rule in rules]


def _decide(claim: dict[str, Any], values: list[float], run_s: float, rule: Rule) -> Verdict:
    _, unit, limits = MEASURES[claim["measure"]]
    m, ci = mean_ci95(values)
    each = ", ".join(f"{v:.3g}" for v in values)
    # Identical repetitions: the zero width is the measure's resolution, not certainty (claims.Interval).
    iv = Interval(f"{claim['measure']} (each: {each})", m, ci or 0.0, f"n = {len(values)}", unit=unit, limits=limits,
                  zero_spread=max(values) == min(values))
    return decide(Estimate(claim["measure"], iv, claim.get("paper")), rule, run_s)


def _entry(fig: dict[str, Any], claim: dict[str, Any], v: Verdict, w: Verdict) -> dict[str, Any]:
    """A claim's summary.json entry: as the experiments' claims, it names the experiment a rerun needs and
    the n declared for it, and carries its verdict under the second margin family."""
    rule = Rule.from_data(claim)
    return {"claim": f"{claim['claim']} [margin: {rule.describe()}]", "experiment": fig["experiment"],
            "rule": rule.describe(), "verdict": v.to_json(),
            "wide": {"rule": rule.widened().describe(), "verdict": w.to_json()},
            **({"n": claim["n"]} if "n" in claim else {})}


def collect_seed(seed: str, out: Path, fig_dir: Path) -> dict[str, Any]:
    """Each of the seed's figures: its claims decided on every repetition, and the drawing of the first;
    nothing when the runs it needs are not here."""
    js: dict[str, Any] = {}
    for fig in (f for f in figures() if f["seed"] == seed):
        claims: list[dict[str, Any]] = []
        for claim in fig.get("claims", []):
            wanted = claim.get("point", fig.get("point", {}))
            runs = [Run.load(r) for r in _reps(out, fig["experiment"], wanted)]
            rule = Rule.from_data(claim)
            claims.append(_entry(fig, claim, *_judge(claim, runs, [rule, rule.widened()])))
        _apply_controls(fig.get("claims", []), claims)
        name = f"{seed}_{fig['item'].lower().replace(' ', '')}.png"
        drawn = DRAWINGS[fig["drawing"]](fig, out, fig_dir / name)
        if drawn or any(c["verdict"]["outcome"] != Outcome.TOO_FEW_RUNS.value for c in claims):
            js[fig["item"]] = {"title": fig["title"], "claims": claims, "figure": name if drawn else None,
                               "drawn_from": drawn}
    return {"claims": [c for f in js.values() for c in f["claims"]], "figures": js} if js else {}


def _apply_controls(defs: list[dict[str, Any]], claims: list[dict[str, Any]]) -> None:
    """A claim whose positive control (`control`: the start of another claim of its figure) does not hold is
    undecided: a measure that misses the effect where the paper shows it cannot show its absence."""
    for d, c in zip(defs, claims):
        control = next((v for v in claims if "control" in d and v["claim"].startswith(d["control"])), None)
        if control is None:
            continue
        c["verdict"] = _controlled(c["verdict"], control["verdict"]["outcome"], d["control"])
        if "wide" in c and "wide" in control:  # the same under the second margins
            c["wide"]["verdict"] = _controlled(c["wide"]["verdict"], control["wide"]["verdict"]["outcome"],
                                               d["control"])


def _controlled(v: dict[str, Any], control: str, name: str) -> dict[str, Any]:
    if v["outcome"] not in (Outcome.HOLDS.value, Outcome.FAILS.value) or control == Outcome.HOLDS.value:
        return v
    said = "does not hold" if control == Outcome.FAILS.value else f"is {control}"
    return Verdict(Outcome.UNDECIDED, f"{v['text']}; but its control ('{name}') {said}, so the measure does not "
                   "show the effect where the paper shows it").to_json()


# A recorded verdict's repetitions, as its text printed them (3 significant digits).
EACH = re.compile(r"\(each: ([^)]*)\)")
DECIDED = (Outcome.HOLDS.value, Outcome.FAILS.value, Outcome.UNDECIDED.value)


def _recorded(c: dict[str, Any], fig: dict[str, Any], claim: dict[str, Any]) -> str:
    """A verdict recorded before the time-series claims carried the second margins and the fragile mark
    (summaries of 2026-11-25): both decided again on the repetitions its text lists, in place, where that
    gives the recorded outcome again; the note that says so, else ""."""
    v = c["verdict"]
    found = EACH.search(v["text"])
    if "wide" in c or not claim or v["outcome"] not in DECIDED or found is None:
        return ""
    rule = Rule.from_data(claim)
    if c["claim"] != f"{claim['claim']} [margin: {rule.describe()}]":
        return ""  # the margin changed since: the recorded verdict is not this rule's
    values = [float(x) for x in found.group(1).split(",")]
    again = _decide(claim, values, float(claim["needs_s"]), rule)
    wide = again if rule.widened() == rule else _decide(claim, values, float(claim["needs_s"]), rule.widened())
    if again.outcome.value != v["outcome"]:
        return ""  # rounding moved it: the recorded verdict stands alone
    v.update({"fragile": again.fragile} if again.fragile else {})
    c.update(_entry(fig, claim, Verdict(Outcome(v["outcome"]), v["text"], v.get("min_n"), again.fragile), wide))
    return "second margins and fragility decided on the repetitions as the record prints them (3 significant digits)"


def parts(js: dict[str, Any]) -> dict[str, str]:
    """The figures a summary's section holds, each with the experiment whose runs give it: what a later
    summary of that experiment replaces (merge_recorded)."""
    experiment = {f["item"]: f["experiment"] for f in figures()}
    return {item: experiment.get(item, "") for item in js.get("figures", {})}


def _refresh_fragility(c: dict[str, Any], claim: dict[str, Any]) -> None:
    """A recorded decided verdict's fragile mark, as today's rule words it (with the n that would decide it),
    from the repetitions its text lists, where deciding them again gives the recorded outcome."""
    v = c["verdict"]
    found = EACH.search(v["text"])
    if not claim or found is None or v["outcome"] not in (Outcome.HOLDS.value, Outcome.FAILS.value):
        return
    rule = Rule.from_data(claim)
    if c["claim"] != f"{claim['claim']} [margin: {rule.describe()}]":
        return
    again = _decide(claim, [float(x) for x in found.group(1).split(",")], float(claim["needs_s"]), rule)
    if again.outcome.value == v["outcome"] and bool(again.fragile) == bool(v.get("fragile")) and again.fragile:
        v["fragile"] = again.fragile


def merge_recorded(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """Two summaries' time-series sections of a seed as one: each figure draws on one experiment, and a later
    summary of some experiments (`--only seed000/table4.1`) holds only their figures, so it replaces those
    and keeps the others', in timeseries.toml's order."""
    merged = {**earlier.get("figures", {}), **later.get("figures", {})}
    order = {f["item"]: i for i, f in enumerate(figures())}
    figs = dict(sorted(merged.items(), key=lambda kv: order.get(kv[0], len(order))))
    return {"claims": [c for f in figs.values() for c in f["claims"]], "figures": figs}


def render(js: dict[str, Any], _fig_dir: Path, rel: str) -> tuple[list[str], dict[str, Any]]:
    if not js:
        return [], {}
    lines = ["### Time series", "",
             "Drawn from one repetition's samples (bottleneck backlog every 10 ms, each flow's ss state every "
             "100 ms); the RTT is the one a packet meets at the bottleneck, propagation RTT + backlog / link rate. "
             "Each statement is measured on every repetition of its point and decided like the claims above "
             f"(steady window: from {SETTLE_S:g} s after the last flow starts).", ""]
    for item, fig in js["figures"].items():
        lines += [f"#### {fig['title']}", ""]
        if fig.get("figure"):
            lines += [f"![{item}]({rel}/{fig['figure']})", "", f"Drawn from `{fig['drawn_from']}`.", ""]
        now: dict[str, Any] = next((f for f in figures() if f["item"] == item and f["title"] == fig["title"]),
                                   {"claims": []})
        recorded = {c["claim"].split(" [margin: ")[0] for c in fig["claims"]}
        for c in fig["claims"]:
            d: dict[str, Any] = next((d for d in now["claims"] if c["claim"].startswith(d["claim"])), {})
            again = _recorded(c, now, d)
            _refresh_fragility(c, d)
            if d:  # the experiment a rerun needs, the n the data file declares for it, and its marks
                c.update({"experiment": now["experiment"], **({"n": d["n"]} if "n" in d else {}), **_marks_of(now, d)})
                _cannot_fail(c, d)
            v = c["verdict"]
            lines.append(verdict_line(c["claim"], Verdict(Outcome(v["outcome"]), v["text"], v.get("min_n"))))
            lines += [*_notes(d), *_robustness(c, again)]
        # Claims written after this record: its summary holds no samples to measure them on.
        for d in (d for d in now["claims"] if d["claim"] not in recorded):
            claim = f"{d['claim']} [margin: {Rule.from_data(d).describe()}]"
            verdict = Verdict(Outcome.TOO_FEW_RUNS, f"{d['measure']}: not measured: the record holds no samples; "
                                                    "the next run decides it", 0)
            lines += [verdict_line(claim, verdict), *_notes(d), *([f"  (n declared for the next run: {d['n']}.)"]
                                                                   if "n" in d else [])]
            fig["claims"].append({"claim": claim, "experiment": now["experiment"], "verdict": verdict.to_json(),
                                  **({"n": d["n"]} if "n" in d else {}), **_marks_of(now, d)})
        lines.append("")
    # The figures' claims as rendered (a record read from JSON keeps them apart from its flat list).
    return lines, {**js, "claims": [c for f in js["figures"].values() for c in f["claims"]]}


def _marks_of(fig: dict[str, Any], claim: dict[str, Any]) -> dict[str, str]:
    """The marks the overview shows beside a claim's verdict, as the experiments' claims carry them: post-hoc,
    and scaled (the claim's own, else its figure's: the runs' length against the paper's)."""
    marks = {"post_hoc": claim.get("post_hoc", ""), "scaled": claim.get("scaled", fig.get("scaled", ""))}
    return {k: v for k, v in marks.items() if v}


def _cannot_fail(c: dict[str, Any], claim: dict[str, Any]) -> None:
    """A bound the set-up meets for any algorithm holds without showing anything: its own outcome, under both
    margin families, so that it is not counted with the claims that hold."""
    if not claim.get("cannot_fail"):
        return
    for v in (c["verdict"], c.get("wide", {}).get("verdict")):
        if v and v["outcome"] == Outcome.HOLDS.value:
            v.update(outcome=Outcome.CANNOT_FAIL.value, text=f"{v['text']}; the set-up meets this bound for any "
                     "algorithm")


def _robustness(c: dict[str, Any], recorded: str) -> list[str]:
    """As the experiments' claims: the verdict under the second margins where their rule differs or it moves,
    the fragile mark, the n declared for the next run."""
    lines = []
    v, w = c["verdict"], c.get("wide")
    if w and (w["rule"] != c.get("rule") or w["verdict"]["outcome"] != v["outcome"]):
        same = ("the same" if w["verdict"]["outcome"] == v["outcome"]
                else f"**{w['verdict']['outcome']}** (differs: depends on the margin)")
        lines.append(f"  (Second margins, {w['rule']}: {same}.)")
    if v.get("fragile"):
        lines.append(f"  (Fragile: {v['fragile']}.)")
    if recorded:
        lines.append(f"  (Recorded verdict: {recorded}.)")
    if "n" in c:
        lines.append(f"  (n declared for the next run: {c['n']}.)")
    return lines


def _notes(claim: dict[str, Any]) -> list[str]:
    """What the data file says of a claim beyond its rule: a hedge, a margin written after the data."""
    notes = (("Cannot fail", "cannot_fail"), ("Unproven", "hedge"), ("Post-hoc", "post_hoc"),
             ("Measure", "measure_note"))
    return [f"  ({label}: {claim[key]}.)" for label, key in notes if claim.get(key)]


def _marks(ax: Any, fig: dict[str, Any], below: float = float("inf")) -> None:
    for mark in (m for m in fig.get("marks", []) if m["y"] < below):
        ax.axhline(mark["y"], color="grey", linestyle="--", linewidth=0.8)
        ax.annotate(mark["text"], (0.01, mark["y"]), xycoords=("axes fraction", "data"), fontsize=7,
                    va="bottom", color="dimgrey")


def _draw_rtt(fig: dict[str, Any], out: Path, path: Path) -> str | None:
    reps = _reps(out, fig["experiment"], fig["point"])
    if not reps:
        return None
    run = Run.load(reps[0])
    zoom = fig.get("zoom_s")
    figure, axes = plt.subplots(1, 2 if zoom else 1, figsize=(11 if zoom else 8, 3.4), squeeze=False)
    ax = axes[0][0]
    ax.plot(run.t_q, run.rtt_ms, linewidth=0.6, label="RTT at the bottleneck (10 ms samples)")
    for i, f in run.flows.items():
        ax.plot(f["t"], f["srtt_us"] / 1e3, ".", markersize=2, label=f"flow {i + 1} srtt (ss, 100 ms)")
    _marks(ax, fig)
    ax.set_xlabel("s")
    ax.set_ylabel("ms")
    ax.legend(fontsize=7)
    if zoom:
        lo = sum(run.steady) / 2
        keep = _within(run.t_q, (lo, lo + zoom))
        axes[0][1].plot(run.t_q[keep], run.rtt_ms[keep], linewidth=0.8)
        # The zoom shows the probe phases: marks far above them would flatten it.
        top = float(run.rtt_ms[keep].max(initial=run.base_rtt_ms)) + 3
        axes[0][1].set_ylim(run.base_rtt_ms - 1, top)
        _marks(axes[0][1], fig, below=top)
        axes[0][1].set_xlabel("s")
        axes[0][1].set_title(f"ProbeBW, {zoom:g} s", fontsize=8)
    figure.suptitle(fig["title"], fontsize=9)
    _save(figure, path)
    return str(reps[0].relative_to(out))


def _draw_queue_inflight(fig: dict[str, Any], out: Path, path: Path) -> str | None:
    reps = _reps(out, fig["experiment"], fig["point"])
    if not reps:
        return None
    run = Run.load(reps[0])
    figure, (a, b, c) = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    a.plot(run.t_q, run.backlog_packets, linewidth=0.6)
    a.set_ylabel("queue, packets")
    _marks(a, fig)
    for i, f in run.flows.items():
        b.plot(f["t"], f["unacked"], linewidth=0.8, label=f"flow {i + 1}")
    b.set_ylabel("inflight, packets")
    b.legend(fontsize=7)
    f0 = run.flows[0]
    c.plot(f0["t"], f0["cwnd"], linewidth=0.8, label="flow 1 cwnd")
    c.plot(f0["t"], f0["unacked"], linewidth=0.8, label="flow 1 inflight")
    c.set_ylabel("packets")
    c.set_xlabel("s")
    c.legend(fontsize=7)
    figure.suptitle(fig["title"], fontsize=9)
    _save(figure, path)
    return str(reps[0].relative_to(out))


def _draw_sender_rates(fig: dict[str, Any], out: Path, path: Path) -> str | None:
    panels = [(p["name"], algo, _reps(out, fig["experiment"], {**p["point"], "flows.0.algo": algo}))
              for p in fig["panels"] for algo in fig["algos"]]
    if not any(reps for *_, reps in panels):
        return None
    ncols = len(fig["algos"])
    figure, axes = plt.subplots(len(fig["panels"]), ncols, figsize=(11, 2.2 * len(fig["panels"])), squeeze=False,
                                sharex=True)
    drawn = []
    for k, (name, algo, reps) in enumerate(panels):
        ax = axes[k // ncols][k % ncols]
        ax.set_title(f"{name}, {algo}", fontsize=8)
        if not reps:
            continue
        run = Run.load(reps[0])
        drawn.append(str(reps[0].relative_to(out)))
        edges = _bins(run)
        by_sender: dict[str, list[int]] = {}
        for f in run.scenario["flows"]:
            by_sender.setdefault(f["sender"], []).append(f["index"])
        for sender, indices in by_sender.items():
            flows = [run.flows[i] for i in indices if i in run.flows]
            sent = sum(_per_second(f, "bytes_sent", edges) for f in flows)
            acked = sum(_per_second(f, "bytes_acked", edges) for f in flows)
            lost = sum(_per_second(f, "bytes_retrans", edges) for f in flows)
            line, = ax.plot(edges[:-1], sent, linewidth=0.8, label=f"{sender} in")
            ax.plot(edges[:-1], acked, linewidth=0.8, linestyle=":", color=line.get_color(), label=f"{sender} out")
            ax.bar(edges[:-1], lost, width=BIN_S, color=line.get_color(), alpha=0.4, label=f"{sender} retransmitted")
        ax.set_ylabel("packets/s", fontsize=7)
    axes[0][0].legend(fontsize=6, ncol=3)
    for ax in axes[-1]:
        ax.set_xlabel("s")
    figure.suptitle(fig["title"], fontsize=9)
    _save(figure, path)
    return ", ".join(drawn)


def _save(figure: Any, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)


DRAWINGS: dict[str, Callable[[dict[str, Any], Path, Path], str | None]] = {
    "rtt": _draw_rtt, "queue_inflight": _draw_queue_inflight, "sender_rates": _draw_sender_rates}
