"""The quantities the papers' claims are about: for each, which means, ratios or differences at which points
of an experiment (a claim's data file names one by its key in QUANTITIES); claims.py decides them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .claims import PCT, Estimate, Lookup, Outcome, diff, diff_ratios, mean, ratio

Quantity = Callable[[Lookup], list[Estimate]]

RTT = "total.rtt_ms_mean"
RTT_P95 = "total.rtt_ms_p95"
STEADY_RTT_P95 = "steady.rtt_ms_p95"
GOODPUT = "total.goodput_mbps"
STEADY_GOODPUT = "steady.goodput_mbps"
RETRANS = "total.retrans_rate"
STEADY_RETRANS = "steady.retrans_rate"
UTIL = "total.utilisation"
JAIN = "total.jain"
# Seed 000's path: 20 ms propagation RTT.
SEED000_RTT_MIN_MS = 20.0
# Seed 000's small buffer: 0.8 BDP holds 16 ms of queueing at any rate (Fig 4.4, p. 24: 20 + 16 = 36 ms).
SEED000_SMALL_BUFFER_MS = 16.0


def _each_mean(lk: Lookup, series: str, metric: str, what: str, scale: float = 1.0, unit: str = "",
               where: Callable[[Any], bool] = lambda x: True, paper_metric: str | None = None,
               offset: float = 0.0) -> list[Estimate]:
    """The mean of `metric` (less `offset`) at each of the series' points that `where` accepts, with the
    paper's number for `paper_metric` (default the same metric) there."""
    out = []
    for x in (x for x in lk.xs(series) if where(x)):
        # An experiment of one point (fig21-long) has no x to name.
        label = ", ".join(part for part in (lk.x_name(x), what) if part)
        out.append(Estimate(label, mean(lk, label, (series, x, metric), scale, unit, offset),
                            lk.paper(series, x, paper_metric or metric)))
    return out


# seed 000


def original_rtt_over_min(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr", RTT, "original RTT / RTT_min", 1 / SEED000_RTT_MIN_MS)


def rttgain_over_original_rtt(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{n} flows, alpha 1 / original RTT", ratio(
        lk, f"{n} flows", ("rttgain_a1", n, RTT), ("bbr", n, RTT))) for n in lk.xs("bbr")]


def alpha_queueing_ratio(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{n} flows, alpha 0.75 / alpha 1 queueing delay (RTT - 20 ms)", ratio(
        lk, f"{n} flows", ("rttgain_a0.75", n, RTT), ("rttgain_a1", n, RTT), SEED000_RTT_MIN_MS))
        for n in lk.xs("rttgain_a1")]


def original_goodput(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr", GOODPUT, "original goodput", unit=" Mbit/s")


def alpha_goodput_ratio(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{n} flows, alpha 0.75 / original goodput, steady state", ratio(
        lk, f"{n} flows", ("rttgain_a0.75", n, STEADY_GOODPUT), ("bbr", n, STEADY_GOODPUT))) for n in lk.xs("bbr")]


def original_retrans(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr", STEADY_RETRANS, "original retransmissions, steady state", PCT, "%",
                      paper_metric=RETRANS)


def rttgain_retrans(lk: Lookup) -> list[Estimate]:
    return [e for s in ("rttgain_a0.75", "rttgain_a0.5")
            for e in _each_mean(lk, s, RETRANS, f"{s} retransmissions, whole run", PCT, "%")]


def rttgain_steady_retrans(lk: Lookup) -> list[Estimate]:
    return [e for s in ("rttgain_a0.75", "rttgain_a0.5")
            for e in _each_mean(lk, s, STEADY_RETRANS, f"{s} retransmissions after start-up", PCT, "%")]


def original_small_buffer_queue(lk: Lookup) -> list[Estimate]:
    """Fig 4.4: original BBR's mean queueing delay (RTT - 20 ms) over the 0.8 BDP buffer's 16 ms."""
    return _each_mean(lk, "bbr", RTT, "original queueing delay / the buffer's 16 ms",
                      1 / SEED000_SMALL_BUFFER_MS, where=lambda x: x == 20, offset=SEED000_RTT_MIN_MS)


def rttgain_probe_rtt_peak(lk: Lookup) -> list[Estimate]:
    """Fig 4.6: alpha 1's RTT in the probe phases of ProbeBW, read as the 95th percentile of the steady
    window's RTT samples, with 2 flows."""
    return _each_mean(lk, "rttgain_a1", STEADY_RTT_P95, "alpha 1 steady RTT p95", unit=" ms",
                      where=lambda x: x == 2)


def rttgain_rtt_peak_over_min_60ms(lk: Lookup) -> list[Estimate]:
    """Fig 4.7: alpha 1's peak RTT (the 95th percentile of the run's RTT samples) over a 60 ms RTT_min
    (Table 3.2's point): 'up to' is a statement on the peak, not the mean."""
    return _each_mean(lk, "rttgain_a1", RTT_P95, "alpha 1 RTT p95 / RTT_min (60 ms)", 1 / 60,
                      where=lambda x: x == (60, None, None))


def rttgain_rtt_200_over_20_mbit(lk: Lookup) -> list[Estimate]:
    """Fig 4.8: alpha 1's RTT at 200 Mbit/s (Table 3.2) over the same at 20 Mbit/s (Fig 4.12's 2 flows)."""
    return [Estimate("2 flows, alpha 1 RTT at 200 / at 20 Mbit/s", ratio(
        lk, "200 vs 20 Mbit/s", ("rttgain_a1", (None, 200, None), RTT), ("rttgain_a1", 2, RTT)))]


def alpha_cost_falls_with_flows(lk: Lookup) -> list[Estimate]:
    """L624: alpha 0.75's steady goodput over original's, 6 flows less 2 flows (positive: a smaller cost)."""
    six = (("rttgain_a0.75", 6, STEADY_GOODPUT), ("bbr", 6, STEADY_GOODPUT))
    two = (("rttgain_a0.75", 2, STEADY_GOODPUT), ("bbr", 2, STEADY_GOODPUT))
    return [Estimate("alpha 0.75 / original goodput, 6 flows - 2 flows", diff_ratios(
        lk, "6 vs 2 flows", six, two, PCT, " points"))]


def rttgain_queue_grows_with_flows(lk: Lookup) -> list[Estimate]:
    """L624: alpha 1's queueing delay (RTT - 20 ms) with 6 flows over 2."""
    return [Estimate("alpha 1 queueing delay (RTT - 20 ms), 6 / 2 flows", ratio(
        lk, "6 vs 2 flows", ("rttgain_a1", 6, RTT), ("rttgain_a1", 2, RTT), SEED000_RTT_MIN_MS))]


# seed 001


def _retrans_vs_paper(series: tuple[str, ...]) -> Quantity:
    """Each steady-state retransmission rate of the series where the paper gives a number."""
    return lambda lk: [e for s in series for e in _each_mean(
        lk, s, STEADY_RETRANS, f"{s} retransmissions, steady state", PCT, "%", paper_metric=RETRANS)
        if e.paper is not None]


def single_flow_retrans(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr2", "cubic")
            for e in _each_mean(lk, s, STEADY_RETRANS, f"{s} retransmissions, steady state", PCT, "%",
                                where=lambda x: x == 1)]


def bbr2_over_bbr1_retrans(lk: Lookup) -> list[Estimate]:
    return [Estimate("10 flows, bbr2 / bbr1 retransmissions, steady state", ratio(
        lk, "10 flows", ("bbr2", 10, STEADY_RETRANS), ("bbr1", 10, STEADY_RETRANS)))]


def _flows(n: int) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, tuple) and x[0] == n


def bbr_rtt_10_flows(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2") for e in _each_mean(lk, s, RTT, f"{s} RTT", unit=" ms", where=_flows(10))]


def bbr_rtt_2_flows(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2") for e in _each_mean(lk, s, RTT, f"{s} RTT", unit=" ms", where=_flows(2))]


def cubic_rtt_2_flows_10_bdp(lk: Lookup) -> list[Estimate]:
    return [Estimate("2 flows, 10 BDP, cubic RTT", mean(lk, "2 flows, 10 BDP", ("cubic", (2, 10), RTT), unit=" ms"))]


def cubic_rtt_10_over_2_flows(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{b} BDP, cubic RTT 10 / 2 flows", ratio(lk, f"{b} BDP", ("cubic", (10, b), RTT),
                                                              ("cubic", (2, b), RTT)))
            for b in sorted({x[1] for x in lk.xs("cubic") if isinstance(x, tuple)})]


def _at(buffer: float, loss: float | None = None) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, tuple) and x[0] == buffer and (loss is None or x[1] == loss)


def util_vs_paper_small_buffer(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2")
            for e in _each_mean(lk, s, UTIL, f"{s} utilisation", PCT, "%", where=lambda x: x[0] == 0.1)
            if e.paper is not None]


def bbr2_util_1pct(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", UTIL, "bbr2 utilisation", PCT, "%", where=_at(1, 1))


def bbr2_util_10pct(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", UTIL, "bbr2 utilisation", PCT, "%", where=_at(1, 10))


def bbr1_over_bbr2_util(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, bbr1 - bbr2 utilisation", diff(
        lk, lk.x_name(x), ("bbr1", x, UTIL), ("bbr2", x, UTIL), PCT, " points"))
        for x in lk.xs("bbr1") if isinstance(x, tuple) and x[0] == 1 and x[1] > 0.1]


def bbr_over_cubic_util(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, {s} - cubic utilisation", diff(
        lk, lk.x_name(x), (s, x, UTIL), ("cubic", x, UTIL), PCT, " points"))
        for s in ("bbr1", "bbr2") for x in lk.xs(s) if isinstance(x, tuple) and x[0] == 1 and x[1] <= 1]


def bbr1_share_below_1_bdp(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, bbr1 share", mean(lk, lk.x_name(x), ("", x, "algo.bbr1.share"), PCT, "%"))
            for x in lk.xs("") if x[1:] == (None, None, None) and x[0] < 1]


def bbr1_share_above_1_bdp(lk: Lookup) -> list[Estimate]:
    return [Estimate(f"{lk.x_name(x)}, bbr1 share", mean(lk, lk.x_name(x), ("", x, "algo.bbr1.share"), PCT, "%"))
            for x in lk.xs("") if x[1:] == (None, None, None) and x[0] > 1]


def bbr2_jain_100_bdp(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", JAIN, "bbr2 + cubic Jain", PCT, "%", where=lambda x: x == (100, None, None, None))


def bbr1_rtt50_share(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr1", "derived.share.rtt50", "50 ms flow's share", PCT, "%", where=lambda b: b >= 3)


def bbr1_rtt_jain(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr1", JAIN, "bbr1 Jain", PCT, "%", where=lambda b: b >= 3)


def bbr2_rtt_jain(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr2", JAIN, "bbr2 Jain", PCT, "%")


def fqcodel_rtt_jain(lk: Lookup) -> list[Estimate]:
    return [e for s in ("bbr1", "bbr2")
            for e in _each_mean(lk, s, JAIN, f"{s} Jain", PCT, "%", where=lambda x: x[0] == "fq_codel")]


def fqcodel_retrans_ratio(lk: Lookup) -> list[Estimate]:
    # Below 1 BDP, where the paper (Fig 15a) finds Tail Drop's BBRv1 retransmissions high; at larger buffers
    # Tail Drop retransmits nothing here and there is nothing to reduce.
    return [Estimate(f"{b} BDP, bbr1 retransmissions FQ-CoDel / Tail Drop", ratio(
        lk, f"{b} BDP", ("bbr1", ("fq_codel", b), RETRANS), ("bbr1", ("fifo", b), RETRANS)))
        for aqm, b in lk.xs("bbr1") if aqm == "fq_codel" and b < 1]


def taildrop_bbr1_jain_below_1_bdp(lk: Lookup) -> list[Estimate]:
    return _each_mean(lk, "bbr1", JAIN, "bbr1 Jain, Tail Drop", PCT, "%", where=lambda x: x[0] == "fifo" and x[1] < 1)


def fqcodel_retrans_change_large_buffer(lk: Lookup) -> list[Estimate]:
    """FQ-CoDel's bbr1 retransmission rate less Tail Drop's at 1 BDP and above, in points: where Tail Drop
    retransmits nothing there is no ratio, but a rise still decides against a reduction."""
    return [Estimate(f"{b} BDP, bbr1 retransmissions FQ-CoDel - Tail Drop", diff(
        lk, f"{b} BDP", ("bbr1", ("fq_codel", b), RETRANS), ("bbr1", ("fifo", b), RETRANS), PCT, " points"))
        for aqm, b in lk.xs("bbr1") if aqm == "fq_codel" and b >= 1]


def taildrop_bbr1_over_bbr2_retrans(lk: Lookup) -> list[Estimate]:
    """Fig 15(a): BBRv1's Tail Drop retransmissions below 1 BDP over BBRv2's there."""
    return [Estimate(f"{b} BDP, Tail Drop, bbr1 / bbr2 retransmissions", ratio(
        lk, f"{b} BDP", ("bbr1", ("fifo", b), RETRANS), ("bbr2", ("fifo", b), RETRANS)))
        for aqm, b in lk.xs("bbr1") if aqm == "fifo" and b < 1]


def bbr2_retrans_low_everywhere(lk: Lookup) -> list[Estimate]:
    """Fig 15(a, b): BBRv2's retransmissions at every AQM and buffer over BBRv1's with Tail Drop below 1 BDP
    (the rate the paper calls high)."""
    high = [x for x in lk.xs("bbr1") if x[0] == "fifo" and x[1] < 1]
    return [Estimate(f"{lk.x_name(x)}, bbr2 / bbr1 (Tail Drop, {h[1]} BDP) retransmissions", ratio(
        lk, lk.x_name(x), ("bbr2", x, RETRANS), ("bbr1", h, RETRANS))) for h in high for x in lk.xs("bbr2")]


def bbr2_over_bbr1_retrans_1_bdp(lk: Lookup) -> list[Estimate]:
    """Fig 10(d): BBRv2's retransmission rate over BBRv1's at 1 BDP, at each loss rate."""
    return [Estimate(f"{lk.x_name(x)}, bbr2 / bbr1 retransmissions", ratio(
        lk, lk.x_name(x), ("bbr2", x, RETRANS), ("bbr1", x, RETRANS))) for x in lk.xs("bbr1") if x[0] == 1]


def bbr2_over_bbr1_cubic_jain(lk: Lookup) -> list[Estimate]:
    """Finding 5: Jain's index of one bbr2 and one cubic flow (fig11-bbrv2) less that of one bbr1 and one
    cubic flow (fig11-12, series ''), at each buffer both ran."""
    return [Estimate(f"{lk.x_name(x)}, Jain bbr2 + cubic - bbr1 + cubic", diff(
        lk, lk.x_name(x), ("bbr2", x, JAIN), ("", x, JAIN), PCT, " points"))
        for x in lk.xs("bbr2") if x in lk.xs("")]


def _fct_ratio(where: Callable[[float], bool]) -> Quantity:
    return lambda lk: [Estimate(f"{b} BDP, cubic / {s} mean FCT", ratio(
        lk, f"{b} BDP", ("cubic", b, "total.fct_mean_s"), (s, b, "total.fct_mean_s")))
        for s in ("bbr1", "bbr2") for b in lk.xs(s) if where(b)]


FIG21 = "bbr2 + cubic"


def _fig21_jain(aqm: str, where: Callable[[float], bool] = lambda b: True) -> Quantity:
    return lambda lk: _each_mean(lk, FIG21, JAIN, "Jain", PCT, "%",
                                 where=lambda x: x[0] == aqm and where(x[1]))


# seed 002

ACD_RETRANS = "derived.retrans_packets"
DROPS = "total.queue_drops"
SENT = "derived.sent_packets"


def _acd_ratio(metric: str, what: str, where: Callable[[Any], bool]) -> Quantity:
    return lambda lk: [Estimate(f"{lk.x_name(x)}, bbr_acd / bbr {what}", ratio(
        lk, lk.x_name(x), ("bbr_acd", x, metric), ("bbr", x, metric))) for x in lk.xs("bbr") if where(x)]


def acd_equilibrium(lk: Lookup) -> list[Estimate]:
    """A repetition that never reaches equilibrium counts at the run's end (a lower bound): where BBR-ACD's
    are censored, its true times are longer, so a 'holds' cannot stand on them; where BBR's are, a 'does
    not hold' cannot."""
    key = "censored.total.convergence_time_s"
    found = []
    for x in lk.xs("bbr"):
        acd, bbr = lk.stat("bbr_acd", x, key), lk.stat("bbr", x, key)
        doubtful = ({Outcome.HOLDS} if acd and acd.censored else set()) | \
                   ({Outcome.FAILS} if bbr and bbr.censored else set())
        found.append(Estimate(f"{lk.x_name(x)}, bbr_acd - bbr equilibrium time", diff(
            lk, lk.x_name(x), ("bbr_acd", x, key), ("bbr", x, key), unit=" s"), censored_for=frozenset(doubtful)))
    return found


def bbr_equilibrium(lk: Lookup) -> list[Estimate]:
    """Table 2 and Fig 3: BBR's own time to equilibrium in each scenario, against the paper's there. A
    censored repetition (no equilibrium before the run ended) is a lower bound, so neither outcome can stand
    on it."""
    key = "censored.total.convergence_time_s"
    found = []
    for x in lk.xs("bbr"):
        stat = lk.stat("bbr", x, key)
        doubtful = frozenset({Outcome.HOLDS, Outcome.FAILS}) if stat and stat.censored else frozenset()
        label = f"{lk.x_name(x)}, bbr equilibrium time"
        found.append(Estimate(label, mean(lk, label, ("bbr", x, key), unit=" s"), lk.paper("bbr", x, key),
                              censored_for=doubtful))
    return found


def sim_drop_diff(lk: Lookup) -> list[Estimate]:
    """The bottleneck's drops over the packets sent, BBR-ACD (1000 us) less BBR, in points."""
    return [Estimate("acd (1000 us) - bbr bottleneck drops / sent packets", diff_ratios(
        lk, "drops", (("acd_tol1000", None, DROPS), ("acd_tol1000", None, SENT)),
        (("bbr", None, DROPS), ("bbr", None, SENT)), PCT, " points"))]


def sim_goodput_diff(lk: Lookup) -> list[Estimate]:
    return [Estimate("acd (1000 us) - bbr goodput", diff(
        lk, "goodput", ("acd_tol1000", None, GOODPUT), ("bbr", None, GOODPUT), unit=" Mbit/s"))]


def tolerance_1000_goodput_lead(lk: Lookup) -> list[Estimate]:
    """Table 3: BBR-ACD's goodput at 1000 us less that at each other tolerance run."""
    return [Estimate(f"1000 - {t} us goodput", diff(lk, f"1000 vs {t} us", ("acd_tol1000", None, GOODPUT),
                                                     (f"acd_tol{t}", None, GOODPUT), unit=" Mbit/s"))
            for t in (500, 1500)]


def tolerance_ratios(lk: Lookup) -> list[Estimate]:
    """Retransmitted packets at each larger tolerance over the next smaller one, beside the paper's ratio
    (Table 3's counts)."""
    out = []
    for a, b in ((1000, 500), (1500, 1000)):
        num, den = (f"acd_tol{a}", None, ACD_RETRANS), (f"acd_tol{b}", None, ACD_RETRANS)
        pa, pb = lk.paper(*num), lk.paper(*den)
        out.append(Estimate(f"{a} / {b} us retransmitted packets", ratio(lk, f"{a} vs {b} us", num, den),
                            pa / pb if pa is not None and pb else None))
    return out


QUANTITIES: dict[str, Quantity] = {
    "original_rtt_over_min": original_rtt_over_min,
    "rttgain_over_original_rtt": rttgain_over_original_rtt,
    "alpha_queueing_ratio": alpha_queueing_ratio,
    "original_goodput": original_goodput,
    "alpha_goodput_ratio": alpha_goodput_ratio,
    "original_retrans": original_retrans,
    "rttgain_retrans": rttgain_retrans,
    "rttgain_steady_retrans": rttgain_steady_retrans,
    "bbr1_retrans": _retrans_vs_paper(("bbr1",)),
    "ten_flow_retrans": _retrans_vs_paper(("bbr2", "cubic")),
    "single_flow_retrans": single_flow_retrans,
    "bbr2_over_bbr1_retrans": bbr2_over_bbr1_retrans,
    "bbr_rtt_10_flows": bbr_rtt_10_flows,
    "bbr_rtt_2_flows": bbr_rtt_2_flows,
    "cubic_rtt_2_flows_10_bdp": cubic_rtt_2_flows_10_bdp,
    "cubic_rtt_10_over_2_flows": cubic_rtt_10_over_2_flows,
    "util_vs_paper_small_buffer": util_vs_paper_small_buffer,
    "bbr2_util_1pct": bbr2_util_1pct,
    "bbr2_util_10pct": bbr2_util_10pct,
    "bbr1_over_bbr2_util": bbr1_over_bbr2_util,
    "bbr_over_cubic_util": bbr_over_cubic_util,
    "bbr1_share_below_1_bdp": bbr1_share_below_1_bdp,
    "bbr1_share_above_1_bdp": bbr1_share_above_1_bdp,
    "bbr2_jain_100_bdp": bbr2_jain_100_bdp,
    "bbr1_rtt50_share": bbr1_rtt50_share,
    "bbr1_rtt_jain": bbr1_rtt_jain,
    "bbr2_rtt_jain": bbr2_rtt_jain,
    "fqcodel_rtt_jain": fqcodel_rtt_jain,
    "fqcodel_retrans_ratio": fqcodel_retrans_ratio,
    "original_small_buffer_queue": original_small_buffer_queue,
    "rttgain_rtt_peak_over_min_60ms": rttgain_rtt_peak_over_min_60ms,
    "rttgain_probe_rtt_peak": rttgain_probe_rtt_peak,
    "rttgain_rtt_200_over_20_mbit": rttgain_rtt_200_over_20_mbit,
    "alpha_cost_falls_with_flows": alpha_cost_falls_with_flows,
    "rttgain_queue_grows_with_flows": rttgain_queue_grows_with_flows,
    "taildrop_bbr1_jain_below_1_bdp": taildrop_bbr1_jain_below_1_bdp,
    "fqcodel_retrans_change_large_buffer": fqcodel_retrans_change_large_buffer,
    "taildrop_bbr1_over_bbr2_retrans": taildrop_bbr1_over_bbr2_retrans,
    "bbr2_retrans_low_everywhere": bbr2_retrans_low_everywhere,
    "bbr2_over_bbr1_retrans_1_bdp": bbr2_over_bbr1_retrans_1_bdp,
    "bbr2_over_bbr1_cubic_jain": bbr2_over_bbr1_cubic_jain,
    "cubic_fct_small_buffer": _fct_ratio(lambda b: b < 0.2),
    "fct_large_buffer": _fct_ratio(lambda b: b >= 0.2),
    "taildrop_large_jain": _fig21_jain("fifo", lambda b: b >= 100),
    "taildrop_jain_long": lambda lk: _each_mean(lk, FIG21, JAIN, "Tail Drop, 100 BDP, Jain", PCT, "%"),
    "taildrop_mid_jain": _fig21_jain("fifo", lambda b: 0.5 <= b <= 10),
    "fqcodel_jain": _fig21_jain("fq_codel"),
    "cake_jain": _fig21_jain("cake"),
    "acd_retrans_small_buffer": _acd_ratio(ACD_RETRANS, "retransmitted packets", lambda x: x[0] == 100),
    "acd_retrans_random_loss": _acd_ratio(ACD_RETRANS, "retransmitted packets", lambda x: x == (100000, 0.1)),
    "acd_goodput": _acd_ratio(GOODPUT, "goodput", lambda x: True),
    "acd_equilibrium": acd_equilibrium,
    "bbr_equilibrium": bbr_equilibrium,
    "sim_drop_diff": sim_drop_diff,
    "tolerance_1000_goodput_lead": tolerance_1000_goodput_lead,
    "sim_goodput_diff": sim_goodput_diff,
    "tolerance_ratios": tolerance_ratios,
}
