"""Progress off a terminal and interruption, without root: a sweep's runs come from a fake executor that
writes synthetic run directories. Off a terminal each finished run logs '[k/N] ..., ETA ...' after an
estimate at the start; Ctrl-C reports what was kept and the command that resumes; compare's default
results directory has no timestamp, so rerunning it resumes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bbrbench import cli, progress, sweep
from bbrbench.errors import RunsInterrupted
from bbrbench.experiments import compare
from bbrbench.scenario import AlgoCatalog
from benchutil import FakeExecutor

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr"}), bbrkit=frozenset({"bbr1"}))


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def messages() -> Iterator[list[str]]:
    """What bbrbench logs at INFO and above (its logger does not propagate once the CLI has set it up)."""
    handler = Collect()
    logger = logging.getLogger("bbrbench")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def _compare_plan(*argv: str) -> sweep.Plan:
    args = cli.build_parser().parse_args(["compare", *argv])
    _, raw = cli.common.load_scenario(args)
    return compare.plan_runs(raw, CATALOG, args.algos, args.reps)


def test_estimates_and_eta() -> None:
    assert [progress.duration(s) for s in (0, 35.4, 100, 3600 * 4.3)] == ["0s", "35s", "1m40s", "4h18m"]
    now = [0.0]
    counter = progress.RunCounter([5.0] * 4, clock=lambda: now[0])
    assert counter.estimate() == "24s"       # 4 x (5 s + 1 s set-up)
    now[0] = 12.0                           # the first run took twice its nominal 6 s: so will the rest
    assert counter.finished("bbr, 1 flow, rep 1 done", 5.0) == "[1/4] bbr, 1 flow, rep 1 done, ETA 36s"


def test_off_a_terminal_each_run_logs_a_line(tmp_path: Path, messages: list[str]) -> None:
    plan_ = _compare_plan("cubic", "--reps", "2", "--set", "duration_s=4")
    sweep.run_sweep(plan_, tmp_path / "cmp", CATALOG, FakeExecutor(), describe=compare.point_name)
    # 2 algorithms x 2 cases x 2 repetitions of 4 s, each with a second of set-up: 40 s.
    assert "sweep compare: 8 run(s), 8 to do, about 40s" in messages
    lines = [m for m in messages if m.startswith("[")]
    assert [line.split(", ETA ")[0] for line in lines[:3]] == [
        "[1/8] bbr, 1 flow, rep 1 done", "[2/8] cubic, 1 flow, rep 1 done", "[3/8] bbr, 2 flows, rep 1 done"]
    assert len(lines) == 8 and lines[-1].endswith(", ETA 0s")


def test_ctrl_c_keeps_the_finished_runs(tmp_path: Path) -> None:
    plan_ = _compare_plan("cubic", "--reps", "2", "--set", "duration_s=4")
    out = tmp_path / "cmp"
    with pytest.raises(RunsInterrupted) as info:
        sweep.run_sweep(plan_, out, CATALOG, FakeExecutor(stop_at=3))
    assert (info.value.kept, info.value.total, info.value.out) == (3, 8, out)
    assert len(sweep.pending(plan_, out)) == 5


def test_interrupted_command_says_how_to_resume(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(_args: object) -> int:
        raise RunsInterrupted(3, 42, Path("results/compare-quick"))

    monkeypatch.setattr(cli.compare, "run", interrupted)
    assert cli.main(["compare", "--profile", "quick", "bbr", "bbr1"]) == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err == ("bbrbench: interrupted; kept 3/42 runs in results/compare-quick; resume with "
                                       "bbrbench compare --profile quick bbr bbr1 --out results/compare-quick\n")
    assert cli.main(["compare", "--out", "x y"]) == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err.endswith("resume with bbrbench compare --out 'x y'\n")


def test_compare_default_out_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from bbrbench.testbed import system
    outs: list[Path] = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(system, "catalog", lambda: CATALOG)
    monkeypatch.setattr(cli.compare, "need_root", lambda: None)
    monkeypatch.setattr(compare, "run", lambda _plan, _catalog, out, _delay: outs.append(out) or "table")
    for _ in range(2):
        assert cli.main(["-q", "compare", "--profile", "quick"]) == 0
    assert outs == [tmp_path / "results" / "compare-quick"] * 2
    assert cli.main(["-q", "compare"]) == 0 and outs[-1] == tmp_path / "results" / "compare-default"
