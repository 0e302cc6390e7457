"""The cases as data: scenarios/conformance/cases.toml read and checked, one line naming the case and key
for what cannot be used."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import UsageError
from .checks import CHECKERS
from .model import ALGOS, DESIGNS, RUNNERS, Case, rate_bits

CASES_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "conformance" / "cases.toml"
CASE_KEYS = {"id", "title", "statement", "algos", "not_applicable", "runner", "duration_s", "path", "sender",
             "rate_steps", "twin", "trigger", "tolerances", "note"}
TWIN_KEYS = {"rate", "rtt", "buffer", "ack_aggregation", "app_limit", "pause", "loss", "seed"}
# A trigger's phase and nth (which start of it, from 1), and one action; loss_pct may join app_limit_mbit
# (an app-limited phase that loses packets).
TRIGGER_ACTIONS = {"rate_rel", "pause_s", "spurious", "app_limit_mbit", "loss_pct"}
TRIGGER_PAIR = {"app_limit_mbit", "loss_pct"}
# lead_s: apply it that long before the phase starts (a rate cut some rounds early lets the queue the
# phase starts with drain at the new rate); packets: how many packets a spurious loss reorders.
# after: count only the starts of the phase that follow this one.
TRIGGER_KEYS = {"phase", "after", "nth", "for_s", "lead_s", "packets"} | TRIGGER_ACTIONS
SPURIOUS_KINDS = {"rto", "fast_recovery"}
# One verdict policy for every algorithm: a case applies wherever the algorithm has the state machine it
# tests (lacking the step fails); "not applicable" only by the design of the version the algorithm follows.
NOT_APPLICABLE_REASON = re.compile(rf"by design of ({'|'.join(sorted(set(DESIGNS.values())))}): \S")
REQUIRED_KEYS = ("id", "title", "statement", "algos", "runner", "duration_s", "tolerances")


class CaseError(UsageError):
    """A case file or a case selection that cannot be used; one line naming the case and key."""


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
    odd = next((a for a, why in not_applicable.items() if not NOT_APPLICABLE_REASON.match(str(why))), None)
    if odd:
        raise CaseError(f"{where}: not_applicable reason for {odd} must read \"by design of "
                        f"{'|'.join(sorted(set(DESIGNS.values())))}: ...\"")
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
    if twin and ("rate" not in twin or rate_bits(twin["rate"]) is None):
        raise CaseError(f"{where}: twin needs rate (e.g. \"50mbit\")")
    actions = set(trigger) & TRIGGER_ACTIONS
    if trigger and (set(trigger) - TRIGGER_KEYS or "phase" not in trigger
                    or len(actions) != 1 and actions != TRIGGER_PAIR):
        raise CaseError(f"{where}: trigger is a phase, its nth start and one of {', '.join(sorted(TRIGGER_ACTIONS))}")
    if "spurious" in trigger and trigger["spurious"] not in SPURIOUS_KINDS:
        raise CaseError(f"{where}: trigger spurious is one of {', '.join(sorted(SPURIOUS_KINDS))}")
    duration = raw["duration_s"]
    if not isinstance(duration, int | float) or duration <= 0:
        raise CaseError(f"{where}: duration_s must be > 0")
    tolerances = raw["tolerances"]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in tolerances.values()):
        raise CaseError(f"{where}: tolerances must be numbers")
    sender = tuple(segment(where, s) for s in raw.get("sender", []))
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


def segment(where: str, seg: dict[str, Any]) -> tuple[float, float | None]:
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


def plan(algos: list[str], case_ids: list[str]) -> list[Case]:
    """The cases to run, every name checked before anything runs."""
    for a in algos:
        if a not in ALGOS:
            raise CaseError(f"unknown algorithm {a} (conformance covers {', '.join(ALGOS)})")
    return select(load_cases(), case_ids)
