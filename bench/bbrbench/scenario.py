"""Scenario files: load, apply overrides and profiles, validate, resolve.

A scenario is a TOML file (see bench/README.md for every key). Validation is complete before anything
is created on the system: every problem is reported as one line naming the key.
"""

from __future__ import annotations

import copy
import json
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from . import ratetrace
from .aqm import ACK_PATH_AQMS, AQMS, MAX_PARAM_MS, PARAMS, kernel_problem

_T = TypeVar("_T")

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
ETH_HEADER_BYTES = 14
DEFAULT_MTU = 1500
MAX_SENDERS = 250
SERVER_PORT_BASE = 5201
CLIENT_PORT_BASE = 40001
MAX_FLOWS = 2000
# Payload size the socket-buffer floor guarantees even on tiny paths (bytes).
SOCKET_BUFFER_FLOOR_BYTES = 256 * 1024
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
REORDER_KEYS = ("probability", "gap")
SHAPE_KEYS = {"kind", "low_mbit", "high_mbit", "period_s", "step_mbit"}
SHAPERS = ("tbf", "htb")
NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,32}$")
EXCLUSIVE_KEYS = [frozenset({"buffer_packets", "buffer_bytes", "buffer_bdp"}), frozenset({"duration_s", "bytes"}),
                  frozenset({"rtt_ms", "delay_fwd_ms"}), frozenset({"rtt_ms", "delay_rev_ms"})]


class ScenarioError(ValueError):
    """A scenario that must not run; the message is one line and starts with the offending key."""


@dataclass(frozen=True)
class Sender:
    name: str
    index: int
    delay_fwd_ms: float
    delay_rev_ms: float

    @property
    def rtt_ms(self) -> float:
        return self.delay_fwd_ms + self.delay_rev_ms


@dataclass(frozen=True)
class Flow:
    index: int
    label: str
    algo: str
    sender: str
    start_s: float
    duration_s: int | None
    bytes: int | None
    params: dict[str, float]
    server_port: int
    client_port: int


@dataclass(frozen=True)
class Bottleneck:
    rate_mbit: float
    shaper: str
    burst_bytes: int
    buffer_packets: int | None
    buffer_bytes: int | None
    buffer_bdp: float | None
    bdp_rtt_ms: float
    loss_pct: float
    aqm: str
    aqm_params: dict[str, float]
    mtu: int
    offloads: bool
    emulator: str = "auto"
    rate_trace: str | None = None
    rate_shape: dict[str, Any] | None = None
    gilbert_elliott: dict[str, float] | None = None
    jitter_ms: float = 0.0
    # The ACK (reverse) direction's own conditions (ACK_PATH_KEYS, all present), or None: unshaped.
    ack_path: dict[str, Any] | None = None
    # bbrkit-link's path conditions on the data direction: its own delay after the queue (netem's delay,
    # which reordering needs), a token-bucket policer, netem's reorder and duplicate.
    delay_ms: float = 0.0
    policer: dict[str, float] | None = None
    reorder: dict[str, float] | None = None
    duplicate_pct: float = 0.0
    # bbrkit-link writes a line per packet in Mahimahi mm-link's log format (raw/link-forward.mm, and
    # raw/link-reverse.mm with a shaped ACK path).
    packet_log: bool = False

    @property
    def needs_link(self) -> bool:
        """What only bbrkit-link can do here: rate traces and shapes, burst loss, an AQM with no kernel qdisc
        (the step marker) or parameters its qdisc cannot take (aqm.kernel_problem), a shaped ACK path."""
        return bool(self.rate_trace or self.rate_shape or self.gilbert_elliott or self.jitter_ms or
                    AQMS[self.aqm].qdisc is None or self.ack_path or self.delay_ms or self.policer or self.reorder or
                    self.duplicate_pct or self.packet_log or kernel_problem(self.aqm, self.aqm_params))

    @property
    def rate_bps(self) -> float:
        return self.rate_mbit * 1e6

    @property
    def frame_bytes(self) -> int:
        return self.mtu + ETH_HEADER_BYTES

    @property
    def bdp_bytes(self) -> float:
        return self.rate_bps / 8 * self.bdp_rtt_ms / 1e3

    @property
    def limit_bytes(self) -> int:
        """Buffer size in bytes (packet limits counted as full frames)."""
        if self.buffer_bytes is not None:
            return self.buffer_bytes
        assert self.buffer_packets is not None
        return self.buffer_packets * self.frame_bytes

    @property
    def limit_packets(self) -> int:
        """The queue's limit in packets: the scenario's, or its byte limit in whole frames (frames_in)."""
        if self.buffer_packets is not None:
            return self.buffer_packets
        return frames_in(self.limit_bytes, self.frame_bytes)


def frames_in(buffer_bytes: int, frame_bytes: int) -> int:
    """How many full-size frames a buffer of @buffer_bytes holds: what a byte limit is wherever it has to
    become a packet count (a qdisc that limits packets, the twin's FIFO). bbrkit-link's --limit-bytes
    (bench/link/queue.c, over_limit) and the kernel's bfifo count the frames' bytes, header included, and
    take a frame only while the backlog stays within the limit: as many full-size frames as this."""
    return max(1, buffer_bytes // frame_bytes)


@dataclass(frozen=True)
class MetricsSpec:
    convergence_jain: float
    convergence_window_s: float
    warmup_s: float


@dataclass(frozen=True)
class SweepSpec:
    repetitions: int
    grid: dict[str, list[Any]]
    cases: list[dict[str, Any]]
    metrics: list[str]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    duration_s: float
    sample_interval_ms: float
    queue_sample_hz: float
    trace: bool
    bottleneck: Bottleneck
    senders: list[Sender]
    flows: list[Flow]
    socket_buffer_bytes: int
    metrics: MetricsSpec
    sweep: SweepSpec | None
    skipped: list[str] = field(default_factory=list)
    # net.ipv4.tcp_ecn in the hosts: 1 requests ECN on outgoing connections, 2 (Linux's default) only
    # accepts it, so a sender needs 1 for its flows to be ECN-capable.
    tcp_ecn: int = 2

    def sender(self, name: str) -> Sender:
        return next(s for s in self.senders if s.name == name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scenario:
        """The scenario a run recorded (its to_dict()). Keys a later version dropped are ignored and
        fields it added take their defaults, so runs recorded by earlier versions still read."""
        sweep = d.get("sweep")
        return _known(cls, d, bottleneck=_known(Bottleneck, d["bottleneck"]),
                      senders=[_known(Sender, s) for s in d["senders"]],
                      flows=[_known(Flow, f) for f in d["flows"]],
                      metrics=_known(MetricsSpec, {"warmup_s": DEFAULT_WARMUP_S, **d["metrics"]}),
                      sweep=_known(SweepSpec, sweep) if sweep is not None else None)


def _known(cls: type[_T], d: dict[str, Any], **typed: Any) -> _T:
    """cls built from d's keys that name its fields, with `typed` for the nested ones."""
    names = {f.name for f in fields(cls)} - typed.keys()  # type: ignore[arg-type]
    return cls(**{k: v for k, v in d.items() if k in names}, **typed)


@dataclass(frozen=True)
class AlgoCatalog:
    """Congestion controls usable in a run: the kernel's own and bbrkit's (from `bbrctl list --json`)."""

    kernel: frozenset[str]
    bbrkit: frozenset[str]
    # bbrkit algorithm -> parameter name -> (min, max); an algorithm missing here has its parameters unchecked.
    params: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def known(self, name: str) -> bool:
        return name in self.kernel or name in self.bbrkit

    def describe(self) -> str:
        return ", ".join(sorted(self.kernel | self.bbrkit))


DEFAULT_SWEEP_METRICS = [
    "total.goodput_mbps",
    "total.utilisation",
    "total.jain",
    "total.retrans_rate",
    "total.rtt_ms_mean",
    "total.rtt_ms_p95",
    "total.queue_delay_mean_ms",
]


# ---------------------------------------------------------------- raw-data helpers


def _type_name(value: Any) -> str:
    return type(value).__name__


class _Table:
    """Typed access to one table of the raw scenario; every getter names the key on error."""

    def __init__(self, data: Any, where: str, allowed: set[str]) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(f"{where or 'scenario'}: expected a table, got {_type_name(data)}")
        for key in data:
            if key not in allowed:
                raise ScenarioError(f"{self._key(where, key)}: unknown key")
        self.data = data
        self.where = where

    @staticmethod
    def _key(where: str, key: str) -> str:
        return f"{where}.{key}" if where else key

    def key(self, key: str) -> str:
        return self._key(self.where, key)

    def has(self, key: str) -> bool:
        return key in self.data

    def number(self, key: str, default: float | None, check: Callable[[float], str | None]) -> float:
        value = self.data.get(key, default)
        if value is None:
            raise ScenarioError(f"{self.key(key)}: required")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScenarioError(f"{self.key(key)}: expected a number, got {_type_name(value)}")
        if not math.isfinite(value):
            raise ScenarioError(f"{self.key(key)}: must be finite")
        problem = check(float(value))
        if problem:
            raise ScenarioError(f"{self.key(key)}: {problem} (got {value})")
        return float(value)

    def integer(self, key: str, default: int | None, check: Callable[[float], str | None]) -> int:
        value = self.data.get(key, default)
        if value is None:
            raise ScenarioError(f"{self.key(key)}: required")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{self.key(key)}: expected an integer, got {_type_name(value)}")
        problem = check(float(value))
        if problem:
            raise ScenarioError(f"{self.key(key)}: {problem} (got {value})")
        return value

    def string(self, key: str, default: str | None, choices: tuple[str, ...] | None = None) -> str:
        value = self.data.get(key, default)
        if value is None:
            raise ScenarioError(f"{self.key(key)}: required")
        if not isinstance(value, str):
            raise ScenarioError(f"{self.key(key)}: expected a string, got {_type_name(value)}")
        if choices is not None and value not in choices:
            raise ScenarioError(f"{self.key(key)}: must be one of {', '.join(choices)} (got {value!r})")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ScenarioError(f"{self.key(key)}: expected true or false, got {_type_name(value)}")
        return value

    def table(self, key: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise ScenarioError(f"{self.key(key)}: expected a table, got {_type_name(value)}")
        return value

    def array(self, key: str) -> list[Any] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise ScenarioError(f"{self.key(key)}: expected an array, got {_type_name(value)}")
        return value


def positive(v: float) -> str | None:
    return None if v > 0 else "must be > 0"


def non_negative(v: float) -> str | None:
    return None if v >= 0 else "must be >= 0"


def at_least(low: float) -> Callable[[float], str | None]:
    return lambda v: None if v >= low else f"must be >= {low:g}"


def between(low: float, high: float) -> Callable[[float], str | None]:
    return lambda v: None if low <= v <= high else f"must be between {low:g} and {high:g}"


def _exclusive(table: _Table, keys: tuple[str, ...]) -> str | None:
    given = [k for k in keys if table.has(k)]
    if len(given) > 1:
        raise ScenarioError(f"{table.key(given[1])}: conflicts with {table.key(given[0])} (give only one)")
    return given[0] if given else None


# ---------------------------------------------------------------- loading and overrides


def find_scenario(spec: str) -> Path:
    """A path, or the name of a file in bbrbench/scenarios/ (with or without .toml)."""
    path = Path(spec)
    if path.is_file():
        return path
    for candidate in (SCENARIO_DIR / spec, SCENARIO_DIR / f"{spec}.toml"):
        if candidate.is_file():
            return candidate
    raise ScenarioError(f"scenario {spec!r}: no such file (looked in . and {SCENARIO_DIR})")


def load_raw(path: Path) -> dict[str, Any]:
    """A TOML scenario file, or a JSON one (the form a cluster worker receives a sweep point in)."""
    try:
        if path.suffix == ".json":
            raw = json.loads(path.read_text())
            if not isinstance(raw, dict):
                raise ScenarioError(f"{path.name}: not a JSON object")
        else:
            with path.open("rb") as fh:
                raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path.name}: not valid TOML: {exc}") from None
    except ValueError as exc:
        raise ScenarioError(f"{path.name}: not valid JSON: {exc}") from None
    raw.setdefault("name", path.stem)
    return raw


def parse_value(text: str) -> Any:
    """A command-line value: TOML syntax when it parses (numbers, booleans, arrays), else a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_assignment(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ScenarioError(f"{text}: overrides are KEY=VALUE")
    return key.strip(), parse_value(value.strip())


def apply_override(raw: dict[str, Any], dotted: str, value: Any) -> None:
    """Set a dotted key (`bottleneck.rate_mbit`, `flows.0.algo`, `flows.*.algo`) in the raw tree."""
    parts = dotted.split(".")
    _assign(raw, parts, value, dotted)


def _assign(node: Any, parts: list[str], value: Any, dotted: str) -> None:
    head, rest = parts[0], parts[1:]
    if isinstance(node, list):
        if head == "*":
            targets = list(range(len(node)))
        elif head.isdigit() and int(head) < len(node):
            targets = [int(head)]
        else:
            raise ScenarioError(f"{dotted}: no element {head!r} (the array has {len(node)})")
        for index in targets:
            if rest:
                _assign(node[index], rest, value, dotted)
            else:
                node[index] = copy.deepcopy(value)
        return
    if not isinstance(node, dict):
        raise ScenarioError(f"{dotted}: cannot set a key inside a {_type_name(node)}")
    if not rest:
        # An override picks one of a set of alternative keys: the alternatives the file gave are dropped.
        for group in EXCLUSIVE_KEYS:
            if head in group:
                for other in group - {head}:
                    node.pop(other, None)
        node[head] = copy.deepcopy(value)
        return
    if head not in node:
        node[head] = {}
    _assign(node[head], rest, value, dotted)


def apply_profile(raw: dict[str, Any], profile: str) -> None:
    profiles = raw.get("profiles", {})
    if not isinstance(profiles, dict) or profile not in profiles:
        names = ", ".join(sorted(profiles)) if isinstance(profiles, dict) else ""
        raise ScenarioError(f"profiles.{profile}: no such profile (defined: {names or 'none'})")
    settings = profiles[profile]
    if not isinstance(settings, dict):
        raise ScenarioError(f"profiles.{profile}: expected a table of KEY = VALUE overrides")
    for key, value in _flatten(settings):
        apply_override(raw, key, value)


def _flatten(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Quoted dotted keys ("bottleneck.rate_mbit" = 5) and nested tables both give dotted assignments."""
    out: list[tuple[str, Any]] = []
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out.extend(_flatten(value, dotted + "."))
        else:
            out.append((dotted, value))
    return out


def prepare_raw(path: Path, profile: str | None, overrides: list[tuple[str, Any]]) -> dict[str, Any]:
    raw = load_raw(path)
    if profile:
        apply_profile(raw, profile)
    for key, value in overrides:
        apply_override(raw, key, value)
    return raw


# ---------------------------------------------------------------- validation

TOP_KEYS = {
    "name", "description", "duration_s", "sample_interval_ms", "queue_sample_hz", "trace", "tcp_ecn",
    "bottleneck", "senders", "flows", "socket", "metrics", "sweep", "profiles",
}
BOTTLENECK_KEYS = {
    "rate_mbit", "shaper", "burst_bytes", "buffer_packets", "buffer_bytes", "buffer_bdp", "bdp_rtt_ms",
    "loss_pct", "aqm", "aqm_params", "mtu", "offloads", "emulator", "rate_trace", "rate_shape",
    "gilbert_elliott", "jitter_ms", "ack_path", "delay_ms", "policer", "reorder", "duplicate_pct", "packet_log",
}
SENDER_KEYS = {"name", "rtt_ms", "delay_fwd_ms", "delay_rev_ms"}
FLOW_KEYS = {"algo", "sender", "count", "start_s", "start_step_s", "duration_s", "bytes", "params", "label",
             "optional"}
SOCKET_KEYS = {"buffer_bdp", "buffer_bytes"}
METRICS_KEYS = {"convergence_jain", "convergence_window_s", "warmup_s"}
SWEEP_KEYS = {"repetitions", "grid", "cases", "metrics"}
# Shaping at 1 ms of line rate absorbs timer slack (hrtimer wake-ups are well under 1 ms here) without
# letting more than a millisecond's burst through after an idle period.
AUTO_BURST_S = 0.001
# The least a default (unset) bottleneck buffer holds: Linux's initial congestion window, 10 segments.
DEFAULT_BUFFER_MIN_PACKETS = 10


DEFAULT_DURATION_S = 30.0
# The start-up the steady-state metrics leave out after the last flow's start: BBR's STARTUP and DRAIN and
# CUBIC's slow-start overshoot with its first recovery end within a second on the paths here (tens of ms).
DEFAULT_WARMUP_S = 1.0


def time_after_last_start_s(raw: dict[str, Any]) -> float:
    """Seconds a run of this (valid) scenario goes on after its last flow has started: duration_s minus
    the latest start_s + (count - 1) * start_step_s over the flows (as _flows places them)."""
    starts = [float(f.get("start_s", 0.0)) + (int(f.get("count", 1)) - 1) * float(f.get("start_step_s", 0.0))
              for f in raw.get("flows", [])]
    return float(raw.get("duration_s", DEFAULT_DURATION_S)) - max(starts, default=0.0)


def validate(raw: dict[str, Any], catalog: AlgoCatalog) -> Scenario:
    top = _Table(raw, "", TOP_KEYS)
    name = top.string("name", "scenario")
    description = top.string("description", "")
    duration_s = top.number("duration_s", DEFAULT_DURATION_S, positive)
    sample_interval_ms = top.number("sample_interval_ms", 100.0, between(10, 10_000))
    queue_sample_hz = top.number("queue_sample_hz", 100.0, between(50, 1000))
    trace = top.boolean("trace", True)
    tcp_ecn = top.integer("tcp_ecn", 2, between(0, 2))

    senders = _senders(top)
    bottleneck = _bottleneck(_Table(top.table("bottleneck"), "bottleneck", BOTTLENECK_KEYS), senders)
    flows, skipped = _flows(top, senders, duration_s, catalog)
    socket_bytes = _socket(_Table(top.table("socket"), "socket", SOCKET_KEYS), bottleneck)
    metrics_table = _Table(top.table("metrics"), "metrics", METRICS_KEYS)
    metrics = MetricsSpec(
        convergence_jain=metrics_table.number("convergence_jain", 0.95, between(0.5, 1.0)),
        convergence_window_s=metrics_table.number("convergence_window_s", 1.0, positive),
        warmup_s=metrics_table.number("warmup_s", DEFAULT_WARMUP_S, at_least(0.0)),
    )
    sweep = _sweep(top) if top.has("sweep") else None
    if top.has("profiles"):
        for pname, ptable in top.table("profiles").items():
            if not isinstance(ptable, dict):
                raise ScenarioError(f"profiles.{pname}: expected a table of KEY = VALUE overrides")
    return Scenario(
        name=name, description=description, duration_s=duration_s, sample_interval_ms=sample_interval_ms,
        queue_sample_hz=queue_sample_hz, trace=trace, bottleneck=bottleneck, senders=senders, flows=flows,
        socket_buffer_bytes=socket_bytes, metrics=metrics, sweep=sweep, skipped=skipped, tcp_ecn=tcp_ecn,
    )


def _senders(top: _Table) -> list[Sender]:
    items = top.array("senders")
    if items is None:
        items = [{"name": "s0"}]
    if not items:
        raise ScenarioError("senders: needs at least one sender")
    if len(items) > MAX_SENDERS:
        raise ScenarioError(f"senders: at most {MAX_SENDERS} senders (got {len(items)})")
    senders: list[Sender] = []
    for i, item in enumerate(items):
        t = _Table(item, f"senders[{i}]", SENDER_KEYS)
        sname = t.string("name", f"s{i}")
        if not NAME_RE.match(sname):
            raise ScenarioError(f"{t.key('name')}: use 1-32 letters, digits or _ (got {sname!r})")
        if any(s.name == sname for s in senders):
            raise ScenarioError(f"{t.key('name')}: duplicate sender name {sname!r}")
        if t.has("rtt_ms") and (t.has("delay_fwd_ms") or t.has("delay_rev_ms")):
            other = "delay_fwd_ms" if t.has("delay_fwd_ms") else "delay_rev_ms"
            raise ScenarioError(f"{t.key(other)}: conflicts with {t.key('rtt_ms')} (give rtt_ms or the two delays)")
        if t.has("rtt_ms"):
            rtt = t.number("rtt_ms", 0.0, non_negative)
            fwd, rev = rtt / 2, rtt / 2
        else:
            fwd = t.number("delay_fwd_ms", 0.0, non_negative)
            rev = t.number("delay_rev_ms", 0.0, non_negative)
        senders.append(Sender(name=sname, index=i, delay_fwd_ms=fwd, delay_rev_ms=rev))
    return senders


def _rate_source(t: _Table) -> tuple[str | None, dict[str, Any] | None, float | None]:
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
    st = _Table(t.table("rate_shape"), t.key("rate_shape"), SHAPE_KEYS)
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


def _aqm_params(t: _Table, aqm: str) -> dict[str, float]:
    spec = AQMS[aqm]
    where = t.key("aqm_params")
    raw = t.table("aqm_params")
    if raw and not spec.params:
        raise ScenarioError(f"{where}: {aqm} takes no parameters here")
    pt = _Table(raw, where, set(spec.params))
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


def _gilbert_elliott(t: _Table) -> dict[str, float] | None:
    if not t.has("gilbert_elliott"):
        return None
    gt = _Table(t.table("gilbert_elliott"), t.key("gilbert_elliott"), set(GE_KEYS))
    probability = between(0, 1)
    return {key: gt.number(key, None, probability) for key in GE_KEYS}


def _ack_path(t: _Table) -> dict[str, Any] | None:
    if not t.has("ack_path"):
        return None
    at = _Table(t.table("ack_path"), t.key("ack_path"), set(ACK_PATH_KEYS))
    if at.has("rate_mbit") and at.has("rate_trace"):
        raise ScenarioError(f"{at.key('rate_trace')}: conflicts with {at.key('rate_mbit')} (give one)")
    trace = at.string("rate_trace", None) if at.has("rate_trace") else None
    if trace is not None:
        try:
            ratetrace.load(trace)
        except ratetrace.TraceError as exc:
            raise ScenarioError(f"{at.key('rate_trace')}: {exc}") from None
    buffer = _exclusive(at, ("buffer_packets", "buffer_bytes"))
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


def _aggregation(t: _Table) -> dict[str, Any] | None:
    if not t.has("aggregation"):
        return None
    raw = t.table("aggregation")
    kind = _Table({k: v for k, v in raw.items() if k == "kind"}, t.key("aggregation"), {"kind"}).string(
        "kind", None, tuple(AGGREGATION_KEYS))
    required, optional = AGGREGATION_KEYS[kind]
    gt = _Table(raw, t.key("aggregation"), {"kind", *required, *optional})
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


def _policer(t: _Table) -> dict[str, float] | None:
    if not t.has("policer"):
        return None
    pt = _Table(t.table("policer"), t.key("policer"), set(POLICER_KEYS))
    return {"rate_mbit": pt.number("rate_mbit", None, between(0.008, 100_000)),
            "burst_bytes": pt.integer("burst_bytes", None, between(64, 1 << 32))}


def _reorder(t: _Table, delay_ms: float) -> dict[str, float] | None:
    if not t.has("reorder"):
        return None
    rt = _Table(t.table("reorder"), t.key("reorder"), set(REORDER_KEYS))
    out = {"probability": rt.number("probability", None, between(0, 1)),
           "gap": rt.integer("gap", 1, between(1, 1_000_000))}
    if delay_ms <= 0:
        raise ScenarioError(f"{t.key('reorder')}: needs {t.key('delay_ms')} > 0 (as netem, a reordered packet "
                            f"is one that skips the delay)")
    return out


def _bottleneck(t: _Table, senders: list[Sender]) -> Bottleneck:
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
    which = _exclusive(t, ("buffer_packets", "buffer_bytes", "buffer_bdp"))
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
        packet_log=t.boolean("packet_log", False),
    )
    if emulator == "kernel" and (problem := kernel_problem(aqm, aqm_params)):
        raise ScenarioError(f"{t.key('emulator')} = \"kernel\": {t.key('aqm_params')} {problem}; use "
                            f"\"bbrkit-link\" or \"auto\"")
    if emulator == "kernel" and bottleneck.needs_link:
        raise ScenarioError(f"{t.key('emulator')}: the kernel has no qdisc for rate traces, burst loss, jitter, "
                            f"the step marker, a shaped ACK path, a policer, reordering, duplication or a packet log; "
                            f"use \"bbrkit-link\" or \"auto\"")
    return bottleneck


def _flows(top: _Table, senders: list[Sender], run_s: float,
           catalog: AlgoCatalog) -> tuple[list[Flow], list[str]]:
    items = top.array("flows")
    if not items:
        raise ScenarioError("flows: needs at least one flow")
    flows: list[Flow] = []
    skipped: list[str] = []
    algo_params: dict[str, tuple[str, dict[str, float]]] = {}
    sender_names = [s.name for s in senders]
    for i, item in enumerate(items):
        t = _Table(item, f"flows[{i}]", FLOW_KEYS)
        algo = t.string("algo", None)
        optional = t.boolean("optional", False)
        sender = t.string("sender", sender_names[0])
        if sender not in sender_names:
            raise ScenarioError(f"{t.key('sender')}: no sender named {sender!r} (have {', '.join(sender_names)})")
        count = t.integer("count", 1, at_least(1))
        start_s = t.number("start_s", 0.0, non_negative)
        step_s = t.number("start_step_s", 0.0, non_negative)
        label = t.string("label", algo)
        which = _exclusive(t, ("duration_s", "bytes"))
        nbytes = t.integer("bytes", None, at_least(1)) if which == "bytes" else None
        explicit_duration = t.number("duration_s", None, positive) if which == "duration_s" else None
        params = _params(t)
        if not catalog.known(algo):
            if optional:
                skipped.append(f"{label} ({algo}): not available on this system, skipped")
                continue
            raise ScenarioError(f"{t.key('algo')}: unknown congestion control {algo!r} "
                                f"(available: {catalog.describe()})")
        if params and algo not in catalog.bbrkit:
            raise ScenarioError(f"{t.key('params')}: only bbrkit algorithms take parameters ({algo!r} is the kernel's)")
        _check_params(t, algo, params, catalog)
        if algo in algo_params and algo_params[algo][1] != params:
            raise ScenarioError(f"{t.key('params')}: differ from {algo_params[algo][0]}.params; "
                                f"parameters are per algorithm, so all {algo} flows of a run share them")
        algo_params.setdefault(algo, (t.where, params))
        for k in range(count):
            start = start_s + k * step_s
            if start >= run_s:
                raise ScenarioError(f"{t.key('start_s')}: flow starts at {start:g} s, after the run ends "
                                    f"(duration_s = {run_s:g})")
            duration: int | None = None
            if nbytes is None:
                wanted = explicit_duration if explicit_duration is not None else math.floor(run_s - start)
                if wanted != int(wanted) or wanted < 1:
                    key = t.key("duration_s") if explicit_duration is not None else "duration_s"
                    raise ScenarioError(f"{key}: iperf3 runs whole seconds; flow {label} would run {wanted:g} s")
                if start + wanted > run_s + 1e-9:
                    raise ScenarioError(f"{t.key('duration_s')}: flow {label} would end at {start + wanted:g} s, "
                                        f"after the run (duration_s = {run_s:g})")
                duration = int(wanted)
            index = len(flows)
            if index >= MAX_FLOWS:
                raise ScenarioError(f"{t.key('count')}: at most {MAX_FLOWS} flows in all")
            flows.append(Flow(
                index=index, label=label if count == 1 else f"{label}#{k}", algo=algo, sender=sender,
                start_s=start, duration_s=duration, bytes=nbytes, params=params,
                server_port=SERVER_PORT_BASE + index, client_port=CLIENT_PORT_BASE + index,
            ))
    if not flows:
        raise ScenarioError("flows: no flow left to run (every flow's algorithm is unavailable)")
    return _unique_labels(flows), skipped


def _unique_labels(flows: list[Flow]) -> list[Flow]:
    """Labels name flows in tables and plots, so repeated ones get the flow index appended."""
    seen: dict[str, int] = {}
    for f in flows:
        seen[f.label] = seen.get(f.label, 0) + 1
    return [replace(f, label=f"{f.label}#{f.index}") if seen[f.label] > 1 else f for f in flows]


def _params(t: _Table) -> dict[str, float]:
    params: dict[str, float] = {}
    for key, value in t.table("params").items():
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise ScenarioError(f"{t.key('params')}.{key}: not a parameter name")
        if isinstance(value, bool):
            params[key] = float(value)
        elif isinstance(value, (int, float)) and math.isfinite(value):
            params[key] = float(value)
        else:
            raise ScenarioError(f"{t.key('params')}.{key}: expected a number or boolean, got {_type_name(value)}")
    return params


def _check_params(t: _Table, algo: str, params: dict[str, float], catalog: AlgoCatalog) -> None:
    known = catalog.params.get(algo)
    if known is None:
        return
    for key, value in params.items():
        if key not in known:
            names = ", ".join(sorted(known)) or "none"
            raise ScenarioError(f"{t.key('params')}.{key}: {algo} has no such parameter (it has: {names})")
        low, high = known[key]
        if not low <= value <= high:
            raise ScenarioError(f"{t.key('params')}.{key}: must be between {low:g} and {high:g} (got {value:g})")


def _socket(t: _Table, bottleneck: Bottleneck) -> int:
    which = _exclusive(t, ("buffer_bdp", "buffer_bytes"))
    if which == "buffer_bytes":
        return t.integer("buffer_bytes", None, at_least(bottleneck.frame_bytes))
    if which == "buffer_bdp":
        factor = t.number("buffer_bdp", None, positive)
        return max(SOCKET_BUFFER_FLOOR_BYTES, int(factor * bottleneck.bdp_bytes))
    # Enough for a window that fills the path and the whole bottleneck buffer, twice over.
    return max(SOCKET_BUFFER_FLOOR_BYTES, int(2 * (bottleneck.bdp_bytes + bottleneck.limit_bytes)))


def _sweep(top: _Table) -> SweepSpec:
    t = _Table(top.table("sweep"), "sweep", SWEEP_KEYS)
    reps = t.integer("repetitions", 1, between(1, 1000))
    grid: dict[str, list[Any]] = {}
    for key, values in _flatten(t.table("grid")):
        if not isinstance(values, list) or not values:
            raise ScenarioError(f"sweep.grid.{key}: expected a non-empty array of values")
        grid[key] = values
    cases_raw = t.array("cases") or []
    cases: list[dict[str, Any]] = []
    for i, case in enumerate(cases_raw):
        if not isinstance(case, dict) or not case:
            raise ScenarioError(f"sweep.cases[{i}]: expected a non-empty table of KEY = VALUE overrides")
        cases.append(dict(_flatten(case)))
    metrics = t.array("metrics")
    if metrics is None:
        metrics = list(DEFAULT_SWEEP_METRICS)
    for i, m in enumerate(metrics):
        if not isinstance(m, str) or "." not in m:
            raise ScenarioError(f"sweep.metrics[{i}]: expected 'total.NAME', 'steady.NAME', 'algo.ALGO.NAME' or "
                                f"'flow.LABEL.NAME'")
    return SweepSpec(repetitions=reps, grid=grid, cases=cases, metrics=list(metrics))


def strip_sweep(raw: dict[str, Any]) -> dict[str, Any]:
    """The raw scenario of one sweep point: no sweep or profiles tables left to confuse a re-run."""
    out = copy.deepcopy(raw)
    out.pop("sweep", None)
    out.pop("profiles", None)
    return out
