"""The BBR-vs-CUBIC bandwidth share model (Ware et al., IMC 2019) as seed 004 states and tests it.

Inputs: N BBR flows, bottleneck queue q (packets), capacity c (packets/s), base RTT l (s), time d (s)
the flows compete after converging. With X = q / (c l), the queue in BDPs:

    p          = 1/2 - 1/(2X) - 4N/q            loss-based flows' share of the link
    Probe_time = (q/c + 0.2 + l) * d / 10        time BBR spends in PROBE_RTT
    BBR_frac   = (1 - p) * (d - Probe_time) / d

which is seed 004's (1/2 + cl/(2q) + 4N/q)(d - Probe_time)/d. The model overshoots 1 for queues under
about one BDP (p < 0); the seed caps the output to 1 "in such cases", and so do we: the share is
BBR_frac clipped to [0, 1]. (algorithms.md also says BBR takes the whole link when p < 0; the two
readings differ only when p < 0 and (1 - p)(d - Probe_time)/d < 1, a sliver near X = 1, where we keep
the seed's formula.) Note Probe_time / d does not depend on d.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Seed 004 / Ware et al.: BBR keeps at least 4 packets in flight per flow while probing RTT.
PROBE_INFLIGHT_PACKETS = 4.0
# PROBE_RTT lasts about 200 ms plus one queue drain and one RTT, once every 10 s.
PROBE_RTT_S = 0.2
PROBE_INTERVAL_S = 10.0


@dataclass(frozen=True)
class ShareInputs:
    n_bbr: int
    queue_packets: float
    capacity_pps: float
    base_rtt_s: float
    duration_s: float


@dataclass(frozen=True)
class ShareResult:
    queue_bdp: float
    loss_based_share: float
    probe_time_s: float
    raw_bbr_frac: float
    bbr_share: float


def bbr_share(i: ShareInputs) -> ShareResult:
    if i.n_bbr < 1 or i.queue_packets <= 0 or i.capacity_pps <= 0 or i.base_rtt_s <= 0 or i.duration_s <= 0:
        raise ValueError("share model needs N >= 1 and positive q, c, l, d")
    x = i.queue_packets / (i.capacity_pps * i.base_rtt_s)
    p = 0.5 - 1 / (2 * x) - PROBE_INFLIGHT_PACKETS * i.n_bbr / i.queue_packets
    probe = (i.queue_packets / i.capacity_pps + PROBE_RTT_S + i.base_rtt_s) * i.duration_s / PROBE_INTERVAL_S
    raw = (1 - p) * (i.duration_s - probe) / i.duration_s
    return ShareResult(queue_bdp=x, loss_based_share=p, probe_time_s=probe, raw_bbr_frac=raw,
                       bbr_share=min(1.0, max(0.0, raw)))


def share_for_link(n_bbr: int, queue_bdp: float, rate_mbit: float, rtt_ms: float, duration_s: float,
                   packet_bytes: int = 1514) -> float:
    """Convenience form in the units the scenarios use (queue in BDPs, rate in Mbit/s, RTT in ms)."""
    c = rate_mbit * 1e6 / 8 / packet_bytes
    l = rtt_ms / 1e3
    return bbr_share(ShareInputs(n_bbr, queue_bdp * c * l, c, l, duration_s)).bbr_share


def l2_error(model: Sequence[float], observed: Sequence[float]) -> float:
    """Seed 004 Table 2: the L2 norm of (model - observed) over the queue sizes of one BBR count."""
    _same_length(model, observed)
    return math.sqrt(sum((m - o) ** 2 for m, o in zip(model, observed)))


def _same_length(a: Sequence[float], b: Sequence[float]) -> None:
    if len(a) != len(b) or not a:
        raise ValueError("series must be non-empty and of equal length")
