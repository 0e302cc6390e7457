"""The conformance cases' data types and the helpers every check reads records with: a Case, a Check and
its verdict, the record keys by the draft's names, phases and their runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DRAFT = "draft-ietf-ccwg-bbr-06"
# Each algorithm conformance covers, and the design it follows ("not applicable" names it). Adding an
# algorithm is a row here (and its algos in the cases).
DESIGNS: dict[str, str] = {"bbr3": "v3", "bbr2": "v2alpha", "bbr1": "v1", "bbr_draft": "draft"}
ALGOS = tuple(DESIGNS)
# The designs that keep the draft's BBR.full_bw_now (v2alpha and v1 have the plateau count only), and those
# whose PROBE_BW is v1's eight-slot gain cycle, without UP/DOWN sub-states or the short-term model.
FULL_BW_NOW_DESIGNS = frozenset({"v3", "draft"})
GAIN_CYCLE_DESIGNS = frozenset({"v1"})
RUNNERS = ("real", "twin")
# Frame bytes a full-sized segment's payload does not count: TCP (with timestamps) 32, IP 20, Ethernet 14.
HEADER_BYTES = 66

PASS, FAIL, BLOCKED, INFO, NOT_APPLICABLE = "pass", "fail", "blocked", "info", "not applicable"

# The draft's names for the state the cases read, and the record keys that carry each (bbrctl trace's
# earlier names first seen in the record table, docs/reference.md).
ALIASES: dict[str, tuple[str, ...]] = {
    "inflight_longterm": ("inflight_longterm", "inflight_hi"),
    "inflight_shortterm": ("inflight_shortterm", "inflight_lo"),
    "bw_shortterm_bps": ("bw_shortterm_bps", "bw_shortterm", "bw_lo_bps"),
}


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


RATE_UNITS = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3, "bit": 1.0}


def rate_bits(rate: str) -> float | None:
    """bit/s of a twin rate such as "50mbit", or None."""
    for unit, scale in RATE_UNITS.items():
        if rate.endswith(unit):
            try:
                return float(rate[: -len(unit)]) * scale
            except ValueError:
                return None
    return None


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


def phase_runs(records: list[dict[str, Any]], name: str, after: str | None = None) -> list[tuple[int, int]]:
    """(first record, first record after it) of each run of phase `name`; with `after`, only the runs that
    follow a run of that phase (a DOWN after UP: a DOWN entered and left within one ACK leaves no record,
    so counting every DOWN would count different DOWNs for different algorithms)."""
    rs = runs(records)
    return [(a, b) for i, (p, a, b) in enumerate(rs)
            if p == name and (after is None or i > 0 and rs[i - 1][0] == after)]


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


def fixed(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def mbit(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mbit/s"


@dataclass
class Ctx:
    """What a check knows besides the records: the case, the algorithm and the path's rate over time."""

    case: Case
    algo: str
    tol: dict[str, float]
    runner: str = "real"

    @property
    def has_full_bw_now(self) -> bool:
        return DESIGNS[self.algo] in FULL_BW_NOW_DESIGNS

    @property
    def gain_cycle(self) -> bool:
        return DESIGNS[self.algo] in GAIN_CYCLE_DESIGNS

    def payload(self, t_s: float, mss: int) -> float:
        """The bottleneck's payload rate at t_s, bit/s: the testbed's rate counts frames, the twin's
        counts payload (its packets are MSS-sized)."""
        mbit = self.rate_mbit(t_s)
        return mbit * 1e6 if self.runner == "twin" else payload_bps(mbit, mss)

    def rate_mbit(self, t_s: float) -> float:
        if self.case.rate_steps:
            return [m for at, m in self.case.rate_steps if at <= t_s][-1]
        if self.case.runner == "twin":
            return (rate_bits(self.case.twin["rate"]) or 0) / 1e6
        return float(self.case.path["bottleneck"]["rate_mbit"])


def unforced(name: str, measured: str, expected: str) -> Check:
    """The path did not bring about the condition the draft's step needs: not a verdict on the algorithm."""
    return Check(f"precondition: {name}", BLOCKED, measured, f"{expected} (the path did not force it)")


def first_exit(records: list[dict[str, Any]], mode: str) -> int | None:
    """Index of the first record after the first run of `mode`, not counting PROBE_RTT interruptions."""
    seen = False
    for i, r in enumerate(records):
        if r["mode"] == mode:
            seen = True
        elif seen and r["mode"] != "PROBE_RTT":
            return i
    return None


def flag(records: list[dict[str, Any]], i: int, name: str, want: bool = True) -> Check:
    key = key_of(records, name)
    if key is None:
        return blocked(f"{name} at the record", name)
    return judge(f"{name} = {want} at t={records[i]['t_s']:.2f} s", bool(records[i][key]) == want,
                 str(records[i][key]), str(want))


def ups(records: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(first UP record, first record after it) of each completed UP run."""
    return [(a, b) for p, a, b in runs(records) if p == "UP" and b < len(records)]


def loss_share(records: list[dict[str, Any]], a: int, b: int) -> float:
    """Packets lost over packets lost or delivered from record a to record b."""
    lost = records[b]["lost"] - records[a]["lost"]
    return lost / max(lost + records[b]["delivered"] - records[a]["delivered"], 1)


def round_loss(records: list[dict[str, Any]], i: int) -> float:
    """loss_share over the round trip up to record i: what the path did to the last flight, which the draft's
    steps want above BBR.LossThresh (the algorithm judges each ACK, which records cannot show)."""
    k = next(j for j in range(i + 1) if records[j]["round"] >= records[i]["round"] - 1)
    return loss_share(records, k, i)


def cut_short(records: list[dict[str, Any]], over: int, rounds: float) -> bool:
    """The run ended within `rounds` rounds of record `over`: too soon to judge an exit due by then."""
    return records[-1]["round"] - records[over]["round"] <= rounds


def lossy_ups(records: list[dict[str, Any]], thresh: float) -> list[tuple[int, int | None, int]]:
    """(first UP record, first record after it or None: never left, the first record whose round lost more than
    thresh) of each UP with such a round. The losses of UP's packets show up to a round after it (RACK waits
    for later deliveries), so that round counts too."""
    out: list[tuple[int, int | None, int]] = []
    for p, a, b in runs(records):
        if p != "UP":
            continue
        end = b if b < len(records) else len(records) - 1
        end = next((i for i in range(end, len(records)) if records[i]["round"] > records[end]["round"]), end)
        over = next((i for i in range(a, end + 1) if round_loss(records, i) > thresh), None)
        if over is not None:
            out.append((a, b if b < len(records) else None, over))
    return out
