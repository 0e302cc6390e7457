"""How far a run through bbrkit-link can be trusted, from the link's own counters: a user-space link that
falls behind (a CPU-bound thread, late wake-ups, frames waiting in its socket buffer, which no AQM sees)
delivers a different path from the one configured. A run that fails is marked in its summary, its report
and runs.csv, and a sweep or compare does not pool it with the others (sweep/aggregation.py)."""

from __future__ import annotations

from typing import Any

# A forwarding thread busy this share of the run's wall time has no room left: its departures slip.
MAX_THREAD_CPU_SHARE = 0.9
# Departures more than 200 us late (the link's LATE_WAKEUP_NS) allowed per departure: 1 in 1000.
MAX_LATE_SHARE = 0.001
# Frames read over 1 ms after the kernel queued them (rx_waited_pkts): 1 in 1000.
MAX_WAITED_SHARE = 0.001


def assess(link: dict[str, Any]) -> dict[str, Any]:
    """{"ok", "failed": [one line each], "checks": {name: value}} from the link's exit counters; counters
    an older link does not report are left out (and say so)."""
    checks: dict[str, float] = {}
    failed: list[str] = []
    missing: list[str] = []
    wall = link.get("wall_us", 0)
    out = max(1, link.get("out_pkts", 0))
    for key in ("cpu_fwd_us", "cpu_rev_us"):
        if key in link and wall:
            share = link[key] / wall
            checks[key.removesuffix("_us") + "_share"] = share
            if share > MAX_THREAD_CPU_SHARE:
                failed.append(f"{key.removesuffix('_us').replace('_', ' ')} thread busy {share:.0%} of the run "
                              f"(over {MAX_THREAD_CPU_SHARE:.0%}): CPU-bound")
        else:
            missing.append(key)
    for key, total, limit, what in (("late_wakeups", out, MAX_LATE_SHARE, "departures over 200 us late"),
                                    ("rx_waited_pkts", max(1, link.get("in_pkts", 0)), MAX_WAITED_SHARE,
                                     "frames over 1 ms in the socket buffer")):
        if key not in link:
            missing.append(key)
            continue
        share = link[key] / total
        checks[key + "_share"] = share
        if share > limit:
            failed.append(f"{what}: {link[key]} ({share:.2%}, over {limit:.1%})")
    if "late_max_us" in link:
        checks["late_max_us"] = link["late_max_us"]
    if "sockbuf_max_bytes" in link:
        checks["sockbuf_max_bytes"] = link["sockbuf_max_bytes"]
    return {"ok": not failed, "failed": failed, "checks": checks, "not_reported": missing}
