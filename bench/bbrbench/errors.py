"""Errors every layer raises; the command line turns each into a one-line message and an exit status."""


class HarnessError(RuntimeError):
    """A run that cannot go on; the message is one line."""


class NotRunnable(HarnessError):
    """The scenario needs something this kernel or machine lacks (an AQM qdisc, a delay mechanism)."""


class UsageError(ValueError):
    """A command-line value out of range; reported like argparse's own errors (exit status 2)."""
