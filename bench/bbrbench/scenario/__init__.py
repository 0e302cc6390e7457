"""Scenario files: load, apply overrides and profiles, validate, resolve.

A scenario is a TOML file (see bench/README.md for every key). Validation is complete before anything
is created on the system: every problem is reported as one line naming the key.
"""

from .model import (
    DEFAULT_DURATION_S,
    DEFAULT_MTU,
    DEFAULT_SWEEP_METRICS,
    DEFAULT_WARMUP_S,
    ETH_HEADER_BYTES,
    AlgoCatalog,
    Bottleneck,
    Flow,
    Scenario,
    ScenarioError,
    frames_in,
)
from .raw import (
    SCENARIO_DIR,
    apply_override,
    apply_profile,
    find_scenario,
    load_raw,
    parse_assignment,
    parse_value,
    prepare_raw,
    strip_sweep,
    time_after_last_start_s,
)
from .validate import validate

__all__ = [
    "DEFAULT_DURATION_S", "DEFAULT_MTU", "DEFAULT_SWEEP_METRICS", "DEFAULT_WARMUP_S", "ETH_HEADER_BYTES",
    "SCENARIO_DIR", "AlgoCatalog", "Bottleneck", "Flow", "Scenario", "ScenarioError", "apply_override",
    "apply_profile", "find_scenario", "frames_in", "load_raw", "parse_assignment", "parse_value", "prepare_raw",
    "strip_sweep", "time_after_last_start_s", "validate",
]
