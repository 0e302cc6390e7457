"""What bbrctl knows without root or an attachment: `list --json` describes every parameter from the tables
compiled into bbrctl, and `show --json` does the same for a detached algorithm, so bbrbench checks ranges
at validation time for any user."""
from __future__ import annotations

import json
import subprocess

import pytest

from loaderutil import ALGOS, ctl
from netutil import available_ccs

PARAM_KEYS = ["name", "field", "kind", "unit", "default", "min", "max", "usual_min", "usual_max", "help"]


def as_user(*args: str) -> subprocess.CompletedProcess[str]:
    """bbrctl as an unprivileged user: nobody when the tests run as root, else the tests' own user."""
    return ctl(*args, unprivileged=True)


def listed() -> dict[str, dict]:
    result = as_user("list", "--json")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return {a["name"]: a for a in json.loads(result.stdout)["algorithms"]}


def test_list_json_describes_every_parameter_without_root() -> None:
    algos = listed()
    assert sorted(algos) == sorted(ALGOS)
    assert algos["bbr1"]["params"] == []
    for a in algos.values():
        assert a["attached"] in (True, False, None)  # None: registered, and only root can read the pins
        assert a["attached"] is not True or a["registered"]
        for p in a["params"]:
            assert list(p) == PARAM_KEYS
            assert p["kind"] in ("ratio", "uint", "bool")
            assert p["min"] <= p["default"] <= p["max"]
            assert (p["usual_min"] is None) == (p["usual_max"] is None)
    alpha = next(p for p in algos["bbr_rttgain"]["params"] if p["name"] == "alpha")
    assert alpha == {"name": "alpha", "field": "alpha_permille", "kind": "ratio", "unit": "ratio", "default": 1.0,
                     "min": 0.004, "max": 1.0, "usual_min": 0.1, "usual_max": 1.0,
                     "help": "cruise pacing gain = alpha x min_rtt / rtt"}
    assert [p["name"] for p in algos["bbr2"]["params"]] == [p["name"] for p in algos["bbr3"]["params"]]


def test_list_json_and_the_help_of_set_name_the_same_parameters() -> None:
    helped = {tuple(line.split()[:2]) for line in ctl("set", "--help").stdout.split("parameters (")[1].splitlines()[1:]
              if line.strip()}
    assert helped == {(name, p["name"]) for name, a in listed().items() for p in a["params"]}


def test_list_as_user_shows_the_table() -> None:
    result = as_user("list")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("ALGORITHM") and "kernel available: " in result.stdout


def test_show_json_of_a_detached_algorithm_needs_no_root() -> None:
    """Only names the kernel does not have can be known detached without root (another test may have
    attached the others)."""
    algos = listed()
    detached = [name for name in ALGOS if name not in available_ccs()]
    if not detached:
        pytest.skip("every bbrkit algorithm is registered right now")
    for name in detached:
        result = as_user("show", name, "--json")
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert json.loads(result.stdout) == {"algo": name, "attached": False, "params": algos[name]["params"]}


def test_show_json_of_a_detached_algorithm_as_root_is_the_same(detached) -> None:
    for name in ALGOS:
        detached(name)
    algos = listed()
    for name in ALGOS:
        assert json.loads(ctl("show", name, "--json").stdout) == {"algo": name, "attached": False,
                                                                   "params": algos[name]["params"]}
    assert ctl("show", "bbr_rttgain").stderr.startswith("bbrctl: show bbr_rttgain: not attached")


def test_show_json_of_an_attached_algorithm_adds_its_values(attach) -> None:
    attach("bbr_acd")
    static = {p["name"]: p for p in listed()["bbr_acd"]["params"]}
    for p in json.loads(ctl("show", "bbr_acd", "--json").stdout)["params"]:
        assert {k: p[k] for k in PARAM_KEYS} == static[p["name"]]
        assert {"value", "raw", "status", "note"} <= set(p)
