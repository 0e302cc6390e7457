"""The raw scenario tree: finding and loading scenario files, overrides, profiles, sweep points."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

from .model import DEFAULT_DURATION_S, ScenarioError
from .table import type_name

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
EXCLUSIVE_KEYS = [frozenset({"buffer_packets", "buffer_bytes", "buffer_bdp"}), frozenset({"duration_s", "bytes"}),
                  frozenset({"rtt_ms", "delay_fwd_ms"}), frozenset({"rtt_ms", "delay_rev_ms"})]


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
        raise ScenarioError(f"{dotted}: cannot set a key inside a {type_name(node)}")
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
    for key, value in flatten(settings):
        apply_override(raw, key, value)


def flatten(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Quoted dotted keys ("bottleneck.rate_mbit" = 5) and nested tables both give dotted assignments."""
    out: list[tuple[str, Any]] = []
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out.extend(flatten(value, dotted + "."))
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


def time_after_last_start_s(raw: dict[str, Any]) -> float:
    """Seconds a run of this (valid) scenario goes on after its last flow has started: duration_s minus
    the latest start_s + (count - 1) * start_step_s over the flows (as validate places them)."""
    starts = [float(f.get("start_s", 0.0)) + (int(f.get("count", 1)) - 1) * float(f.get("start_step_s", 0.0))
              for f in raw.get("flows", [])]
    return float(raw.get("duration_s", DEFAULT_DURATION_S)) - max(starts, default=0.0)


def strip_sweep(raw: dict[str, Any]) -> dict[str, Any]:
    """The raw scenario of one sweep point: no sweep or profiles tables left to confuse a re-run."""
    out = copy.deepcopy(raw)
    out.pop("sweep", None)
    out.pop("profiles", None)
    return out
