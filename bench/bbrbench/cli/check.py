"""bbrbench check: a scenario validated and resolved, nothing run."""

from __future__ import annotations

import argparse
import json

from .common import add_scenario_args, emit, load_scenario

HELP = "validate a scenario and print it resolved"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..scenario import validate
    from ..testbed import system
    _, raw = load_scenario(args)
    scenario = validate(raw, system.catalog())
    emit(json.dumps(scenario.to_dict(), indent=2))
    return 0
