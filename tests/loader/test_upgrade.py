"""bbrctl upgrade: another build of an attached algorithm swapped in through the struct_ops link while
a flow runs: the running flow keeps its version without a reset, new connections get the new one, the
name never leaves the kernel's list and the parameters carry over."""
from __future__ import annotations

import json
import threading
import time

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
