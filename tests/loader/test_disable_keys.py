"""BBRCTL_DISABLE's keys are one table (loader/bbrctl.h): bbrctl accepts exactly those, refuses any other
before it does anything (a typo would leave on a piece the caller believes off), and the man page and
docs/reference.md list the same keys. No root: the refusals come before any privilege is needed, and a
refused attach runs as an unprivileged user."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from loaderutil import ctl
from netutil import ROOT

GEN = ROOT / "build" / "bbrctl-gen"
REFERENCE = ROOT / "docs" / "reference.md"
ENV = "BBRCTL_DISABLE"
EXIT_USAGE = 2
KEY_LINE = re.compile(r"^  (\S+) +\S", re.M)  # "  map-iter       attach: ..." in the key list


def man_keys() -> list[str]:
    man = subprocess.run([str(GEN), "man"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"^\.SH ENVIRONMENT\n(.*?)^\.SH ", man, re.S | re.M)
    assert found, "bbrctl(8) lost its ENVIRONMENT section"
    return KEY_LINE.findall(found.group(1).replace("\\-", "-"))


def reference_keys() -> list[str]:
    found = re.search(r"^<!-- disable keys: .*? -->\n(.*?)^<!-- end disable keys -->", REFERENCE.read_text(),
                      re.S | re.M)
    assert found, "docs/reference.md lost its BBRCTL_DISABLE key list markers"
    return KEY_LINE.findall(found.group(1))


def run_with(value: str, *args: str, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    """bbrctl ARGS with BBRCTL_DISABLE=value."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(ENV, value)
        return ctl(*args, unprivileged=unprivileged)


def known_in_refusal() -> list[str]:
    """The keys as bbrctl's refusal of an unknown one names them: the table's, in its order."""
    result = run_with("no-such-key", "list")
    found = re.search(r"\(known: (.*)\)$", result.stderr.strip())
    assert result.returncode == EXIT_USAGE and found, result.stderr
    return found.group(1).split(", ")


def test_man_page_and_reference_list_the_keys_bbrctl_knows() -> None:
    known = known_in_refusal()
    assert len(known) == len(set(known)) > 1
    assert man_keys() == known, "bbrctl(8) ENVIRONMENT: not generated from the key table"
    assert reference_keys() == known, "docs/reference.md: paste the output of build/bbrctl-gen disable-keys"


def test_every_key_is_accepted_alone_and_together() -> None:
    keys = known_in_refusal()
    for value in [*keys, ",".join(keys)]:
        result = run_with(value, "list")
        assert result.returncode == 0 and result.stderr == "", (value, result.stderr)


@pytest.mark.parametrize("value", [",trace,,walk,", ",", ""], ids=["empty items", "only a comma", "empty"])
def test_empty_items_mean_nothing(value: str) -> None:
    result = run_with(value, "list")
    assert result.returncode == 0 and result.stderr == ""


# A command line that would otherwise run: each fails with exit 1 (not root) or prints, so exit 2 with one
# line and nothing on stdout shows the variable is checked before the command does anything.
@pytest.mark.parametrize("args", [["list"], ["features"], ["attach", "bbr1"], ["show", "bbr3"]],
                         ids=lambda a: " ".join(a))
def test_unknown_key_is_refused_before_the_command(args: list[str]) -> None:
    result = run_with("trace,,fentyr,walk", *args, unprivileged=True)
    known = ", ".join(known_in_refusal())
    assert result.returncode == EXIT_USAGE and result.stdout == ""
    assert result.stderr == f"bbrctl: {' '.join(args)}: {ENV}: unknown key 'fentyr' (known: {known})\n"


def test_unknown_key_under_json_is_one_json_document() -> None:
    result = run_with("Trace", "-j", "list")  # a key is matched exactly
    assert result.returncode == EXIT_USAGE and len(result.stderr.splitlines()) == 1
    doc = json.loads(result.stdout)
    assert doc["exit_status"] == EXIT_USAGE and doc["command"] == "list"
    assert doc["error"].startswith(f"{ENV}: unknown key 'Trace' (known: ")
