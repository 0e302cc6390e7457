"""bbrbench conformance: the BBR draft's example test cases (draft-ietf-ccwg-bbr-06, Appendix A, A.1-A.22),
run on bbr3, bbr2 and bbr1 and checked against each algorithm's own state.

The cases are data (scenarios/conformance/cases.toml: path, sender schedule, runner, tolerances); the
checks are the check_* functions below, one per case, each reading the records of one flow: `bbrctl trace`
records of a real transfer through the testbed (runner "real"), or the JSON lines of the deterministic
host simulator build/bbrkit-twin (runner "twin"), which print the same keys. Each check gives a Check:
pass / fail / blocked (the records lack a key it reads, or the twin is missing) / info (a number shown,
not judged); a case's verdict is fail if any check failed, else blocked if any was blocked, else pass;
"not applicable" comes from the case data, with its reason.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HarnessError, UsageError
from ..scenario import DEFAULT_MTU, ETH_HEADER_BYTES, frames_in

log = logging.getLogger(__name__)

CASES_FILE = Path(__file__).resolve().parent.parent / "scenarios" / "conformance" / "cases.toml"
DRAFT = "draft-ietf-ccwg-bbr-06"
ALGOS = ("bbr3", "bbr2", "bbr1")
RUNNERS = ("real", "twin")
TWIN_BINARY = "bbrkit-twin"
CASE_KEYS = {"id", "title", "statement", "algos", "not_applicable", "runner", "duration_s", "path", "sender",
             "rate_steps", "twin", "trigger", "tolerances", "note"}
TWIN_KEYS = {"rate", "rtt", "buffer", "ack_aggregation", "app_limit", "pause", "loss", "seed"}
# A trigger's phase and nth (which start of it, from 1), and one action.
TRIGGER_ACTIONS = {"rate_rel", "pause_s", "spurious", "app_limit_mbit"}
# lead_s: apply it that long before the phase starts (a rate cut reaches only packets sent after it, so a
# queue built before the phase would otherwise still drain at the old rate).
TRIGGER_KEYS = {"phase", "nth", "loss_pct", "for_s", "lead_s"} | TRIGGER_ACTIONS
SPURIOUS_KINDS = {"rto", "fast_recovery"}
SPURIOUS_DELAY_S = 0.005  # a spurious loss this long after the phase starts: inside its first round
# A spurious RTO's ACK blackout: longer than the twin's RTO (200 ms + srtt, srtt at most ~60 ms on a 2-BDP
# 20 ms path) so one fires, shorter than two of them so only one does.
RTO_BLACKOUT_S = 0.35
REQUIRED_KEYS = ("id", "title", "statement", "algos", "runner", "duration_s", "tolerances")
# Frame bytes a full-sized segment's payload does not count: TCP (with timestamps) 32, IP 20, Ethernet 14.
HEADER_BYTES = 66
RESULTS_FORMAT = "bbrbench-conformance/1"
RATE_TRACE = "rate.trace"  # a case's rate_steps as the Mahimahi trace its real run plays
TWIN_TIMEOUT_S = 120.0  # the twin simulates; a case of at most 25 s takes seconds

PASS, FAIL, BLOCKED, INFO, NOT_APPLICABLE = "pass", "fail", "blocked", "info", "not applicable"

# The draft's names for the state the cases read, and the record keys that carry each (bbrctl trace's
# earlier names first seen in the record table, docs/reference.md).
ALIASES: dict[str, tuple[str, ...]] = {
    "inflight_longterm": ("inflight_longterm", "inflight_hi"),
    "inflight_shortterm": ("inflight_shortterm", "inflight_lo"),
    "bw_shortterm_bps": ("bw_shortterm_bps", "bw_shortterm", "bw_lo_bps"),
}


class CaseError(UsageError):
    """A case file or a case selection that cannot be used; one line naming the case and key."""


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    statement: str
    algos: tuple[str, ...]
    not_applicable: dict[str, str]
    runner: str
    duration_s: float
    tolerances: dict[str, float]
    path: dict[str, Any] = field(default_factory=dict)
    sender: tuple[tuple[float, float | None], ...] = ()
    rate_steps: tuple[tuple[float, float], ...] = ()
    twin: dict[str, str] = field(default_factory=dict)
    trigger: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def number(self) -> int:
        return int(self.id.split(".")[1])


@dataclass
class Check:
    name: str
    status: str
    measured: str = ""
    expected: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "measured": self.measured, "expected": self.expected}


# ---- case data -------------------------------------------------------------------------------------

def load_cases(path: Path = CASES_FILE) -> list[Case]:
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CaseError(f"{path}: {exc}") from exc
    cases = [parse_case(raw) for raw in doc.get("case", [])]
    ids = [c.id for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise CaseError(f"{path}: case {sorted(dup)[0]} given twice")
    return sorted(cases, key=lambda c: c.number)


def parse_case(raw: dict[str, Any]) -> Case:
    cid = raw.get("id", "?")
    where = f"case {cid}"
    unknown = set(raw) - CASE_KEYS
    if unknown:
        raise CaseError(f"{where}: unknown key {sorted(unknown)[0]}")
    for key in REQUIRED_KEYS:
        if key not in raw:
            raise CaseError(f"{where}: {key} missing")
    if not isinstance(cid, str) or not cid.startswith("A.") or not cid[2:].isdigit():
        raise CaseError(f"{where}: id must be A.<n>")
    algos = tuple(raw["algos"])
    if not algos or any(a not in ALGOS for a in algos):
        raise CaseError(f"{where}: algos must be some of {', '.join(ALGOS)}")
    not_applicable = dict(raw.get("not_applicable", {}))
    missing_reason = [a for a in ALGOS if a not in algos and not not_applicable.get(a)]
    if missing_reason:
        raise CaseError(f"{where}: not_applicable needs a reason for {missing_reason[0]}")
    if set(not_applicable) & set(algos):
        raise CaseError(f"{where}: {sorted(set(not_applicable) & set(algos))[0]} both applies and does not")
    runner = raw["runner"]
    if runner not in RUNNERS:
        raise CaseError(f"{where}: runner must be real or twin")
    if runner == "real" and not raw.get("path"):
        raise CaseError(f"{where}: a real case needs path")
    if runner == "twin" and not raw.get("twin"):
        raise CaseError(f"{where}: a twin case needs twin")
    twin, trigger = raw.get("twin", {}), raw.get("trigger", {})
    if set(twin) - TWIN_KEYS or not all(isinstance(v, str) for v in twin.values()):
        raise CaseError(f"{where}: twin takes bbrkit-twin's options as strings: {', '.join(sorted(TWIN_KEYS))}")
    if twin and ("rate" not in twin or _bits(twin["rate"]) is None):
        raise CaseError(f"{where}: twin needs rate (e.g. \"50mbit\")")
    if trigger and (set(trigger) - TRIGGER_KEYS or "phase" not in trigger
                    or len(set(trigger) & TRIGGER_ACTIONS) != 1):
        raise CaseError(f"{where}: trigger is a phase, its nth start and one of {', '.join(sorted(TRIGGER_ACTIONS))}")
    if "spurious" in trigger and trigger["spurious"] not in SPURIOUS_KINDS:
        raise CaseError(f"{where}: trigger spurious is one of {', '.join(sorted(SPURIOUS_KINDS))}")
    duration = raw["duration_s"]
    if not isinstance(duration, int | float) or duration <= 0:
        raise CaseError(f"{where}: duration_s must be > 0")
    tolerances = raw["tolerances"]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in tolerances.values()):
        raise CaseError(f"{where}: tolerances must be numbers")
    sender = tuple(_segment(where, s) for s in raw.get("sender", []))
    if sender and abs(sum(s for s, _ in sender) - duration) > 1e-9:
        raise CaseError(f"{where}: sender segments must add up to duration_s")
    steps = tuple((float(a), float(b)) for a, b in raw.get("rate_steps", []))
    if steps and (steps[0][0] != 0 or any(b <= 0 for _, b in steps)
                  or any(x[0] >= y[0] for x, y in zip(steps, steps[1:], strict=False))):
        raise CaseError(f"{where}: rate_steps must start at 0 s, rise in time and have rates > 0")
    case = Case(id=cid, title=raw["title"], statement=raw["statement"], algos=algos, not_applicable=not_applicable,
                runner=runner, duration_s=float(duration), tolerances=dict(tolerances), path=raw.get("path", {}),
                sender=sender, rate_steps=steps, twin=twin, trigger=trigger, note=raw.get("note", ""))
    if case.id not in CHECKERS:
        raise CaseError(f"{where}: no checker")
    needed = CHECKERS[case.id][1]
    absent = [t for t in needed if t not in tolerances]
    if absent:
        raise CaseError(f"{where}: tolerances lack {absent[0]}")
    return case


RATE_UNITS = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3, "bit": 1.0}


def _bits(rate: str) -> float | None:
    """bit/s of a twin rate such as "50mbit", or None."""
    for unit, scale in RATE_UNITS.items():
        if rate.endswith(unit):
            try:
                return float(rate[: -len(unit)]) * scale
            except ValueError:
                return None
    return None


def _segment(where: str, seg: dict[str, Any]) -> tuple[float, float | None]:
    if set(seg) - {"s", "mbit"} or "s" not in seg or seg["s"] <= 0:
        raise CaseError(f"{where}: a sender segment is {{s = seconds > 0, mbit = rate}}")
    mbit = seg.get("mbit")
    if mbit is not None and mbit < 0:
        raise CaseError(f"{where}: a sender segment's mbit must be >= 0")
    return float(seg["s"]), None if mbit is None else float(mbit)


def select(cases: list[Case], ids: Iterable[str]) -> list[Case]:
    wanted = list(ids)
    known = {c.id for c in cases}
    for i in wanted:
        if i not in known:
            raise CaseError(f"unknown case {i} (cases: A.1-A.{max(c.number for c in cases)})")
    return [c for c in cases if not wanted or c.id in wanted]


# ---- record helpers ----------------------------------------------------------------------------------

def key_of(records: list[dict[str, Any]], name: str) -> str | None:
    """The record key that carries the draft's `name` in these records, or None."""
    keys = set().union(*(r.keys() for r in records)) if records else set()
    return next((k for k in ALIASES.get(name, (name,)) if k in keys), None)


def phase(r: dict[str, Any]) -> str:
    """PROBE_BW's sub-phase where the record has one, else the mode."""
    return r.get("bw_phase") or r["mode"] if r["mode"] == "PROBE_BW" else r["mode"]


def runs(records: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """(phase, index of its first record, index of the first record after it) per run of equal phase."""
    out: list[tuple[str, int, int]] = []
    for i, r in enumerate(records):
        p = phase(r)
        if out and out[-1][0] == p:
            out[-1] = (p, out[-1][1], i + 1)
        else:
            out.append((p, i, i + 1))
    return out


def bdp_packets(r: dict[str, Any], bw_key: str = "bw_bps") -> float:
    """BBR.bw x BBR.min_rtt in packets (the draft's BDPMultiple(1)); bw_key max_bw_bps for
    Inflight(BBR.max_bw, 1.0), as IsTimeToCruise() takes it."""
    return r[bw_key] * r["min_rtt_us"] / 1e6 / 8 / r["mss"]


def payload_bps(rate_mbit: float, mss: int) -> float:
    return rate_mbit * 1e6 * mss / (mss + HEADER_BYTES)


def blocked(name: str, key: str) -> Check:
    return Check(name, BLOCKED, "", f"record lacks {key}")


def verdict(checks: list[Check]) -> str:
    statuses = {c.status for c in checks}
    return FAIL if FAIL in statuses else BLOCKED if BLOCKED in statuses else PASS


def judge(name: str, ok: bool, measured: str, expected: str) -> Check:
    return Check(name, PASS if ok else FAIL, measured, expected)


def _f(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def _mbit(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mbit/s"


@dataclass
class Ctx:
    """What a check knows besides the records: the case, the algorithm and the path's rate over time."""

    case: Case
    algo: str
    tol: dict[str, float]
    runner: str = "real"

    def payload(self, t_s: float, mss: int) -> float:
        """The bottleneck's payload rate at t_s, bit/s: the testbed's rate counts frames, the twin's
        counts payload (its packets are MSS-sized)."""
        mbit = self.rate_mbit(t_s)
        return mbit * 1e6 if self.runner == "twin" else payload_bps(mbit, mss)

    def rate_mbit(self, t_s: float) -> float:
        if self.case.rate_steps:
            return [m for at, m in self.case.rate_steps if at <= t_s][-1]
        if self.case.runner == "twin":
            return (_bits(self.case.twin["rate"]) or 0) / 1e6
        return float(self.case.path["bottleneck"]["rate_mbit"])


# ---- the checks, one per case ---------------------------------------------------------------------------

def unforced(name: str, measured: str, expected: str) -> Check:
    """The path did not bring about the condition the draft's step needs: not a verdict on the algorithm."""
    return Check(f"precondition: {name}", BLOCKED, measured, f"{expected} (the path did not force it)")


def _first_exit(records: list[dict[str, Any]], mode: str) -> int | None:
    """Index of the first record after the first run of `mode`, not counting PROBE_RTT interruptions."""
    seen = False
    for i, r in enumerate(records):
        if r["mode"] == mode:
            seen = True
        elif seen and r["mode"] != "PROBE_RTT":
            return i
    return None


def _flag(records: list[dict[str, Any]], i: int, name: str, want: bool = True) -> Check:
    key = key_of(records, name)
    if key is None:
        return blocked(f"{name} at the record", name)
    return judge(f"{name} = {want} at t={records[i]['t_s']:.2f} s", bool(records[i][key]) == want,
                 str(records[i][key]), str(want))


def check_a1(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    i = _first_exit(records, "STARTUP")
    if i is None:
        return [judge("STARTUP ends", False, "never", "DRAIN")]
    exit_rec = records[i]
    checks = [judge("STARTUP -> DRAIN", exit_rec["mode"] == "DRAIN", exit_rec["mode"], "DRAIN"),
              judge("no loss before the exit (a plateau exit)", exit_rec["lost"] == records[0]["lost"],
                    f"{exit_rec['lost'] - records[0]['lost']} lost", "0")]
    link = ctx.payload(exit_rec["t_s"], exit_rec["mss"])
    rel = exit_rec["max_bw_bps"] / link - 1
    checks.append(judge("max_bw within bw_rel of the bottleneck", abs(rel) <= ctx.tol["bw_rel"],
                        f"{_mbit(exit_rec['max_bw_bps'])} ({rel:+.1%})", f"{_mbit(link)} +- {ctx.tol['bw_rel']:.0%}"))
    # full_bw as it stood 3 rounds before the exit: the rounds since grew less than plateau_growth over it.
    before = [r for r in records[:i] if r["mode"] == "STARTUP" and r["round"] <= exit_rec["round"] - 3]
    if before:
        growth = exit_rec["max_bw_bps"] / max(before[-1]["max_bw_bps"], 1) - 1
        checks.append(judge("growth over the last 3 rounds", growth < ctx.tol["plateau_growth"], f"{growth:.1%}",
                            f"< {ctx.tol['plateau_growth']:.0%}"))
    checks.append(_flag(records, i, "full_bw_reached"))
    if ctx.algo == "bbr3":
        checks.append(_flag(records, i, "full_bw_now"))
    return checks


def check_a2(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    i = _first_exit(records, "STARTUP")
    if i is None:
        return [judge("STARTUP ends on loss", False, "never", f"within {ctx.tol['exit_within_s']} s")]
    exit_rec = records[i]
    took = exit_rec["t_s"] - records[0]["t_s"]
    loss = max((r.get("loss_rate") or 0.0) for r in records[:i + 1])
    checks = [judge("STARTUP -> DRAIN", exit_rec["mode"] == "DRAIN", exit_rec["mode"], "DRAIN"),
              judge("STARTUP ends", took <= ctx.tol["exit_within_s"], f"{took:.2f} s",
                    f"<= {ctx.tol['exit_within_s']} s"),
              judge("loss rate seen in STARTUP", loss > ctx.tol["loss_thresh"], f"{loss:.1%}",
                    f"> {ctx.tol['loss_thresh']:.0%}")]
    app = key_of(records, "is_app_limited")
    checks.append(blocked("STARTUP's samples app-limited", "is_app_limited") if app is None else
                  judge("STARTUP's samples app-limited", any(r[app] for r in records[:i]),
                        f"{sum(bool(r[app]) for r in records[:i])}/{i} records", "some"))
    checks.append(_flag(records, i, "full_bw_reached"))
    if ctx.algo == "bbr3":
        checks.append(_flag(records, i, "full_bw_now"))
    return checks


def check_a3(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    drain = [r for r in records if r["mode"] == "DRAIN"]
    i = _first_exit(records, "DRAIN")
    if not drain or i is None:
        return [judge("DRAIN entered and left", False, "no DRAIN" if not drain else "never left", "both")]
    gain = max(r["pacing_gain"] for r in drain)
    exit_rec = records[i]
    bdp = bdp_packets(exit_rec)
    bound = bdp * (1 + ctx.tol["inflight_rel"]) + ctx.tol["inflight_slack_packets"]
    return [judge("DRAIN pacing gain", gain <= ctx.tol["drain_gain_max"] + 1e-3, _f(gain, 3),
                  f"<= {ctx.tol['drain_gain_max']}"),
            judge("DRAIN -> PROBE_BW", exit_rec["mode"] == "PROBE_BW", exit_rec["mode"], "PROBE_BW"),
            judge("inflight at the exit <= BBRInflight(1.0)", exit_rec["inflight"] <= bound,
                  f"{exit_rec['inflight']} pkts", f"<= {bdp:.0f} (+slack: {bound:.0f})")]


def check_a4(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    key = key_of(records, "drain_start_round")
    if key is None:
        return [blocked("DRAIN ends 3 rounds after drain_start_round", "drain_start_round")]
    drain = [r for r in records if r["mode"] == "DRAIN"]
    if not drain:
        return [judge("DRAIN entered", False, "never", "DRAIN")]
    i = _first_exit(records, "DRAIN")
    # A DRAIN never left is judged at its last record: inflight still above target there is the case's
    # condition, and the rounds it has lasted are past the time exit.
    exit_rec, last = (records[i], records[i - 1]) if i is not None else (drain[-1], drain[-1])
    bound = bdp_packets(exit_rec) * (1 + ctx.tol["inflight_rel"]) + ctx.tol["inflight_slack_packets"]
    if exit_rec["inflight"] <= bound:
        return [unforced("inflight above BBRInflight(1.0) when DRAIN ends", f"{exit_rec['inflight']} pkts",
                         f"> {bound:.0f} (BDP and slack)")]
    rounds = exit_rec["round"] - last[key]
    limit = ctx.tol["drain_rounds"] + ctx.tol["round_slack"]
    left = i is not None
    mode, rounds_seen = (exit_rec["mode"], str(rounds)) if left else ("DRAIN to the end", f"{rounds}, never left")
    return [judge("DRAIN -> PROBE_BW", mode == "PROBE_BW", mode, "PROBE_BW"),
            judge("rounds in DRAIN", left and ctx.tol["drain_rounds"] <= rounds <= limit, rounds_seen,
                  f"{ctx.tol['drain_rounds']:.0f}..{limit:.0f}")]


def _ups(records: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(first UP record, first record after it) of each completed UP run."""
    return [(a, b) for p, a, b in runs(records) if p == "UP" and b < len(records)]


def check_a5(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    lossless = [(a, b) for a, b in _ups(records) if records[b]["lost"] == records[a]["lost"]]
    if not lossless:
        return [unforced("a loss-free UP", f"{len(_ups(records))} UPs, all lossy", ">= 1 without loss")]
    a, b = lossless[0]
    after = phase(records[b])
    rounds = records[b]["round"] - records[a]["round"]
    checks = [judge("loss-free UP -> DOWN", after in ("DOWN", "CRUISE"), after,
                    "DOWN (CRUISE: DOWN shorter than a round, between records)"),
              judge("rounds in UP", rounds >= ctx.tol["min_up_rounds"], str(rounds),
                    f">= {ctx.tol['min_up_rounds']:.0f} (3 rounds of plateau)")]
    if ctx.algo == "bbr3":
        # Set by the ACK that ends UP: the exit record shows it, the last UP record may not yet.
        flags = [_flag(records, i, "full_bw_now") for i in (b - 1, b)]
        checks.append(next((f for f in flags if f.status == PASS), flags[-1]))
    return checks


def check_a6(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    app = key_of(records, "is_app_limited")
    longterm = key_of(records, "inflight_longterm")
    if app is None or longterm is None:
        return [blocked("app-limited UP ended by loss", "is_app_limited" if app is None else "inflight_longterm")]
    # IsInflightTooHigh() judges each ACK (RS.lost against RS.tx_in_flight), which per-round records do not
    # show: an UP whose samples were app-limited and which ended with new losses is the case's.
    lossy = [(a, b) for a, b in _ups(records)
             if any(r[app] for r in records[a:b + 1]) and records[b]["lost"] > records[a]["lost"]]
    if not lossy:
        return [unforced("an app-limited UP ended by loss", "none", ">= 1")]
    a, b = lossy[0]
    rounds = records[b]["round"] - records[a]["round"]
    # HandleInflightTooHigh(): inflight_longterm from a sample that is not app-limited only.
    changed = records[b][longterm] != records[a][longterm]
    want_change = not records[b][app]
    return [judge("UP -> DOWN", phase(records[b]) in ("DOWN", "CRUISE"), phase(records[b]),
                  "DOWN (CRUISE: DOWN over within the ACK)"),
            judge("rounds from UP to the exit", rounds <= ctx.tol["exit_rounds"], str(rounds),
                  f"<= {ctx.tol['exit_rounds']:.0f}"),
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
        checks.append(judge("DOWN pacing gain", ok, ",".join(_f(g, 3) for g in gains),
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
        worst = max(worst, r["inflight"] / (bound * (1 + ctx.tol["inflight_rel"]) + ctx.tol["inflight_slack_packets"]))
    checks.append(judge("inflight at DOWN -> CRUISE within both targets", worst <= 1.0,
                        f"{worst:.2f} of the bound (worst of {len(exits)})", "<= 1.00"))
    return checks


def check_a9(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    nth = ctx.case.trigger.get("nth", 1)
    downs = [(a, b) for p, a, b in runs(records) if p == "DOWN" and b < len(records)]
    if len(downs) < nth:
        return [judge(f"DOWN entered and left {nth} time(s)", False, str(len(downs)), str(nth))]
    a, b = downs[nth - 1]  # the DOWN the trigger cut the rate in
    exit_rec = records[b]
    longterm = key_of(records, "inflight_longterm")
    target = bdp_packets(exit_rec, "max_bw_bps")
    if longterm and exit_rec[longterm] is not None:
        target = min(target, (1 - ctx.tol["headroom"]) * exit_rec[longterm])
    bound = target * (1 + ctx.tol["inflight_rel"]) + ctx.tol["inflight_slack_packets"]
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
    gain_ok = all(abs(g - ctx.tol["cwnd_gain"]) <= ctx.tol["gain_abs"] for g in gains)
    # v3 keeps the 0.5 in bbr_probe_rtt_cwnd_gain and sets cwnd_gain to 1 there: the cwnd shows it.
    held = [r for a, b in periods for r in records[a:b] if r["event"] == "round"]
    max_cwnd_bdp = max((r["cwnd"] - ctx.tol["cwnd_slack_packets"]) / bdp_packets(r) for r in held) if held else math.inf
    cwnd_ok = max_cwnd_bdp <= ctx.tol["cwnd_gain"]
    rtt_s = records[periods[0][0]]["min_rtt_us"] / 1e6
    floor = max(ctx.tol["min_duration_s"], rtt_s)
    return [judge("PROBE_RTT only after the interval", min(waits) >= min_wait, f"{min(waits):.2f} s",
                  f">= {min_wait:.2f} s"),
            judge("cwnd_gain 0.5 in PROBE_RTT (or cwnd at 0.5 BDP)", gain_ok or cwnd_ok,
                  f"cwnd_gain {','.join(_f(g, 3) for g in sorted(gains))}, cwnd {max_cwnd_bdp:.2f} BDP",
                  f"{ctx.tol['cwnd_gain']} (cwnd <= {ctx.tol['cwnd_gain']} BDP + {ctx.tol['cwnd_slack_packets']:.0f})"),
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


def check_a12(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    i = _first_exit(records, "STARTUP")
    if i is None:
        return [judge("STARTUP ends", False, "never", "with the link's rate")]
    startup = [r for r in records[:i] if r["mode"] == "STARTUP"]
    exit_rec = records[i]
    cwnd_bdp = max(r["cwnd"] for r in startup[-3:]) / bdp_packets(exit_rec)
    link = ctx.payload(exit_rec["t_s"], exit_rec["mss"])
    extra = key_of(records, "extra_acked")
    return [judge("cwnd > 2 BDP late in STARTUP", cwnd_bdp > ctx.tol["cwnd_bdp_min"], f"{cwnd_bdp:.2f} BDP",
                  f"> {ctx.tol['cwnd_bdp_min']}"),
            judge("STARTUP finds the bottleneck rate", exit_rec["max_bw_bps"] >= ctx.tol["bw_found_rel"] * link,
                  _mbit(exit_rec["max_bw_bps"]), f">= {ctx.tol['bw_found_rel']:.0%} of {_mbit(link)}"),
            blocked("extra_acked measured", "extra_acked") if extra is None else
            judge("extra_acked measured", max(r[extra] or 0 for r in startup) > 0,
                  f"max {max(r[extra] or 0 for r in startup)} pkts", "> 0")]


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
    checks = [judge("link used in PROBE_BW", rate >= ctx.tol["utilisation_min"] * link, _mbit(rate),
                    f">= {ctx.tol['utilisation_min']:.0%} of {_mbit(link)}")]
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
        return [judge("max_bw reaches the new rate", False, _mbit(max(records[i]["max_bw_bps"] for i in after)),
                      f">= {ctx.tol['found_rel']:.0%} of {_mbit(link)}")]
    took = records[found]["t_s"] - step
    bdp = link * records[found]["min_rtt_us"] / 1e6 / 8 / records[0]["mss"]
    limit = ctx.tol["log_rounds_factor"] * math.log2(bdp)
    probe = next((i for i in after if phase(records[i]) in ("UP", "REFILL")), after[0])
    start = after[0] if ctx.algo == "bbr1" else probe
    rounds = records[found]["round"] - records[start]["round"]
    checks = [judge("max_bw reaches the new rate", took <= ctx.tol["found_within_s"], f"{took:.2f} s after the step",
                    f"<= {ctx.tol['found_within_s']} s"),
              judge("rounds to find it" + ("" if ctx.algo == "bbr1" else " (from the probe)"), rounds <= limit,
                    str(rounds), f"<= {ctx.tol['log_rounds_factor']:.0f} log2(BDP) = {limit:.0f}")]
    if ctx.algo == "bbr1":
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
    if adapted is None:
        return [*checks, judge("max_bw adapts down", False, _mbit(min(r["max_bw_bps"] for r in after)),
                               f"<= {_mbit(bound)}")]
    checks.append(Check("max_bw adapted", INFO, f"{adapted['t_s'] - step:.1f} s after the step", ""))
    if ctx.algo == "bbr1":
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
                    * token, _mbit(rate), f"{ctx.tol['rate_low_rel']:.0%}..{ctx.tol['rate_high_rel']:.0%} of "
                    f"{_mbit(token)}"),
              judge("no continuous loss", lost / delivered <= ctx.tol["loss_max"], f"{lost / delivered:.1%}",
                    f"<= {ctx.tol['loss_max']:.0%}")]
    if ctx.algo == "bbr1":
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
    before = next((r for r in reversed(records[:undo]) if r["ca_state"] == "open"), None)
    if before is None:
        return [judge("a record before the recovery", False, "none", "one")]
    at, after = records[undo], records[undo + 1]
    set_before = [s for _, s in pairs if before[k[s]] is not None]
    checks = [judge("bounds set before the loss (else nothing to restore)", bool(set_before),
                    ",".join(set_before) or "none", ">= 1")]
    checks += [judge(f"{u} saved", at[k[u]] == before[k[s]], str(at[k[u]]), str(before[k[s]])) for u, s in pairs]
    checks += [judge(f"{s} restored", after[k[s]] == at[k[u]], str(after[k[s]]), str(at[k[u]])) for u, s in pairs]
    return [*checks, judge("state resumes", phase(after) == phase(before), phase(after), phase(before))]


def check_a20(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    rs = runs(records)
    in_startup = [(i, b) for i, (p, _, b) in enumerate(rs) if p == "PROBE_RTT" and i > 0 and rs[i - 1][0] == "STARTUP"]
    if not in_startup:
        return [unforced("PROBE_RTT during STARTUP", "none", "one")]
    nexts = [records[b]["mode"] if b < len(records) else "end" for _, b in in_startup]
    return [judge("PROBE_RTT during STARTUP", True, f"{len(in_startup)} time(s)", ">= 1"),
            judge("back to STARTUP", all(n == "STARTUP" for n in nexts), ",".join(nexts), "STARTUP")]


def check_a21(records: list[dict[str, Any]], ctx: Ctx) -> list[Check]:
    key = key_of(records, "inflight_longterm")
    if key is None:
        return [blocked("inflight_longterm cut on loss in UP", "inflight_longterm")]
    # IsInflightTooHigh() judges each ACK, which per-round loss_rate does not show (A.6): an UP that
    # started with inflight_longterm set and ended with new losses is the case's.
    lossy = [(a, b) for a, b in _ups(records)
             if records[a][key] is not None and records[b]["lost"] > records[a]["lost"]]
    if not lossy:
        return [unforced("an UP with inflight_longterm set and loss", "none", ">= 1")]
    bad_next, slow, not_cut, too_low = [], [], [], []
    for a, b in lossy:
        first_loss = next(i for i in range(a, b + 1) if records[i]["lost"] > records[a]["lost"])
        if phase(records[b]) not in ("DOWN", "CRUISE"):
            bad_next.append(phase(records[b]))
        if records[b]["round"] - records[first_loss]["round"] > ctx.tol["exit_rounds"]:
            slow.append(records[b]["round"] - records[first_loss]["round"])
        peak = max(records[i][key] for i in range(a, b) if records[i][key] is not None)
        # HandleInflightTooHigh() sets max(RS.tx_in_flight, Beta x target): the flight at the loss, which UP's
        # per-ACK growth can put a little above the last recorded value.
        if records[b][key] is None or records[b][key] > peak + ctx.tol["growth_slack_packets"]:
            not_cut.append(records[b][key])
        elif records[b][key] < ctx.tol["beta"] * bdp_packets(records[b]) * (1 - ctx.tol["bdp_rel"]):
            too_low.append(records[b][key])
    n = len(lossy)
    return [judge("lossy UP -> DOWN at once", not bad_next, f"{n - len(bad_next)}/{n}",
                  f"{n}/{n} (CRUISE: DOWN shorter than a round)"),
            judge("rounds from the first loss to the exit", not slow, str(slow or "all within"),
                  f"<= {ctx.tol['exit_rounds']:.0f}"),
            judge("inflight_longterm not above the flight at the loss", not not_cut, str(not_cut or f"{n}/{n}"),
                  f"<= UP's peak + {ctx.tol['growth_slack_packets']:.0f}"),
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
    return [judge("max_bw not lowered", records[b]["max_bw_bps"] >= records[a - 1]["max_bw_bps"],
                  _mbit(records[b]["max_bw_bps"]), f">= {_mbit(records[a - 1]['max_bw_bps'])}"),
            judge("REFILL -> UP", phase(records[b]) == "UP", phase(records[b]), "UP")]


# case id -> (check, the tolerances it reads)
CHECKERS: dict[str, tuple[Callable[[list[dict[str, Any]], Ctx], list[Check]], tuple[str, ...]]] = {
    "A.1": (check_a1, ("bw_rel", "plateau_growth")),
    "A.2": (check_a2, ("loss_thresh", "exit_within_s")),
    "A.3": (check_a3, ("drain_gain_max", "inflight_slack_packets", "inflight_rel")),
    "A.4": (check_a4, ("drain_rounds", "round_slack", "inflight_slack_packets", "inflight_rel")),
    "A.5": (check_a5, ("min_up_rounds",)),
    "A.6": (check_a6, ("exit_rounds",)),
    "A.7": (check_a7, ("max_lost_packets",)),
    "A.8": (check_a8, ("down_gain", "gain_abs", "headroom", "inflight_slack_packets", "inflight_rel")),
    "A.9": (check_a9, ("probe_wait_max_s", "time_slack_s", "headroom", "inflight_slack_packets", "inflight_rel")),
    "A.10": (check_a10, ("interval_s", "record_slack_s", "cwnd_gain", "gain_abs", "cwnd_slack_packets",
                         "min_duration_s", "max_duration_s")),
    "A.11": (check_a11, ("no_probe_rtt_after_restart_s",)),
    "A.12": (check_a12, ("cwnd_bdp_min", "bw_found_rel")),
    "A.13": (check_a13, ("utilisation_min", "cwnd_slack_packets", "headroom")),
    "A.14": (check_a14, ("min_cwnd", "pacing_rel")),
    "A.15": (check_a15, ("found_rel", "found_within_s", "log_rounds_factor", "growth_ratio_min")),
    "A.16": (check_a16, ("adapted_rel", "shortterm_within_s", "max_cycles", "max_rounds_v1")),
    "A.17": (check_a17, ("settle_after_s", "rate_low_rel", "rate_high_rel", "loss_max")),
    "A.18": (check_undo, ()),
    "A.19": (check_undo, ()),
    "A.20": (check_a20, ()),
    "A.21": (check_a21, ("beta", "exit_rounds", "bdp_rel", "growth_slack_packets")),
    "A.22": (check_a22, ()),
}


def evaluate(case: Case, algo: str, records: list[dict[str, Any]], runner: str = "real") -> list[Check]:
    if not records:
        return [judge("records of the flow", False, "none", "some")]
    # BBR.max_bw: records before ABI 4 had only bw_bps, the estimate, which was max_bw where no bound cut it.
    records = [{"max_bw_bps": r["bw_bps"], **r} for r in records]
    return CHECKERS[case.id][0](records, Ctx(case, algo, case.tolerances, runner))


MARKDOWN_HEAD = """# Conformance: the BBR draft's test cases

<!-- generated by `bbrbench conformance --markdown docs/conformance.md` from a results file down to the
end marker; edit the cases (bench/bbrbench/scenarios/conformance/cases.toml) or the checks, not that part -->

The example test cases of {draft}, Appendix A (A.1-A.22), run by `bbrbench conformance` on bbrkit's bbr3,
bbr2 and bbr1: real transfers through the testbed checked against the algorithm's own state
(`bbrctl trace`), or the deterministic twin where a real path cannot force the condition. Verdicts:
pass, fail (a check outside its tolerance, written before the runs), blocked (a key the records lack, or
the twin missing), not applicable (why, from the draft and the v1/v2alpha/v3 code).

The runs (each outcome is the last invocation's that ran it; a shared 2-CPU machine with other jobs
running, so not a quiet machine, and the load says how busy):
"""


# ---- runners ---------------------------------------------------------------------------------------------

def rate_trace_lines(steps: tuple[tuple[float, float], ...], duration_s: float) -> list[str]:
    """A Mahimahi trace (one line per 1500-byte delivery opportunity, in ms) of a piecewise-constant rate."""
    from ..ratetrace import OPPORTUNITY_BYTES
    lines = []
    bounds = [at for at, _ in steps[1:]] + [duration_s]
    for (start, mbit), end in zip(steps, bounds, strict=True):
        per_s = mbit * 1e6 / 8 / OPPORTUNITY_BYTES
        n = int((end - start) * per_s)
        lines += [str(int((start + k / per_s) * 1000)) for k in range(n)]
    return lines


def real_scenario(case: Case, algo: str, work: Path) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(json.dumps(case.path))
    raw.update(name=f"conformance-{case.id}-{algo}", duration_s=case.duration_s,
               flows=[{"algo": algo, "sender": raw["senders"][0]["name"]}])
    if case.rate_steps:
        trace = work / RATE_TRACE
        trace.write_text("\n".join(rate_trace_lines(case.rate_steps, case.duration_s)) + "\n")
        raw["bottleneck"]["rate_trace"] = str(trace)
        raw["bottleneck"].pop("rate_mbit", None)
    return raw


def _scheduled_traffic(segments: tuple[tuple[float, float | None], ...]) -> Callable[..., Any]:
    from ..testbed.topology import RECEIVER_ADDR
    from ..testbed.traffic import Traffic
    from .lockstep import FLOW_MODULE

    class ScheduledTraffic(Traffic):
        """Flows from scheduled_flow (segments of rate and pauses) into lockstep_flow's receiver."""

        def start_servers(self) -> None:
            for flow in self.scenario.flows:
                with self.server_path(flow).open("w") as out:
                    self.servers.append(self.procs.spawn([sys.executable, "-m", FLOW_MODULE, "serve",
                                                          str(flow.server_port)], netns=self.topo.receiver,
                                                         stdout=out, stderr=subprocess.STDOUT))
            self._wait_listening({f.server_port for f in self.scenario.flows})

        def client_argv(self, flow: Any) -> list[str]:
            argv = [sys.executable, "-m", "bbrbench.experiments.scheduled_flow", RECEIVER_ADDR,
                    str(flow.server_port), str(flow.client_port), "--cc", flow.algo]
            for seconds, mbit in segments:
                argv += ["--segment", f"{seconds:g}:{'max' if mbit is None else f'{mbit:g}'}"]
            return argv

    return ScheduledTraffic


def run_real(case: Case, algo: str, work: Path) -> list[dict[str, Any]]:
    from ..scenario import validate
    from ..testbed import runner, system
    from ..testbed.traffic import Traffic
    work.mkdir(parents=True, exist_ok=True)
    raw = real_scenario(case, algo, work)
    catalog = system.catalog()
    scenario = validate(raw, catalog)
    make = _scheduled_traffic(case.sender) if case.sender else Traffic
    runner.run(scenario, raw, work, catalog.bbrkit, show_progress=False, make_traffic=make)
    return real_records(work, algo)


def real_records(work: Path, algo: str) -> list[dict[str, Any]]:
    """The flow's bbrctl trace records from a real run's directory."""
    from ..analysis.rundata import trace_by_flow
    from ..results import read_json
    scenario = read_json(work / "scenario.json", "run")["resolved"]
    events = json.loads((work / "raw" / "events.json").read_text())
    records = [r for r in trace_by_flow(work, scenario, events).get(0, []) if r.get("algo") == algo]
    if (work / RATE_TRACE).is_file():
        # The link plays its trace from its own start, before the run's t0: rate_steps' times are on that
        # clock, so the records move onto it (its queue log's first row, within one log interval).
        link_start_s = float(next(csv.DictReader((work / "raw" / "link.csv").open()))["t_mono_s"])
        for r in records:
            r["t_s"] += events["t0_ns"] / 1e9 - link_start_s
    return records


def stored_records(out: Path, case: Case, algo: str, runner: str) -> list[dict[str, Any]] | None:
    """The records an earlier run kept in out, or None where it kept none."""
    work = out / "runs" / f"{case.id}-{algo}-{runner}"
    if runner == "real":
        return real_records(work, algo) if (work / "raw" / "events.json").is_file() else None
    for name in ("twin-triggered.jsonl", "twin.jsonl") if case.trigger else ("twin.jsonl",):
        if (work / name).is_file():
            records = [json.loads(line) for line in (work / name).read_text().splitlines() if line.strip()]
            for r in records:
                r["t_s"] = r["t_ns"] / 1e9
            return records
    return None


def reevaluate(out: Path, cases: list[Case]) -> list[Outcome]:
    """--report-only: every kept outcome's checks again, as this revision's checks and case data read its
    stored records (the runs stay as they were measured); outcomes without records stay as they are."""
    by_id = {c.id: c for c in cases}
    outcomes = read_outcomes(out)
    for i, o in enumerate(outcomes):
        case = by_id.get(o.case)
        if case is None or o.verdict == NOT_APPLICABLE or o.why:  # no run, or it failed: nothing to read
            continue
        records = stored_records(out, case, o.algo, o.runner)
        if records:
            checks = evaluate(case, o.algo, records, o.runner)
            outcomes[i] = Outcome(o.case, o.algo, o.runner, verdict(checks), checks=checks,
                                  plot=draw(out, case, o.algo, o.runner, records))
    path = out / "conformance.json"
    doc = read_results(path)
    doc["outcomes"] = [o.as_dict() for o in outcomes]
    doc["checked_at"] = new_invocation()
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return outcomes


def twin_argv(binary: Path, algo: str, duration_s: float, options: dict[str, str]) -> list[str]:
    argv = [str(binary), "--algo", algo, "--duration", f"{duration_s:g}s"]
    for key, value in options.items():
        argv += [f"--{key.replace('_', '-')}", value]
    return argv


def _us(t_s: float) -> str:
    return f"{round(t_s * 1e6)}us"


# A full-sized frame at the testbed's MTU (twin_path takes no other): the testbed's buffer_bdp and
# buffer_bytes count these, and the twin's FIFO holds as many packets.
FRAME_BYTES = DEFAULT_MTU + ETH_HEADER_BYTES


def twin_path(case: Case) -> tuple[dict[str, str], str | None]:
    """A real case's path and sender as bbrkit-twin's options, or why the twin cannot have it."""
    bottleneck = case.path["bottleneck"]
    unsupported = sorted(set(bottleneck) - {"rate_mbit", "buffer_bdp", "buffer_bytes", "buffer_packets", "loss_pct",
                                            "ack_path"})
    ack_path = bottleneck.get("ack_path", {})
    aggregation = ack_path.get("aggregation", {})
    if unsupported or set(ack_path) - {"aggregation"} or aggregation and aggregation.get("kind") != "onoff":
        return {}, f"the twin has no {(unsupported or ['such ACK path'])[0]}"
    rtt_ms = case.path["senders"][0]["rtt_ms"]
    rate = bottleneck.get("rate_mbit") or max(m for _, m in case.rate_steps)
    options = {"rate": ",".join(f"{m:g}mbit@{at:g}s" for at, m in case.rate_steps) or f"{rate:g}mbit",
               "rtt": f"{rtt_ms:g}ms"}
    if "buffer_packets" in bottleneck:
        options["buffer"] = f"{bottleneck['buffer_packets']}p"
    elif "buffer_bytes" in bottleneck:
        # Not as bytes: the twin would fill them with 1448-byte payloads, where the real link holds frames.
        options["buffer"] = f"{frames_in(bottleneck['buffer_bytes'], FRAME_BYTES)}p"
    else:
        bdp_frames = rate * 1e6 / 8 * rtt_ms / 1e3 / FRAME_BYTES
        options["buffer"] = f"{max(1, round(bottleneck.get('buffer_bdp', 1) * bdp_frames))}p"
    if bottleneck.get("loss_pct"):
        options["loss"] = f"{bottleneck['loss_pct']:g}%"
    if aggregation:
        # ACKs released once per on+off period: the twin's bursts at multiples of that time.
        options["ack_aggregation"] = f"{aggregation['on_ms'] + aggregation['off_ms']:g}ms"
    start = 0.0
    for seconds, mbit in case.sender:
        window = f"{_us(start)}-{_us(start + seconds)}"
        if mbit == 0:
            options["pause"] = ",".join(filter(None, [options.get("pause"), window]))
        elif mbit is not None:
            options["app_limit"] = ",".join(filter(None, [options.get("app_limit"), f"{mbit:g}mbit@{window}"]))
        start += seconds
    return options, None


def trigger_options(case: Case, at_s: float) -> dict[str, str]:
    """The case's twin options with its trigger applied from at_s (the phase's start in the first run):
    a rate cut replaces the rate; a window adds to the case's own list of that option."""
    tr = case.trigger
    window = f"{_us(at_s)}-{_us(at_s + tr.get('for_s', case.duration_s))}"
    if "rate_rel" in tr:
        bps = (_bits(case.twin["rate"]) or 0) * tr["rate_rel"]
        return {**case.twin, "rate": f"{case.twin['rate']}@0,{round(bps)}bit@{_us(at_s)}"}
    if "pause_s" in tr:
        added = {"pause": f"{_us(at_s)}-{_us(at_s + tr['pause_s'])}"}
    elif tr.get("spurious") == "rto":
        start = at_s + SPURIOUS_DELAY_S
        added = {"ack_blackout": f"{_us(start)}-{_us(start + RTO_BLACKOUT_S)}"}
    elif "spurious" in tr:
        added = {"spurious_loss": _us(at_s + SPURIOUS_DELAY_S)}
    else:
        added = {"app_limit": f"{tr['app_limit_mbit']:g}mbit@{window}"}
        if "loss_pct" in tr:
            added["loss"] = f"{tr['loss_pct']:g}%@{window}"
    options = dict(case.twin)
    for key, value in added.items():
        options[key] = f"{options[key]},{value}" if key in options else value
    return options


def _twin_records(argv: list[str], out: Path) -> tuple[list[dict[str, Any]], str | None]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TWIN_TIMEOUT_S, check=False)
    out.write_text(proc.stdout)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["no message"])[0]
        return [], f"twin refused the case: {first}"
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    for r in records:
        r["t_s"] = r["t_ns"] / 1e9  # the twin's clock starts with the transfer
    return records, None


def run_twin(case: Case, algo: str, work: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The twin's records, or (nothing, why it could not run). With a trigger, a first run finds when its
    phase starts and a second, identical up to then (the twin is deterministic), applies it from then."""
    from ..testbed.procs import find_binary
    binary = find_binary(TWIN_BINARY, "BBRKIT_TWIN")
    if binary is None:
        return [], f"twin not built ({TWIN_BINARY}: make, or BBRKIT_TWIN)"
    options, why = (case.twin, None) if case.runner == "twin" else twin_path(case)
    if why:
        return [], why
    work.mkdir(parents=True, exist_ok=True)
    records, why = _twin_records(twin_argv(binary, algo, case.duration_s, options), work / "twin.jsonl")
    if why or not case.trigger:
        return records, why
    starts = [records[a]["t_s"] for p, a, _ in runs(records) if p == case.trigger["phase"]]
    nth = case.trigger.get("nth", 1)
    if len(starts) < nth:
        return [], f"the twin's run never started {case.trigger['phase']} {nth} time(s)"
    (work / "trigger.json").write_text(json.dumps({"phase": case.trigger["phase"], "at_s": starts[nth - 1]}) + "\n")
    options = trigger_options(case, starts[nth - 1] - case.trigger.get("lead_s", 0.0))
    return _twin_records(twin_argv(binary, algo, case.duration_s, options), work / "twin-triggered.jsonl")


# ---- plots, table, results ---------------------------------------------------------------------------

PHASE_COLOURS = {"STARTUP": "#f4cccc", "DRAIN": "#fce5cd", "DOWN": "#d9ead3", "CRUISE": "#ffffff",
                 "REFILL": "#cfe2f3", "UP": "#d9d2e9", "PROBE_RTT": "#fff2cc", "PROBE_BW": "#ffffff"}


def plot(case: Case, algo: str, records: list[dict[str, Any]], out: Path) -> None:
    """Rates (bw, pacing, bw_shortterm) above, windows (cwnd, inflight, inflight_longterm) below, the
    background coloured by phase."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    t = [r["t_s"] for r in records]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(6.4, 3.6), dpi=100)
    for p, a, b in runs(records):
        for ax in (top, bottom):
            ax.axvspan(t[a], t[min(b, len(t) - 1)], color=PHASE_COLOURS.get(p, "#eeeeee"), lw=0)
    top.step(t, [r.get("max_bw_bps", r["bw_bps"]) / 1e6 for r in records], where="post", label="max_bw")
    top.step(t, [r["pacing_rate_bps"] / 1e6 for r in records], where="post", label="pacing rate", alpha=0.7)
    short = key_of(records, "bw_shortterm_bps")
    if short and any(r[short] for r in records):  # bbr1 reports 0: it has no bw_shortterm
        top.step(t, [math.nan if r[short] is None else r[short] / 1e6 for r in records], where="post",
                 label="bw_shortterm")
    top.set_ylabel("Mbit/s")
    top.legend(fontsize=6, loc="upper right")
    bottom.step(t, [r["cwnd"] for r in records], where="post", label="cwnd")
    bottom.step(t, [r["inflight"] for r in records], where="post", label="inflight", alpha=0.7)
    longterm = key_of(records, "inflight_longterm")
    if longterm and any(r[longterm] for r in records):
        bottom.step(t, [math.nan if r[longterm] is None else r[longterm] for r in records], where="post",
                    label="inflight_longterm")
    bottom.set_ylabel("packets")
    bottom.set_xlabel("s since the run's start")
    bottom.legend(fontsize=6, loc="upper right")
    present = list(dict.fromkeys(p for p, _, _ in runs(records)))
    fig.legend(handles=[Patch(facecolor=PHASE_COLOURS.get(p, "#eeeeee"), edgecolor="#999999", label=p)
                        for p in present], fontsize=6, loc="lower left", ncol=len(present), frameon=False)
    fig.suptitle(f"{case.id} {case.title} — {algo}", fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(out)
    plt.close(fig)


@dataclass
class Outcome:
    case: str
    algo: str
    runner: str
    verdict: str
    why: str = ""
    checks: list[Check] = field(default_factory=list)
    plot: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "algo": self.algo, "runner": self.runner, "verdict": self.verdict,
                "why": self.why, "checks": [c.as_dict() for c in self.checks], "plot": self.plot}

    def summary(self) -> str:
        if self.verdict in (NOT_APPLICABLE, BLOCKED) and self.why:
            return self.why
        judged = [c for c in self.checks if c.status != INFO]
        failed = [c for c in judged if c.status == FAIL]
        shown = failed or [c for c in judged if c.status == BLOCKED] or judged
        return "; ".join(f"{c.name}: {c.measured or c.expected}" for c in shown[:2])


def run_one(case: Case, algo: str, runner: str, out: Path) -> Outcome:
    if algo not in case.algos:
        return Outcome(case.id, algo, runner, NOT_APPLICABLE, case.not_applicable[algo])
    work = out / "runs" / f"{case.id}-{algo}-{runner}"
    if runner == "twin":
        records, why = run_twin(case, algo, work)
        if why:
            return Outcome(case.id, algo, runner, BLOCKED, why)
    else:
        records = run_real(case, algo, work)
    checks = evaluate(case, algo, records, runner)
    return Outcome(case.id, algo, runner, verdict(checks), checks=checks,
                   plot=draw(out, case, algo, runner, records) if records else None)


def draw(out: Path, case: Case, algo: str, runner: str, records: list[dict[str, Any]]) -> str:
    """The run's plot in out/plots; its path relative to out."""
    png = out / "plots" / f"{case.id}-{algo}-{runner}.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    plot(case, algo, records, png)
    return str(png.relative_to(out))


def runners_for(case: Case, wanted: str) -> list[str]:
    """The runners --runner asks for that the case can use: a twin case's condition has no real path; a
    real case's path runs on the twin too (twin_path), where the twin has its conditions."""
    runners = [r for r in RUNNERS if wanted in ("both", r)]
    return runners if case.runner == "real" else [r for r in runners if r == "twin"]


def table_rows(outcomes: list[Outcome]) -> list[list[str]]:
    return [[o.case, o.algo, o.runner, o.verdict, o.summary()] for o in outcomes]


TABLE_HEADERS = ("case", "algo", "runner", "verdict", "numbers / why")


def exit_status(outcomes: list[Outcome]) -> int:
    """A test runner's: 1 when any case failed; blocked and not applicable cases do not fail the run."""
    return 1 if any(o.verdict == FAIL for o in outcomes) else 0


def plan(algos: list[str], case_ids: list[str]) -> list[Case]:
    """The cases to run, every name checked before anything runs."""
    for a in algos:
        if a not in ALGOS:
            raise CaseError(f"unknown algorithm {a} (conformance covers {', '.join(ALGOS)})")
    return select(load_cases(), case_ids)


def read_outcomes(out: Path) -> list[Outcome]:
    path = out / "conformance.json"
    if not path.is_file():
        return []
    return [Outcome(o["case"], o["algo"], o["runner"], o["verdict"], o["why"],
                    [Check(**c) for c in o["checks"]], o["plot"]) for o in read_results(path)["outcomes"]]


def run(algos: list[str], cases: list[Case], runner: str, out: Path) -> list[Outcome]:
    """Each case on each algorithm; outcomes already in out (an earlier invocation) are kept unless rerun,
    so several shorter invocations build one table."""
    out.mkdir(parents=True, exist_ok=True)
    invocation = new_invocation()
    outcomes = {(o.case, o.algo, o.runner): o for o in read_outcomes(out)}
    for case in cases:
        for algo in algos:
            for r in runners_for(case, runner):
                log.info("%s %s (%s)", case.id, algo, r)
                try:
                    result = run_one(case, algo, r, out)
                except HarnessError as exc:
                    result = Outcome(case.id, algo, r, BLOCKED, f"run failed: {exc}")
                outcomes[(case.id, algo, r)] = result
                write_results(out, list(outcomes.values()), invocation)
    ordered = sorted(outcomes.values(), key=lambda o: (int(o.case.split(".")[1]), ALGOS.index(o.algo),
                                                       RUNNERS.index(o.runner)))
    write_results(out, ordered, invocation)
    return ordered


def table(outcomes: list[Outcome], cases: list[Case]) -> str:
    from ..analysis import tables
    wanted = {c.id for c in cases}
    return tables.text(TABLE_HEADERS, table_rows([o for o in outcomes if o.case in wanted]), labels=5)


def write_results(out: Path, outcomes: list[Outcome], invocation: dict[str, Any]) -> None:
    """conformance.json: the outcomes, and every invocation that ran into it (revision, command, kernel, the
    load it ran under): outcomes kept from an earlier one stay as that one measured them."""
    path = out / "conformance.json"
    earlier = read_results(path)["invocations"] if path.is_file() else []
    invocations = [i for i in earlier if i["started"] != invocation["started"]] + [
        {**invocation, "loadavg_end": [round(x, 2) for x in os.getloadavg()]}]
    doc = {"format": RESULTS_FORMAT, "draft": DRAFT, "invocations": invocations,
           "outcomes": [o.as_dict() for o in outcomes]}
    path.write_text(json.dumps(doc, indent=2) + "\n")


def new_invocation() -> dict[str, Any]:
    from .. import provenance
    return {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "bbrbench": provenance.record(),
            "kernel": os.uname().release, "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def read_results(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CaseError(f"{path}: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
        raise CaseError(f"{path}: not a {RESULTS_FORMAT} file")
    return doc


def markdown(doc: dict[str, Any], cases: list[Case]) -> str:
    """docs/conformance.md from a results file: the verdict table, then per case the draft's statement,
    what is checked, and each algorithm's verdict with its numbers."""
    from ..analysis import tables
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for o in doc["outcomes"]:
        by.setdefault((o["case"], o["algo"]), []).append(o)

    def cell(case_id: str, algo: str) -> str:
        found = by.get((case_id, algo), [])
        if not found:
            return "not run"
        if found[0]["verdict"] == NOT_APPLICABLE:
            return NOT_APPLICABLE
        ordered = sorted(found, key=lambda o: RUNNERS.index(o["runner"]))
        return ", ".join(f"{o['verdict']} ({o['runner']})" for o in ordered)
    lines = [MARKDOWN_HEAD.format(draft=DRAFT), ""]
    for inv in doc["invocations"]:
        load = "-".join(f"{x:g}" for x in (inv["loadavg_start"][0], inv["loadavg_end"][0]))
        lines.append(f"- {inv['started']}, revision {inv['bbrbench'].get('revision') or 'unknown'}, kernel "
                     f"{inv['kernel']}, 1-minute load {load}: `{inv['bbrbench'].get('command') or 'bbrbench'}`")
    if "checked_at" in doc:
        chk = doc["checked_at"]
        lines.append(f"- checks and case data read again from the stored records at revision "
                     f"{chk['bbrbench'].get('revision') or 'unknown'} ({chk['started']}): "
                     f"`{chk['bbrbench'].get('command') or 'bbrbench'}`")
    lines.append("")
    rows = [[c.id, c.title, c.runner, *[cell(c.id, a) for a in ALGOS]] for c in cases]
    lines += [tables.markdown(["case", "title", "runner", *ALGOS], rows, labels=6), ""]
    for c in cases:
        lines += [f"## {c.id} {c.title}", "", f"Draft: {c.statement}", ""]
        if c.note:
            lines += [f"Note: {c.note}", ""]
        for a in ALGOS:
            if not by.get((c.id, a)):
                lines.append(f"- {a}: not run")
            for o in by.get((c.id, a), [])[:1 if cell(c.id, a) == NOT_APPLICABLE else None]:
                runner = "" if o["verdict"] == NOT_APPLICABLE else f" ({o['runner']})"
                lines.append(f"- {a}{runner}: **{o['verdict']}**" + (f": {o['why']}" if o["why"] else ""))
                lines += [f"  - {k['name']}: {k['measured'] or '-'} (expected {k['expected'] or '-'}): {k['status']}"
                          for k in o["checks"]]
        lines.append("")
    return "\n".join([*lines, GENERATED_END, ""])


GENERATED_END = "<!-- end of the generated report: what follows is written by hand and kept on regeneration -->"


def write_markdown(path: Path, text: str) -> None:
    """The report, with whatever the file held after GENERATED_END kept below it."""
    old = path.read_text() if path.is_file() else ""
    kept = old.split(GENERATED_END, 1)[1].lstrip("\n") if GENERATED_END in old else ""
    path.write_text(text + ("\n" + kept if kept else ""))
