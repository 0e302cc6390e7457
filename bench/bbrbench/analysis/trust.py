"""How far a run through bbrkit-link or the delay line (bbrkit-delay) can be trusted: a user-space link that
falls behind (a CPU-bound thread, late wake-ups, frames waiting in its socket buffer, which no AQM sees)
delivers a different path from the one configured. The link's own counters say whether it kept up; what the
receiver got says whether the rate was the configured one; the link's added-delay histogram (how late each
frame left against its schedule) says how far the delay was. Each sender's delay line reports the same late
departures and added delay per direction and is held to the same limits. A run that fails is marked in its
summary, its report, runs.csv and the compare page, and a sweep or compare does not pool it with the others
(sweep/aggregation.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Threshold:
    limit: float
    reason: str


# Every limit the check applies, with why it is where it is (listed in bench/link/README.md, "Trust check"). The
# delay lines are held to the added-delay limits, measured by the same shared code (bench/wire/lateness.c).
# Their late share is recorded but not judged: a late link departure forfeits capacity and distorts the queue an
# AQM judges, while a late delay-line departure only adds delay to the frames concerned, which is what the
# added-delay limits bound.
THRESHOLDS = {
    "thread_cpu_share": Threshold(
        0.9, "a forwarding thread working (busy-polling not counted) this share of the run's wall time has no "
             "room left: its departures slip"),
    "late_share": Threshold(
        0.001, "departures over 200 us late (bench/wire's WIRE_LATE_NS), per departure: one in a thousand is "
               "noise on a virtual CPU, more is a thread that cannot keep its schedule"),
    "waited_share": Threshold(
        0.001, "frames read over 1 ms after the kernel queued them, per frame: a backlog in the socket buffer "
               "is queueing no AQM sees"),
    "rate_over": Threshold(
        0.02, "the receiver cannot get more than the link's rate (its bytes are payload, the rate counts "
              "frames): over 2% more is a rate limiter that leaks"),
    "rate_under": Threshold(
        0.15, "with the queue backlogged the link sends at its rate; headers take 4.4% of a 1514-byte frame and "
              "retransmissions a few %, so over 15% less at the receiver is a link that fell behind"),
    "queue_busy_share": Threshold(
        0.95, "the rate is held to the configured one only when the queue was non-empty in this share of its "
              "samples: otherwise the senders, not the link, set it"),
    "added_p50_us": Threshold(
        200, "half the frames may leave at most this late against their schedule (a wake-up on a virtual CPU), "
             "or 2% of the base RTT if that is more"),
    "added_p50_rtt_share": Threshold(0.02, "see added_p50_us"),
    "added_p99_us": Threshold(
        1000, "99% of the frames may leave at most this late (a late wake-up or a preempted thread), or 10% of "
              "the base RTT if that is more"),
    "added_p99_rtt_share": Threshold(0.10, "see added_p99_us"),
}


# A late-share limit of one measure alone (a report's metric, as repro/points.py reads it: "total.jain"), where a
# pre-registered run showed that the measure does not move with lateness up to it (docs/trust-sensitivity.md,
# "Second experiment"; analysis/sensitivity.py's decide_by_measure). It excuses a run for that measure only, and
# only when the late share is the one check the run failed: late_only_share. Each entry's reason names the run
# and data behind it, whose rule.json holds the rule's decision; a test holds each entry to it.
LATE_SHARE_LIMIT_BY_MEASURE: dict[str, Threshold] = {
    "total.jain": Threshold(
        0.0519, "Jain's index moved by less than 2.5 points with up to 5.19% of departures late, at all 8 "
                "configurations its FQ-CoDel and CAKE claims read (second experiment, 2026-11-29, n = 3 per level: "
                "data/benchmarks/stall-by-measure-2026-11-29)"),
}


def late_share_limit(metric: str) -> float | None:
    """The measure's own late-share limit, None where it has none (THRESHOLDS' applies)."""
    found = LATE_SHARE_LIMIT_BY_MEASURE.get(metric)
    return None if found is None else found.limit


# The words each failure line names its check by (the line goes on with the figures), for a report that says
# which check a point's runs failed (check_of).
CPU_BOUND = "CPU-bound"
LATE = "departures over 200 us late"
WAITED = "frames over 1 ms in the socket buffer"
RATE_OVER = "the link passed more than its rate"
RATE_UNDER = "the link fell behind"
ADDED = "added delay {pct}"
CHECK_NAMES = (CPU_BOUND, LATE, WAITED, RATE_OVER, RATE_UNDER, ADDED.format(pct="p50"), ADDED.format(pct="p99"))
DELAY_LINE_OF = "delay line of sender"


def check_of(reason: str) -> str:
    """The check a failure line of assess() names, with the delay line's sender and direction where it is one
    ("delay line of sender s1, data direction: departures over 200 us late"); the line itself if it names
    none."""
    where = reason.partition(": ")[0] + ": " if reason.startswith(DELAY_LINE_OF) else ""
    return where + next((name for name in CHECK_NAMES if name in reason), reason)


def late_only_share(trust: dict[str, Any]) -> float | None:
    """A run's share of departures over 200 us late, from its trust record (assess()), when that is the only
    check it failed; None when it passed or failed another check too."""
    failed = trust.get("failed") or []
    share = trust.get("checks", {}).get("late_wakeups_share")
    if not failed or share is None or any(check_of(why) != LATE for why in failed):
        return None
    return float(share)


def _limit(name: str) -> float:
    return THRESHOLDS[name].limit


def _share_failure(what: str, count: int, share: float, limit: str) -> str:
    return f"{what}: {count} ({share:.2%}, over {_limit(limit):.1%})"


def _added_delay_failure(pct: str, added: float, rtt_us: float) -> str | None:
    """The failure line of an added delay @pct over its limit at the base RTT, else None."""
    limit = max(_limit(f"added_{pct}_us"), _limit(f"added_{pct}_rtt_share") * rtt_us)
    if added <= limit:
        return None
    return (f"{ADDED.format(pct=pct)} {added} us against a base RTT of {rtt_us / 1000:g} ms (over {limit:.0f} us): "
            "the path's delay is not the configured one")


def _link_checks(link: dict[str, Any], checks: dict[str, float], failed: list[str], missing: list[str]) -> None:
    """The link's own counters: CPU, late departures, socket-buffer backlog."""
    wall = link.get("wall_us", 0)
    # The thread's own departures and reads: a frame of the idle path (xdp_idle_pkts) neither leaves late nor
    # waits in a socket, so it would only thin the shares out.
    idle = link.get("xdp_idle_pkts", 0)
    out = max(1, link.get("out_pkts", 0) - idle)
    for key in ("cpu_fwd_us", "cpu_rev_us"):
        if key in link and wall:
            # Busy-polling is time the thread chose to spend, not work it could not finish.
            working = link[key] - (link.get("spin_us", 0) if key == "cpu_fwd_us" else link.get("rev_spin_us", 0))
            share = working / wall
            checks[key.removesuffix("_us") + "_share"] = share
            if share > _limit("thread_cpu_share"):
                failed.append(f"{key.removesuffix('_us').replace('_', ' ')} thread busy {share:.0%} of the run "
                              f"(over {_limit('thread_cpu_share'):.0%}): {CPU_BOUND}")
        else:
            missing.append(key)
    for key, total, limit, what in (("late_wakeups", out, "late_share", LATE),
                                    ("rx_waited_pkts", max(1, link.get("in_pkts", 0) - idle), "waited_share",
                                     WAITED)):
        if key not in link:
            missing.append(key)
            continue
        share = link[key] / total
        checks[key + "_share"] = share
        if share > _limit(limit):
            failed.append(_share_failure(what, link[key], share, limit))
    for key in ("late_max_us", "sockbuf_max_bytes"):
        if key in link:
            checks[key] = link[key]
    if "forfeit_us" in link and wall:
        # Recorded, not judged: the capacity late wake-ups cost is what late_share already fails on.
        checks["forfeit_share"] = link["forfeit_us"] / wall


def _rate_checks(path: dict[str, Any], checks: dict[str, float], failed: list[str], missing: list[str]) -> None:
    """What the receiver got against the configured rate."""
    rate, got, busy = path.get("rate_mbit"), path.get("goodput_mbps"), path.get("queue_busy_share")
    if not rate or got is None:
        missing.append("rate")  # a trace has no one rate; a run without flows has no receiver figure
        return
    ratio = got / rate
    checks["receiver_rate_ratio"] = ratio
    if ratio > 1 + _limit("rate_over"):
        failed.append(f"the receiver got {got:.3g} Mbit/s through a {rate:g} Mbit/s link "
                      f"(over {_limit('rate_over'):.0%} more): {RATE_OVER}")
    if busy is None:
        missing.append("queue_busy_share")
        return
    checks["queue_busy_share"] = busy
    if busy >= _limit("queue_busy_share") and ratio < 1 - _limit("rate_under"):
        failed.append(f"the receiver got {got:.3g} Mbit/s of a {rate:g} Mbit/s link with its queue backlogged "
                      f"{busy:.0%} of the time (over {_limit('rate_under'):.0%} less): {RATE_UNDER}")


def _delay_checks(link: dict[str, Any], path: dict[str, Any], checks: dict[str, float], failed: list[str],
                  missing: list[str]) -> None:
    """How late frames left against their schedule, against the configured base RTT."""
    rtt_us = (path.get("base_rtt_ms") or 0) * 1000
    for pct in ("p50", "p99"):
        key = f"added_{pct}_us"
        if key not in link:
            missing.append(key)
            continue
        checks[key] = link[key]
        if why := _added_delay_failure(pct, link[key], rtt_us):
            failed.append(why)


# A delay line's directions by their stats prefix: lr carries the sender's data, rl its ACKs.
DELAY_LINE_DIRECTIONS = {"lr": "data direction", "rl": "ACK direction"}
# What a delay line from before its trust check lacks: such a run's delay lines are not checked, which is not
# a pass.
DELAY_LINE_NOT_CHECKED = "delay line not checked"


def _delay_line_checks(lines: list[dict[str, Any]], path: dict[str, Any], checks: dict[str, float],
                       failed: list[str], missing: list[str]) -> None:
    """Each sender's delay line, each direction: the added delay, to the link's limits; the share of departures
    over 200 us late recorded beside it."""
    rtt_us = (path.get("base_rtt_ms") or 0) * 1000
    for number, line in enumerate(lines, 1):
        sender = line.get("sender", f"#{number}")
        for d, direction in DELAY_LINE_DIRECTIONS.items():
            name = f"{DELAY_LINE_OF} {sender}, {direction}"
            if f"{d}_late_wakeups" not in line:
                missing.append(f"{DELAY_LINE_NOT_CHECKED} (sender {sender}, {direction})")
                continue
            share = line[f"{d}_late_wakeups"] / max(1, line.get(f"{d}_pkts", 0))
            checks[f"delay_line_{sender}_{d}_late_share"] = share
            for pct in ("p50", "p99"):
                added = line[f"{d}_added_{pct}_us"]
                checks[f"delay_line_{sender}_{d}_added_{pct}_us"] = added
                if why := _added_delay_failure(pct, added, rtt_us):
                    failed.append(f"{name}: {why}")


def assess(link: dict[str, Any] | None, path: dict[str, Any] | None = None,
           delay_lines: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """{"ok", "failed": [one line each], "checks": {name: value}, "not_reported": [...]} from the link's exit
    counters (None: the run had no link), @path: the configured "rate_mbit" and "base_rtt_ms", the receivers'
    "goodput_mbps" and the "queue_busy_share" of the queue samples, and @delay_lines: each sender's delay line's
    exit counters with its "sender" (None or empty: the run had none). What an older link, delay line or run
    does not report is named, not guessed."""
    checks: dict[str, float] = {}
    failed: list[str] = []
    missing: list[str] = []
    path = path or {}
    if link is not None:
        _link_checks(link, checks, failed, missing)
        _rate_checks(path, checks, failed, missing)
        _delay_checks(link, path, checks, failed, missing)
    _delay_line_checks(delay_lines or [], path, checks, failed, missing)
    return {"ok": not failed, "failed": failed, "checks": checks, "not_reported": missing}
