"""bbrkit algorithms a run uses: attached with the scenario's parameters, shared with concurrent runs
(the last live user detaches and restores), recorded in the run's state file so a crashed run is undone."""

from __future__ import annotations

import logging

from ..errors import HarnessError
from ..scenario import Scenario
from .runstate import RunState, live_states, state_lock
from .system import bbrctl, bbrkit_attached, bbrkit_params, format_param

log = logging.getLogger(__name__)


def prepare_bbrkit(scenario: Scenario, bbrkit: frozenset[str], state: RunState) -> None:
    """Attach the bbrkit algorithms the flows use, with the scenario's parameters (see use_bbrkit)."""
    wanted: dict[str, dict[str, float]] = {}
    for flow in scenario.flows:
        if flow.algo in bbrkit:
            wanted.setdefault(flow.algo, flow.params)
    use_bbrkit(wanted, state)


def use_bbrkit(wanted: dict[str, dict[str, float]], state: RunState) -> None:
    """Attach each wanted bbrkit algorithm and set every parameter (the given value, else the default, so
    results do not depend on what an earlier session left set), recording in `state` how to undo it.

    Attachments and parameters are global to the machine: a concurrent run may already use an algorithm.
    It is shared when both want the same parameters and refused otherwise, since each would corrupt the
    other's results. undo_bbrkit() is the counterpart."""
    if not wanted:
        return
    with state_lock():
        others = live_states(excluding=state.prefix)
        attached = bbrkit_attached()
        for algo, params in wanted.items():
            settings = {**bbrkit_params(algo, "default"), **params}
            sharing = [o for o in others if algo in o.uses]
            for other in sharing:
                if other.uses[algo] != settings:
                    raise HarnessError(f"{algo} is in use by run {other.prefix} with other parameters "
                                       f"({other.uses[algo]}); run these one at a time")
            state.uses[algo] = settings
            if algo not in attached:
                state.attached.append(algo)
                state.save()
                bbrctl("attach", algo)
            if settings and not sharing:
                state.restore_params[algo] = bbrkit_params(algo)
                state.save()
                bbrctl("set", algo, *(f"{k}={format_param(v)}" for k, v in settings.items()))
            state.save()


def undo_bbrkit(state: RunState) -> None:
    """Restore parameters and detach what this run attached, unless a live run still uses the algorithm:
    then that run inherits the duty."""
    with state_lock():
        others = live_states(excluding=state.prefix)
        for algo in set(state.restore_params) | set(state.attached):
            heir = next((o for o in others if algo in o.uses), None)
            if heir is not None:
                if algo in state.restore_params:
                    heir.restore_params.setdefault(algo, state.restore_params[algo])
                if algo in state.attached and algo not in heir.attached:
                    heir.attached.append(algo)
                heir.save()
                continue
            if algo not in bbrkit_attached():
                continue  # never attached (attach failed) or detached by hand: nothing to undo
            params = state.restore_params.get(algo)
            if params:
                try:
                    bbrctl("set", algo, *(f"{k}={format_param(v)}" for k, v in params.items()))
                except HarnessError as exc:
                    log.warning("restoring %s parameters: %s", algo, exc)
            if algo in state.attached:
                try:
                    bbrctl("detach", algo)
                except HarnessError as exc:
                    log.warning("detaching %s: %s", algo, exc)
