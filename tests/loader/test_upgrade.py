"""bbrctl upgrade: another build of an attached algorithm swapped in through the struct_ops link while
a flow runs: the running flow keeps its version without a reset, new connections get the new one, the
name never leaves the kernel's list and the parameters carry over."""
from __future__ import annotations

import json
import threading
import time

import pytest

from loaderutil import PIN_ROOT, ctl, pins, snapshot, struct_ops_ids
from netutil import ROOT, available_ccs, bbrctl, iperf_pair, iperf_result, kernel_features, run

RATE_MBIT = 100
REBUILT = ROOT / "build" / "bbr_acd.bpf.o"  # a separate load of the algorithm's ELF


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def params_map_id(algo: str) -> int:
    return json.loads(run(["bpftool", "-j", "map", "show", "pinned", str(PIN_ROOT / algo / "params")]).stdout)["id"]


def flows_of(algo: str) -> list[dict]:
    return json.loads(bbrctl("flows", algo, "--json").stdout)["flows"]


def test_upgrade_under_load_keeps_running_flows_and_the_name(detached, attach, keep_params, netpair) -> None:
    if not kernel_features()["link-update"]["available"]:
        result = ctl("upgrade", "bbr_acd")
        assert result.returncode != 0 and "cannot update a struct_ops link" in result.stderr
        return
    detached("bbr_acd")  # an attachment of our own: another bbrctl build's has another ABI version
    before_attach = struct_ops_ids()
    attach("bbr_acd")
    keep_params("bbr_acd")
    bbrctl("set", "bbr_acd", "tolerance_us=500", "steady_acks=4")
    old_map = struct_ops_ids() - before_attach
    params_id = params_map_id("bbr_acd")
    pair = netpair(rate_mbit=RATE_MBIT)
    first = iperf_pair(pair, "bbr_acd", seconds=5, extra=("-i", "0.5"))
    first_started = time.monotonic()

    gaps: list[float] = []
    watching = threading.Event()
    watching.set()

    def watch() -> None:
        while watching.is_set():
            if "bbr_acd" not in available_ccs():
                gaps.append(time.monotonic())
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    try:
        assert wait_until(lambda: len(flows_of("bbr_acd")) >= 1)
        time.sleep(1.5)
        watcher.start()
        out = bbrctl("upgrade", "--object", str(REBUILT), "bbr_acd").stdout
        time.sleep(0.2)
    finally:
        watching.clear()
        if watcher.is_alive():
            watcher.join()
    assert "bbr_acd upgraded" in out
    assert not gaps, "the name left the kernel's list during the upgrade"
    new_map = struct_ops_ids() - before_attach - old_map
    assert len(new_map) == 1 and old_map <= struct_ops_ids()  # the running flow holds the old one
    # Parameters carried over: the same map, the same values, and set still reaches it.
    assert params_map_id("bbr_acd") == params_id
    shown = {p["name"]: p["value"] for p in json.loads(bbrctl("show", "bbr_acd", "--json").stdout)["params"]}
    assert shown["tolerance_us"] == 500 and shown["steady_acks"] == 4

    time.sleep(1.5)  # the first flow alone on the new registration for a while
    second = iperf_pair(pair, "bbr_acd", seconds=5, port=5202, extra=("-i", "0.5"))
    alone_until = time.monotonic() - first_started  # from here on the two flows share the path
    result = iperf_result(first)
    rates = [i["sum"]["bits_per_second"] for i in result["intervals"]
             if i["sum"]["seconds"] > 0.4 and i["sum"]["end"] <= alone_until]
    # No reset and no stall across the swap: every half second of the flow alone near the bottleneck rate.
    assert len(rates) >= 4 and min(rates[2:]) > 0.8 * RATE_MBIT * 1e6, rates
    # The old version is freed once its last connection closes, while the second one runs: the
    # second connection uses the new version.
    assert wait_until(lambda: not old_map & struct_ops_ids()), "old struct_ops map outlived its connection"
    assert new_map <= struct_ops_ids()
    assert any(f["dport"] == 5202 for f in flows_of("bbr_acd"))  # the pinned iterator sees new flows
    alone = [i["sum"]["bits_per_second"] for i in iperf_result(second)["intervals"] if i["sum"]["seconds"] > 0.4]
    assert alone[-1] > 0.8 * RATE_MBIT * 1e6, alone  # once the first flow is gone, the new version fills the path
    assert set(pins()["bbr_acd"]) >= {"link", "params"}


def test_upgrade_is_refused_where_the_kernel_cannot_update_links(attach, monkeypatch) -> None:
    attach("bbr_acd")
    before = snapshot()
    monkeypatch.setenv("BBRCTL_DISABLE", "link-update")
    result = ctl("upgrade", "bbr_acd")
    assert result.returncode == 1 and result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert "cannot update a struct_ops link" in result.stderr and "detach and attach instead" in result.stderr
    assert snapshot() == before


def test_upgrade_refusals_change_nothing(detached, attach) -> None:
    detached("bbr_acd")
    attach("bbr_acd")
    before = snapshot()
    for args, expected in [
        (["upgrade", "bbr1"], "not attached"),
        (["upgrade", "--object", "/nonexistent.bpf.o", "bbr_acd"], "cannot read /nonexistent.bpf.o"),
        (["upgrade", "--object", str(ROOT / "build" / "bbr1.bpf.o"), "bbr_acd"], "cannot share the attached params"),
        (["upgrade"], "missing ALGO"),
        (["upgrade", "--object"], "needs a value"),
    ]:
        result = ctl(*args)
        assert result.returncode != 0 and result.stdout == "", args
        assert len(result.stderr.splitlines()) == 1 and expected in result.stderr, result.stderr
        assert snapshot() == before


def link_id(algo: str, pin: str) -> int:
    return json.loads(run(["bpftool", "-j", "link", "show", "pinned", str(PIN_ROOT / algo / pin)]).stdout)["id"]


def pp_decisions_by_pinned_programs(algo: str) -> int:
    """Lost skbs judged per packet in the send records of the program pinned as pp-sent (its own map
    bbr3_pp_flows, whichever object it belongs to)."""
    prog = json.loads(run(["bpftool", "-j", "link", "show", "pinned", str(PIN_ROOT / algo / "pp-sent")]).stdout)
    maps = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(prog["prog_id"])]).stdout)["map_ids"]
    for map_id in maps:
        shown = json.loads(run(["bpftool", "-j", "map", "show", "id", str(map_id)]).stdout)
        if shown["name"] == "bbr3_pp_flows":
            entries = json.loads(run(["bpftool", "-j", "map", "dump", "id", str(map_id)]).stdout)
            return sum(e["formatted"]["value"]["decisions"] for e in entries)
    raise AssertionError(f"the program pinned as {algo}/pp-sent has no map bbr3_pp_flows")


def test_upgrade_attaches_the_per_packet_programs_again(detached, attach, netpair) -> None:
    """Flows that start after an upgrade run the new struct_ops, which keeps its send records in maps
    of its own: the per-packet programs are attached again for them (new links in the pins), so a
    lossy flow started then still judges its lost skbs per packet, in the new programs' records. A
    buffer of a quarter BDP (100 Mbit/s, 20 ms) makes every probe lose."""
    features = kernel_features()
    if not (features["link-update"]["available"] and features["per-packet"]["available"]):
        pytest.skip("needs struct_ops link update and the per-packet loss path")
    detached("bbr3")
    attach("bbr3")
    before = link_id("bbr3", "pp-sent")
    bbrctl("upgrade", "bbr3")
    assert link_id("bbr3", "pp-sent") != before
    pair = netpair(rate_mbit=RATE_MBIT, queue_bytes=RATE_MBIT * 1_000_000 // 8 * 20 // 1000 // 4, rtt_ms=20)
    client = iperf_pair(pair, "bbr3", seconds=4)
    time.sleep(3)
    judged = pp_decisions_by_pinned_programs("bbr3")
    iperf_result(client)
    assert judged > 0
