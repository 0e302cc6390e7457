"""Which bbrbench made a result and how it was started: the version, the git revision of the checkout it
runs from (an editable install; none for an installed copy) and the command line. Recorded in every run's
scenario.json, in compare.json and in a reproduction's meta.json; printed by `bbrbench --version`."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from . import __version__

# bench/bbrbench/provenance.py -> the repository root, when the package runs from a checkout.
CHECKOUT = Path(__file__).resolve().parents[2]
_argv: list[str] = []


def set_command(argv: Sequence[str]) -> None:
    """The arguments this process was started with (cli.main's, which may differ from sys.argv in tests)."""
    _argv[:] = list(argv)


def command_line(argv: Sequence[str] | None = None) -> str:
    return shlex.join(["bbrbench", *(_argv if argv is None else argv)])


def git_revision(repo: Path) -> str:
    """HEAD's commit, marked '-dirty' when tracked files differ from it (untracked files do not count)."""
    try:
        rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "diff", "--quiet", "HEAD", "--"],
                               capture_output=True).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("-dirty" if dirty else "")


@cache
def revision() -> str | None:
    """The checkout's revision when bbrbench runs from one (its pyproject.toml beside a .git), else None."""
    if not ((CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / ".git").exists()):
        return None
    return git_revision(CHECKOUT)


def version_line() -> str:
    rev = revision()
    return f"bbrbench {__version__}" + (f" (git {rev})" if rev else "")


@cache
def tree_state() -> str | None:
    """'clean', or for a checkout whose tracked files differ from HEAD 'dirty' and the SHA-256 of that
    difference (two dirty trees at one revision are told apart); None outside a checkout."""
    if revision() is None:
        return None
    try:
        diff = subprocess.run(["git", "-C", str(CHECKOUT), "diff", "HEAD", "--"], capture_output=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"dirty {hashlib.sha256(diff).hexdigest()}" if diff else "clean"


def record() -> dict[str, Any]:
    return {"version": __version__, "revision": revision(), "tree": tree_state(), "command": command_line()}


# A run started for another bbrbench (a cluster worker's, for the client's sweep) gets that one's record
# here as JSON: the invocation its repetitions belong to is the submitting command, not the worker's.
SUBMITTED_ENV = "BBRBENCH_SUBMITTED_BY"


def submitted() -> dict[str, Any]:
    """The record of the bbrbench whose command this run belongs to: the submitting client's on a worker,
    else this process's own."""
    given = os.environ.get(SUBMITTED_ENV)
    return json.loads(given) if given else record()
