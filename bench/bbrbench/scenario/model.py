"""The resolved scenario: what validation makes of a scenario file and what a run records of it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

from ..aqm import AQMS, kernel_problem
from ..placement import DEFAULT_PLACEMENT

_T = TypeVar("_T")

ETH_HEADER_BYTES = 14
DEFAULT_MTU = 1500
DEFAULT_DURATION_S = 30.0
# The start-up the steady-state metrics leave out after the last flow's start: BBR's STARTUP and DRAIN and
# CUBIC's slow-start overshoot with its first recovery end within a second on the paths here (tens of ms).
DEFAULT_WARMUP_S = 1.0


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
    # Controlled lateness (STALL_KEYS, all present): before that percentage of departures the link's
    # thread stops for that many microseconds, as a preempted thread would.
    stall: dict[str, float] | None = None

    @property
    def needs_link(self) -> bool:
        """What only bbrkit-link can do here: rate traces and shapes, burst loss, an AQM with no kernel qdisc
        (the step marker) or parameters its qdisc cannot take (aqm.kernel_problem), a shaped ACK path,
        injected stalls."""
        return bool(self.rate_trace or self.rate_shape or self.gilbert_elliott or self.jitter_ms or
                    AQMS[self.aqm].qdisc is None or self.ack_path or self.delay_ms or self.policer or self.reorder or
                    self.duplicate_pct or self.packet_log or self.stall or
                    kernel_problem(self.aqm, self.aqm_params))

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
    # Where the path works on the machine's CPUs (placement.PLACEMENTS).
    cpu_placement: str = DEFAULT_PLACEMENT

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
