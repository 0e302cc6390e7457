"""Where BBRv1's standing queue comes from, from the kernel bbr's own state in the ss samples.

With N BBR flows each flow's cwnd is cwnd_gain x its BDP estimate (bw x min_rtt) plus what the kernel
adds beyond that (the ACK-aggregation allowance `extra_acked`, the TSO quanta). Summed over the flows
and divided by the path's true BDP (link rate x propagation RTT), the flows' cwnd factors exactly,
at every sample instant, into

    cwnd / true BDP = gain x bandwidth overestimate x min_rtt inflation x allowance

  gain           the cwnd gain, weighted by each flow's BDP estimate (2 in PROBE_BW)
  bandwidth      sum of the flows' bw estimates / link rate (each flow's max filter keeps its own peak)
  min_rtt        bandwidth-weighted mean of the flows' min_rtt / propagation RTT (a queue that never empties
                 while a flow measures its min_rtt inflates it, and its BDP estimate with it)
  allowance      sum of cwnd / sum of gain x bw x min_rtt: the cwnd the kernel grants beyond the target

With the flows cwnd-limited, cwnd / true BDP is also about RTT / propagation RTT (until the buffer
overflows), the figure the papers plot. Each factor is reported as its median over the sample
instants of a window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import FlowSeries

US_PER_S = 1e6
BITS_PER_BYTE = 8
FACTORS = ("cwnd_bdp", "gain", "bandwidth", "min_rtt", "allowance", "srtt")


@dataclass(frozen=True)
class QueueFactors:
    """Medians over the window's sample instants; cwnd_bdp is the product of the next four at every
    instant, srtt the flows' mean smoothed RTT over the propagation RTT."""

    cwnd_bdp: float
    gain: float
    bandwidth: float
    min_rtt: float
    allowance: float
    srtt: float
    instants: int

    def as_dict(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in FACTORS}


def _at_instants(flows: dict[int, FlowSeries], t_from: float,
                 t_to: float) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """The sample instants in [t_from, t_to] where every flow has a full sample, and the flows' columns
    there as arrays of shape (instants, flows)."""
    names = ("cwnd", "mss", "bw_bps", "bbr_min_rtt_us", "cwnd_gain", "srtt_us")
    per_flow: list[dict[float, np.ndarray]] = []
    for series in flows.values():
        rows = np.column_stack([series.col(n) for n in names])
        keep = (series.t >= t_from) & (series.t <= t_to) & np.all(np.isfinite(rows), axis=1)
        per_flow.append({round(float(t), 3): row for t, row in zip(series.t[keep], rows[keep])})
    if not per_flow:
        return None
    common = sorted(set.intersection(*(set(d) for d in per_flow)))
    if not common:
        return None
    stacked = np.array([[d[t] for d in per_flow] for t in common])  # (instants, flows, names)
    return np.array(common), {n: stacked[:, :, i] for i, n in enumerate(names)}


def factor_series(flows: dict[int, FlowSeries], rate_bps: float, base_rtt_us: float, t_from: float,
                  t_to: float) -> dict[str, np.ndarray] | None:
    """Each factor (and "t", the instants) at every sample instant of [t_from, t_to] where every flow has a
    complete sample with BBR state; None without any."""
    found = _at_instants(flows, t_from, t_to)
    if found is None:
        return None
    t, cols = found
    cwnd_bytes = (cols["cwnd"] * cols["mss"]).sum(axis=1)
    bdp_est = cols["bw_bps"] / BITS_PER_BYTE * cols["bbr_min_rtt_us"] / US_PER_S  # bytes, per flow
    true_bdp = rate_bps / BITS_PER_BYTE * base_rtt_us / US_PER_S
    sum_est = bdp_est.sum(axis=1)
    target = (cols["cwnd_gain"] * bdp_est).sum(axis=1)
    sum_bw = cols["bw_bps"].sum(axis=1)
    ok = (sum_est > 0) & (target > 0) & (sum_bw > 0)
    if not ok.any():
        return None
    return {"t": t[ok], "cwnd_bdp": cwnd_bytes[ok] / true_bdp, "gain": target[ok] / sum_est[ok],
            "bandwidth": sum_bw[ok] / rate_bps,
            "min_rtt": sum_est[ok] / (sum_bw[ok] / BITS_PER_BYTE * base_rtt_us / US_PER_S),
            "allowance": cwnd_bytes[ok] / target[ok], "srtt": cols["srtt_us"].mean(axis=1)[ok] / base_rtt_us}


def queue_factors(flows: dict[int, FlowSeries], rate_bps: float, base_rtt_us: float, t_from: float,
                  t_to: float) -> QueueFactors | None:
    """The factors' medians over [t_from, t_to] (seconds of the run); None as factor_series."""
    series = factor_series(flows, rate_bps, base_rtt_us, t_from, t_to)
    if series is None:
        return None
    return QueueFactors(**{name: float(np.median(series[name])) for name in FACTORS},
                        instants=len(series["t"]))
