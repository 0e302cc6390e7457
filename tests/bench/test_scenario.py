"""Scenario validation: bad input is refused with one line naming the key; good input resolves as documented."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bbrbench.analysis.metrics import RunInfo
from bbrbench.scenario import (
    SCENARIO_DIR,
    AlgoCatalog,
    Scenario,
    ScenarioError,
    apply_override,
    apply_profile,
    load_raw,
    parse_value,
    validate,
)
from benchutil import popen_cli, run_cli
from netutil import namespaces

CATALOG = AlgoCatalog(kernel=frozenset({"cubic", "bbr", "reno"}), bbrkit=frozenset({"bbr_rttgain"}),
                      params={"bbr_rttgain": {"alpha": (0.001, 1.0), "probe_exit": (1.0, 8.0)}})
BASE: dict[str, Any] = {
    "name": "t", "duration_s": 10,
    "bottleneck": {"rate_mbit": 10, "buffer_packets": 20},
    "senders": [{"name": "a", "rtt_ms": 40}],
    "flows": [{"algo": "cubic"}],
}


def raw(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        apply_override(data, key.replace("__", "."), value)
    return data


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        validate(data, CATALOG)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("data, key", [
    (raw(bottleneck__rate_mbit=0), "bottleneck.rate_mbit: must be > 0"),
    (raw(bottleneck__rate_mbit="fast"), "bottleneck.rate_mbit: expected a number"),
    (raw(bottleneck__buffer_packets=0), "bottleneck.buffer_packets: must be >= 1"),
    (raw(bottleneck__buffer_packets=2.5), "bottleneck.buffer_packets: expected an integer"),
    (raw(bottleneck__colour="red"), "bottleneck.colour: unknown key"),
    (raw(duartion_s=5), "duartion_s: unknown key"),
    (raw(flows__0__algo="vegas"), "flows[0].algo: unknown congestion control 'vegas'"),
    (raw(flows__0__sender="b"), "flows[0].sender: no sender named 'b'"),
    (raw(flows__0__count=0), "flows[0].count: must be >= 1"),
    (raw(flows__0__start_s=10), "flows[0].start_s: flow starts at 10 s, after the run ends"),
    (raw(flows__0__duration_s=2.5), "flows[0].duration_s: iperf3 runs whole seconds"),
    (raw(flows__0__params={"alpha": 0.5}), "flows[0].params: only bbrkit algorithms take parameters"),
    (raw(flows__0__algo="bbr_rttgain", flows__0__params={"beta": 1}),
     "flows[0].params.beta: bbr_rttgain has no such parameter"),
    (raw(flows__0__algo="bbr_rttgain", flows__0__params={"alpha": 2}),
     "flows[0].params.alpha: must be between 0.001 and 1"),
    (raw(senders=[{"name": "a", "rtt_ms": 40, "delay_fwd_ms": 3}]),
     "senders[0].delay_fwd_ms: conflicts with senders[0].rtt_ms"),
    (raw(senders__0__rtt_ms=-1), "senders[0].rtt_ms: must be >= 0"),
    (raw(bottleneck__aqm="red"), "bottleneck.aqm: must be one of"),
    (raw(bottleneck__loss_pct=100), "bottleneck.loss_pct: must be in [0, 100)"),
    (raw(trace="yes"), "trace: expected true or false"),
    (raw(flows=[]), "flows: needs at least one flow"),
    (raw(socket__buffer_bytes=100), "socket.buffer_bytes: must be >= 1514"),
])
def test_rejects_with_key(data: dict[str, Any], key: str) -> None:
    assert error_of(data).startswith(key)


def test_buffer_under_one_packet_in_bdp_and_bytes() -> None:
    data = raw()
    del data["bottleneck"]["buffer_packets"]
    data["bottleneck"]["buffer_bdp"] = 0.01   # 0.01 x 50 kB = 500 bytes
    assert error_of(data).startswith("bottleneck.buffer_bdp: buffer under one packet")
    data["bottleneck"] = {"rate_mbit": 10, "buffer_bytes": 1000}
    assert error_of(data).startswith("bottleneck.buffer_bytes: buffer under one packet")


def test_two_buffer_kinds_conflict_in_a_file_but_an_override_replaces() -> None:
    data = raw()
    data["bottleneck"]["buffer_bytes"] = 30000
    assert error_of(data).startswith("bottleneck.buffer_bytes: conflicts with bottleneck.buffer_packets")
    s = validate(raw(bottleneck__buffer_bytes=30000, flows__0__bytes=5000), CATALOG)
    assert s.bottleneck.buffer_bytes == 30000 and s.bottleneck.buffer_packets is None
    assert s.flows[0].bytes == 5000


def test_params_must_agree_between_flows_of_one_algorithm() -> None:
    data = raw(flows=[{"algo": "bbr_rttgain", "params": {"alpha": 0.5}},
                      {"algo": "bbr_rttgain", "params": {"alpha": 0.75}}])
    assert error_of(data).startswith("flows[1].params: differ from flows[0].params")


def test_resolves_buffers_flows_and_defaults() -> None:
    data = raw(bottleneck={"rate_mbit": 10, "buffer_bdp": 2},
               flows=[{"algo": "cubic", "count": 3, "start_s": 1, "start_step_s": 2},
                      {"algo": "bbr", "bytes": 1_000_000}, {"algo": "bbr"}])
    s = validate(data, CATALOG)
    # BDP = 10 Mbit/s x 40 ms = 50,000 bytes; 2 BDP in 1514-byte frames = 66.05 -> 66 packets.
    assert s.bottleneck.buffer_packets == 66
    assert s.bottleneck.bdp_rtt_ms == 40
    assert s.bottleneck.burst_bytes == 3028     # 1 ms at 10 Mbit/s is 1250 bytes: two frames win
    assert [f.label for f in s.flows] == ["cubic#0", "cubic#1", "cubic#2", "bbr#3", "bbr#4"]
    assert [f.start_s for f in s.flows[:3]] == [1, 3, 5]
    assert [f.duration_s for f in s.flows[:3]] == [9, 7, 5]   # run to the end of the 10 s run
    assert s.flows[3].bytes == 1_000_000 and s.flows[3].duration_s is None
    assert len({f.server_port for f in s.flows}) == 5 and len({f.client_port for f in s.flows}) == 5
    assert s.senders[0].delay_fwd_ms == 20 and s.senders[0].delay_rev_ms == 20
    # Socket buffer: 2 x (BDP + buffer) = 2 x (50,000 + 66 x 1514) bytes, above the 256 KiB floor.
    assert s.socket_buffer_bytes == 2 * (50_000 + 66 * 1514)


def test_optional_flows_of_absent_algorithms_are_skipped_with_a_note() -> None:
    s = validate(raw(flows=[{"algo": "cubic"}, {"algo": "bbr1", "optional": True}]), CATALOG)
    assert [f.algo for f in s.flows] == ["cubic"]
    assert s.skipped and "bbr1" in s.skipped[0]


def test_overrides_and_profiles() -> None:
    data = raw(flows=[{"algo": "cubic"}, {"algo": "reno"}])
    apply_override(data, "flows.*.algo", parse_value("bbr"))
    apply_override(data, "bottleneck.rate_mbit", parse_value("2.5"))
    data["profiles"] = {"short": {"duration_s": 3, "bottleneck.buffer_packets": 7}}
    apply_profile(data, "short")
    s = validate(data, CATALOG)
    assert [f.algo for f in s.flows] == ["bbr", "bbr"]
    assert s.bottleneck.rate_mbit == 2.5 and s.duration_s == 3 and s.bottleneck.buffer_packets == 7
    with pytest.raises(ScenarioError, match=r"^flows.5.algo: no element '5'"):
        apply_override(data, "flows.5.algo", "bbr")
    with pytest.raises(ScenarioError, match=r"^profiles.paper: no such profile"):
        apply_profile(data, "paper")


def test_shipped_scenarios_are_valid() -> None:
    files = sorted(SCENARIO_DIR.glob("*.toml"))
    assert {"mix", "compare", "smoke"} <= {f.stem for f in files}
    for path in files:
        validate(load_raw(path), CATALOG)


def test_cli_rejects_before_creating_anything(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('duration_s = 3\n[bottleneck]\nrate_mbit = 0\n[[flows]]\nalgo = "cubic"\n')
    proc = popen_cli("run", str(bad), "--out", str(tmp_path / "out"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip().count("\n") == 0 and "bottleneck.rate_mbit" in err
    assert not namespaces(f"bbrb-{proc.pid}-")
    assert not (tmp_path / "out").exists()


def test_cli_rejects_unknown_algorithm_override(tmp_path: Path) -> None:
    proc = run_cli("run", "smoke", "flows.0.algo=nosuchcc")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("bbrbench: invalid scenario: flows[0].algo: unknown congestion control")


@pytest.mark.parametrize("bottleneck", [{"rate_mbit": 10, "buffer_packets": 20},
                                        {"rate_mbit": 10, "buffer_bytes": 30000}])
def test_a_recorded_scenario_reads_back_as_the_scenario_and_gives_the_run_info_it_describes(
        bottleneck: dict[str, Any]) -> None:
    data = raw(senders=[{"name": "a", "delay_fwd_ms": 5, "delay_rev_ms": 30}],
               flows=[{"algo": "cubic", "bytes": 5000}, {"algo": "cubic", "start_s": 2}])
    data["bottleneck"] = {**bottleneck, "mtu": 9000}
    scenario = validate(data, CATALOG)
    recorded = json.loads(json.dumps(scenario.to_dict()))
    assert Scenario.from_dict(recorded) == scenario
    info = RunInfo.from_scenario(recorded)
    frame = 9000 + 14
    assert info.limit_bytes == (20 * frame if bottleneck.get("buffer_packets") else 30000)
    assert [f.base_rtt_ms for f in info.flows] == [35.0, 35.0]
    assert [f.nbytes for f in info.flows] == [5000, None]
    assert info.rate_bps == 10e6


def test_a_scenario_recorded_by_an_earlier_version_reads_with_todays_defaults() -> None:
    recorded = validate(raw(), CATALOG).to_dict()
    del recorded["tcp_ecn"], recorded["bottleneck"]["jitter_ms"], recorded["metrics"]["warmup_s"]
    recorded["bottleneck"]["dropped_since"] = 1
    scenario = Scenario.from_dict(recorded)
    assert (scenario.tcp_ecn, scenario.bottleneck.jitter_ms, scenario.metrics.warmup_s) == (2, 0.0, 1.0)
