"""Metrics of one run, computed from its raw samples. Definitions (also in bench/README.md):

- throughput: bytes the sender put on the wire, retransmissions included (ss bytes_sent), over the
  flow's sampled lifetime (first to last ss sample); goodput: bytes the receiver acknowledged (ss
  bytes_acked: unique data, no retransmissions) over the same time. iperf3's own receiver figures are
  kept in the summary but not used: its receiver clock stops when the sender has *written* its last
  byte, while a full socket buffer may still hold seconds of data.
- retransmission rate: retransmitted bytes / bytes sent (ss bytes_retrans / bytes_sent).
- RTT: the kernel's smoothed RTT (ss srtt) at every sample; queueing delay: that RTT minus the
  sender's configured base RTT. Bottleneck queue delay: backlog bytes / link rate per queue sample.
- utilisation: bytes that left the bottleneck qdisc (frames, headers included) between the first flow's
  start and the last flow's end, over rate x that time.
- Jain's index: (sum x)^2 / (n sum x^2) of the flows' mean delivery rates (ss bytes_acked) over the
  period when all flows are active, or of their goodputs when they never all overlap.
- convergence time: windows of `convergence_window_s` are laid from the last flow's start to the end of
  the all-active period; the convergence time is the start of the first window from which every later
  window has Jain's index >= `convergence_jain`, measured from the last flow's start. None if no such
  window, or with fewer than two flows.
- flow completion time (byte-count flows): from the client's launch to the first ss sample showing all
  bytes acknowledged (or one interval after the last sample when the connection closed in between), so
  it is precise to one sample interval; set sample_interval_ms lower for short flows.
- share of an algorithm: its flows' summed delivery rate over the all-active period divided by all
  flows' (summed goodputs when the flows never all overlap).
- steady state ("steady" in the summary): the run's totals again over the window from `warmup_s` after
  the last flow's first sample to the end of the all-active period, so that start-up (BBR's STARTUP
  queue, CUBIC's slow-start overshoot) neither inflates nor scatters them: goodput, utilisation and
  retransmission rate from the counters at the window's edges, RTT and queueing delay from the samples
  inside it, Jain's index of the flows' delivery rates over it. None when the window is empty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..scenario import DEFAULT_WARMUP_S, Scenario

US_PER_MS = 1000  # flows.csv keeps RTTs in us, as bbrctl's records; the metrics are in ms


@dataclass
class FlowInfo:
    index: int
    label: str
    algo: str
    base_rtt_ms: float
    nbytes: int | None


@dataclass
class RunInfo:
    rate_bps: float
    sample_interval_s: float
    limit_bytes: int
    limit_packets: int | None
    convergence_jain: float
    convergence_window_s: float
    flows: list[FlowInfo]
    warmup_s: float = DEFAULT_WARMUP_S

    @classmethod
    def from_scenario(cls, recorded: dict[str, Any]) -> RunInfo:
        scenario = Scenario.from_dict(recorded)
        b = scenario.bottleneck
        flows = [FlowInfo(index=f.index, label=f.label, algo=f.algo, base_rtt_ms=scenario.sender(f.sender).rtt_ms,
                          nbytes=f.bytes) for f in scenario.flows]
        return cls(rate_bps=b.rate_bps, sample_interval_s=scenario.sample_interval_ms / 1e3,
                   limit_bytes=b.limit_bytes, limit_packets=b.buffer_packets,
                   convergence_jain=scenario.metrics.convergence_jain,
                   convergence_window_s=scenario.metrics.convergence_window_s, flows=flows,
                   warmup_s=scenario.metrics.warmup_s)


@dataclass
class FlowSeries:
    """One flow's ss samples as arrays (NaN where a field was absent)."""

    t: np.ndarray
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def col(self, name: str) -> np.ndarray:
        return self.columns.get(name, np.full(len(self.t), np.nan))


@dataclass
class RunData:
    info: RunInfo
    flows: dict[int, FlowSeries]
    queue: dict[str, np.ndarray]
    events: dict[int, dict[str, Any]]
    iperf: dict[int, dict[str, Any]]


# ---------------------------------------------------------------- elementary measures


def jain(values: Sequence[float] | np.ndarray) -> float | None:
    """Jain's fairness index; None for no values or all zero."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0 or not np.any(x):
        return None
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum()))


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    """Linear-interpolation percentile (numpy's default) of the finite values; None when there are none."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.percentile(x, q)) if len(x) else None


def mean(values: Sequence[float] | np.ndarray) -> float | None:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if len(x) else None


def distribution(values: Sequence[float] | np.ndarray, prefix: str) -> dict[str, float | None]:
    return {f"{prefix}_mean": mean(values), f"{prefix}_median": percentile(values, 50),
            f"{prefix}_p95": percentile(values, 95), f"{prefix}_p99": percentile(values, 99)}


def counter_at(t: np.ndarray, counter: np.ndarray, at: np.ndarray | float) -> np.ndarray:
    """A cumulative counter linearly interpolated at the given times (held flat outside the samples)."""
    ok = np.isfinite(counter)
    return np.interp(at, t[ok], counter[ok])


def window_rates_bps(t: np.ndarray, counter_bytes: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Mean rate in bit/s over each window [edges[i], edges[i+1]) from a cumulative byte counter."""
    at = counter_at(t, counter_bytes, edges)
    return np.diff(at) * 8 / np.diff(edges)


def convergence_time(rates: np.ndarray, edges: np.ndarray, threshold: float) -> float | None:
    """rates: flows x windows. Seconds from edges[0] to the first window after which Jain stays >= threshold."""
    if rates.shape[0] < 2 or rates.shape[1] == 0:
        return None
    good = [(j := jain(rates[:, k])) is not None and j >= threshold for k in range(rates.shape[1])]
    first = None
    for k in range(len(good) - 1, -1, -1):
        if not good[k]:
            break
        first = k
    return None if first is None else float(edges[first] - edges[0])


def _num(value: float | None, digits: int = 4) -> float | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return round(float(value), digits)


# ---------------------------------------------------------------- the whole run


def flow_interval(data: RunData, index: int) -> tuple[float, float] | None:
    """When the flow's connection was seen: first and last ss sample."""
    series = data.flows.get(index)
    if series is None or len(series.t) < 2:
        return None
    return float(series.t[0]), float(series.t[-1])


def per_flow(data: RunData, flow: FlowInfo) -> dict[str, Any]:
    series = data.flows.get(flow.index)
    result = data.iperf.get(flow.index, {})
    event = data.events.get(flow.index, {})
    out: dict[str, Any] = {"label": flow.label, "algo": flow.algo, "base_rtt_ms": flow.base_rtt_ms,
                           "error": result.get("error"), "samples": 0 if series is None else len(series.t)}
    out["received_bytes"] = result.get("received_bytes")
    complete = not event.get("killed") and event.get("returncode") == 0 and not result.get("error")
    out["complete"] = complete
    out["fct_s"] = None
    if series is None or len(series.t) < 2:
        out.update({"goodput_mbps": None, "throughput_mbps": None, "retrans_rate": None, "cwnd_mean": None,
                    **distribution([], "rtt_ms"), **distribution([], "queueing_delay_ms")})
        return out
    span = series.t[-1] - series.t[0]
    acked = series.col("bytes_acked")
    ok = np.isfinite(acked)
    out["bytes_acked"] = int(acked[ok][-1]) if ok.any() else None
    out["goodput_mbps"] = _num((acked[ok][-1] - acked[ok][0]) * 8 / span / 1e6) if ok.sum() >= 2 else None
    if flow.nbytes is not None and complete and event.get("launched_s") is not None and ok.any():
        done = np.nonzero(acked[ok] >= flow.nbytes)[0]
        # Seen fully acknowledged at a sample, or (closed between samples) one interval after the last one.
        finished = series.t[ok][done[0]] if len(done) else series.t[-1] + data.info.sample_interval_s
        out["fct_s"] = _num(finished - event["launched_s"])
    sent = series.col("bytes_sent")
    retrans = np.nan_to_num(series.col("bytes_retrans"))
    valid = np.isfinite(sent)
    out["throughput_mbps"] = _num((sent[valid][-1] - sent[valid][0]) * 8 / span / 1e6) if valid.sum() >= 2 else None
    out["bytes_sent"] = int(sent[valid][-1]) if valid.any() else None
    out["bytes_retrans"] = int(retrans[-1])
    out["retrans_rate"] = _num(retrans[-1] / sent[valid][-1], 6) if valid.any() and sent[valid][-1] > 0 else None
    rtt = series.col("srtt_us") / US_PER_MS
    out.update({k: _num(v) for k, v in distribution(rtt, "rtt_ms").items()})
    out.update({k: _num(v) for k, v in distribution(rtt - flow.base_rtt_ms, "queueing_delay_ms").items()})
    out["cwnd_mean"] = _num(mean(series.col("cwnd")))
    out["start_s"] = _num(series.t[0])
    out["end_s"] = _num(series.t[-1])
    return out


def overlap(data: RunData) -> tuple[float, float] | None:
    spans = [flow_interval(data, f.index) for f in data.info.flows]
    if any(s is None for s in spans) or not spans:
        return None
    start = max(s[0] for s in spans if s)
    end = min(s[1] for s in spans if s)
    return (start, end) if end > start else None


def queue_metrics(data: RunData, span: tuple[float, float] | None) -> dict[str, Any]:
    q = data.queue
    t = q.get("t_s", np.array([]))
    out: dict[str, Any] = {"queue_samples": int(len(t))}
    if len(t) < 2:
        return out
    if span is not None:
        inside = (t >= span[0]) & (t <= span[1])
    else:
        inside = np.ones(len(t), dtype=bool)
    backlog_b = q["backlog_bytes"][inside]
    backlog_p = q["backlog_packets"][inside]
    delay_ms = backlog_b * 8 / data.info.rate_bps * 1e3
    out.update({
        "queue_rate_hz": _num((len(t) - 1) / (t[-1] - t[0]), 1),
        "queue_backlog_packets_mean": _num(mean(backlog_p)),
        "queue_backlog_packets_p95": _num(percentile(backlog_p, 95)),
        "queue_backlog_packets_max": int(backlog_p.max()) if len(backlog_p) else None,
        "queue_backlog_bytes_mean": _num(mean(backlog_b)),
        "queue_backlog_bytes_max": int(backlog_b.max()) if len(backlog_b) else None,
        "queue_occupancy_mean": _num(float(backlog_b.mean()) / data.info.limit_bytes if len(backlog_b) else None),
        # the share of samples with anything queued: the link, not the senders, set the rate then
        "queue_busy_share": _num(float((backlog_p > 0).mean()) if len(backlog_p) else None),
        "queue_delay_mean_ms": _num(mean(delay_ms)),
        "queue_delay_p95_ms": _num(percentile(delay_ms, 95)),
        "queue_delay_p99_ms": _num(percentile(delay_ms, 99)),
        "queue_drops": int(q["drops"][-1] - q["drops"][0]),
    })
    if span is not None:
        sent = counter_at(t, q["sent_bytes"], np.array(span))
        out["utilisation"] = _num((sent[1] - sent[0]) * 8 / (data.info.rate_bps * (span[1] - span[0])))
    return out


def total_goodput_bps(data: RunData) -> float | None:
    """All flows' acknowledged bytes over the time from the first flow's first sample to the last flow's
    last sample."""
    spans: list[tuple[float, float]] = []
    total_bytes = 0.0
    for f in data.info.flows:
        series = data.flows.get(f.index)
        if series is None or len(series.t) < 2:
            continue
        acked = series.col("bytes_acked")
        ok = np.isfinite(acked)
        if ok.sum() >= 2:
            spans.append((float(series.t[0]), float(series.t[-1])))
            total_bytes += float(acked[ok][-1] - acked[ok][0])
    if not spans:
        return None
    return total_bytes * 8 / (max(e for _, e in spans) - min(s for s, _ in spans))


def compute(data: RunData) -> dict[str, Any]:
    info = data.info
    flows = [per_flow(data, f) for f in info.flows]
    spans = [s for s in (flow_interval(data, f.index) for f in info.flows) if s]
    lifetime = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    both = overlap(data)
    total: dict[str, Any] = {"flows": len(flows)}
    goodput_bps = total_goodput_bps(data)
    total["goodput_mbps"] = _num(goodput_bps / 1e6) if goodput_bps else None
    sent = sum(f.get("bytes_sent") or 0 for f in flows)
    retrans = sum(f.get("bytes_retrans") or 0 for f in flows)
    total["retrans_rate"] = _num(retrans / sent, 6) if sent else None
    rtts = [data.flows[f.index].col("srtt_us") / US_PER_MS for f in info.flows if f.index in data.flows]
    queueing = [data.flows[f.index].col("srtt_us") / US_PER_MS - f.base_rtt_ms for f in info.flows
                if f.index in data.flows]
    pooled_rtt = np.concatenate(rtts) if rtts else np.array([])
    total.update({k: _num(v) for k, v in distribution(pooled_rtt, "rtt_ms").items()})
    total.update({k: _num(v) for k, v in
                  distribution(np.concatenate(queueing) if queueing else np.array([]), "queueing_delay_ms").items()})
    total.update(queue_metrics(data, lifetime))
    total["active_period_s"] = _num(lifetime[1] - lifetime[0]) if lifetime else None
    total["overlap_period_s"] = _num(both[1] - both[0]) if both else None

    if both is not None and len(info.flows) >= 1:
        edges = np.array(both)
        means = [float(window_rates_bps(data.flows[f.index].t, data.flows[f.index].col("bytes_acked"), edges)[0])
                 for f in info.flows]
        for f, m in zip(flows, means):
            f["overlap_rate_mbps"] = _num(m / 1e6)
        total["jain"] = _num(jain(means))
        total["jain_basis"] = "mean delivery rate over the all-active period"
    else:
        total["jain"] = _num(jain([f["goodput_mbps"] or 0.0 for f in flows]))
        total["jain_basis"] = "goodput (flows never all active together)"
    total["convergence_time_s"] = None
    total["convergence_definition"] = (
        f"first {info.convergence_window_s:g} s window after the last flow's start from which Jain's index "
        f"stays >= {info.convergence_jain:g} until the all-active period ends; seconds from that start")
    if both is not None and len(info.flows) >= 2:
        window = info.convergence_window_s
        count = int((both[1] - both[0]) // window)
        if count >= 1:
            edges = both[0] + window * np.arange(count + 1)
            rates = np.vstack([window_rates_bps(data.flows[f.index].t, data.flows[f.index].col("bytes_acked"), edges)
                               for f in info.flows])
            total["convergence_time_s"] = _num(convergence_time(rates, edges, info.convergence_jain))
    fcts = [f["fct_s"] for f in flows if f["fct_s"] is not None]
    total["fct_mean_s"] = _num(mean(fcts)) if fcts else None
    return {"flows": flows, "total": total, "steady": steady(data), "by_algo": by_algo(flows)}


def steady_window(data: RunData) -> tuple[float, float] | None:
    """[last flow's first sample + warmup_s, end of the all-active period], or None when that is empty."""
    both = overlap(data)
    if both is None or both[1] <= both[0] + data.info.warmup_s:
        return None
    return both[0] + data.info.warmup_s, both[1]


def steady(data: RunData) -> dict[str, Any]:
    """The totals over the steady-state window (module docstring); the window itself as window_s."""
    info = data.info
    window = steady_window(data)
    out: dict[str, Any] = {"warmup_s": info.warmup_s, "window_s": None}
    if window is None:
        return out
    edges = np.array(window)
    length = window[1] - window[0]
    out["window_s"] = [_num(window[0], 3), _num(window[1], 3)]
    rates: list[float] = []
    sent = retrans = 0.0
    rtts: list[np.ndarray] = []
    queueing: list[np.ndarray] = []
    for f in info.flows:
        series = data.flows[f.index]
        rates.append(float(window_rates_bps(series.t, series.col("bytes_acked"), edges)[0]))
        sent += float(np.diff(counter_at(series.t, series.col("bytes_sent"), edges))[0])
        retrans += float(np.diff(counter_at(series.t, np.nan_to_num(series.col("bytes_retrans")), edges))[0])
        inside = (series.t >= window[0]) & (series.t <= window[1])
        rtt = series.col("srtt_us")[inside] / US_PER_MS
        rtts.append(rtt)
        queueing.append(rtt - f.base_rtt_ms)
    out["goodput_mbps"] = _num(sum(rates) / 1e6)
    out["retrans_rate"] = _num(retrans / sent, 6) if sent > 0 else None
    out.update({k: _num(v) for k, v in distribution(np.concatenate(rtts), "rtt_ms").items()})
    out.update({k: _num(v) for k, v in distribution(np.concatenate(queueing), "queueing_delay_ms").items()})
    queue = queue_metrics(data, window)
    out.update({k: queue.get(k) for k in ("utilisation", "queue_delay_mean_ms", "queue_delay_p95_ms")})
    out["jain"] = _num(jain(rates))
    out["period_s"] = _num(length)
    return out


def by_algo(flows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per congestion control: flow count, summed goodput, and its share: of the delivery rate over the
    all-active period when there is one, else of the summed goodput."""
    key = "overlap_rate_mbps" if all(f.get("overlap_rate_mbps") is not None for f in flows) else "goodput_mbps"
    everyone = sum(f.get(key) or 0.0 for f in flows)
    out: dict[str, dict[str, Any]] = {}
    for algo in sorted({f["algo"] for f in flows}):
        mine = [f for f in flows if f["algo"] == algo]
        goodput = sum(f["goodput_mbps"] or 0.0 for f in mine)
        out[algo] = {"flows": len(mine), "goodput_mbps": _num(goodput),
                     "share": _num(sum(f.get(key) or 0.0 for f in mine) / everyone) if everyone else None,
                     "rtt_ms_mean": _num(mean([f["rtt_ms_mean"] for f in mine if f["rtt_ms_mean"] is not None]))
                     if any(f["rtt_ms_mean"] is not None for f in mine) else None}
    return out
