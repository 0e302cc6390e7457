"""Every AQM a scenario can name (bottleneck.aqm, ack_path.aqm): its parameters, the kernel qdisc and
bbrkit-link options that run it, and how results name it. The scenario checks, the emulation and
bench/README.md's AQM table all come from AQMS; a new AQM is one entry here and one in bench/link's
LQ_KINDS (tests/bench/test_aqm_registry.py keeps the three equal).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AqmParam:
    """One aqm_params key (its unit in its name)."""
    kind: str  # "number" (milliseconds), "integer" or "bool" (stored as 0/1)
    link_flag: str  # bbrkit-link's option; milliseconds go to it in microseconds
    low: int = 1  # an integer's range
    high: int = 65536


# In the order bbrkit-link's options are written (recorded in results as link_options).
PARAMS: dict[str, AqmParam] = {
    "target_ms": AqmParam("number", "--target-us"),
    "interval_ms": AqmParam("number", "--interval-us"),
    "tupdate_ms": AqmParam("number", "--tupdate-us"),
    "ce_threshold_ms": AqmParam("number", "--step-us"),
    "threshold_ms": AqmParam("number", "--step-us"),
    # Linux's fq_codel accepts a quantum from 64 bytes; 1 MiB bounds a DRR round.
    "quantum_bytes": AqmParam("integer", "--quantum", 64, 1 << 20),
    "flows": AqmParam("integer", "--flows"),
    "ecn": AqmParam("bool", "--ecn"),
    "ect1_only": AqmParam("bool", "--step-ect1-only"),
}
# A number parameter's range, in ms: above 10 s no AQM here would act within a run.
MAX_PARAM_MS = 10_000


@dataclass(frozen=True)
class Aqm:
    params: tuple[str, ...]  # its aqm_params keys (PARAMS), in tc's argument order
    link_name: str  # bbrkit-link's implementation, as results record it: never the kernel's name alone
    qdisc: str | None = None  # the kernel's qdisc; None: bbrkit-link only
    config: str | None = None  # the kernel option that builds that qdisc; None: always there
    probe_args: tuple[str, ...] = ()  # what `tc qdisc add ... QDISC` needs to succeed when probing
    required: tuple[str, ...] = ()  # params it cannot run without
    byte_limit: bool = False  # bbrkit-link takes its limit in bytes (--limit-bytes)
    ack_path: bool = True  # allowed as the ACK path's queue (with its defaults: no ack_path params)
    # What the kernel's qdisc has fixed where bbrkit-link takes a parameter (recorded with a kernel run).
    kernel_fixed: str = ""


_CODEL = ("target_ms", "interval_ms", "ecn", "ce_threshold_ms")
# sch_cake's CAKE_QUEUES: tc-cake(8) takes no queue count (its `flows` keyword is an isolation mode).
CAKE_QUEUES = 1024
# CoDel's and COBALT's defaults, Linux's and bbrkit-link's alike.
CODEL_TARGET_MS = 5
CODEL_INTERVAL_MS = 100
AQMS: dict[str, Aqm] = {
    "fifo": Aqm((), "tail-drop FIFO", "pfifo", byte_limit=True),  # bfifo with a byte limit
    "codel": Aqm(_CODEL, "CoDel (RFC 8289)", "codel", "NET_SCH_CODEL"),
    "fq_codel": Aqm((*_CODEL, "quantum_bytes", "flows"), "FQ-CoDel (RFC 8290)", "fq_codel", "NET_SCH_FQ_CODEL"),
    "pie": Aqm(("target_ms", "tupdate_ms", "ecn"), "PIE (RFC 8033)", "pie", "NET_SCH_PIE"),
    "cake": Aqm(("target_ms", "interval_ms", "ecn", "flows"),
                "cake subset (8-way set-associative queues, DRR++, COBALT; no shaper, host isolation, tins or "
                "ACK filter)", "cake", "NET_SCH_CAKE", probe_args=("bandwidth", "10mbit"),
                kernel_fixed=f"besteffort, flows: {CAKE_QUEUES} queues, target = rtt/20, ECN always on, "
                             "unlimited (no target scaling at low rates)"),
    "step": Aqm(("threshold_ms", "ect1_only"), "step marker", required=("threshold_ms",), byte_limit=True,
                ack_path=False),
}
ACK_PATH_AQMS = tuple(name for name, a in AQMS.items() if a.ack_path)


def link_options(params: dict[str, float]) -> list[str]:
    """A scenario's aqm_params as bbrkit-link options."""
    opts: list[str] = []
    for key, p in PARAMS.items():
        if key not in params:
            continue
        value = params[key]
        if p.kind == "number":
            opts += [p.link_flag, str(round(value * 1000))]
        elif p.kind == "integer":
            opts += [p.link_flag, str(int(value))]
        elif p.link_flag == "--ecn":
            opts += [p.link_flag, str(int(value))]
        elif value:
            opts.append(p.link_flag)
    return opts


def tc_args(aqm: str, params: dict[str, float]) -> list[str]:
    """A scenario's aqm_params as arguments of the kernel's qdisc: tc-codel(8), tc-fq_codel(8) and tc-pie(8)
    take them under their own names; for tc-cake(8) see _cake_args."""
    if aqm == "cake":
        return _cake_args(params)
    args: list[str] = []
    for key, value in params.items():
        if key == "ecn":
            args.append("ecn" if value else "noecn")
        elif key.endswith("_ms"):
            args += [key.removesuffix("_ms"), f"{round(value * 1000)}us"]
        else:
            args += [key.removesuffix("_bytes"), str(int(value))]
    return args


def _cake_interval_us(params: dict[str, float]) -> int:
    return round(params.get("interval_ms", CODEL_INTERVAL_MS) * 1000)


def _cake_args(params: dict[str, float]) -> list[str]:
    """tc-cake(8)'s words for what bbrkit-link's subset does: one best-effort tin (`besteffort`; its default
    diffserv3 has three) and per-flow isolation (`flows`; its default triple-isolate is per host too). Its
    only AQM knob is `rtt TIME`, the interval, with target = rtt/20 (iproute2's q_cake.c); kernel_problem
    refuses what it cannot say."""
    args = ["besteffort", "flows"]
    if "interval_ms" in params:
        args += ["rtt", f"{_cake_interval_us(params)}us"]
    return args


def kernel_problem(aqm: str, params: dict[str, float]) -> str | None:
    """Why the kernel's qdisc cannot run @aqm with these aqm_params (only bbrkit-link can), or None."""
    if aqm != "cake":
        return None
    problems = []
    target_us = max(1, _cake_interval_us(params) // 20)
    if round(params.get("target_ms", CODEL_TARGET_MS) * 1000) != target_us:
        problems.append(f"target_ms = {params.get('target_ms', CODEL_TARGET_MS):g}: the kernel's cake sets target "
                        f"to rtt/20 ({target_us} us here), tc-cake(8) has no target")
    if params.get("ecn", 1) == 0:
        problems.append("ecn = 0: the kernel's cake always marks ECT packets, tc-cake(8) has no noecn")
    if params.get("flows", CAKE_QUEUES) != CAKE_QUEUES:
        problems.append(f"flows = {params['flows']:g}: the kernel's cake has a fixed {CAKE_QUEUES} queues, "
                        f"tc-cake(8) takes no count")
    return "; ".join(problems) or None


def qdisc_args(aqm: str, params: dict[str, float], packets: int, limit_bytes: int,
               buffer_bytes: int | None) -> list[str]:
    """The kernel's leaf qdisc under the shaper: pfifo/bfifo for fifo, otherwise the AQM's qdisc limited
    to @packets (cake: to @limit_bytes of memory, its shaper off)."""
    if aqm == "fifo":
        return ["bfifo", "limit", str(buffer_bytes)] if buffer_bytes is not None else ["pfifo", "limit", str(packets)]
    qdisc = AQMS[aqm].qdisc
    assert qdisc is not None, f"{aqm} has no kernel qdisc"
    if aqm == "cake":
        return ["cake", "unlimited", "memlimit", str(limit_bytes), *tc_args(aqm, params)]
    return [qdisc, "limit", str(packets), *tc_args(aqm, params)]


def readme_table() -> list[str]:
    """bench/README.md's AQM table, row by row, as this registry has it."""
    rows = ["| `aqm` | `aqm_params` | kernel qdisc | bbrkit-link (as results name it) | ACK path |",
            "|---|---|---|---|---|"]
    for name, a in AQMS.items():
        params = ", ".join(f"`{p}`" + (" (required)" if p in a.required else "") +
                           (" (bool)" if PARAMS[p].kind == "bool" else "") for p in a.params) or "none"
        qdisc = ("none" if a.qdisc is None else "`pfifo`, `bfifo` with `buffer_bytes`" if name == "fifo" else
                 f"`{a.qdisc}` (CONFIG_{a.config}" + (f"; {a.kernel_fixed}" if a.kernel_fixed else "") + ")")
        rows.append(f"| `\"{name}\"` | {params} | {qdisc} | {a.link_name} | {'yes' if a.ack_path else 'no'} |")
    return rows
