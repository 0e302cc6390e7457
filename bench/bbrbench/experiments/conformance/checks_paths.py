"""The checks of the cases on the path: bandwidth found and followed, ACK aggregation, policers, spurious
recoveries undone, PROBE_RTT in STARTUP, loss in UP, app-limited probes (A.12-A.22)."""

from __future__ import annotations

import math
from typing import Any

from .model import (
    INFO,
    Check,
    Ctx,
    bdp_packets,
    blocked,
    cut_short,
    first_exit,
    judge,
    key_of,
    lossy_ups,
    mbit,
    payload_bps,
    phase,
    runs,
    unforced,
)


def check_a12(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    i = first_exit(records, "STARTUP")
    if i is None:
        return [judge("STARTUP ends", False, "never", "with the link's rate")]
    startup = [r for r in records[:i] if r["mode"] == "STARTUP"]
    exit_rec = records[i]
    cwnd_bdp = max(r["cwnd"] for r in startup[-3:]) / bdp_packets(exit_rec)
    link = ctx.payload(exit_rec["t_s"], exit_rec["mss"])
    rel = exit_rec["max_bw_bps"] / link - 1
    checks = [judge("cwnd > 2 BDP late in STARTUP", cwnd_bdp > ctx.tol["cwnd_bdp_min"], f"{cwnd_bdp:.2f} BDP",
                    f"> {ctx.tol['cwnd_bdp_min']}"),
              judge("STARTUP finds the bottleneck rate (the sampler not fooled by the bursts)",
                    abs(rel) <= ctx.tol["bw_found_rel"], f"{mbit(exit_rec['max_bw_bps'])} ({rel:+.1%})",
                    f"{mbit(link)} +- {ctx.tol['bw_found_rel']:.0%}")]
    extra = key_of(records, "extra_acked")
    if extra is None:
        return [*checks, blocked("extra_acked measured", "extra_acked")]
    # BBRUpdateMaxInflight(): cwnd_gain x BDP + extra_acked, in STARTUP too; cwnd grows towards it by what
    # each ACK delivers, so the closest of STARTUP's last rounds is judged.
    short = max(r["cwnd"] - (r["cwnd_gain"] * bdp_packets(r) + (r[extra] or 0)) for r in startup[-3:])
    return [*checks, judge("extra_acked measured", max(r[extra] or 0 for r in startup) > 0,
                           f"max {max(r[extra] or 0 for r in startup)} pkts", "> 0"),
            judge("cwnd reaches cwnd_gain x BDP + extra_acked late in STARTUP", short >= -ctx.tol["cwnd_slack_packets"],
                  f"{short:+.0f} pkts", f">= -{ctx.tol['cwnd_slack_packets']:.0f}")]


SETTLE_S = 4.0  # A.13: past STARTUP, DRAIN and the first probe on its path


def _delivered_rate(records: list[dict[str, Any]], from_s: float) -> tuple[float, list[dict[str, Any]]]:
    window = [r for r in records if r["t_s"] >= from_s]
    if len(window) < 2:
        return 0.0, window
    dt = window[-1]["t_s"] - window[0]["t_s"]
    return (window[-1]["delivered"] - window[0]["delivered"]) * window[0]["mss"] * 8 / dt, window


def check_a13(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    rate, window = _delivered_rate(records, SETTLE_S)
    link = ctx.payload(SETTLE_S, records[0]["mss"])
    checks = [judge("link used in PROBE_BW", rate >= ctx.tol["utilisation_min"] * link, mbit(rate),
                    f">= {ctx.tol['utilisation_min']:.0%} of {mbit(link)}")]
    extra = key_of(records, "extra_acked")
    cruise = [r for r in window if r["mode"] == "PROBE_BW" and r["pacing_gain"] == 1.0
              and r.get("bw_phase") in (None, "CRUISE")]
    if extra is None:
        return [*checks, blocked("cwnd augmented by extra_acked", "extra_acked")]
    if not cruise:
        return [*checks, judge("cruise records", False, "none", ">= 1")]
    longterm, shortterm = key_of(records, "inflight_longterm"), key_of(records, "inflight_shortterm")

    def target(r: dict[str, Any]) -> float:
        """cwnd_gain x BDP + extra_acked, within BBRBoundCwndForModel()'s bounds in CRUISE: inflight_longterm
        less headroom, inflight_shortterm (bbr1 reports 0 for both: no bound)."""
        bounds = [r["cwnd_gain"] * bdp_packets(r) + (r[extra] or 0)]
        if longterm and r[longterm]:
            bounds.append((1 - ctx.tol["headroom"]) * r[longterm])
        if shortterm and r[shortterm]:
            bounds.append(r[shortterm])
        return min(bounds)

    short = sorted(r["cwnd"] - target(r) for r in cruise)
    median = short[len(short) // 2]
    return [*checks, judge("extra_acked measured", max(r[extra] or 0 for r in cruise) > 0,
                           f"max {max(r[extra] or 0 for r in cruise)} pkts", "> 0"),
            judge("cwnd >= cwnd_gain x BDP + extra_acked (within the model's bounds)",
                  median >= -ctx.tol["cwnd_slack_packets"],
                  f"median {median:+.0f} pkts", f">= -{ctx.tol['cwnd_slack_packets']:.0f}")]


def check_a14(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    bw = [r for r in records if r["mode"] == "PROBE_BW"]
    if not bw:
        return [judge("PROBE_BW reached", False, "never", "yes")]
    link_bps = ctx.rate_mbit(0) * 1e6
    pacing = sorted(r["pacing_rate_bps"] for r in bw)[len(bw) // 2]
    return [judge("cwnd floor MinPipeCwnd", min(r["cwnd"] for r in bw) >= ctx.tol["min_cwnd"],
                  f"min {min(r['cwnd'] for r in bw)}", f">= {ctx.tol['min_cwnd']:.0f}"),
            judge("pacing rate matches the link", abs(pacing / link_bps - 1) <= ctx.tol["pacing_rel"],
                  f"median {pacing / 1e3:.1f} kbit/s", f"{link_bps / 1e3:.1f} +- {ctx.tol['pacing_rel']:.0%}")]


def _step_time(ctx: Ctx) -> float:
    return ctx.case.rate_steps[1][0]


def check_a15(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    step = _step_time(ctx)
    link = ctx.payload(step, records[0]["mss"])
    after = [i for i, r in enumerate(records) if r["t_s"] >= step]
    found = next((i for i in after if records[i]["max_bw_bps"] >= ctx.tol["found_rel"] * link), None)
    if found is None:
        return [judge("max_bw reaches the new rate", False, mbit(max(records[i]["max_bw_bps"] for i in after)),
                      f">= {ctx.tol['found_rel']:.0%} of {mbit(link)}")]
    took = records[found]["t_s"] - step
    bdp = link * records[found]["min_rtt_us"] / 1e6 / 8 / records[0]["mss"]
    limit = ctx.tol["log_rounds_factor"] * math.log2(bdp)
    probe = next((i for i in after if phase(records[i]) in ("UP", "REFILL")), after[0])
    start = after[0] if ctx.gain_cycle else probe
    rounds = records[found]["round"] - records[start]["round"]
    checks = [judge("max_bw reaches the new rate", took <= ctx.tol["found_within_s"], f"{took:.2f} s after the step",
                    f"<= {ctx.tol['found_within_s']} s"),
              judge("rounds to find it" + ("" if ctx.gain_cycle else " (from the probe)"), rounds <= limit,
                    str(rounds), f"<= {ctx.tol['log_rounds_factor']:.0f} log2(BDP) = {limit:.0f}")]
    if ctx.gain_cycle:
        return checks
    key = key_of(records, "inflight_longterm")
    values = [records[i][key] for i in range(probe, found + 1)
              if phase(records[i]) == "UP" and records[i][key] is not None] if key else []
    steps = [b - a for a, b in zip(values, values[1:], strict=False) if b > a]
    ratios = [b / a for a, b in zip(steps, steps[1:], strict=False)]
    median = sorted(ratios)[len(ratios) // 2] if ratios else 0.0
    checks.append(judge("inflight_longterm step grows per round in UP", median >= ctx.tol["growth_ratio_min"],
                        f"median ratio {median:.2f} over {len(ratios)}", f">= {ctx.tol['growth_ratio_min']}"))
    return checks


def check_a16(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    step = _step_time(ctx)
    new_link = ctx.payload(step, records[0]["mss"])
    bound = ctx.tol["adapted_rel"] * new_link
    after = [r for r in records if r["t_s"] >= step]
    adapted = next((r for r in after if r["max_bw_bps"] <= bound), None)
    pacing = next((r for r in after if r["pacing_rate_bps"] <= ctx.tol["adapted_rel"] * ctx.rate_mbit(step) * 1e6),
                  None)
    checks = [Check("pacing rate down to adapted_rel x the new rate", INFO,
                    f"{pacing['t_s'] - step:.1f} s after the step" if pacing else "never", "")]
    if adapted is None:  # named as the window's check, which it fails: max_bw never fell within any window
        return [*checks, judge("max_bw window: adapts down", False,
                               f"never (lowest {mbit(min(r['max_bw_bps'] for r in after))})", f"<= {mbit(bound)}")]
    checks.append(Check("max_bw adapted", INFO, f"{adapted['t_s'] - step:.1f} s after the step", ""))
    if ctx.gain_cycle:
        rounds = adapted["round"] - after[0]["round"]
        checks.append(judge("max_bw window: rounds", rounds <= ctx.tol["max_rounds_v1"], str(rounds),
                            f"<= {ctx.tol['max_rounds_v1']:.0f}"))
        return checks
    cycles = sum(1 for p, a, _ in runs(records) if p == "UP" and step <= records[a]["t_s"] <= adapted["t_s"])
    checks.append(judge("max_bw window: PROBE_BW cycles (probes) before it adapts", cycles <= ctx.tol["max_cycles"],
                        str(cycles), f"<= {ctx.tol['max_cycles']:.0f}"))
    key = key_of(records, "bw_shortterm_bps")
    if key is None:
        return [*checks, blocked("bw_shortterm adapts down", "bw_shortterm")]
    window = [r for r in after if r["t_s"] - step <= ctx.tol["shortterm_within_s"]]
    if window[-1]["lost"] == after[0]["lost"]:
        return [*checks, unforced("loss after the step (what bw_shortterm adapts on)", "none",
                                  f"within {ctx.tol['shortterm_within_s']} s")]
    short = next((r for r in after if r[key] is not None and r[key] <= bound), None)
    checks.append(judge("bw_shortterm adapts down", short is not None and short["t_s"] - step
                        <= ctx.tol["shortterm_within_s"],
                        f"{short['t_s'] - step:.2f} s" if short else "never", f"<= {ctx.tol['shortterm_within_s']} s"))
    return checks


def check_a17(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    policer = ctx.case.path["bottleneck"]["policer"]["rate_mbit"]
    token = payload_bps(policer, records[0]["mss"])
    rate, window = _delivered_rate(records, ctx.tol["settle_after_s"])
    if len(window) < 2:
        return [judge("records after settling", False, "none", ">= 2")]
    lost = window[-1]["lost"] - window[0]["lost"]
    delivered = max(window[-1]["delivered"] - window[0]["delivered"], 1)
    checks = [judge("rate near the token rate", ctx.tol["rate_low_rel"] * token <= rate <= ctx.tol["rate_high_rel"]
                    * token, mbit(rate), f"{ctx.tol['rate_low_rel']:.0%}..{ctx.tol['rate_high_rel']:.0%} of "
                    f"{mbit(token)}"),
              judge("no continuous loss", lost / delivered <= ctx.tol["loss_max"], f"{lost / delivered:.1%}",
                    f"<= {ctx.tol['loss_max']:.0%}")]
    if ctx.gain_cycle:
        return checks
    for name in ("bw_shortterm_bps", "inflight_shortterm"):
        key = key_of(records, name)
        checks.append(blocked(f"{name} adapted", name) if key is None else
                      judge(f"{name} adapted on loss", any(r[key] is not None for r in records),
                            f"set in {sum(r[key] is not None for r in records)} records", "set"))
    return checks


def check_undo(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    """A.18, A.19: at the undo, the state saved upon loss is the state before the recovery, and the
    records after it carry it again."""
    # (saved copy, the state it saves): BBRSaveStateUponLoss(); BBR.state has no saved key of its own:
    # the phase before the recovery stands in for it.
    pairs = [("undo_bw_shortterm_bps", "bw_shortterm_bps"), ("undo_inflight_shortterm", "inflight_shortterm"),
             ("undo_inflight_longterm", "inflight_longterm")]
    keys = {name: key_of(records, name) for pair in pairs for name in pair}
    missing = [name for name, key in keys.items() if key is None]
    if missing:
        return [blocked("state saved upon loss and restored", missing[0])]
    k: dict[str, str] = {name: key for name, key in keys.items() if key is not None}
    undo = next((i for i, r in enumerate(records) if r["event"] == "undo"), None)
    if undo is None or undo + 1 >= len(records):
        return [judge("a spurious recovery undone", False, "no undo record", "one")]
    start = next((i for i in range(undo - 1, -1, -1) if records[i]["ca_state"] == "open"), None)
    if start is None:
        return [judge("a record before the recovery", False, "none", "one")]
    before, at, after = records[start], records[undo], records[undo + 1]
    # The recovery must have moved what the undo restores, else a restore that does nothing passes; the
    # undo's own record counts (what it left unrestored), as an RTO behind an ACK blackout leaves no other.
    during = records[start + 1:undo + 1]
    moved = sorted({s for r in during for _, s in pairs if r[k[s]] != before[k[s]]}
                   | ({"state"} if any(phase(r) != phase(before) for r in during) else set()))
    if not moved:
        return [unforced("the recovery changes the state the undo restores", "nothing changed",
                         "bw_shortterm, inflight_shortterm, inflight_longterm or the state")]
    checks = [Check("changed by the recovery", INFO, ",".join(moved), "")]
    checks += [judge(f"{u} saved", at[k[u]] == before[k[s]], str(at[k[u]]), str(before[k[s]])) for u, s in pairs]
    # HandleSpuriousLossDetection(): each bound at least its saved value (unset is infinite), as the undo's
    # record shows it, written right after the undo ran.
    checks += [judge(f"{s} restored", at_least(at[k[s]], at[k[u]]), str(at[k[s]]), f">= {at[k[u]]}")
               for u, s in pairs]
    # A loss that ended STARTUP or UP returns to STARTUP, or to REFILL to probe again (or PROBE_RTT stays).
    want = {"STARTUP": ("STARTUP", "PROBE_RTT"), "UP": ("REFILL", "UP", "PROBE_RTT")}.get(phase(before))
    if want is None:
        return [*checks, Check("state resumes", INFO, phase(after), f"no restore from {phase(before)}")]
    return [*checks, judge("state resumes", phase(after) in want, phase(after), " or ".join(want))]


def at_least(value: float | None, saved: float | None) -> bool:
    """value >= saved, None being an unset bound: infinite."""
    return value is None or saved is not None and value >= saved


def check_a20(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    rs = runs(records)
    in_startup = [b for i, (p, _, b) in enumerate(rs) if p == "PROBE_RTT" and i > 0 and rs[i - 1][0] == "STARTUP"]
    # A PROBE_RTT the run's end cut short has no exit to judge: only those that ended count.
    ended = [b for b in in_startup if b < len(records)]
    if not ended:
        return [unforced("a PROBE_RTT during STARTUP that ends within the run", f"{len(in_startup)} cut short by "
                         "the end" if in_startup else "none", "one")]
    nexts = [records[b]["mode"] for b in ended]
    return [Check("PROBE_RTT during STARTUP", INFO, f"{len(ended)} ended, {len(in_startup) - len(ended)} cut short "
                  "by the run's end", ">= 1 ended"),
            judge("back to STARTUP", all(n == "STARTUP" for n in nexts), ",".join(nexts), "STARTUP")]


def check_a21(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    key = key_of(records, "inflight_longterm")
    if key is None:
        return [blocked("inflight_longterm cut on loss in UP", "inflight_longterm")]
    # IsInflightTooHigh() judges each ACK, which per-round loss_rate does not show (A.6): an UP that starts
    # with inflight_longterm set and loses more than LossThresh of its packets is the case's.
    # An UP the run's end cut short before its exit was due is not judged.
    lossy = [(a, b, over) for a, b, over in lossy_ups(records, ctx.tol["loss_thresh"]) if records[a][key] is not None
             and not (b is None and cut_short(records, over, ctx.tol["exit_rounds"]))]
    if not lossy:
        return [unforced(f"an UP with inflight_longterm set and a round losing more than "
                         f"{ctx.tol['loss_thresh']:.0%}", "none", ">= 1")]
    bad_next, slow, not_cut, too_low = [], [], [], []
    for _, b, over in lossy:
        if b is None:
            bad_next.append("UP to the end")
            continue
        if phase(records[b]) not in ("DOWN", "CRUISE"):
            bad_next.append(phase(records[b]))
        if records[b]["round"] - records[over]["round"] > ctx.tol["exit_rounds"]:
            slow.append(records[b]["round"] - records[over]["round"])
        # HandleInflightTooHigh() sets max(RS.tx_in_flight, Beta x target): below what UP had raised it to
        # (UP keeps it above the flight), and no lower than Beta x BBRInflight(1.0).
        before, after = records[b - 1][key], records[b][key]
        if after is None or after >= before:
            not_cut.append(f"{before} -> {after}")
        elif after < ctx.tol["beta"] * bdp_packets(records[b]) * (1 - ctx.tol["bdp_rel"]):
            too_low.append(after)
    n = len(lossy)
    return [judge("lossy UP -> DOWN at once", not bad_next, f"{n - len(bad_next)}/{n}" + "".join(
                  f", {x}" for x in bad_next), f"{n}/{n} (CRUISE: DOWN shorter than a round)"),
            judge(f"rounds from the loss above {ctx.tol['loss_thresh']:.0%} to the exit", not slow,
                  str(slow or "all within"), f"<= {ctx.tol['exit_rounds']:.0f}"),
            judge("inflight_longterm cut at the exit", not not_cut, ", ".join(not_cut) or f"{n}/{n}",
                  "below UP's last value"),
            judge("cut no lower than beta x BBRInflight(1.0)", not too_low, str(too_low or f"{n}/{n}"),
                  f">= {ctx.tol['beta']} x BDP less {ctx.tol['bdp_rel']:.0%}")]


def check_a22(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    app = key_of(records, "is_app_limited")
    if app is None:
        return [blocked("app-limited REFILL keeps max_bw", "is_app_limited")]
    # REFILL lasts a round: its samples come with the ACKs that end it, so the record after it counts.
    refills = [(a, b) for p, a, b in runs(records) if p == "REFILL" and a > 0 and b < len(records)
               and any(r[app] for r in records[a:b + 1])]
    if not refills:
        return [unforced("an app-limited REFILL", "none", ">= 1")]
    a, b = refills[0]
    before = records[a - 1]
    if "max_bw_this_cycle_bps" not in before:
        return [blocked("app-limited samples kept out of the max_bw filter", "max_bw_this_cycle_bps")]
    app_bps = ctx.case.trigger["app_limit_mbit"] * 1e6
    # A max filter hides samples below this cycle's slot: only samples above it, below max_bw, show the step.
    if not before["max_bw_this_cycle_bps"] < app_bps < before["max_bw_bps"]:
        return [unforced("the app's rate between this cycle's max_bw slot and max_bw",
                         mbit(app_bps), f"in ({mbit(before['max_bw_this_cycle_bps'])}, {mbit(before['max_bw_bps'])})")]
    app_end_s = records[a]["t_s"] + ctx.case.trigger["for_s"]
    slot_bps = max(r["max_bw_this_cycle_bps"] for r in records[a:] if r["t_s"] < app_end_s)
    return [judge("app-limited samples kept out of the max_bw filter", slot_bps < app_bps,
                  mbit(slot_bps), f"this cycle's slot < the app's {mbit(app_bps)}"),
            judge("max_bw not lowered", records[b]["max_bw_bps"] >= before["max_bw_bps"],
                  mbit(records[b]["max_bw_bps"]), f">= {mbit(before['max_bw_bps'])}"),
            judge("REFILL -> UP", phase(records[b]) == "UP", phase(records[b]), "UP")]
