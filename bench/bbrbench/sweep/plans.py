"""A sweep's plan: the base scenario, its points (grid and cases of overrides), each validated before
anything runs, and plan.json, which a resumed sweep must match."""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..results import read_json, write_json
from ..scenario import DEFAULT_SWEEP_METRICS, AlgoCatalog, ScenarioError, apply_override, strip_sweep, validate


@dataclass
class Point:
    id: str
    overrides: dict[str, Any]

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.overrides.items()) or "(base)"


@dataclass
class Plan:
    name: str
    raw: dict[str, Any]
    points: list[Point]
    repetitions: int
    metrics: list[str]
    duration_s: float

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "raw": self.raw, "points": [asdict(p) for p in self.points],
                "repetitions": self.repetitions, "metrics": self.metrics, "duration_s": self.duration_s}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(name=data["name"], raw=data["raw"], points=[Point(**p) for p in data["points"]],
                   repetitions=data["repetitions"], metrics=data["metrics"], duration_s=data["duration_s"])


def load_plan(out: Path) -> Plan:
    return Plan.from_json(read_json(out / "plan.json", "plan"))


def point_id(overrides: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:10]


def point_raw(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    raw = strip_sweep(base)
    for key, value in overrides.items():
        apply_override(raw, key, value)
    return raw


def plan_runs(raw: dict[str, Any], catalog: AlgoCatalog, cli_grid: list[tuple[str, Any]], reps: int | None) -> Plan:
    """Every point is validated here, before anything runs."""
    base = validate(raw, catalog)
    spec = base.sweep
    grid: dict[str, list[Any]] = dict(spec.grid) if spec else {}
    for key, values in cli_grid:
        grid[key] = values if isinstance(values, list) else [values]
        if not grid[key]:
            raise ScenarioError(f"--grid {key}: needs at least one value")
    cases = (spec.cases if spec and spec.cases else [{}])
    repetitions = reps if reps is not None else (spec.repetitions if spec else 1)
    if repetitions < 1:
        raise ScenarioError(f"--reps: must be >= 1 (got {repetitions})")
    points: list[Point] = []
    longest = base.duration_s
    for case in cases:
        for combo in itertools.product(*grid.values()):
            overrides = {**case, **dict(zip(grid.keys(), combo))}
            point = Point(id=point_id(overrides), overrides=overrides)
            if any(p.id == point.id for p in points):
                continue
            try:
                scenario = validate(point_raw(raw, overrides), catalog)
            except ScenarioError as exc:
                raise ScenarioError(f"sweep point ({point.label}): {exc}") from None
            longest = max(longest, scenario.duration_s)
            points.append(point)
    metrics = spec.metrics if spec else list(DEFAULT_SWEEP_METRICS)
    return Plan(name=base.name, raw=strip_sweep(raw), points=points, repetitions=repetitions, metrics=metrics,
                duration_s=longest)


def open_plan(plan_: Plan, out: Path) -> None:
    path = out / "plan.json"
    if path.is_file():
        old = Plan.from_json(read_json(path, "plan"))
        if old.raw != plan_.raw or [p.id for p in old.points] != [p.id for p in plan_.points]:
            raise HarnessError(f"{out} holds a different sweep (scenario or grid changed); use another --out")
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, "plan", plan_.to_json())


@dataclass
class Job:
    """One repetition of one point: `raw` is the point's full scenario, `run_dir` where its results go."""
    rep: int
    point: Point
    raw: dict[str, Any]
    run_dir: Path
