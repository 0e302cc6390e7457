"""Rollout: compare a policy rule's arms from `bbrctl export` scrapes and decide whether a guard is breached.

Each interval between two scrapes gives one sample per arm: goodput per flow (bytes acknowledged over the
interval, per live flow), smoothed RTT, retransmission rate (segments retransmitted over segments sent) and
the stall share (busy flows with no delivery for --stall-rtts RTTs, over busy flows). A guard compares a
candidate arm with the holdback over the intervals so far (Welch intervals from analysis.stats) and is
breached only when the whole 95% interval is past its margin: a rollout reverts on evidence, not on one bad
scrape (operators who reverted BBR after short checks were misled by exactly that)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from .stats import diff_ci95, mean_ci95, ratio_ci95

# The exporter's per-arm series this reads (docs/operations.md).
SERIES = ("bbrkit_policy_bytes_acked", "bbrkit_policy_segs_out", "bbrkit_policy_retrans_segs",
          "bbrkit_policy_flows", "bbrkit_policy_busy_flows", "bbrkit_policy_stalled_flows",
          "bbrkit_policy_srtt_seconds", "bbrkit_policy_weight_ratio")
METRICS = ("goodput_bps", "rtt_ms", "retrans_rate", "stall_share")
# What each guard watches and which way is worse.
GUARDS = {"stalls": ("stall_share", "higher"), "retrans": ("retrans_rate", "higher"),
          "rtt": ("rtt_ms", "ratio-higher"), "goodput": ("goodput_bps", "ratio-lower")}


@dataclass(frozen=True)
class Scrape:
    """One scrape: time (s) and, per arm of the rule, its series by name."""

    t: float
    arms: Mapping[str, Mapping[str, float]]
    holdback: str | None


def parse_scrape(text: str, rule: str, t: float) -> Scrape:
    """The rule's per-arm series from the exposition text (Prometheus' own parser)."""
    arms: dict[str, dict[str, float]] = {}
    holdback = None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name.removesuffix("_total")
            if name not in SERIES or sample.labels.get("rule") != rule:
                continue
            arm = sample.labels["arm"]
            arms.setdefault(arm, {})[name] = float(sample.value)
            if sample.labels.get("holdback") == "true":
                holdback = arm
    return Scrape(t, arms, holdback)


def interval_sample(a: Mapping[str, float], b: Mapping[str, float], dt: float) -> dict[str, float] | None:
    """One arm's sample over an interval; None where it had no live flow at either end."""
    flows = (a["bbrkit_policy_flows"] + b["bbrkit_policy_flows"]) / 2
    if flows <= 0 or dt <= 0:
        return None
    segs = b["bbrkit_policy_segs_out"] - a["bbrkit_policy_segs_out"]
    busy = b["bbrkit_policy_busy_flows"]
    return {
        # Counters of a rule never go back (closed connections stay counted); a negative step is a
        # rule written anew, which restarts them: the interval is left out.
        "goodput_bps": max(0.0, b["bbrkit_policy_bytes_acked"] - a["bbrkit_policy_bytes_acked"]) * 8 / dt / flows,
        "rtt_ms": b["bbrkit_policy_srtt_seconds"] * 1e3,
        "retrans_rate": (b["bbrkit_policy_retrans_segs"] - a["bbrkit_policy_retrans_segs"]) / segs if segs > 0 else 0.0,
        "stall_share": b["bbrkit_policy_stalled_flows"] / busy if busy > 0 else 0.0,
    }


@dataclass
class Comparison:
    """The samples so far, per arm and metric."""

    holdback: str
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def add(self, prev: Scrape, cur: Scrape) -> None:
        for arm, now in cur.arms.items():
            before = prev.arms.get(arm)
            if before is None or any(now[k] < before[k] for k in ("bbrkit_policy_bytes_acked",
                                                                    "bbrkit_policy_segs_out")):
                continue
            s = interval_sample(before, now, cur.t - prev.t)
            if s is None:
                continue
            for k, v in s.items():
                self.samples.setdefault(arm, {}).setdefault(k, []).append(v)

    def candidates(self) -> list[str]:
        return sorted(a for a in self.samples if a != self.holdback)

    def summary(self) -> dict[str, dict[str, dict[str, float | int | None]]]:
        out: dict[str, dict[str, dict[str, float | int | None]]] = {}
        for arm, metrics in self.samples.items():
            out[arm] = {}
            for k, values in metrics.items():
                m, ci = mean_ci95(values)
                out[arm][k] = {"mean": m, "ci95": ci, "n": len(values)}
        return out


@dataclass(frozen=True)
class Breach:
    guard: str
    arm: str
    value: float
    low: float
    high: float
    margin: float

    def describe(self) -> str:
        metric, kind = GUARDS[self.guard]
        what = "candidate/holdback" if kind.startswith("ratio") else "candidate - holdback"
        return (f"guard {self.guard} breached by {self.arm}: {metric} {what} {self.value:.4g} "
                f"[{self.low:.4g}, {self.high:.4g}] past the margin {self.margin:g}")


def check_guards(c: Comparison, guards: Mapping[str, float], min_samples: int) -> Breach | None:
    """The first guard whose 95% interval lies wholly past its margin, for any candidate arm."""
    hold = c.samples.get(c.holdback, {})
    for arm in c.candidates():
        cand = c.samples[arm]
        for guard, margin in guards.items():
            metric, kind = GUARDS[guard]
            x, y = cand.get(metric, []), hold.get(metric, [])
            if len(x) < min_samples or len(y) < min_samples:
                continue
            if kind == "higher":
                d, low, high = diff_ci95(x, y)
                if low > margin:
                    return Breach(guard, arm, d, low, high, margin)
                continue
            r = ratio_ci95(x, y)
            if r.ratio is None or r.ci95 is None:
                continue
            low, high = r.ratio - r.ci95, r.ratio + r.ci95
            if (kind == "ratio-lower" and high < 1 - margin) or (kind == "ratio-higher" and low > 1 + margin):
                return Breach(guard, arm, r.ratio, low, high, margin)
    return None


def parse_guards(specs: Sequence[str]) -> dict[str, float]:
    """'stalls=0.05' ... into {guard: margin}; a ValueError names the bad one."""
    out: dict[str, float] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or name not in GUARDS:
            raise ValueError(f"guard '{spec}' is not NAME=MARGIN with NAME one of {', '.join(GUARDS)}")
        try:
            margin = float(value)
        except ValueError:
            raise ValueError(f"guard '{spec}': margin '{value}' is not a number") from None
        if not 0 <= margin < 1e6:
            raise ValueError(f"guard '{spec}': margin must be 0 or more")
        out[name] = margin
    return out
