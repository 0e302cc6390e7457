"""Each case's check and the tolerances it reads; evaluate() runs one on a flow's records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .checks_paths import (
    check_a12,
    check_a13,
    check_a14,
    check_a15,
    check_a16,
    check_a17,
    check_a20,
    check_a21,
    check_a22,
    check_undo,
)
from .checks_states import (
    check_a1,
    check_a2,
    check_a3,
    check_a4,
    check_a5,
    check_a6,
    check_a7,
    check_a8,
    check_a9,
    check_a10,
    check_a11,
)
from .model import Case, Check, Ctx, judge

# case id -> (check, the tolerances it reads)
CHECKERS: dict[str, tuple[Callable[[list[dict[str, Any]], Ctx], list[Check]], tuple[str, ...]]] = {
    "A.1": (check_a1, ("bw_rel", "plateau_rounds")),
    "A.2": (check_a2, ("loss_thresh", "exit_within_s")),
    "A.3": (check_a3, ("drain_gain_min", "drain_gain_max", "inflight_slack_packets", "inflight_rel")),
    "A.4": (check_a4, ("drain_rounds", "round_slack", "inflight_slack_packets", "inflight_rel")),
    "A.5": (check_a5, ("min_up_rounds",)),
    "A.6": (check_a6, ("loss_thresh", "exit_rounds")),
    "A.7": (check_a7, ("max_lost_packets",)),
    "A.8": (check_a8, ("down_gain", "gain_abs", "headroom", "inflight_slack_packets", "inflight_rel")),
    "A.9": (check_a9, ("probe_wait_max_s", "time_slack_s", "headroom", "inflight_slack_packets", "inflight_rel")),
    "A.10": (check_a10, ("interval_s", "record_slack_s", "late_s", "cwnd_gain", "gain_abs", "cwnd_slack_packets",
                         "min_duration_s", "max_duration_s")),
    "A.11": (check_a11, ("no_probe_rtt_after_restart_s",)),
    "A.12": (check_a12, ("cwnd_bdp_min", "bw_found_rel", "cwnd_slack_packets")),
    "A.13": (check_a13, ("utilisation_min", "cwnd_slack_packets", "headroom")),
    "A.14": (check_a14, ("min_cwnd", "pacing_rel")),
    "A.15": (check_a15, ("found_rel", "found_within_s", "log_rounds_factor", "growth_ratio_min")),
    "A.16": (check_a16, ("adapted_rel", "shortterm_within_s", "max_cycles", "max_rounds_v1")),
    "A.17": (check_a17, ("settle_after_s", "rate_low_rel", "rate_high_rel", "loss_max")),
    "A.18": (check_undo, ()),
    "A.19": (check_undo, ()),
    "A.20": (check_a20, ()),
    "A.21": (check_a21, ("loss_thresh", "beta", "exit_rounds", "bdp_rel")),
    "A.22": (check_a22, ()),
}


def evaluate(case: Case, algo: str, records: list[dict[str, Any]], runner: str = "real") -> list[Check]:
    if not records:
        return [judge("records of the flow", False, "none", "some")]
    # BBR.max_bw: records before ABI 4 had only bw_bps, the estimate, which was max_bw where no bound cut it.
    records = [{"max_bw_bps": r["bw_bps"], **r} for r in records]
    return CHECKERS[case.id][0](records, Ctx(case, algo, case.tolerances, runner))
