"""bbrctl's error paths: each bad input gets one line on stderr that names the problem, exit status 2
(a usage error) or 1 (a failure), nothing on stdout (under --json one error object), and no change to
pins, registrations or parameters."""
from __future__ import annotations

import json

import pytest

from loaderutil import ctl, snapshot

# (arguments, text the error must contain)
BAD_INPUT = [
    (["attach", "nope"], "unknown algorithm 'nope'"),
    (["detach", "nope"], "unknown algorithm 'nope'"),
    (["show", "nope"], "unknown algorithm 'nope'"),
    (["set", "nope", "alpha=1"], "unknown algorithm 'nope'"),
    (["flows", "nope"], "unknown algorithm 'nope'"),
    (["trace", "nope"], "unknown algorithm 'nope'"),
    (["set", "bbr_rttgain", "alpha"], "'alpha' is not KEY=VALUE"),
    (["set", "bbr_rttgain", "=1"], "'=1' is not KEY=VALUE"),
    (["set", "bbr_rttgain", "alpha:1"], "'alpha:1' is not KEY=VALUE"),
    (["set", "bbr_rttgain"], "missing KEY=VALUE"),
    (["set", "bbr_rttgain", "beta=1"], "unknown parameter 'beta'"),
    (["set", "bbr_rttgain", "alpha=1.5"], "alpha: 1.5 is out of range (allowed 0.004 to 1.0)"),
    (["set", "bbr_rttgain", "alpha=0"], "alpha: 0 is out of range"),
    (["set", "bbr_rttgain", "alpha=abc"], "alpha: 'abc' is not a decimal number"),
    (["set", "bbr_rttgain", "alpha=1e3"], "alpha: '1e3' is not a decimal number"),
    (["set", "bbr_rttgain", "alpha=-0.5"], "alpha: '-0.5' is not a decimal number"),
    (["set", "bbr_rttgain", "alpha=0.7505"], "more than 3 decimal places"),
    (["set", "bbr_rttgain", "alpha=0.5", "alpha=0.6"], "alpha given more than once"),
    # A valid key before the bad one must not be written either.
    (["set", "bbr_rttgain", "alpha=0.5", "probe_exit=9"], "probe_exit: 9 is out of range (allowed 1.0 to 8.0"),
    (["set", "bbr_rttgain", "gain_floor=1.001"], "gain_floor: 1.001 is out of range"),
    (["set", "bbr_acd", "steady_acks=1"], "steady_acks: 1 is out of range (allowed 2 to 255"),
    (["set", "bbr_acd", "steady_acks=2.5"], "steady_acks: '2.5' is not a non-negative integer"),
    (["set", "bbr_acd", "halve_once=2"], "halve_once: '2' is not 0, 1, on or off"),
    (["set", "bbr_acd", "tolerance_us=1000001"], "tolerance_us: 1000001 is out of range"),
    (["set", "bbr_acd", "tolerance_us=99999999999"], "tolerance_us: 99999999999 is out of range"),
    (["set", "bbr_acd", "rtt_factor=0.999"], "rtt_factor: 0.999 is out of range"),
    (["set", "bbr1", "x=1"], "bbr1 has no parameters"),
    (["detach", "bbr1"], "not attached"),
    (["flows", "bbr1"], "bbr1 is not attached"),
    (["trace", "bbr1"], "bbr1 is not attached"),
    (["list", "--bogus"], "unknown option '--bogus'"),
    (["list", "extra"], "unexpected argument 'extra'"),
    (["attach", "--bogus", "bbr1"], "unknown option '--bogus'"),
    (["attach"], "missing ALGO"),
    (["attach", "bbr1", "bbr_acd"], "expected one ALGO"),
    (["show", "bbr_rttgain", "--yaml"], "unknown option '--yaml'"),
    (["trace", "--format", "xml", "bbr_rttgain"], "unknown format 'xml'"),
    (["trace", "bbr_rttgain", "--out"], "needs a value"),
    (["-x", "list"], "unknown option '-x'"),
    (["frob"], "unknown command 'frob'"),
    ([], "missing command"),
]


def assert_rejected(result, expected: str) -> None:
    lines = result.stderr.splitlines()
    # A failure of the command (1) against a bad command line (2): only these fail on a valid line.
    failures = ("not attached", "must be run as root")
    assert result.returncode == (1 if any(f in expected for f in failures) else 2), result.stderr
    assert result.stdout == ""
    assert len(lines) == 1 and lines[0].startswith("bbrctl: "), result.stderr
    assert expected in lines[0], lines[0]


@pytest.mark.parametrize("args,expected", BAD_INPUT, ids=[" ".join(a) or "none" for a, _ in BAD_INPUT])
def test_bad_input_is_rejected_and_changes_nothing(args: list[str], expected: str, attach, detached) -> None:
    attach("bbr_rttgain")
    attach("bbr_acd")
    detached("bbr1")
    before = snapshot()
    assert_rejected(ctl(*args), expected)
    assert snapshot() == before


@pytest.mark.parametrize("args,expected,status", [(["flows", "--json", "nope"], "unknown algorithm 'nope'", 2),
                                                  (["-j", "show", "bbr9"], "unknown algorithm 'bbr9'", 2),
                                                  (["-j", "flows", "bbr1"], "bbr1 is not attached", 1)],
                         ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_json_errors_are_an_error_object(args: list[str], expected: str, status: int, detached) -> None:
    detached("bbr1")
    detached("bbr_rttgain")
    result = ctl(*args)
    assert result.returncode == status and len(result.stderr.splitlines()) == 1
    doc = json.loads(result.stdout)
    assert expected in doc["error"] and doc["exit_status"] == status


def test_flows_with_nothing_attached_is_an_empty_list(detached) -> None:
    for algo in ("bbr1", "bbr_rttgain", "bbr_acd", "bbr2", "bbr3"):
        detached(algo)
    for args in (["flows", "--json"], ["-j", "flows"]):
        result = ctl(*args)
        assert result.returncode == 0 and json.loads(result.stdout) == {"flows": []}
        assert result.stderr == "bbrctl: flows: warning: no bbrkit algorithm is attached\n"
    table = ctl("flows")
    assert table.returncode == 0 and len(table.stdout.splitlines()) == 1   # the header


def test_non_root_gets_a_json_error_object(detached) -> None:
    result = ctl("-j", "flows", unprivileged=True)
    assert result.returncode == 1 and "must be run as root" in json.loads(result.stdout)["error"]


def test_set_on_a_detached_algorithm_says_so(detached) -> None:
    detached("bbr_rttgain")
    before = snapshot()
    assert_rejected(ctl("set", "bbr_rttgain", "alpha=0.5"), "not attached")
    assert_rejected(ctl("show", "bbr_rttgain"), "not attached")
    assert snapshot() == before


# list, and show --json of a detached algorithm, need no root (test_catalog.py).
@pytest.mark.parametrize("args", [["attach", "bbr1"], ["detach", "bbr_rttgain"], ["set", "bbr_rttgain", "alpha=0.5"],
                                  ["show", "bbr_rttgain"], ["show", "bbr_rttgain", "--json"], ["show", "bbr1"],
                                  ["flows"], ["trace"], ["features"]],
                         ids=lambda a: " ".join(a))
def test_non_root_is_told_to_be_root(args: list[str], attach, detached) -> None:
    attach("bbr_rttgain")
    detached("bbr1")
    before = snapshot()
    result = ctl(*args, unprivileged=True)
    if "--json" in args:  # the error is the one JSON document on stdout
        assert result.returncode == 1 and "must be run as root" in json.loads(result.stdout)["error"]
    else:
        assert_rejected(result, "must be run as root")
    assert snapshot() == before


@pytest.mark.parametrize("command", ["list", "attach", "detach", "show", "set", "flows", "trace", "features"])
def test_every_subcommand_has_help(command: str) -> None:
    result = ctl(command, "--help")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith(f"usage: bbrctl {command}")


def _commands_taking_algo() -> list[str]:
    """The commands whose usage line starts its positionals with one ALGO (the table's takes_algo)."""
    listing = ctl("--help").stdout.split("commands (each has --help):\n")[1].split("\n\n")[0]
    names = [line.split()[0] for line in listing.splitlines()]
    return [n for n in names if ctl(n, "--help").stdout.splitlines()[0].rsplit("] ", 1)[-1].startswith("ALGO")]


def test_every_command_taking_one_algo_rejects_an_unknown_one_alike() -> None:
    """The parser resolves ALGO once for every such command: the same one-line usage error, context
    'bbrctl: CMD:', exit status 2, nothing on stdout, and under --json the same error document."""
    takes = _commands_taking_algo()
    assert set(takes) == {"attach", "detach", "upgrade", "show", "set"}
    known = ctl("attach", "nope").stderr.split("(known: ")[1]
    for cmd in takes:
        extra = ["alpha=1"] if cmd == "set" else []
        result = ctl(cmd, "nope", *extra)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == f"bbrctl: {cmd}: unknown algorithm 'nope' (known: {known}"
    doc = json.loads(ctl("-j", "show", "nope").stdout)
    assert doc == {"error": f"unknown algorithm 'nope' (known: {known.rstrip()[:-1]})", "command": "show",
                   "exit_status": 2}
