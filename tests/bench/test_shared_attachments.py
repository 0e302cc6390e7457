"""Concurrent runs share bbrkit attachments: the last live user detaches and restores parameters, and
two runs that want different parameters for one algorithm are refused. bbrctl is intercepted here;
the real attach/detach paths are covered by the run tests."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from bbrbench.errors import HarnessError
from bbrbench.testbed import attachments, runstate
from bbrbench.testbed.runstate import RunState


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    made: list[tuple[str, ...]] = []
    monkeypatch.setattr(runstate, "STATE_DIR", tmp_path)
    monkeypatch.setattr(attachments, "bbrctl", lambda *args: made.append(args))
    monkeypatch.setattr(attachments, "bbrkit_attached", lambda: {"bbr_rttgain", "bbr1"})
    monkeypatch.setattr(attachments, "bbrkit_params",
                        lambda algo, which="value": {"alpha": 1.0} if algo == "bbr_rttgain" else {})
    return made


def live(suffix: str, **fields: object) -> RunState:
    state = RunState(prefix=f"bbrb-{os.getpid()}-{suffix}", **fields)  # type: ignore[arg-type]
    state.save()
    return state


def scenario(algo: str, **params: float) -> SimpleNamespace:
    return SimpleNamespace(flows=[SimpleNamespace(algo=algo, params=params)])


def test_a_live_user_inherits_detach_and_restore(calls: list[tuple[str, ...]]) -> None:
    heir = live("aaaa", uses={"bbr1": {}})
    mine = live("bbbb", attached=["bbr1"], uses={"bbr1": {}})
    attachments.undo_bbrkit(mine)
    assert calls == []
    inherited = RunState.load(heir.path)
    assert inherited is not None and inherited.attached == ["bbr1"]


def test_the_last_user_detaches(calls: list[tuple[str, ...]]) -> None:
    mine = live("cccc", attached=["bbr1"], uses={"bbr1": {}})
    attachments.undo_bbrkit(mine)
    assert calls == [("detach", "bbr1")]


def test_same_parameters_share_without_setting_again(calls: list[tuple[str, ...]]) -> None:
    live("dddd", uses={"bbr_rttgain": {"alpha": 0.5}})
    mine = RunState(prefix=f"bbrb-{os.getpid()}-eeee")
    attachments.prepare_bbrkit(scenario("bbr_rttgain", alpha=0.5), frozenset({"bbr_rttgain"}), mine)  # type: ignore[arg-type]
    assert calls == []
    assert mine.uses == {"bbr_rttgain": {"alpha": 0.5}} and not mine.restore_params


def test_other_parameters_are_refused(calls: list[tuple[str, ...]]) -> None:
    live("ffff", uses={"bbr_rttgain": {"alpha": 0.5}})
    mine = RunState(prefix=f"bbrb-{os.getpid()}-0000")
    with pytest.raises(HarnessError, match="in use by run .* with other parameters"):
        attachments.prepare_bbrkit(scenario("bbr_rttgain", alpha=0.75), frozenset({"bbr_rttgain"}), mine)  # type: ignore[arg-type]
    assert calls == []


def test_dead_runs_do_not_count(calls: list[tuple[str, ...]]) -> None:
    RunState(prefix="bbrb-999999999-1111", uses={"bbr1": {}}).save()  # no such pid
    mine = live("2222", attached=["bbr1"], uses={"bbr1": {}})
    attachments.undo_bbrkit(mine)
    assert calls == [("detach", "bbr1")]


def test_an_attach_that_failed_is_not_undone(calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The run records an attachment before making it; if attach then fails, clean-up must not try
    (and warn about) detaching what was never attached."""
    monkeypatch.setattr(attachments, "bbrkit_attached", lambda: set())
    mine = live("3333", attached=["bbr1"], uses={"bbr1": {}})
    attachments.undo_bbrkit(mine)
    assert calls == []
    assert capsys.readouterr().err == ""
