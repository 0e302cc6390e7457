"""Rollout: compare a policy rule's arms from `bbrctl export` scrapes (or a Prometheus server's sums of them
over a fleet) and decide whether a guard is breached, passed or not yet decided.

Each interval between two scrapes gives one sample per arm: goodput per flow (bytes acknowledged over the
interval, per live flow), smoothed RTT, retransmission rate (segments retransmitted over segments sent) and
the stall share (busy flows with no delivery for --stall-rtts RTTs, over busy flows). A guard compares a
candidate arm with the holdback over the intervals so far (Welch intervals from analysis.stats; a ratio's is
Fieller's where the holdback's own mean is uncertain) and is breached only when the whole 95% interval is
past its margin: a rollout reverts on evidence, not on one bad scrape (operators who reverted BBR after short
checks were misled by exactly that). It passes when the whole interval is within the margin; otherwise it is
undecided."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from .stats import diff_ci95, mean_ci95, ratio_ci95

# The exporter's per-arm series this reads (docs/operations.md), counters without their _total; the smoothed
# RTT is a histogram of the live flows, of which the mean (_sum over _count) is what a guard compares.
ACKED, SENT = "bbrkit_policy_acked_bytes", "bbrkit_policy_sent_segments"
RETRANS = "bbrkit_policy_retransmitted_segments"
FLOWS, BUSY, STALLED = "bbrkit_policy_flows", "bbrkit_policy_busy_flows", "bbrkit_policy_stalled_flows"
SRTT_SUM, SRTT_COUNT = "bbrkit_policy_srtt_seconds_sum", "bbrkit_policy_srtt_seconds_count"
COUNTERS = (ACKED, SENT, RETRANS)
SERIES = (*COUNTERS, FLOWS, BUSY, STALLED, SRTT_SUM, SRTT_COUNT)
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
            if sample.labels.get("rule") == rule:
                holdback = _add(arms, sample.name, sample.labels, float(sample.value)) or holdback
    return Scrape(t, arms, holdback)


def _add(arms: dict[str, dict[str, float]], name: str, labels: Mapping[str, str], value: float) -> str | None:
    """One series' value into arms (summed where several hosts report the arm); the arm if it is the holdback."""
    name = name.removesuffix("_total")
    if name not in SERIES or "arm" not in labels:
        return None
    series = arms.setdefault(labels["arm"], {})
    series[name] = series.get(name, 0.0) + value
    return labels["arm"] if labels.get("holdback") == "true" else None


def query(rule: str) -> str:
    """The PromQL instant query for the rule's series summed over every host that exports them."""
    names = "|".join(n + "_total" if n in COUNTERS else n for n in SERIES)
    return f'sum by (__name__, arm, holdback) ({{__name__=~"{names}",rule="{rule}"}})'


def parse_query(doc: Mapping[str, Any], t: float) -> Scrape:
    """A Prometheus query API answer (GET /api/v1/query of query()) as one scrape of the fleet."""
    if doc.get("status") != "success" or doc.get("data", {}).get("resultType") != "vector":
        raise ValueError(f"not a successful instant vector: {str(doc)[:200]}")
    arms: dict[str, dict[str, float]] = {}
    holdback = None
    for item in doc["data"]["result"]:
        metric = item["metric"]
        holdback = _add(arms, metric.get("__name__", ""), metric, float(item["value"][1])) or holdback
    return Scrape(t, arms, holdback)


def interval_sample(a: Mapping[str, float], b: Mapping[str, float], dt: float) -> dict[str, float] | None:
    """One arm's sample over an interval; None where it had no live flow at either end."""
    flows = (a.get(FLOWS, 0.0) + b.get(FLOWS, 0.0)) / 2
    if flows <= 0 or dt <= 0:
        return None
    segs = b[SENT] - a[SENT]
    busy = b.get(BUSY, 0.0)
    srtt_n = b.get(SRTT_COUNT, 0.0)
    return {
        # Counters of a rule never go back (closed connections stay counted); a negative step is a
        # rule written anew, which restarts them: the interval is left out.
        "goodput_bps": max(0.0, b[ACKED] - a[ACKED]) * 8 / dt / flows,
        "rtt_ms": b.get(SRTT_SUM, 0.0) / srtt_n * 1e3 if srtt_n > 0 else 0.0,
        "retrans_rate": (b[RETRANS] - a[RETRANS]) / segs if segs > 0 else 0.0,
        "stall_share": b.get(STALLED, 0.0) / busy if busy > 0 else 0.0,
    }


@dataclass
class Comparison:
    """The samples so far, per arm and metric."""

    holdback: str
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    arms: set[str] = field(default_factory=set)

    def add(self, prev: Scrape, cur: Scrape) -> None:
        self.arms.update(cur.arms)
        for arm, now in cur.arms.items():
            before = prev.arms.get(arm)
            if before is None or any(k not in now or k not in before or now[k] < before[k] for k in COUNTERS):
                continue
            s = interval_sample(before, now, cur.t - prev.t)
            if s is None:
                continue
            for k, v in s.items():
                self.samples.setdefault(arm, {}).setdefault(k, []).append(v)

    def candidates(self) -> list[str]:
        """Every arm seen but the holdback, with samples or not: one without any is undecided, not passed."""
        return sorted(a for a in self.arms | set(self.samples) if a != self.holdback)

    def summary(self) -> dict[str, dict[str, dict[str, float | int | None]]]:
        out: dict[str, dict[str, dict[str, float | int | None]]] = {}
        for arm, metrics in self.samples.items():
            out[arm] = {}
            for k, values in metrics.items():
                m, ci = mean_ci95(values)
                out[arm][k] = {"mean": m, "ci95": ci, "n": len(values)}
        return out


@dataclass(frozen=True)
class Check:
    """One guard on one candidate arm: its statistic with the 95% interval, and the decision
    ("breached": wholly past the margin, "passed": wholly within it, "undecided": neither, or no interval yet)."""

    guard: str
    arm: str
    margin: float
    decision: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    why: str = ""

    def describe(self) -> str:
        metric, kind = GUARDS[self.guard]
        what = "candidate/holdback" if kind.startswith("ratio") else "candidate - holdback"
        if self.value is None or self.low is None or self.high is None:
            return f"guard {self.guard} on {self.arm} {self.decision}: {self.why}"
        return (f"guard {self.guard} {self.decision} by {self.arm}: {metric} {what} {self.value:.4g} "
                f"[{self.low:.4g}, {self.high:.4g}] against the margin {self.margin:g}")


@dataclass(frozen=True)
class Verdict:
    """Every guard on every candidate at one moment."""

    checks: tuple[Check, ...]

    @property
    def breach(self) -> Check | None:
        return next((c for c in self.checks if c.decision == "breached"), None)

    @property
    def outcome(self) -> str:
        """breached (any), passed (every check, and there is one), else undecided."""
        if self.breach:
            return "breached"
        return "passed" if self.checks and all(c.decision == "passed" for c in self.checks) else "undecided"


def _check(guard: str, arm: str, margin: float, x: Sequence[float], y: Sequence[float], min_samples: int) -> Check:
    metric, kind = GUARDS[guard]
    if len(x) < min_samples or len(y) < min_samples:
        return Check(guard, arm, margin, "undecided", why=f"{min(len(x), len(y))} of {min_samples} intervals")
    if kind == "higher":
        value, low, high = diff_ci95(x, y)
        past, within = low > margin, high <= margin
    else:
        r = ratio_ci95(x, y)
        # Fieller's interval where the holdback is noisy, the delta method's otherwise: either way its
        # bounds decide. Unbounded only where the holdback's own mean is not told from 0.
        if r.ratio is None or r.bounds is None:
            return Check(guard, arm, margin, "undecided", why="the holdback's mean is not told from 0")
        value, (low, high) = r.ratio, r.bounds
        if kind == "ratio-lower":
            past, within = high < 1 - margin, low >= 1 - margin
        else:
            past, within = low > 1 + margin, high <= 1 + margin
    decision = "breached" if past else "passed" if within else "undecided"
    return Check(guard, arm, margin, decision, value, low, high)


def check_guards(c: Comparison, guards: Mapping[str, float], min_samples: int) -> Verdict:
    """Each guard on each candidate arm against the holdback over the intervals so far."""
    hold = c.samples.get(c.holdback, {})
    return Verdict(tuple(_check(guard, arm, margin, c.samples.get(arm, {}).get(GUARDS[guard][0], []),
                                hold.get(GUARDS[guard][0], []), min_samples)
                         for arm in c.candidates() for guard, margin in guards.items()))


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
