"""What the seed papers report, read from the data files beside the scenarios: for an experiment
`scenarios/repro/SEED/NAME.toml`, `NAME.paper.toml` holds its title, how sweep points map to a series and
an x value, the measures to show, the paper's numbers (text where the paper gives only a figure or a
sentence, with where the paper says it), its claims (each naming a quantity in claims.py, the seconds of
running after the last flow has started that the claim's mechanism needs, `needs_s`, with `why`, and its
decision with the margin's reason, `margin`) and why our set-up differs. A data file
that names a report section (`section = KEY`, e.g. seed 004's) holds that section's numbers instead: its
experiment has no table of its own, and `section_data` reads it."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..scenario import SCENARIO_DIR
from .claims import Lookup, Outcome, Rule, Verdict, decide_all, too_short
from .quantities import QUANTITIES, Quantity

REPRO_DIR = SCENARIO_DIR / "repro"
SUFFIX = ".paper.toml"
# In a data file's x arrays, "-" stands for a key the point does not set.
UNSET = "-"
CLAIM_KEYS = ("text", "check", "needs_s", "why", "margin")
# A claim's optional keys: `n`, the repetitions declared for it before its next run; `post_hoc`, when and
# why its margin or scope was written after the data it decides were seen (shown at its verdict);
# `scaled`, the set-up's departure from the paper's, with its factor (shown at its verdict; a file's own
# `scaled` holds for each of its claims that states none); `untestable`,
# why a scaled or short set-up cannot decide it (its verdict is then "not testable", whatever the numbers);
# `hedge`, what the verdict does not show (an explanation without a run of its own); `looks`, repetitions
# added after a look at the verdict (no correction for the repeated looks); `with`, another experiment whose
# points the claim also reads (SEED/NAME).
CLAIM_OPTIONAL = ("n", "post_hoc", "scaled", "untestable", "hedge", "looks", "with", "family", "wide", "band",
                  "at_least", "at_most", "paper_factor", "paper_margin", "startup_over_s")


@dataclass(frozen=True)
class Measure:
    metric: str
    title: str
    scale: float = 1.0
    # False where the paper's number counts over its own run length (packets in 300 s), so that a figure
    # would set it beside ours on one axis for nothing.
    paper_comparable: bool = True


@dataclass(frozen=True)
class Claim:
    """The paper's statement with its size and where it says so; the quantity it is about (claims.py); the
    seconds of running after the last flow starts that its mechanism needs, and why; its decision (the
    paper's magnitude with the margin around it, or a minimum effect) and why that margin."""

    text: str
    check: Quantity
    needs_s: float
    why: str
    rule: Rule
    margin: str
    n: int | None = None
    post_hoc: str = ""
    scaled: str = ""
    untestable: str = ""
    hedge: str = ""
    with_: str = ""
    looks: str = ""

    def judge(self, lk: Lookup, run_s: float, rule: Rule | None = None) -> Verdict:
        """The verdict over every point the quantity covers (by `rule`, default the claim's), unless the runs
        (run_s after their last flow starts) are too short or the set-up cannot decide it."""
        if self.untestable:
            return Verdict(Outcome.NOT_TESTABLE, self.untestable)
        rule = rule or self.rule
        return too_short(self.needs_s, self.why, run_s) or decide_all(self.check(lk), rule, run_s)


@dataclass(frozen=True)
class Spec:
    key: str
    title: str
    measures: list[Measure]
    order: int = 0
    # Override keys naming a point's series and x value; `default_series` when a point has none.
    series_key: str | None = None
    default_series: str = ""
    x_keys: tuple[str, ...] = ()
    x_title: str = ""
    # How an x reads in the table and the verdicts ("{} flows", "{0} BDP, {1}% loss"), unless x_names has it.
    x_format: str = ""
    x_names: dict[Any, str] = field(default_factory=dict)
    # (series, x, metric) -> the paper's value and where it says so; x is None for a figure-wide statement.
    paper: dict[tuple[str, Any, str], float | str] = field(default_factory=dict)
    refs: dict[tuple[str, Any, str], str] = field(default_factory=dict)
    # The range a value in words states ("50-75", "above 85"), drawn as such: (low, high).
    ranges: dict[tuple[str, Any, str], tuple[float, float]] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    notes: str = ""


def scalar(v: Any) -> Any:
    """Override values as dictionary keys: 1.0 and 1 are the same x."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _x(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(None if v == UNSET else scalar(v) for v in value)
    return scalar(value)


def _paper_key(p: dict[str, Any]) -> tuple[str, Any, str]:
    return p["series"], _x(p["x"]) if "x" in p else None, p["metric"]


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise HarnessError(f"{path}: not a valid paper data file: {exc}") from None


def _load(path: Path, d: dict[str, Any] | None = None) -> Spec:
    key = f"{path.parent.name}/{path.name.removesuffix(SUFFIX)}"
    if d is None:
        d = _read(path)
    try:
        claims = []
        for i, c in enumerate(d.get("claims", [])):
            if missing := [k for k in CLAIM_KEYS if k not in c]:
                raise ValueError(f"claims[{i}]: missing {', '.join(missing)}")
            if unknown := [k for k in c if k not in CLAIM_KEYS + CLAIM_OPTIONAL]:
                raise ValueError(f"claims[{i}]: unknown key {', '.join(unknown)}")
            if c["check"] not in QUANTITIES:
                raise KeyError(f"claims: no check named {c['check']!r}")
            try:
                rule = Rule.from_data(c)
            except ValueError as exc:
                raise ValueError(f"claims[{i}]: {exc}") from None
            if "family" not in c and not {"paper_factor", "paper_margin"} & set(c):
                raise ValueError(f"claims[{i}]: a band or bound needs its margin's family (factor, points, stated)")
            claims.append(Claim(c["text"], QUANTITIES[c["check"]], float(c["needs_s"]), c["why"], rule,
                                c["margin"], int(c["n"]) if "n" in c else None, c.get("post_hoc", ""),
                                c.get("scaled", d.get("scaled", "")), c.get("untestable", ""), c.get("hedge", ""),
                                c.get("with", ""), c.get("looks", "")))
        return Spec(
            key=key, title=d["title"], order=d.get("order", 0),
            measures=[Measure(m["metric"], m["title"], float(m.get("scale", 1.0)),
                              bool(m.get("paper_comparable", True))) for m in d["measures"]],
            series_key=d.get("series_key"), default_series=d.get("default_series", ""),
            x_keys=tuple(d.get("x_keys", ())), x_title=d.get("x_title", ""), x_format=d.get("x_format", ""),
            x_names={_x(n["x"]): n["name"] for n in d.get("x_names", [])},
            paper={_paper_key(p): p["value"] for p in d.get("paper", [])},
            refs={_paper_key(p): p["ref"] for p in d.get("paper", [])},
            ranges={_paper_key(p): (float(p["range"][0]), float(p["range"][1])) for p in d.get("paper", [])
                    if "range" in p},
            claims=claims, notes=d.get("notes", ""))
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessError(f"{path}: not a valid paper data file: {exc}") from None


@dataclass(frozen=True)
class Coverage:
    """A table or figure of a seed paper: the experiments (or report sections) whose claims decide it, keeping
    to the claims whose words hold one of `cites` when set (none when it is empty: a set-up table, whose runs
    other items' claims cite), and what of it is not reproduced, and why."""

    seed: str
    item: str
    experiments: tuple[str, ...]
    cites: tuple[str, ...] | None
    not_reproduced: str

    def holds(self, claim: str) -> bool:
        """Whether a claim of its experiments is on this table or figure."""
        return self.cites is None or any(c in claim for c in self.cites)


COVERAGE = REPRO_DIR / "coverage.toml"


@lru_cache(maxsize=1)
def coverage() -> tuple[Coverage, ...]:
    """Every seed's tables and figures, in the papers' order (scenarios/repro/coverage.toml)."""
    try:
        return tuple(Coverage(seed, c["item"], tuple(c.get("experiments", ())),
                              None if "cites" not in c else tuple(c["cites"]),
                              c.get("not_reproduced", ""))
                     for seed, items in _read(COVERAGE).items() for c in items)
    except (KeyError, TypeError, AttributeError) as exc:
        raise HarnessError(f"{COVERAGE}: not a valid coverage file: {exc}") from None


def _path(key: str) -> Path:
    return REPRO_DIR / f"{key}{SUFFIX}"


@lru_cache(maxsize=1)
def _files() -> tuple[tuple[Path, dict[str, Any]], ...]:
    return tuple((p, _read(p)) for p in sorted(REPRO_DIR.glob(f"*/*{SUFFIX}")))


@lru_cache(maxsize=1)
def specs() -> tuple[Spec, ...]:
    """Every experiment's paper data, in the papers' order (each file's `order`); not the data of the
    experiments a report section renders."""
    found = [_load(p, d) for p, d in _files() if "section" not in d]
    return tuple(sorted(found, key=lambda s: s.order))


def spec_for(key: str) -> Spec | None:
    return next((s for s in specs() if s.key == key), None)


def section_of(key: str) -> str | None:
    """The report section that renders experiment `key` (SEED/NAME), None for a table of its own."""
    path = _path(key)
    return next((d["section"] for p, d in _files() if p == path and "section" in d), None)


def section_data(key: str) -> dict[str, Any]:
    """The numbers in a section's data file (SEED/NAME); tables keyed by number (e.g. a loss percentage)."""
    d = _read(_path(key))
    return {k: {scalar(float(n)): v for n, v in t.items()} if isinstance(t, dict) else t for k, t in d.items()}
