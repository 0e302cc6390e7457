"""Exposition text as bbrctl export writes it, for the rollout tests (Prometheus text format 0.0.4)."""

from __future__ import annotations

COUNTERS = {"acked_bytes", "sent_segments", "retransmitted_segments"}


def exposition(arms: dict[str, dict[str, float]], rule: str = "web", holdback: str = "cubic") -> str:
    """The per-arm families as bbrctl export writes them: counters with _total, the RTT a histogram."""
    lines = []
    names = sorted({k for v in arms.values() for k in v})
    for name in names:
        full = f"bbrkit_policy_{name}"
        kind = "counter" if name in COUNTERS else "histogram" if name == "srtt_seconds" else "gauge"
        lines.append(f"# TYPE {full} {kind}")
        for arm, values in arms.items():
            labels = f'rule="{rule}",arm="{arm}",holdback="{"true" if arm == holdback else "false"}"'
            if kind == "histogram":
                n = values["flows"]
                lines += [f'{full}_bucket{{{labels},le="+Inf"}} {n}', f"{full}_sum{{{labels}}} {values[name] * n}",
                          f"{full}_count{{{labels}}} {n}"]
            else:
                lines.append(f"{full}{'_total' if kind == 'counter' else ''}{{{labels}}} {values[name]}")
    return "\n".join(lines) + "\n"


def arm(t: float, goodput_bps: float, stalled: int, retrans_per_s: float = 0.0, flows: int = 10,
        acked: float | None = None) -> dict[str, float]:
    """An arm's series at time t for a steady goodput per flow (or the acked bytes given) and a number of
    stalled flows."""
    return {"acked_bytes": goodput_bps * flows * t / 8 if acked is None else acked, "sent_segments": 1000 * t,
            "retransmitted_segments": retrans_per_s * t, "flows": flows, "busy_flows": flows,
            "stalled_flows": stalled, "srtt_seconds": 0.02, "weight_ratio": 0.5}
