"""Errors every layer raises; the command line turns each into a one-line message and an exit status."""

from pathlib import Path


class HarnessError(RuntimeError):
    """A run that cannot go on; the message is one line."""


class NotRunnable(HarnessError):
    """The scenario needs something this kernel or machine lacks (an AQM qdisc, a delay mechanism)."""


class UsageError(ValueError):
    """A command-line value out of range; reported like argparse's own errors (exit status 2)."""


class RunsInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a resumable experiment (sweep, compare, reproduce, fidelity): its finished
    runs stay in `out`, and rerunning with that --out does only the others."""

    def __init__(self, kept: int, total: int, out: Path) -> None:
        super().__init__(f"kept {kept}/{total} runs in {out}")
        self.kept = kept
        self.total = total
        self.out = out


class RunsLost(HarnessError):
    """Runs an experiment's executor lost (a worker or the scheduler died, a run hung): not answers about
    the runs, so the command fails; the finished runs stay in `out` and rerunning does only the others."""

    def __init__(self, lost: int, total: int, out: Path, why: str) -> None:
        super().__init__(f"{lost}/{total} runs lost ({why}); finished runs kept in {out}")
        self.lost = lost
        self.total = total
        self.out = out
        self.why = why
