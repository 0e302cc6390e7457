"""bbrctl attach/detach, parameters and trace against the kernel: registrations, pins, the params
map as bpftool sees it, and what detach does to a connection that is using the algorithm."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from loaderutil import ALGOS, PER_PACKET_ALGOS, PIN_ROOT, ctl, params_raw, pins, snapshot, struct_ops_ids
from netutil import (
    available_ccs,
    bbrctl,
    iperf_pair,
    iperf_result,
    kernel_features,
    run,
    start_trace,
    stop_trace,
    tracers,
)

# Every test here attaches, loads or probes BPF programs.
pytestmark = pytest.mark.root

RATE_MBIT = 100
ROOT = Path(__file__).resolve().parents[2]


def link_id(algo: str) -> int:
    return json.loads(run(["bpftool", "-j", "link", "show", "pinned", str(PIN_ROOT / algo / "link")]).stdout)["id"]


def listed(algo: str) -> dict:
    return next(a for a in json.loads(bbrctl("list", "--json").stdout)["algorithms"] if a["name"] == algo)


@pytest.mark.parametrize("algo", ALGOS)
def test_attach_reattach_detach(algo: str, detached) -> None:
    detached(algo)
    ids_before = struct_ops_ids()
    try:
        out = bbrctl("attach", algo).stdout
        assert f"{algo} attached" in out
        assert algo in available_ccs()
        flows_pin = "flows" if kernel_features()["map-iter"]["available"] else "flows-tcp"
        expected = {"link", flows_pin, "events", "ctl", "abi", "totals"} | ({"params"} if algo != "bbr1" else set())
        if algo in PER_PACKET_ALGOS and kernel_features()["per-packet"]["available"]:
            expected |= {"pp-sent", "pp-lost", "pp-destroy"}  # docs/reference.md, the pins table
        assert set(pins()[algo]) == expected
        assert listed(algo)["attached"] and listed(algo)["registered"]
        first = link_id(algo)

        again = bbrctl("attach", algo)
        assert "already attached" in again.stdout
        assert link_id(algo) == first and available_ccs().count(algo) == 1
    finally:
        ctl("detach", algo)
    assert algo not in available_ccs()
    assert algo not in pins()
    assert not listed(algo)["attached"]
    assert ctl("detach", algo).returncode != 0
    # Nothing uses it, so the struct_ops map is freed with the link.
    deadline = time.monotonic() + 3
    while struct_ops_ids() - ids_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not struct_ops_ids() - ids_before


def test_leftovers_of_interrupted_runs_are_removed(detached) -> None:
    detached("bbr1")
    PIN_ROOT.mkdir(exist_ok=True)
    # An attach interrupted before its rename, and a detach interrupted after unpinning the link.
    (PIN_ROOT / "bbr1-attaching").mkdir()
    (PIN_ROOT / "bbr1").mkdir()
    try:
        bbrctl("attach", "bbr1")
        assert "bbr1-attaching" not in pins() and "link" in pins()["bbr1"]
    finally:
        bbrctl("detach", "bbr1", check=False)
    (PIN_ROOT / "bbr1").mkdir(parents=True)
    result = bbrctl("detach", "bbr1")
    assert "leftover" in result.stdout and "bbr1" not in pins()


def test_the_last_detach_leaves_nothing_in_bpffs(detached) -> None:
    for algo in ALGOS:
        detached(algo)
    bbrctl("attach", "bbr1")
    bbrctl("attach", "bbr_acd")
    try:
        bbrctl("detach", "bbr1")
        assert list(pins()) == ["bbr_acd"]  # the root stays while an algorithm is attached
    finally:
        bbrctl("detach", "bbr_acd", check=False)
        bbrctl("detach", "bbr1", check=False)
    assert not PIN_ROOT.exists()


def test_name_clash_with_a_foreign_registration(detached) -> None:
    detached("bbr1")
    # A registration bbrctl did not make: ours, with its pins moved out of bbrctl's sight.
    foreign = PIN_ROOT.parent / "bbrkit-test-foreign"
    bbrctl("attach", "bbr1")
    (PIN_ROOT / "bbr1").rename(foreign)
    try:
        before = snapshot()
        result = ctl("attach", "bbr1")
        assert result.returncode != 0 and len(result.stderr.splitlines()) == 1
        assert "already has a congestion control named 'bbr1'" in result.stderr
        assert snapshot() == before
    finally:
        (foreign / "link").unlink()
        for pin in foreign.iterdir():
            pin.unlink()
        foreign.rmdir()
        if PIN_ROOT.is_dir() and not any(PIN_ROOT.iterdir()):
            PIN_ROOT.rmdir()
    deadline = time.monotonic() + 3
    while "bbr1" in available_ccs() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "bbr1" not in available_ccs()


def test_set_show_round_trip_and_bpftool_names(attach, keep_params) -> None:
    attach("bbr_rttgain")
    attach("bbr_acd")
    keep_params("bbr_rttgain")
    keep_params("bbr_acd")
    bbrctl("set", "bbr_rttgain", "alpha=0.75", "probe_exit=1.5", "gain_floor=0.25")
    bbrctl("set", "bbr_acd", "tolerance_us=500", "rtt_factor=2.5", "steady_acks=4", "halve_once=on")
    shown = {p["name"]: p for p in json.loads(bbrctl("show", "bbr_rttgain", "--json").stdout)["params"]}
    assert {k: p["value"] for k, p in shown.items()} == {"alpha": 0.75, "probe_exit": 1.5, "gain_floor": 0.25}
    assert shown["alpha"]["default"] == 1 and shown["alpha"]["min"] == 0.004 and shown["alpha"]["max"] == 1
    acd = {p["name"]: p["value"] for p in json.loads(bbrctl("show", "bbr_acd", "--json").stdout)["params"]}
    assert acd == {"tolerance_us": 500, "rtt_factor": 2.5, "steady_acks": 4, "halve_once": 1}
    # The map's BTF names the fields with their units.
    assert params_raw("bbr_rttgain") == {"alpha_permille": 750, "probe_exit_permille": 1500,
                                         "gain_floor_permille": 250}
    assert params_raw("bbr_acd") == {"tolerance_us": 500, "rtt_factor_permille": 2500, "steady_acks": 4,
                                     "halve_once": 1}
    shown = bbrctl("show", "bbr1").stdout.splitlines()
    assert shown[0] == "bbr1 has no parameters"


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def sender_ccs(pair) -> str:
    return pair.exec(pair.sender, ["ss", "-Htin", "dst", pair.receiver_addr]).stdout


def test_detach_while_a_flow_runs_keeps_it_running(detached, attach, netpair) -> None:
    """Measured: the socket keeps its reference to the struct_ops map, so the unregistered
    algorithm keeps driving it at full rate; the map is freed when the connection closes."""
    detached("bbr1")  # this test's attachment must be a new struct_ops map
    ids_before = struct_ops_ids()
    attach("bbr1")
    pair = netpair(rate_mbit=RATE_MBIT)
    client = iperf_pair(pair, "bbr1", seconds=6, extra=("-i", "1"))
    assert wait_until(lambda: "bbr1" in sender_ccs(pair))
    time.sleep(1.5)
    out = bbrctl("detach", "bbr1").stdout
    assert "bbr1 detached" in out and "open connection" in out
    assert "bbr1" not in available_ccs() and "bbr1" not in pins()
    assert "bbr1" in sender_ccs(pair)  # still the algorithm of the running connection
    assert struct_ops_ids() - ids_before  # kept alive by the socket
    result = iperf_result(client)
    rates = [i["sum"]["bits_per_second"] for i in result["intervals"]]
    assert len(rates) >= 6 and min(rates[3:]) > 0.8 * RATE_MBIT * 1e6, rates
    assert result["end"]["sum_received"]["bits_per_second"] > 0.85 * RATE_MBIT * 1e6
    assert wait_until(lambda: not struct_ops_ids() - ids_before), "struct_ops map outlived its last socket"


def test_detach_refused_while_a_netns_default_uses_it(attach, netpair) -> None:
    attach("bbr1")
    pair = netpair()
    key = "net.ipv4.tcp_congestion_control"
    previous = pair.exec(pair.sender, ["sysctl", "-n", key]).stdout.strip()
    pair.exec(pair.sender, ["sysctl", "-qw", f"{key}=bbr1"])
    try:
        before = snapshot()
        result = ctl("detach", "bbr1")
        assert result.returncode != 0 and len(result.stderr.splitlines()) == 1
        assert f"netns {pair.sender}" in result.stderr
        assert snapshot() == before
    finally:
        pair.exec(pair.sender, ["sysctl", "-qw", f"{key}={previous}"])
    assert ctl("detach", "bbr1").returncode == 0


CONTRACT_KEYS = {"t_ns", "algo", "event", "saddr", "sport", "daddr", "dport", "mode", "pacing_gain", "cwnd_gain",
                 "bw_bps", "pacing_rate_bps", "min_rtt_us", "rtt_us", "srtt_us", "cwnd", "inflight", "round",
                 "ca_state", "lost", "retrans"}


def test_trace_records_counts_itself_and_allows_one_reader(attach, netpair, tmp_path: Path) -> None:
    attach("bbr_acd")
    pair = netpair(rate_mbit=RATE_MBIT)
    out = tmp_path / "trace.csv"
    # As if a tracer had been killed with SIGKILL: the next one resets the count.
    run(["bpftool", "map", "update", "pinned", str(PIN_ROOT / "bbr_acd" / "ctl"), "key", "0", "0", "0", "0",
         "value", "5", "0", "0", "0"])
    tracer = start_trace(out, "bbr_acd", fmt="csv")
    try:
        second = ctl("trace", "bbr_acd")
        assert second.returncode != 0 and "another bbrctl trace" in second.stderr
        iperf_result(iperf_pair(pair, "bbr_acd", seconds=2))
    finally:
        stop_trace(tracer)
    assert tracers("bbr_acd") == 0
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    assert CONTRACT_KEYS | {"acd_steady", "acd_congested", "acd_halvings"} <= set(header)
    rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
    senders = [r for r in rows if r["saddr"] == pair.sender_addr]
    assert {r["event"] for r in senders} >= {"init", "round", "mode"}
    assert {r["mode"] for r in senders} >= {"STARTUP", "PROBE_BW"}
    t = [int(r["t_ns"]) for r in senders]
    assert t == sorted(t) and abs(t[-1] - time.monotonic_ns()) < 30e9


FEATURE_KEYS = ["btf", "struct-ops-tcp-cc", "struct-ops-link", "link-update", "map-iter", "iter-tcp", "ringbuf",
                "sk-storage", "per-packet", "bpffs", "bpf-stats"]


def test_features_probe_every_capability_and_change_nothing() -> None:
    before = snapshot()
    features = json.loads(bbrctl("features", "--json").stdout)["features"]
    assert [f["key"] for f in features] == FEATURE_KEYS
    for f in features:
        assert isinstance(f["available"], bool) and (f["reason"] is None) == f["available"]
    # bbrkit attaches here (the other tests do), so what attach needs must be there.
    assert all(f["available"] for f in features if f["key"] in ("btf", "struct-ops-tcp-cc"))
    lines = bbrctl("features").stdout.splitlines()
    assert len(lines) == len(FEATURE_KEYS)
    assert all(" yes" in line or " no: " in line for line in lines)
    assert snapshot() == before


def test_a_refused_iterator_is_named_once_and_does_not_block_attach(detached) -> None:
    feature = kernel_features()["map-iter"]
    if feature["available"]:
        pytest.skip("this kernel loads map-element iterators: nothing is refused")
    detached("bbr1")
    try:
        result = ctl("-v", "attach", "bbr1")
        assert result.returncode == 0 and "bbr1 attached" in result.stdout
        ours = [line for line in result.stderr.splitlines() if line.startswith("bbrctl:")]
        assert len(ours) == 1, ours
        assert "the kernel refused to load program 'dump_flows' (iter/bpf_sk_storage_map)" in ours[0]
        assert "verifier" not in ours[0] and "BEGIN PROG LOAD LOG" not in ours[0]
        assert ours[0].endswith(feature["reason"])
        assert listed("bbr1")["features"]["flows"] == "iter-tcp"
    finally:
        ctl("detach", "bbr1")
