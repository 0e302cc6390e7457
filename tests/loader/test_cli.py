"""bbrctl's command line: every subcommand takes -v and --help the same way, --version names the
build, and the help, the man page and the completion come from one command table."""
from __future__ import annotations

import re
import subprocess

import pytest

from loaderutil import ALGOS, ctl
from netutil import ROOT

COMMANDS = ["list", "attach", "detach", "upgrade", "show", "set", "flows", "trace", "features"]
GEN = ROOT / "build" / "bbrctl-gen"


def test_main_help_lists_every_command_and_algorithm() -> None:
    out = ctl("--help").stdout
    listed = re.findall(r"^  (\w+) ", out.split("commands")[1], re.M)
    assert listed == COMMANDS
    assert all(a in out for a in ALGOS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_takes_v(command: str) -> None:
    for flag in ("--help", "-h"):
        result = ctl(command, flag)
        assert result.returncode == 0 and result.stderr == ""
        assert result.stdout.startswith(f"usage: bbrctl {command} [-v]")
        assert "-v, --verbose" in result.stdout
    # -v parses like any other option: a usage error that follows is still reported as such.
    bad = ctl(command, "-v", "--bogus")
    assert bad.returncode == 1 and bad.stderr == (
        f"bbrctl: {command}: unknown option '--bogus' (usage: {bad.stderr.split('(usage: ')[1]}")


def test_version_is_git_describe_of_the_build() -> None:
    result = ctl("--version")
    described = subprocess.run(["git", "-C", str(ROOT), "describe", "--tags", "--always"], capture_output=True,
                               text=True).stdout.strip()
    assert result.returncode == 0 and result.stdout.startswith(f"bbrctl {described}")


def test_record_keys_of_trace_help_match_the_output_header() -> None:
    keys = [line.split()[0] for line in ctl("trace", "--help").stdout.split("record keys")[1].splitlines()[1:]
            if line.strip()]
    assert keys[:3] == ["t_ns", "algo", "event"]
    assert {"min_rtt_us", "srtt_us", "rtt_gain", "acd_halvings"} <= set(keys)
    assert len(keys) == len(set(keys))
