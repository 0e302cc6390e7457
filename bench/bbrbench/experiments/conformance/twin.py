"""The twin runner: a case as build/bbrkit-twin's options, its trigger applied from the phase a first run
finds, and the JSON lines it prints as records."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ...scenario import DEFAULT_MTU, ETH_HEADER_BYTES, frames_in
from .model import Case, phase_runs, rate_bits

TWIN_BINARY = "bbrkit-twin"
SPURIOUS_DELAY_S = 0.005  # a spurious loss this long after the phase starts: inside its first round
# Between the packets one spurious loss reorders: a packet's time at the bottleneck at 50 Mbit/s is 0.23 ms,
# so each is another packet, and 8 of them stay within a 20 ms round.
SPURIOUS_GAP_S = 0.0005
# A spurious RTO's ACK blackout: longer than the twin's RTO (200 ms + srtt, srtt at most ~60 ms on a 2-BDP
# 20 ms path) so one fires, shorter than two of them so only one does.
RTO_BLACKOUT_S = 0.35
TRIGGER_FILE = "trigger.json"  # a triggered run's note of where the trigger's phase started
TWIN_TIMEOUT_S = 120.0  # the twin simulates; a case of at most 25 s takes seconds
# bbr2, bbr3 and bbr_draft's loss-decision path on the twin: it calls the per-packet hooks where the kernel
# runs them when bbrctl attaches them (bench/twin/twin_path.h: tcp_rate_skb_sent(), tcp_mark_skb_lost()).
TWIN_LOSS_DECISIONS = "per-packet, hooks at mark time"


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
                                            "ack_path", "policer"})
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
    if "policer" in bottleneck:  # the testbed's token bucket, metering frames as the twin's does
        policer = bottleneck["policer"]
        options["policer"] = f"{policer['rate_mbit']:g}mbit/{policer['burst_bytes']}b"
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
        bps = (rate_bits(case.twin["rate"]) or 0) * tr["rate_rel"]
        return {**case.twin, "rate": f"{case.twin['rate']}@0,{round(bps)}bit@{_us(at_s)}"}
    if "pause_s" in tr:
        added = {"pause": f"{_us(at_s)}-{_us(at_s + tr['pause_s'])}"}
    elif tr.get("spurious") == "rto":
        start = at_s + SPURIOUS_DELAY_S
        added = {"ack_blackout": f"{_us(start)}-{_us(start + RTO_BLACKOUT_S)}"}
    elif "spurious" in tr:
        first = at_s + SPURIOUS_DELAY_S
        added = {"spurious_loss": ",".join(_us(first + k * SPURIOUS_GAP_S) for k in range(tr.get("packets", 1)))}
    else:
        added = {}
        if "app_limit_mbit" in tr:
            added["app_limit"] = f"{tr['app_limit_mbit']:g}mbit@{window}"
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


def run_twin(case: Case, algo: str, work: Path, mutation: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """The twin's records, or (nothing, why it could not run). With a trigger, a first run finds when its
    phase starts and a second, identical up to then (the twin is deterministic), applies it from then.
    mutation: one of bbrkit-twin's --mutate names, the algorithm with one of the draft's steps broken."""
    from ...testbed.procs import find_binary
    binary = find_binary(TWIN_BINARY, "BBRKIT_TWIN")
    if binary is None:
        return [], f"twin not built ({TWIN_BINARY}: make, or BBRKIT_TWIN)"
    options, why = (case.twin, None) if case.runner == "twin" else twin_path(case)
    if why:
        return [], why
    mutated = {"mutate": mutation} if mutation else {}
    options = {**options, **mutated}
    work.mkdir(parents=True, exist_ok=True)
    records, why = _twin_records(twin_argv(binary, algo, case.duration_s, options), work / "twin.jsonl")
    if why or not case.trigger:
        return records, why
    starts = [records[a]["t_s"] for a, _ in phase_runs(records, case.trigger["phase"], case.trigger.get("after"))]
    nth = case.trigger.get("nth", 1)
    if len(starts) < nth:
        return [], f"the twin's run never started {case.trigger['phase']} {nth} time(s)"
    (work / TRIGGER_FILE).write_text(json.dumps({"phase": case.trigger["phase"], "at_s": starts[nth - 1]}) + "\n")
    options = {**trigger_options(case, starts[nth - 1] - case.trigger.get("lead_s", 0.0)), **mutated}
    return _twin_records(twin_argv(binary, algo, case.duration_s, options), work / "twin-triggered.jsonl")


def trigger_time(work: Path, case: Case) -> float | None:
    """When the run's trigger took effect (its phase's start less lead_s), from the twin runner's note."""
    note = work / TRIGGER_FILE
    if not case.trigger or not note.is_file():
        return None
    return float(json.loads(note.read_text())["at_s"]) - case.trigger.get("lead_s", 0.0)
