"""The checks behind the papers' claims: each takes our aggregated results (a Lookup) and says whether
the claim holds on Linux here, with what we measured. The claims' words and which check each uses live in
the data files beside the scenarios (scenarios/repro/SEED/EXPERIMENT.paper.toml, key `check`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Lookup(Protocol):
    """Our aggregated result: mean of a measure at (series, x), None when not measured."""

    def mean(self, series: str, x: Any, metric: str) -> float | None: ...

    def xs(self, series: str) -> list[Any]: ...

    def x_name(self, x: Any) -> str: ...


Check = Callable[[Lookup], tuple[bool | None, str]]

RTT = "total.rtt_ms_mean"
GOODPUT = "total.goodput_mbps"
RETRANS = "total.retrans_rate"
PCT = 100.0


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _all(values: list[bool | None]) -> bool | None:
    known = [v for v in values if v is not None]
    return None if not known else all(known)


def _fmt(v: float | None, scale: float = 1.0, unit: str = "") -> str:
    return "n/a" if v is None else f"{v * scale:.3g}{unit}"


# ---------------------------------------------------------------- seed 000


def rtt_halved(lk: Lookup) -> tuple[bool | None, str]:
    parts, verdicts = [], []
    for n in lk.xs("bbr"):
        base, gain = lk.mean("bbr", n, RTT), lk.mean("rttgain_a0.75", n, RTT)
        r = _ratio(gain, base)
        verdicts.append(None if r is None else r <= 0.75)
        parts.append(f"{n} flows: alpha 0.75 / original = {_fmt(r)}")
    return _all(verdicts), "; ".join(parts)


def rtt_range(lk: Lookup) -> tuple[bool | None, str]:
    ratios = [_ratio(lk.mean("bbr", n, RTT), 20.0) for n in lk.xs("bbr")]
    known = [r for r in ratios if r is not None]
    if not known:
        return None, "no original-BBR runs"
    return all(1.8 <= r <= 2.7 for r in known), "original BBR RTT / RTT_min: " + ", ".join(f"{r:.2f}" for r in known)


def alpha_order(lk: Lookup) -> tuple[bool | None, str]:
    verdicts, parts = [], []
    for n in lk.xs("bbr"):
        a1, a75 = lk.mean("rttgain_a1", n, RTT), lk.mean("rttgain_a0.75", n, RTT)
        verdicts.append(None if a1 is None or a75 is None else a75 <= a1)
        parts.append(f"{n} flows: alpha 1 {_fmt(a1)} ms, alpha 0.75 {_fmt(a75)} ms")
    return _all(verdicts), "; ".join(parts)


def throughput_cost(lk: Lookup) -> tuple[bool | None, str]:
    verdicts, parts = [], []
    for n in lk.xs("bbr"):
        r = _ratio(lk.mean("rttgain_a0.75", n, GOODPUT), lk.mean("bbr", n, GOODPUT))
        verdicts.append(None if r is None else r >= 0.95)
        parts.append(f"{n} flows: alpha 0.75 / original goodput = {_fmt(r)}")
    return _all(verdicts), "; ".join(parts)


def original_47(lk: Lookup) -> tuple[bool | None, str]:
    vals = [v for v in (lk.mean("bbr", n, GOODPUT) for n in lk.xs("bbr")) if v is not None]
    if not vals:
        return None, "no original-BBR runs"
    return all(v >= 45 for v in vals), "original BBR total goodput: " + ", ".join(f"{v:.1f}" for v in vals) + " Mbit/s"


def small_buffer_loss(lk: Lookup) -> tuple[bool | None, str]:
    verdicts, parts = [], []
    for rate in lk.xs("bbr"):
        base = lk.mean("bbr", rate, RETRANS)
        for s in ("rttgain_a0.75", "rttgain_a0.5"):
            v = lk.mean(s, rate, RETRANS)
            verdicts.append(None if v is None or base is None else v < base / 5)
        parts.append(f"{rate} Mbit/s: original {_fmt(base, PCT, '%')}, alpha 0.75 "
                     f"{_fmt(lk.mean('rttgain_a0.75', rate, RETRANS), PCT, '%')}, alpha 0.5 "
                     f"{_fmt(lk.mean('rttgain_a0.5', rate, RETRANS), PCT, '%')}")
    return _all(verdicts), "; ".join(parts)


def original_high_loss(lk: Lookup) -> tuple[bool | None, str]:
    vals = [lk.mean("bbr", r, RETRANS) for r in lk.xs("bbr")]
    known = [v for v in vals if v is not None]
    if not known:
        return None, "no original-BBR runs"
    return all(v >= 0.10 for v in known), "original BBR: " + ", ".join(f"{v * PCT:.1f}%" for v in known)


# ---------------------------------------------------------------- seed 002


def acd_fewer_retrans(lk: Lookup) -> tuple[bool | None, str]:
    verdicts, parts = [], []
    for x in lk.xs("bbr"):
        b, a = lk.mean("bbr", x, "derived.retrans_packets"), lk.mean("bbr_acd", x, "derived.retrans_packets")
        if x[1] == 0:
            verdicts.append(None if a is None or b is None else a <= b)
        parts.append(f"{lk.x_name(x)}: {_fmt(b)} vs {_fmt(a)}")
    return _all(verdicts), "retransmitted packets, bbr vs bbr_acd: " + "; ".join(parts)


def acd_goodput(lk: Lookup) -> tuple[bool | None, str]:
    verdicts, parts = [], []
    for x in lk.xs("bbr"):
        b, a = lk.mean("bbr", x, GOODPUT), lk.mean("bbr_acd", x, GOODPUT)
        verdicts.append(None if a is None or b is None else a >= b * 0.99)
        parts.append(f"{lk.x_name(x)}: {_fmt(b)} vs {_fmt(a)} Mbit/s")
    return _all(verdicts), "goodput, bbr vs bbr_acd: " + "; ".join(parts)


def acd_equilibrium(lk: Lookup) -> tuple[bool | None, str]:
    verdicts, parts = [], []
    for x in lk.xs("bbr"):
        b, a = lk.mean("bbr", x, "total.convergence_time_s"), lk.mean("bbr_acd", x, "total.convergence_time_s")
        verdicts.append(None if a is None or b is None else a <= b)
        parts.append(f"{lk.x_name(x)}: {_fmt(b)} vs {_fmt(a)} s")
    return _all(verdicts), "equilibrium time, bbr vs bbr_acd: " + "; ".join(parts)


def sim_acd(lk: Lookup) -> tuple[bool | None, str]:
    b, a = lk.mean("bbr", None, RETRANS), lk.mean("acd_tol1000", None, RETRANS)
    gb, ga = lk.mean("bbr", None, GOODPUT), lk.mean("acd_tol1000", None, GOODPUT)
    holds = None if None in (a, b, ga, gb) else (a < b and ga >= gb)  # type: ignore[operator]
    return holds, (f"retrans bbr {_fmt(b, PCT, '%')} vs acd {_fmt(a, PCT, '%')}; goodput {_fmt(gb)} vs "
                   f"{_fmt(ga)} Mbit/s")


def tolerance_order(lk: Lookup) -> tuple[bool | None, str]:
    vals = [lk.mean(f"acd_tol{t}", None, "derived.retrans_packets") for t in (500, 1000, 1500)]
    holds = None if None in vals else vals[0] >= vals[1] >= vals[2]  # type: ignore[operator]
    return holds, "retransmitted packets at 500/1000/1500 us: " + "/".join(_fmt(v) for v in vals)


# ---------------------------------------------------------------- seed 001

def fig8(lk: Lookup) -> tuple[bool | None, str]:
    one, ten, cub = lk.mean("bbr1", 1, RETRANS), lk.mean("bbr1", 10, RETRANS), lk.mean("cubic", 10, RETRANS)
    holds = None if None in (one, ten, cub) else (ten > one and ten > cub)  # type: ignore[operator]
    return holds, (f"bbr1 1 flow {_fmt(one, PCT, '%')}, 10 flows {_fmt(ten, PCT, '%')}; "
                   f"cubic 10 flows {_fmt(cub, PCT, '%')}")


def fig9(lk: Lookup) -> tuple[bool | None, str]:
    c10, b10 = lk.mean("cubic", 10, RTT), lk.mean("bbr1", 10, RTT)
    holds = None if c10 is None or b10 is None else c10 > 3 * b10
    return holds, f"at 10 BDP: cubic {_fmt(c10)} ms, bbr1 {_fmt(b10)} ms (propagation 30 ms)"


def fig10(lk: Lookup) -> tuple[bool | None, str]:
    verdicts, parts = [], []
    for loss in lk.xs("bbr1"):
        b, c = lk.mean("bbr1", loss, "total.utilisation"), lk.mean("cubic", loss, "total.utilisation")
        if loss <= 1:
            verdicts.append(None if b is None or c is None else b >= 0.8 and b > c)
        parts.append(f"{loss}% loss: bbr1 {_fmt(b, PCT, '%')}, cubic {_fmt(c, PCT, '%')} of the link")
    return _all(verdicts), "; ".join(parts)


def fig11(lk: Lookup) -> tuple[bool | None, str]:
    one, ten = lk.mean("", (1, None, None), "algo.bbr1.share"), lk.mean("", (10, None, None), "algo.bbr1.share")
    holds = None if one is None or ten is None else ten < one
    return holds, f"bbr1 share 1+1: {_fmt(one, PCT, '%')} at 1 BDP, {_fmt(ten, PCT, '%')} at 10 BDP"


def fig14(lk: Lookup) -> tuple[bool | None, str]:
    parts, verdict = [], None
    for b in lk.xs("bbr1"):
        s = lk.mean("bbr1", b, "derived.share.rtt50")
        parts.append(f"{b} BDP: 50 ms flow gets {_fmt(s, PCT, '%')}")
        if b >= 3 and s is not None:
            verdict = s >= 0.7
    return verdict, "; ".join(parts)


def fig16(lk: Lookup) -> tuple[bool | None, str]:
    b, c = lk.mean("bbr1", 0.1, "total.fct_mean_s"), lk.mean("cubic", 0.1, "total.fct_mean_s")
    b1, c1 = lk.mean("bbr1", 1, "total.fct_mean_s"), lk.mean("cubic", 1, "total.fct_mean_s")
    holds = None if b is None or c is None else c > b
    return holds, f"mean FCT at 0.1 BDP: bbr1 {_fmt(b)} s, cubic {_fmt(c)} s; at 1 BDP: {_fmt(b1)} s, {_fmt(c1)} s"


# ---------------------------------------------------------------- seed 001: bbr2 (the paper's BBRv2)


def fig8_v2(lk: Lookup) -> tuple[bool | None, str]:
    v1, v2 = lk.mean("bbr1", 10, RETRANS), lk.mean("bbr2", 10, RETRANS)
    holds = None if v1 is None or v2 is None else v2 < v1 / 2
    return holds, f"10 flows: bbr2 {_fmt(v2, PCT, '%')}, bbr1 {_fmt(v1, PCT, '%')}"


def fig9_v2(lk: Lookup) -> tuple[bool | None, str]:
    c10, v10 = lk.mean("cubic", 10, RTT), lk.mean("bbr2", 10, RTT)
    holds = None if c10 is None or v10 is None else c10 > 3 * v10
    return holds, f"at 10 BDP: cubic {_fmt(c10)} ms, bbr2 {_fmt(v10)} ms (propagation 30 ms)"


def fig10_v2(lk: Lookup) -> tuple[bool | None, str]:
    parts, verdict = [], None
    for loss in lk.xs("bbr2"):
        v2, v1 = lk.mean("bbr2", loss, "total.utilisation"), lk.mean("bbr1", loss, "total.utilisation")
        parts.append(f"{loss}% loss: bbr2 {_fmt(v2, PCT, '%')}, bbr1 {_fmt(v1, PCT, '%')} of the link")
        if loss >= 1 and v1 is not None and v2 is not None:
            verdict = v2 < v1 if verdict is None else verdict and v2 < v1
    return verdict, "; ".join(parts)


def fig14_v2(lk: Lookup) -> tuple[bool | None, str]:
    jains = {b: lk.mean("bbr2", b, "total.jain") for b in lk.xs("bbr2")}
    known = [j for j in jains.values() if j is not None]
    return (None if not known else min(known) > 0.85), "; ".join(
        f"{b} BDP: Jain {_fmt(j, PCT, '%')}" for b, j in jains.items())


CHECKS: dict[str, Check] = {
    "rtt_halved": rtt_halved,
    "rtt_range": rtt_range,
    "alpha_order": alpha_order,
    "throughput_cost": throughput_cost,
    "original_47": original_47,
    "small_buffer_loss": small_buffer_loss,
    "original_high_loss": original_high_loss,
    "acd_fewer_retrans": acd_fewer_retrans,
    "acd_goodput": acd_goodput,
    "acd_equilibrium": acd_equilibrium,
    "sim_acd": sim_acd,
    "tolerance_order": tolerance_order,
    "fig8": fig8,
    "fig9": fig9,
    "fig10": fig10,
    "fig11": fig11,
    "fig14": fig14,
    "fig16": fig16,
    "fig8_v2": fig8_v2,
    "fig9_v2": fig9_v2,
    "fig10_v2": fig10_v2,
    "fig14_v2": fig14_v2,
}
