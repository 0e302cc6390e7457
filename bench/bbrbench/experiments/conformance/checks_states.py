"""The checks of the cases on STARTUP, DRAIN, PROBE_BW's phases, PROBE_RTT and restarts from idle (A.1-A.11),
one per case, each reading the records of one flow."""

from __future__ import annotations

import math
from typing import Any

from .model import (
    INFO,
    PASS,
    Check,
    Ctx,
    bdp_packets,
    blocked,
    cut_short,
    first_exit,
    fixed,
    flag,
    judge,
    key_of,
    lossy_ups,
    mbit,
    phase,
    phase_runs,
    round_loss,
    runs,
    unforced,
    ups,
)


def check_a1(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    i = first_exit(records, "STARTUP")
    if i is None:
        return [judge("STARTUP ends", False, "never", "DRAIN")]
    exit_rec = records[i]
    checks = [judge("STARTUP -> DRAIN", exit_rec["mode"] == "DRAIN", exit_rec["mode"], "DRAIN"),
              judge("no loss before the exit (a plateau exit)", exit_rec["lost"] == records[0]["lost"],
                    f"{exit_rec['lost'] - records[0]['lost']} lost", "0")]
    link = ctx.payload(exit_rec["t_s"], exit_rec["mss"])
    rel = exit_rec["max_bw_bps"] / link - 1
    checks.append(judge("max_bw within bw_rel of the bottleneck", abs(rel) <= ctx.tol["bw_rel"],
                        f"{mbit(exit_rec['max_bw_bps'])} ({rel:+.1%})", f"{mbit(link)} +- {ctx.tol['bw_rel']:.0%}"))
    # The algorithm's own count of rounds that grew less than 25%: the exit comes when it reaches 3.
    count = key_of(records, "full_bw_cnt")
    checks.append(blocked("full_bw_count at the exit", "full_bw_cnt") if count is None else
                  judge("full_bw_count at the exit", exit_rec[count] == ctx.tol["plateau_rounds"],
                        str(exit_rec[count]), f"{ctx.tol['plateau_rounds']:.0f}"))
    checks.append(flag(records, i, "full_bw_reached"))
    if ctx.has_full_bw_now:
        checks.append(flag(records, i, "full_bw_now"))
    return checks


def check_a2(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    i = first_exit(records, "STARTUP")
    if i is None:
        return [judge("STARTUP ends on loss", False, "never", f"within {ctx.tol['exit_within_s']} s")]
    exit_rec = records[i]
    app = key_of(records, "is_app_limited")
    if app is None:
        return [blocked("STARTUP's samples app-limited at the loss exit", "is_app_limited")]
    # The draft's step 2: the samples are app-limited when the loss ends STARTUP, i.e. in its last round.
    last_round = [r for r in records[:i + 1] if r["round"] >= exit_rec["round"] - 1]
    if not any(r[app] for r in last_round):
        return [unforced("app-limited samples in STARTUP's last round", f"0/{len(last_round)} records", "some")]
    took = exit_rec["t_s"] - records[0]["t_s"]
    loss = max((r.get("loss_rate") or 0.0) for r in records[:i + 1])
    # Step 5 also asks for full_bw_now, which the draft's own CheckStartupHighLoss() never sets (it sets
    # full_bw_reached only): the algorithm's text is followed, and the doc lists it as the draft's finding.
    return [Check("app-limited samples in STARTUP's last round", INFO,
                  f"{sum(bool(r[app]) for r in last_round)}/{len(last_round)} records", "some"),
            judge("STARTUP -> DRAIN", drained(records, i), exit_rec["mode"],
                  "DRAIN (PROBE_BW: DRAIN over within the ACK, drain_start_round now)"),
            judge("STARTUP ends", took <= ctx.tol["exit_within_s"], f"{took:.2f} s",
                  f"<= {ctx.tol['exit_within_s']} s"),
            judge("loss rate seen in STARTUP", loss > ctx.tol["loss_thresh"], f"{loss:.1%}",
                  f"> {ctx.tol['loss_thresh']:.0%}"),
            flag(records, i, "full_bw_reached")]


def drained(records: list[dict[str, Any]], i: int) -> bool:
    """STARTUP's exit at record i went to DRAIN: DRAIN itself, or a DRAIN entered and left on that ACK (an
    app-limited flight is already below its target), which drain_start_round shows."""
    key = key_of(records, "drain_start_round")
    r = records[i]
    return r["mode"] == "DRAIN" or r["mode"] == "PROBE_BW" and key is not None and r[key] == r["round"]


def with_slack(target: float, ctx: Ctx) -> float:
    """An inflight target plus what the checks tolerate above it: inflight_rel of it and inflight_slack_packets
    (the draft's BBRQuantizationBudget, which the code adds to BBRInflight())."""
    return target * (1 + ctx.tol["inflight_rel"]) + ctx.tol["inflight_slack_packets"]


def check_a3(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    drain = [r for r in records if r["mode"] == "DRAIN"]
    i = first_exit(records, "DRAIN")
    if not drain:
        return [left_drain_at_once(records, ctx)]
    if i is None:
        return [judge("DRAIN entered and left", False, "never left", "both")]
    gain = max(r["pacing_gain"] for r in drain)
    exit_rec = records[i]
    bdp = bdp_packets(exit_rec)
    margin = with_slack(bdp, ctx) - bdp
    checks = [judge("DRAIN pacing gain", ctx.tol["drain_gain_min"] - 1e-3 <= gain <= ctx.tol["drain_gain_max"] + 1e-3,
                    fixed(gain, 3), f"{ctx.tol['drain_gain_min']}..{ctx.tol['drain_gain_max']}"),
              judge("DRAIN -> PROBE_BW", exit_rec["mode"] == "PROBE_BW", exit_rec["mode"], "PROBE_BW"),
              judge("inflight at the exit <= BBRInflight(1.0)", exit_rec["inflight"] <= bdp + margin,
                    f"{exit_rec['inflight']} pkts", f"<= {bdp:.0f} (+slack: {bdp + margin:.0f})")]
    # The exit comes on the first ACK with inflight down to the target, so no lower than it less what a
    # few ACKs take off: a DRAIN that started below the target leaves at once, wherever inflight is.
    if drain[0]["inflight"] <= bdp + margin:
        return [*checks, unforced("inflight above BBRInflight(1.0) when DRAIN starts", f"{drain[0]['inflight']} pkts",
                                  f"> {bdp + margin:.0f}")]
    return [*checks, judge("DRAIN not left later than the target (inflight not far below it)",
                           exit_rec["inflight"] >= bdp - margin, f"{exit_rec['inflight']} pkts",
                           f">= {bdp:.0f} (-slack: {bdp - margin:.0f})")]


def left_drain_at_once(records: list[dict[str, Any]], ctx: Ctx) -> Check:
    """A run without a DRAIN record: the ACK that enters DRAIN may also leave it (every BBR's check_drain
    tests inflight right after entering), and a record shows the state after its ACK, so STARTUP goes
    straight to PROBE_BW. That is the case's exit with no queue to drain: the precondition, not a verdict.
    A PROBE_RTT that interrupts STARTUP may end in PROBE_BW (the draft's BBRExitProbeRTT): not the case's
    path either. No exit from STARTUP, or a PROBE_BW entered above the target, is a fail."""
    exit_rec = next((r for r in records if r["mode"] != "STARTUP"), None)
    if exit_rec is None:
        return judge("DRAIN entered and left", False, "no DRAIN", "both")
    if exit_rec["mode"] != "PROBE_BW":
        return unforced("STARTUP ends in DRAIN", exit_rec["mode"], "DRAIN")
    bound = with_slack(bdp_packets(exit_rec), ctx)
    if exit_rec["inflight"] > bound:
        return judge("STARTUP -> PROBE_BW without DRAIN only at the target", False, f"{exit_rec['inflight']} pkts",
                     f"<= {bound:.0f}")
    return unforced("inflight above BBRInflight(1.0) when DRAIN starts (DRAIN left on the ACK that entered it)",
                    f"{exit_rec['inflight']} pkts", f"> {bound:.0f}")


def check_a4(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    key = key_of(records, "drain_start_round")
    if key is None:
        return [blocked("DRAIN ends 3 rounds after drain_start_round", "drain_start_round")]
    drain = [r for r in records if r["mode"] == "DRAIN"]
    if not drain:
        return [judge("DRAIN entered", False, "never", "DRAIN")]
    i = first_exit(records, "DRAIN")
    # A DRAIN never left is judged at its last record: inflight still above target there is the case's
    # condition, and the rounds it has lasted are past the time exit.
    exit_rec, last = (records[i], records[i - 1]) if i is not None else (drain[-1], drain[-1])
    bound = with_slack(bdp_packets(exit_rec), ctx)
    if exit_rec["inflight"] <= bound:
        return [unforced("inflight above BBRInflight(1.0) when DRAIN ends", f"{exit_rec['inflight']} pkts",
                         f"> {bound:.0f} (BDP and slack)")]
    rounds = exit_rec["round"] - last[key]
    limit = ctx.tol["drain_rounds"] + ctx.tol["round_slack"]
    left = i is not None
    if not left and rounds <= limit:  # the run's end came before the time exit was due: not judged
        return [unforced("a run lasting past DRAIN's time exit", f"{rounds} rounds of DRAIN", f"> {limit:.0f}")]
    mode, rounds_seen = (exit_rec["mode"], str(rounds)) if left else ("DRAIN to the end", f"{rounds}, never left")
    return [judge("DRAIN -> PROBE_BW", mode == "PROBE_BW", mode, "PROBE_BW"),
            judge("rounds in DRAIN", left and ctx.tol["drain_rounds"] <= rounds <= limit, rounds_seen,
                  f"{ctx.tol['drain_rounds']:.0f}..{limit:.0f}")]


def check_a5(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    lossless = [(a, b) for a, b in ups(records) if records[b]["lost"] == records[a]["lost"]]
    if not lossless:
        return [unforced("a loss-free UP", f"{len(ups(records))} UPs, all lossy", ">= 1 without loss")]
    a, b = lossless[0]
    after = phase(records[b])
    rounds = records[b]["round"] - records[a]["round"]
    checks = [judge("loss-free UP -> DOWN", after in ("DOWN", "CRUISE"), after,
                    "DOWN (CRUISE: DOWN shorter than a round, between records)"),
              judge("rounds in UP", rounds >= ctx.tol["min_up_rounds"], str(rounds),
                    f">= {ctx.tol['min_up_rounds']:.0f} (3 rounds of plateau)")]
    if ctx.has_full_bw_now:
        # Set by the ACK that ends UP: the exit record shows it, the last UP record may not yet.
        flags = [flag(records, i, "full_bw_now") for i in (b - 1, b)]
        checks.append(next((f for f in flags if f.status == PASS), flags[-1]))
    return checks


def check_a6(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    app = key_of(records, "is_app_limited")
    longterm = key_of(records, "inflight_longterm")
    if app is None or longterm is None:
        return [blocked("app-limited UP ended by loss", "is_app_limited" if app is None else "inflight_longterm")]
    # IsInflightTooHigh() judges each ACK (RS.lost against RS.tx_in_flight), which per-round records do not
    # show: an app-limited UP that lost more than LossThresh of its packets is the case's.
    # An UP the run's end cut short before its exit was due is not judged.
    lossy = [(a, b, over) for a, b, over in lossy_ups(records, ctx.tol["loss_thresh"])
             if any(r[app] for r in records[a:len(records) if b is None else b + 1])
             and not (b is None and cut_short(records, over, ctx.tol["exit_rounds"]))]
    if not lossy:
        return [unforced(f"an app-limited UP with a round losing more than {ctx.tol['loss_thresh']:.0%}", "none",
                         ">= 1")]
    a, b, over = lossy[0]
    if b is None:
        return [judge("UP -> DOWN", False, "UP to the end of the run", "DOWN")]
    rounds = records[b]["round"] - records[over]["round"]
    # HandleInflightTooHigh(): inflight_longterm from a sample that is not app-limited only.
    changed = records[b][longterm] != records[a][longterm]
    want_change = not records[b][app]
    return [Check("the round's loss", INFO, f"{round_loss(records, over):.1%}", f"> {ctx.tol['loss_thresh']:.0%}"),
            judge("UP -> DOWN", phase(records[b]) in ("DOWN", "CRUISE"), phase(records[b]),
                  "DOWN (CRUISE: DOWN over within the ACK)"),
            judge(f"rounds from the loss above {ctx.tol['loss_thresh']:.0%} to the exit",
                  rounds <= ctx.tol["exit_rounds"], str(rounds), f"<= {ctx.tol['exit_rounds']:.0f}"),
            judge("inflight_longterm as HandleInflightTooHigh() leaves it", changed == want_change,
                  f"{records[a][longterm]} -> {records[b][longterm]}",
                  "set from the sample" if want_change else "unchanged (app-limited sample)")]


def check_a7(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    modes = sorted({r["mode"] for r in records})
    lost = records[-1]["lost"] - records[0]["lost"]
    app = key_of(records, "is_app_limited")
    return [judge("no loss", lost <= ctx.tol["max_lost_packets"], f"{lost} lost",
                  f"<= {ctx.tol['max_lost_packets']:.0f}"),
            judge("STARTUP never left (PROBE_RTT aside)", set(modes) <= {"STARTUP", "PROBE_RTT"}, ",".join(modes),
                  "STARTUP"),
            judge("stays for the whole transfer", records[-1]["t_s"] - records[0]["t_s"] >= ctx.case.duration_s - 1,
                  f"{records[-1]['t_s'] - records[0]['t_s']:.1f} s", f">= {ctx.case.duration_s - 1:.0f} s"),
            blocked("rounds app-limited", "is_app_limited") if app is None else
            judge("rounds app-limited", sum(bool(r[app]) for r in records) >= 0.9 * len(records),
                  f"{sum(bool(r[app]) for r in records)}/{len(records)}", ">= 90%")]


def check_a8(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    # Phase records carry the gain of the phase they start; mode records may carry the one before.
    down = [r for r in records if phase(r) == "DOWN" and r["event"] in ("round", "phase")]
    longterm = key_of(records, "inflight_longterm")
    checks = []
    if down:
        gains = sorted({r["pacing_gain"] for r in down})
        ok = all(abs(g - ctx.tol["down_gain"]) <= ctx.tol["gain_abs"] for g in gains)
        checks.append(judge("DOWN pacing gain", ok, ",".join(fixed(g, 3) for g in gains),
                            f"{ctx.tol['down_gain']} +- {ctx.tol['gain_abs']}"))
    else:
        checks.append(judge("DOWN pacing gain", False, "no DOWN round record", "one"))
    exits = [b for p, a, b in runs(records) if p == "DOWN" and b < len(records) and phase(records[b]) == "CRUISE"]
    if not exits:
        return [*checks, judge("DOWN -> CRUISE", False, "none", ">= 1")]
    worst = 0.0
    for b in exits:
        r = records[b]
        bound = bdp_packets(r, "max_bw_bps")
        if longterm and r[longterm] is not None:
            bound = min(bound, (1 - ctx.tol["headroom"]) * r[longterm])
        worst = max(worst, r["inflight"] / with_slack(bound, ctx))
    checks.append(judge("inflight at DOWN -> CRUISE within both targets", worst <= 1.0,
                        f"{worst:.2f} of the bound (worst of {len(exits)})", "<= 1.00"))
    return checks


def check_a9(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    nth = ctx.case.trigger.get("nth", 1)
    downs = [(a, b) for a, b in phase_runs(records, "DOWN", ctx.case.trigger.get("after")) if b < len(records)]
    if len(downs) < nth:
        return [judge(f"DOWN entered and left {nth} time(s)", False, str(len(downs)), str(nth))]
    a, b = downs[nth - 1]  # the DOWN the trigger cut the rate in
    exit_rec = records[b]
    longterm = key_of(records, "inflight_longterm")
    target = bdp_packets(exit_rec, "max_bw_bps")
    if longterm and exit_rec[longterm] is not None:
        target = min(target, (1 - ctx.tol["headroom"]) * exit_rec[longterm])
    bound = with_slack(target, ctx)
    if exit_rec["inflight"] <= bound:
        return [unforced("inflight above BBRInflightWithHeadroom() when DOWN ends", f"{exit_rec['inflight']} pkts",
                         f"> {bound:.0f} (target and slack)")]
    took = exit_rec["t_s"] - records[a]["t_s"]
    return [judge("DOWN -> REFILL (CRUISE skipped)", phase(exit_rec) == "REFILL", phase(exit_rec), "REFILL"),
            judge("time in DOWN <= bw_probe_wait", took <= ctx.tol["probe_wait_max_s"] + ctx.tol["time_slack_s"],
                  f"{took:.2f} s", f"<= {ctx.tol['probe_wait_max_s']} s")]


def check_a10(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    periods = [(a, b) for p, a, b in runs(records) if p == "PROBE_RTT" and b < len(records)]
    if not periods:
        return [judge("PROBE_RTT entered and left", False, "never", "once at least")]
    restarts = [records[0]["t_s"]] + [records[b]["t_s"] for _, b in periods]
    restarts += [y["t_s"] for x, y in zip(records, records[1:], strict=False)
                 if y.get("probe_rtt_min_us") != x.get("probe_rtt_min_us")]
    waits, durations, gains, nexts = [], [], set(), []
    for a, b in periods:
        start = records[a]["t_s"]
        waits.append(start - max(t for t in restarts if t < start))
        durations.append(records[b]["t_s"] - start)
        gains |= {r["cwnd_gain"] for r in records[a:b]}
        nexts.append(records[b]["mode"])
    min_wait = ctx.tol["interval_s"] - ctx.tol["record_slack_s"]
    max_wait = ctx.tol["interval_s"] + ctx.tol["late_s"]
    # The longest stretch without a refresh of probe_rtt_min_delay and without PROBE_RTT, the run's tail
    # after the last one included (a PROBE_RTT the run's end cut short still started).
    started = [records[a]["t_s"] for p, a, _ in runs(records) if p == "PROBE_RTT"]
    tail = records[-1]["t_s"] - max(t for t in restarts + started if t <= records[-1]["t_s"])
    gain_ok = all(abs(g - ctx.tol["cwnd_gain"]) <= ctx.tol["gain_abs"] for g in gains)
    # v3 keeps the 0.5 in bbr_probe_rtt_cwnd_gain and sets cwnd_gain to 1 there: the cwnd shows it.
    # Two-sided: ProbeRTTCwndGain x BDP, neither v1's 4 packets nor an unreduced cwnd.
    held = [r for a, b in periods for r in records[a:b] if r["event"] == "round"]
    off = max((abs(r["cwnd"] - ctx.tol["cwnd_gain"] * bdp_packets(r)) for r in held), default=math.inf)
    cwnd_ok = off <= ctx.tol["cwnd_slack_packets"]
    rtt_s = records[periods[0][0]]["min_rtt_us"] / 1e6
    floor = max(ctx.tol["min_duration_s"], rtt_s)
    return [judge("PROBE_RTT only after the interval", min(waits) >= min_wait, f"{min(waits):.2f} s",
                  f">= {min_wait:.2f} s"),
            judge("PROBE_RTT once the interval runs out", max([*waits, tail]) <= max_wait,
                  f"{max([*waits, tail]):.2f} s without it", f"<= {max_wait:.2f} s"),
            judge("cwnd_gain 0.5 in PROBE_RTT (or cwnd at 0.5 BDP)", gain_ok or cwnd_ok,
                  f"cwnd_gain {','.join(fixed(g, 3) for g in sorted(gains))}, cwnd off by {off:.0f} pkts at most",
                  f"{ctx.tol['cwnd_gain']} (cwnd = {ctx.tol['cwnd_gain']} BDP +- {ctx.tol['cwnd_slack_packets']:.0f})"),
            judge("PROBE_RTT lasts 200 ms and a round", floor <= min(durations) and max(durations)
                  <= ctx.tol["max_duration_s"], f"{min(durations):.3f}..{max(durations):.3f} s",
                  f"{floor:.3f}..{ctx.tol['max_duration_s']} s"),
            judge("back to PROBE_BW", set(nexts) == {"PROBE_BW"}, ",".join(nexts), "PROBE_BW")]


def _restart(records: list[dict[str, Any]], min_gap_s: float) -> int | None:
    return next((i for i in range(1, len(records)) if records[i]["t_s"] - records[i - 1]["t_s"] >= min_gap_s), None)


def check_a11(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    i = _restart(records, 5.0)
    if i is None:
        return [unforced("an idle period of >= 5 s", "none", "one")]
    gap = records[i]["t_s"] - records[i - 1]["t_s"]
    window = ctx.tol["no_probe_rtt_after_restart_s"]
    soon = [r for r in records[i:] if r["t_s"] - records[i]["t_s"] <= window]
    key = key_of(records, "idle_restart")
    return [Check("idle period", INFO, f"{gap:.1f} s", ">= 5 s"),
            judge("no PROBE_RTT after the restart", all(r["mode"] != "PROBE_RTT" for r in soon),
                  ",".join(sorted({r["mode"] for r in soon})), f"no PROBE_RTT within {window} s"),
            blocked("idle_restart set on restart", "idle_restart") if key is None else
            judge("idle_restart set on restart", any(r[key] for r in soon), str([r[key] for r in soon[:3]]), "true")]
