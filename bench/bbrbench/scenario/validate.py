"""Validation of a raw scenario into a Scenario: complete before anything is created on the system, every
problem reported as one line naming the key."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from ..placement import DEFAULT_PLACEMENT, PLACEMENTS
from .bottleneck import validate_bottleneck
from .model import (
    DEFAULT_DURATION_S,
    DEFAULT_SWEEP_METRICS,
    DEFAULT_WARMUP_S,
    AlgoCatalog,
    Bottleneck,
    Flow,
    MetricsSpec,
    Scenario,
    ScenarioError,
    Sender,
    SweepSpec,
)
from .raw import flatten
from .table import Table, at_least, between, exclusive, non_negative, positive, type_name

MAX_SENDERS = 250
SERVER_PORT_BASE = 5201
CLIENT_PORT_BASE = 40001
MAX_FLOWS = 2000
# Payload size the socket-buffer floor guarantees even on tiny paths (bytes).
SOCKET_BUFFER_FLOOR_BYTES = 256 * 1024
NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,32}$")

TOP_KEYS = {
    "name", "description", "duration_s", "sample_interval_ms", "queue_sample_hz", "trace", "tcp_ecn",
    "bottleneck", "senders", "flows", "socket", "metrics", "sweep", "profiles", "cpu_placement",
}
SENDER_KEYS = {"name", "rtt_ms", "delay_fwd_ms", "delay_rev_ms"}
FLOW_KEYS = {"algo", "sender", "count", "start_s", "start_step_s", "duration_s", "bytes", "params", "label",
             "optional"}
SOCKET_KEYS = {"buffer_bdp", "buffer_bytes"}
METRICS_KEYS = {"convergence_jain", "convergence_window_s", "warmup_s"}
SWEEP_KEYS = {"repetitions", "grid", "cases", "metrics"}


def validate(raw: dict[str, Any], catalog: AlgoCatalog) -> Scenario:
    top = Table(raw, "", TOP_KEYS)
    name = top.string("name", "scenario")
    description = top.string("description", "")
    duration_s = top.number("duration_s", DEFAULT_DURATION_S, positive)
    sample_interval_ms = top.number("sample_interval_ms", 100.0, between(10, 10_000))
    queue_sample_hz = top.number("queue_sample_hz", 100.0, between(50, 1000))
    trace = top.boolean("trace", True)
    tcp_ecn = top.integer("tcp_ecn", 2, between(0, 2))

    senders = _senders(top)
    bottleneck = validate_bottleneck(top, senders)
    cpu_placement = top.string("cpu_placement", DEFAULT_PLACEMENT, tuple(PLACEMENTS))
    if PLACEMENTS[cpu_placement].pin_link and bottleneck.emulator == "kernel":
        raise ScenarioError(f"cpu_placement = \"{cpu_placement}\": pins bbrkit-link's thread, and "
                            f"bottleneck.emulator = \"kernel\" runs no link")
    flows, skipped = _flows(top, senders, duration_s, catalog)
    socket_bytes = _socket(Table(top.table("socket"), "socket", SOCKET_KEYS), bottleneck)
    metrics_table = Table(top.table("metrics"), "metrics", METRICS_KEYS)
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
        cpu_placement=cpu_placement,
    )


def _senders(top: Table) -> list[Sender]:
    items = top.array("senders")
    if items is None:
        items = [{"name": "s0"}]
    if not items:
        raise ScenarioError("senders: needs at least one sender")
    if len(items) > MAX_SENDERS:
        raise ScenarioError(f"senders: at most {MAX_SENDERS} senders (got {len(items)})")
    senders: list[Sender] = []
    for i, item in enumerate(items):
        t = Table(item, f"senders[{i}]", SENDER_KEYS)
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


def _flows(top: Table, senders: list[Sender], run_s: float,
           catalog: AlgoCatalog) -> tuple[list[Flow], list[str]]:
    items = top.array("flows")
    if not items:
        raise ScenarioError("flows: needs at least one flow")
    flows: list[Flow] = []
    skipped: list[str] = []
    algo_params: dict[str, tuple[str, dict[str, float]]] = {}
    sender_names = [s.name for s in senders]
    for i, item in enumerate(items):
        t = Table(item, f"flows[{i}]", FLOW_KEYS)
        algo = t.string("algo", None)
        optional = t.boolean("optional", False)
        sender = t.string("sender", sender_names[0])
        if sender not in sender_names:
            raise ScenarioError(f"{t.key('sender')}: no sender named {sender!r} (have {', '.join(sender_names)})")
        count = t.integer("count", 1, at_least(1))
        start_s = t.number("start_s", 0.0, non_negative)
        step_s = t.number("start_step_s", 0.0, non_negative)
        label = t.string("label", algo)
        which = exclusive(t, ("duration_s", "bytes"))
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


def _params(t: Table) -> dict[str, float]:
    params: dict[str, float] = {}
    for key, value in t.table("params").items():
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise ScenarioError(f"{t.key('params')}.{key}: not a parameter name")
        if isinstance(value, bool):
            params[key] = float(value)
        elif isinstance(value, (int, float)) and math.isfinite(value):
            params[key] = float(value)
        else:
            raise ScenarioError(f"{t.key('params')}.{key}: expected a number or boolean, got {type_name(value)}")
    return params


def _check_params(t: Table, algo: str, params: dict[str, float], catalog: AlgoCatalog) -> None:
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


def _socket(t: Table, bottleneck: Bottleneck) -> int:
    which = exclusive(t, ("buffer_bdp", "buffer_bytes"))
    if which == "buffer_bytes":
        return t.integer("buffer_bytes", None, at_least(bottleneck.frame_bytes))
    if which == "buffer_bdp":
        factor = t.number("buffer_bdp", None, positive)
        return max(SOCKET_BUFFER_FLOOR_BYTES, int(factor * bottleneck.bdp_bytes))
    # Enough for a window that fills the path and the whole bottleneck buffer, twice over.
    return max(SOCKET_BUFFER_FLOOR_BYTES, int(2 * (bottleneck.bdp_bytes + bottleneck.limit_bytes)))


def _sweep(top: Table) -> SweepSpec:
    t = Table(top.table("sweep"), "sweep", SWEEP_KEYS)
    reps = t.integer("repetitions", 1, between(1, 1000))
    grid: dict[str, list[Any]] = {}
    for key, values in flatten(t.table("grid")):
        if not isinstance(values, list) or not values:
            raise ScenarioError(f"sweep.grid.{key}: expected a non-empty array of values")
        grid[key] = values
    cases_raw = t.array("cases") or []
    cases: list[dict[str, Any]] = []
    for i, case in enumerate(cases_raw):
        if not isinstance(case, dict) or not case:
            raise ScenarioError(f"sweep.cases[{i}]: expected a non-empty table of KEY = VALUE overrides")
        cases.append(dict(flatten(case)))
    metrics = t.array("metrics")
    if metrics is None:
        metrics = list(DEFAULT_SWEEP_METRICS)
    for i, m in enumerate(metrics):
        if not isinstance(m, str) or "." not in m:
            raise ScenarioError(f"sweep.metrics[{i}]: expected 'total.NAME', 'steady.NAME', 'algo.ALGO.NAME' or "
                                f"'flow.LABEL.NAME'")
    return SweepSpec(repetitions=reps, grid=grid, cases=cases, metrics=list(metrics))
