"""Validation of a scenario's bottleneck: rate, buffer, AQM, the emulator and the path's conditions."""

from __future__ import annotations

from typing import Any

from .. import ratetrace
from ..aqm import ACK_PATH_AQMS, AQMS, MAX_PARAM_MS, PARAMS, kernel_problem
from .model import DEFAULT_MTU, ETH_HEADER_BYTES, Bottleneck, ScenarioError, Sender
from .table import Table, at_least, between, exclusive, non_negative, positive

# Where the bottleneck runs: the kernel's qdiscs, bbrbench's own link emulator, or the kernel's when it
# has what the scenario needs.
EMULATORS = ("auto", "kernel", "bbrkit-link")
GE_KEYS = ("p", "r", "loss_good", "loss_bad")
# The ACK path's keys; bbrkit-link shapes it with the same code as the data direction.
ACK_PATH_KEYS = ("rate_mbit", "rate_trace", "delay_ms", "jitter_ms", "loss_pct", "buffer_packets", "buffer_bytes",
                 "aqm", "aggregation")
# ACK aggregation: each kind's required and optional keys (counts are integers, the rest milliseconds).
AGGREGATION_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "slot": (("interval_ms",), ("max_interval_ms", "packets")),
    "count": (("acks", "timeout_ms"), ()),
    "onoff": (("on_ms", "off_ms"), ()),
}
AGGREGATION_COUNTS = ("packets", "acks")
POLICER_KEYS = ("rate_mbit", "burst_bytes")
STALL_KEYS = ("percent", "us")
# The longest stall bbrkit-link injects (its --stall limit).
MAX_STALL_US = 1_000_000
REORDER_KEYS = ("probability", "gap")
SHAPE_KEYS = {"kind", "low_mbit", "high_mbit", "period_s", "step_mbit"}
SHAPERS = ("tbf", "htb")
BOTTLENECK_KEYS = {
    "rate_mbit", "shaper", "burst_bytes", "buffer_packets", "buffer_bytes", "buffer_bdp", "bdp_rtt_ms",
    "loss_pct", "aqm", "aqm_params", "mtu", "offloads", "emulator", "rate_trace", "rate_shape",
    "gilbert_elliott", "jitter_ms", "ack_path", "delay_ms", "policer", "reorder", "duplicate_pct", "packet_log",
    "stall",
}
# Shaping at 1 ms of line rate absorbs timer slack (hrtimer wake-ups are well under 1 ms here) without
# letting more than a millisecond's burst through after an idle period.
AUTO_BURST_S = 0.001
# The least a default (unset) bottleneck buffer holds: Linux's initial congestion window, 10 segments.
DEFAULT_BUFFER_MIN_PACKETS = 10


def _rate_source(t: Table) -> tuple[str | None, dict[str, Any] | None, float | None]:
    """The rate trace or shape, if any, and the mean rate it implies."""
    if t.has("rate_trace") and t.has("rate_shape"):
        raise ScenarioError(f"{t.key('rate_shape')}: conflicts with {t.key('rate_trace')} (give one)")
    if t.has("rate_trace"):
        name = t.string("rate_trace", None)
        try:
            return name, None, ratetrace.load(name).mean_mbit
        except ratetrace.TraceError as exc:
            raise ScenarioError(f"{t.key('rate_trace')}: {exc}") from None
    if not t.has("rate_shape"):
        return None, None, None
    st = Table(t.table("rate_shape"), t.key("rate_shape"), SHAPE_KEYS)
    kind = st.string("kind", None, ratetrace.SHAPES)
    low = st.number("low_mbit", None, positive)
    high = st.number("high_mbit", None, lambda v: None if v >= low else f"must be at least low_mbit ({low:g})")
    shape: dict[str, Any] = {"kind": kind, "low_mbit": low, "high_mbit": high,
                             "period_s": st.number("period_s", None, positive)}
    if kind == "random_walk":
        shape["step_mbit"] = st.number("step_mbit", None, positive)
    elif st.has("step_mbit"):
        raise ScenarioError(f"{st.key('step_mbit')}: only for kind = \"random_walk\"")
    return None, shape, (low + high) / 2


def _aqm_params(t: Table, aqm: str) -> dict[str, float]:
    spec = AQMS[aqm]
    where = t.key("aqm_params")
    raw = t.table("aqm_params")
    if raw and not spec.params:
        raise ScenarioError(f"{where}: {aqm} takes no parameters here")
    pt = Table(raw, where, set(spec.params))
    params: dict[str, float] = {}
    for key in spec.params:
        p = PARAMS[key]
        if not pt.has(key):
            if key in spec.required:
                raise ScenarioError(f"{where}.{key}: required with aqm = \"{aqm}\"")
            continue
        if p.kind == "bool":
            params[key] = 1.0 if pt.boolean(key, False) else 0.0
        elif p.kind == "integer":
            params[key] = pt.integer(key, None, between(p.low, p.high))
        else:
            params[key] = pt.number(key, None, lambda v: None if 0 < v <= MAX_PARAM_MS else
                                    f"must be in (0, {MAX_PARAM_MS}] ms")
    if params.get("target_ms", 0) > params.get("interval_ms", 100.0) and "target_ms" in params:
        raise ScenarioError(f"{where}.target_ms: above interval_ms ({params.get('interval_ms', 100.0):g} ms)")
    return params


def _gilbert_elliott(t: Table) -> dict[str, float] | None:
    if not t.has("gilbert_elliott"):
        return None
    gt = Table(t.table("gilbert_elliott"), t.key("gilbert_elliott"), set(GE_KEYS))
    probability = between(0, 1)
    return {key: gt.number(key, None, probability) for key in GE_KEYS}


def _ack_path(t: Table) -> dict[str, Any] | None:
    if not t.has("ack_path"):
        return None
    at = Table(t.table("ack_path"), t.key("ack_path"), set(ACK_PATH_KEYS))
    if at.has("rate_mbit") and at.has("rate_trace"):
        raise ScenarioError(f"{at.key('rate_trace')}: conflicts with {at.key('rate_mbit')} (give one)")
    trace = at.string("rate_trace", None) if at.has("rate_trace") else None
    if trace is not None:
        try:
            ratetrace.load(trace)
        except ratetrace.TraceError as exc:
            raise ScenarioError(f"{at.key('rate_trace')}: {exc}") from None
    buffer = exclusive(at, ("buffer_packets", "buffer_bytes"))
    aqm = at.string("aqm", "fifo", ACK_PATH_AQMS)
    if buffer == "buffer_bytes" and not AQMS[aqm].byte_limit:
        raise ScenarioError(f"{at.key('buffer_bytes')}: only with aqm = \"fifo\" ({aqm} limits packets)")
    return {
        "rate_mbit": at.number("rate_mbit", None, lambda v: None if 0.008 <= v <= 100_000 else
                               "must be between 0.008 and 100000") if at.has("rate_mbit") else None,
        "rate_trace": trace,
        "delay_ms": at.number("delay_ms", 0.0, between(0, 10_000)),
        "jitter_ms": at.number("jitter_ms", 0.0, between(0, 10_000)),
        "loss_pct": at.number("loss_pct", 0.0, lambda v: None if 0 <= v < 100 else "must be in [0, 100)"),
        "buffer_packets": at.integer("buffer_packets", None, between(1, 1_000_000)) if buffer == "buffer_packets"
        else None,
        "buffer_bytes": at.integer("buffer_bytes", None, between(60, 1 << 32)) if buffer == "buffer_bytes" else None,
        "aqm": aqm,
        "aggregation": _aggregation(at),
    }


def _aggregation(t: Table) -> dict[str, Any] | None:
    if not t.has("aggregation"):
        return None
    raw = t.table("aggregation")
    kind = Table({k: v for k, v in raw.items() if k == "kind"}, t.key("aggregation"), {"kind"}).string(
        "kind", None, tuple(AGGREGATION_KEYS))
    required, optional = AGGREGATION_KEYS[kind]
    gt = Table(raw, t.key("aggregation"), {"kind", *required, *optional})
    out: dict[str, Any] = {"kind": kind}
    for key in (*required, *optional):
        if key not in required and not gt.has(key):
            out[key] = None
        elif key in AGGREGATION_COUNTS:
            out[key] = gt.integer(key, None, between(1, 1_000_000))
        else:
            out[key] = gt.number(key, None, between(0.001, 10_000))
    if kind == "slot" and out["max_interval_ms"] is not None and out["max_interval_ms"] < out["interval_ms"]:
        raise ScenarioError(f"{gt.key('max_interval_ms')}: below interval_ms ({out['interval_ms']:g})")
    return out


def _policer(t: Table) -> dict[str, float] | None:
    if not t.has("policer"):
        return None
    pt = Table(t.table("policer"), t.key("policer"), set(POLICER_KEYS))
    return {"rate_mbit": pt.number("rate_mbit", None, between(0.008, 100_000)),
            "burst_bytes": pt.integer("burst_bytes", None, between(64, 1 << 32))}


def _reorder(t: Table, delay_ms: float) -> dict[str, float] | None:
    if not t.has("reorder"):
        return None
    rt = Table(t.table("reorder"), t.key("reorder"), set(REORDER_KEYS))
    out = {"probability": rt.number("probability", None, between(0, 1)),
           "gap": rt.integer("gap", 1, between(1, 1_000_000))}
    if delay_ms <= 0:
        raise ScenarioError(f"{t.key('reorder')}: needs {t.key('delay_ms')} > 0 (as netem, a reordered packet "
                            f"is one that skips the delay)")
    return out


def _stall(t: Table) -> dict[str, float] | None:
    """The stall table, checked; None without one or at 0 percent, so that a sweep's grid can hold the clean
    run beside the stalled ones."""
    if not t.has("stall"):
        return None
    st = Table(t.table("stall"), t.key("stall"), set(STALL_KEYS))
    stall = {"percent": st.number("percent", None, between(0, 100)),
             "us": st.integer("us", None, between(1, MAX_STALL_US))}
    return stall if stall["percent"] else None


def validate_bottleneck(top: Table, senders: list[Sender]) -> Bottleneck:
    t = Table(top.table("bottleneck"), "bottleneck", BOTTLENECK_KEYS)
    rate_trace, rate_shape, implied_mbit = _rate_source(t)
    rate_mbit = t.number("rate_mbit", implied_mbit, positive)
    shaper = t.string("shaper", "tbf", SHAPERS)
    mtu = t.integer("mtu", DEFAULT_MTU, between(576, 9000))
    frame = mtu + ETH_HEADER_BYTES
    bdp_rtt_ms = t.number("bdp_rtt_ms", max(s.rtt_ms for s in senders), non_negative)
    rate_bytes_s = rate_mbit * 1e6 / 8
    auto_burst = max(2 * frame, int(rate_bytes_s * AUTO_BURST_S))
    burst = t.integer("burst_bytes", auto_burst, at_least(frame))
    buffer_packets: int | None = None
    buffer_bytes: int | None = None
    buffer_bdp: float | None = None
    which = exclusive(t, ("buffer_packets", "buffer_bytes", "buffer_bdp"))
    if which is None:
        # Unset: 1 BDP, but never under TCP's initial window, so that a path without delay (a BDP under one
        # packet, an error had the user written buffer_bdp) still gets a queue that holds a first flight.
        bdp_packets = round(rate_bytes_s * bdp_rtt_ms / 1e3 / frame)
        buffer_packets = max(DEFAULT_BUFFER_MIN_PACKETS, bdp_packets)
        buffer_bdp = 1.0 if buffer_packets == bdp_packets else None
    elif which == "buffer_packets":
        buffer_packets = t.integer("buffer_packets", None, at_least(1))
    elif which == "buffer_bytes":
        buffer_bytes = t.integer("buffer_bytes", None, lambda v: None if v >= frame else
                                 f"buffer under one packet ({frame} bytes)")
    else:
        buffer_bdp = t.number("buffer_bdp", 1.0, positive)
        bdp_bytes = rate_bytes_s * bdp_rtt_ms / 1e3
        packets = round(buffer_bdp * bdp_bytes / frame)
        if packets < 1:
            raise ScenarioError(
                f"{t.key('buffer_bdp')}: buffer under one packet ({buffer_bdp:g} x BDP of "
                f"{bdp_bytes:.0f} bytes at bdp_rtt_ms={bdp_rtt_ms:g})")
        buffer_packets = packets
    loss_pct = t.number("loss_pct", 0.0, lambda v: None if 0 <= v < 100 else "must be in [0, 100)")
    aqm = t.string("aqm", "fifo", tuple(AQMS))
    aqm_params = _aqm_params(t, aqm)
    emulator = t.string("emulator", "auto", EMULATORS)
    gilbert_elliott = _gilbert_elliott(t)
    delay_ms = t.number("delay_ms", 0.0, between(0, 10_000))
    bottleneck = Bottleneck(
        rate_mbit=rate_mbit, shaper=shaper, burst_bytes=burst, buffer_packets=buffer_packets,
        buffer_bytes=buffer_bytes, buffer_bdp=buffer_bdp, bdp_rtt_ms=bdp_rtt_ms, loss_pct=loss_pct, aqm=aqm,
        aqm_params=aqm_params, mtu=mtu, offloads=t.boolean("offloads", False), emulator=emulator,
        rate_trace=rate_trace, rate_shape=rate_shape, gilbert_elliott=gilbert_elliott,
        jitter_ms=t.number("jitter_ms", 0.0, between(0, 1000)), ack_path=_ack_path(t), delay_ms=delay_ms,
        policer=_policer(t), reorder=_reorder(t, delay_ms),
        duplicate_pct=t.number("duplicate_pct", 0.0, between(0, 100)),
        packet_log=t.boolean("packet_log", False), stall=_stall(t),
    )
    if emulator == "kernel" and (problem := kernel_problem(aqm, aqm_params)):
        raise ScenarioError(f"{t.key('emulator')} = \"kernel\": {t.key('aqm_params')} {problem}; use "
                            f"\"bbrkit-link\" or \"auto\"")
    if emulator == "kernel" and bottleneck.needs_link:
        raise ScenarioError(f"{t.key('emulator')}: the kernel has no qdisc for rate traces, burst loss, jitter, "
                            f"the step marker, a shaped ACK path, a policer, reordering, duplication, a packet log "
                            f"or injected stalls; "
                            f"use \"bbrkit-link\" or \"auto\"")
    return bottleneck
