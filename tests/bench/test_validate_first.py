"""Every command validates what it was given before it needs root or touches anything, and says what is
wrong in the user's own words: a user without root is told an unknown name before root, bbrkit's
algorithms and their parameters' ranges are known without root (`bbrctl list --json`), so a value out of
range stops a run before anything is built, the smallest scenario the docs allow runs with a default
buffer, and `model` names its flags. Run without root (as root, bbrctl is run as nobody and this process
is told it is not root)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bbrbench import cli
from bbrbench.scenario import AlgoCatalog, validate
from bbrbench.testbed import system
from bbrbench.testbed.procs import find_binary
from benchutil import run_cli
from netutil import namespaces

NOBODY = 65534


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This process and the bbrctl it runs, without root."""
    bbrctl = find_binary("bbrctl", "BBRCTL")
    if bbrctl is None:
        pytest.skip("needs build/bbrctl (make)")
    if os.geteuid() == 0:
        wrapper = tmp_path / "bbrctl"
        wrapper.write_text(f'#!/bin/sh\nexec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups {bbrctl} "$@"\n')
        wrapper.chmod(0o755)
        monkeypatch.setenv("BBRCTL", str(wrapper))
        monkeypatch.setattr(os, "geteuid", lambda: NOBODY)


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_bbrkit_names_and_ranges_without_root(as_user: None) -> None:
    catalog = system.catalog()
    assert {"bbr1", "bbr_acd"} <= catalog.bbrkit and "cubic" in catalog.kernel
    assert not catalog.bbrkit & catalog.kernel
    assert catalog.params["bbr_rttgain"]["alpha"] == (0.004, 1.0)
    assert catalog.params["bbr_acd"]["steady_acks"] == (2.0, 255.0)
    assert catalog.params["bbr1"] == {}


def test_check_as_user_knows_bbrkit_algorithms(as_user: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(capsys, "check", "smoke", "flows.0.algo=bbr1")
    assert code == 0, err
    assert json.loads(out)["flows"][0]["algo"] == "bbr1"
    assert "unknown" not in err


@pytest.mark.parametrize("who", ["user", "this process"])
def test_a_parameter_out_of_range_fails_before_anything_is_built(who: str, request: pytest.FixtureRequest,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The range comes from bbrctl's compiled-in table, for any user: run and sweep stop at validation, before
    root is asked for and before a namespace or the output directory exists."""
    if who == "user":
        request.getfixturevalue("as_user")
    elif find_binary("bbrctl", "BBRCTL") is None:
        pytest.skip("needs build/bbrctl (make)")
    for argv in (("run", "smoke", "flows.0.algo=bbr_rttgain", "flows.0.params.alpha=7", "--out", str(tmp_path / "r")),
                 ("sweep", "smoke", "flows.0.algo=bbr_rttgain", "--grid", "flows.0.params.alpha=[0.5,7]",
                  "--out", str(tmp_path / "s"))):
        code, _, err = _main(capsys, *argv)
        assert code == 2, err
        assert "flows[0].params.alpha: must be between 0.004 and 1 (got 7)" in err and "root" not in err
    assert namespaces(f"bbrb-{os.getpid()}-") == []
    assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()


def test_run_and_compare_as_user_ask_for_root_not_call_bbr1_unknown(as_user: None, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (("run", "smoke", "flows.0.algo=bbr1", "--out", str(tmp_path / "run")),
                 ("compare", "bbr1", "--out", str(tmp_path / "cmp"))):
        code, _, err = _main(capsys, *argv)
        assert code == 1 and "must run as root" in err and "unknown" not in err, err
    assert not (tmp_path / "run").exists() and not (tmp_path / "cmp").exists()


def test_compare_names_an_unknown_algorithm_before_root(as_user: None, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(capsys, "compare", "bbr9", "--out", str(tmp_path / "cmp"))
    assert code == 2 and "unknown congestion control bbr9" in err and "must run as root" not in err
    assert "bbr1" in err, "the available list includes bbrkit's names"
    code, _, err = _main(capsys, "check", "smoke", "flows.0.algo=bbr9")
    assert code == 2 and "flows[0].algo: unknown congestion control 'bbr9'" in err
    assert not (tmp_path / "cmp").exists()


def test_smallest_scenario_gets_a_default_buffer(tmp_path: Path) -> None:
    """A rate and one flow, nothing else: no delay, so 1 BDP is no packet; the default is TCP's initial
    window instead of an error about bottleneck.buffer_bdp, a key the user never wrote."""
    catalog = AlgoCatalog(kernel=frozenset({"cubic"}), bbrkit=frozenset())
    scenario = validate({"bottleneck": {"rate_mbit": 50}, "flows": [{"algo": "cubic"}]}, catalog)
    assert scenario.bottleneck.buffer_packets == 10 and scenario.bottleneck.buffer_bdp is None
    # Where 1 BDP is more than that, the default stays 1 BDP: 50 Mbit/s x 20 ms = 125,000 bytes = 83 packets.
    scenario = validate({"bottleneck": {"rate_mbit": 50}, "senders": [{"rtt_ms": 20}], "flows": [{"algo": "cubic"}]},
                        catalog)
    assert scenario.bottleneck.buffer_packets == 83 and scenario.bottleneck.buffer_bdp == 1.0
    path = tmp_path / "tiny.toml"
    path.write_text('[bottleneck]\nrate_mbit = 50\n[[flows]]\nalgo = "cubic"\n')
    res = run_cli("check", str(path))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["bottleneck"]["buffer_packets"] == 10


@pytest.mark.parametrize(("args", "message"), [
    (("--bbr", "0", "--queue-bdp", "2"), "--bbr: must be >= 1 (got 0)"),
    (("--bbr", "1", "--queue-bdp", "0"), "--queue-bdp: must be > 0 (got 0.0)"),
    (("--bbr", "1", "--queue-bdp", "2", "--rtt-ms", "-5"), "--rtt-ms: must be > 0 (got -5.0)"),
    (("--bbr", "1", "--queue-bdp", "2", "--duration-s", "0"), "--duration-s: must be > 0 (got 0.0)"),
])
def test_model_names_its_flags(args: tuple[str, ...], message: str) -> None:
    res = run_cli("model", *args)
    assert res.returncode == 2 and res.stderr.strip() == f"bbrbench: {message}"


def test_reproduce_and_fidelity_validate_before_root(as_user: None, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(capsys, "reproduce", "--only", "seed9", "--out", str(tmp_path / "repro"))
    assert code == 2 and "--only seed9: no such seed or experiment" in err
    code, _, err = _main(capsys, "fidelity", "duration_s=-1", "--out", str(tmp_path / "fid"))
    assert code == 2 and "duration_s: must be > 0" in err
    code, _, err = _main(capsys, "fidelity", "--out", str(tmp_path / "fid"))
    assert code == 1 and "must run as root" in err
    assert not list(p for p in tmp_path.iterdir() if p.name != "bbrctl")
