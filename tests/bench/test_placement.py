"""The harness's CPU placement (cpu_placement) and controlled lateness (bottleneck.stall) without root:
what a scenario may ask, what reaches bbrkit-link's command line, what a one-CPU machine runs, the RPS
bitmap. tests/integration/test_link.py checks both on a real path."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bbrbench.errors import HarnessError
from bbrbench.placement import PLACEMENTS
from bbrbench.scenario import AlgoCatalog, ScenarioError, validate
from bbrbench.testbed import cpuplace
from bbrbench.testbed.emulation import Emulation
from bbrbench.testbed.topology import Topology
from bbrbench.testbed.traffic import FlowRun, Traffic

CATALOG = AlgoCatalog(kernel=frozenset({"cubic"}), bbrkit=frozenset())


def scenario(bottleneck: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return {"name": "t", "duration_s": 5, "bottleneck": {"rate_mbit": 20, **(bottleneck or {})},
            "senders": [{"name": "s0", "rtt_ms": 20}], "flows": [{"algo": "cubic"}], **top}


@pytest.mark.parametrize(("data", "message"), [
    (scenario(cpu_placement="pinned"),
     "cpu_placement: must be one of none, rps, pin, pin+rps, isolate, napi, napi+pin"),
    (scenario({"emulator": "kernel"}, cpu_placement="pin"),
     "cpu_placement = \"pin\": pins bbrkit-link's thread, and bottleneck.emulator = \"kernel\" runs no link"),
    (scenario({"stall": {"percent": -1, "us": 300}}), "bottleneck.stall.percent: must be between 0 and 100"),
    (scenario({"stall": {"percent": 101, "us": 300}}), "bottleneck.stall.percent: must be between 0 and 100"),
    (scenario({"stall": {"percent": 0, "us": 0}}), "bottleneck.stall.us: must be between 1 and 1e+06"),
    (scenario({"stall": {"percent": 1, "us": 0}}), "bottleneck.stall.us: must be between 1 and 1e+06"),
    (scenario({"stall": {"percent": 1, "us": 2.5}}), "bottleneck.stall.us: expected an integer"),
    (scenario({"stall": {"percent": 1}}), "bottleneck.stall.us: required"),
    (scenario({"stall": {"percent": 1, "us": 300, "every": 2}}), "bottleneck.stall.every: unknown key"),
    (scenario({"stall": {"percent": 1, "us": 300}, "emulator": "kernel"}),
     "bottleneck.emulator: the kernel has no qdisc for"),
])
def test_bad_placement_and_stall_keys_are_named_in_one_line(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        validate(data, CATALOG)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_stall_needs_the_link_and_reaches_it_as_its_option() -> None:
    """Only bbrkit-link can stall (emulator "auto" takes it); the link gets --stall PCT,US and results
    name the condition."""
    s = validate(scenario({"stall": {"percent": 2.5, "us": 300}}), CATALOG)
    assert s.bottleneck.needs_link
    topo = Topology("t", s)
    topo.link_netns = "t-q"
    emulation = Emulation(topo, None)
    emulation.cpu = cpuplace.plan("none", {0, 1})
    opts = emulation.link_options()
    assert opts[opts.index("--stall") + 1] == "2.5,300" and "--cpu" not in opts
    assert "injected stalls: 2.5% of departures held 300 us" in emulation.implementation()


def test_a_stall_of_0_percent_is_none_so_a_grid_can_hold_the_clean_run() -> None:
    b = validate(scenario({"stall": {"percent": 0, "us": 300}}), CATALOG).bottleneck
    assert b.stall is None and not b.needs_link


@pytest.mark.parametrize(("name", "link_cpu", "rps_cpus", "app_cpus", "napi"), [
    ("none", None, [], [], False), ("rps", None, [3, 5], [], False), ("pin", 1, [], [], False),
    ("pin+rps", 1, [3, 5], [], False), ("isolate", 1, [3, 5], [3, 5], False), ("napi", None, [], [], True),
    ("napi+pin", 1, [], [], True)])
def test_each_placement_pins_the_link_to_the_first_cpu_and_steers_to_the_rest(
        name: str, link_cpu: int | None, rps_cpus: list[int], app_cpus: list[int], napi: bool) -> None:
    plan = cpuplace.plan(name, {5, 1, 3})
    assert (plan.ran, plan.link_cpu, plan.rps_cpus, plan.app_cpus, plan.napi) == \
        (name, link_cpu, rps_cpus, app_cpus, napi)
    assert plan.record()["napi"] is napi
    s = validate(scenario({"emulator": "bbrkit-link"}, cpu_placement=name), CATALOG)
    emulation = Emulation(Topology("t", s), None)
    emulation.cpu = plan
    opts = emulation.link_options()
    assert (opts[opts.index("--cpu") + 1] if "--cpu" in opts else None) == \
        (str(link_cpu) if link_cpu is not None else None)


def test_one_cpu_runs_none_and_records_why() -> None:
    for name in ("isolate", "napi"):
        plan = cpuplace.plan(name, {0})
        assert (plan.asked, plan.ran, plan.link_cpu, plan.rps_cpus, plan.app_cpus, plan.napi) == \
            (name, "none", None, [], [], False)
        assert "1 CPU" in plan.note and plan.record()["ran"] == "none"


def test_the_default_is_none_and_every_name_has_a_meaning() -> None:
    assert validate(scenario(), CATALOG).cpu_placement == "none"
    assert list(PLACEMENTS) == ["none", "rps", "pin", "pin+rps", "isolate", "napi", "napi+pin"]
    assert all(p.meaning for p in PLACEMENTS.values())


@pytest.mark.parametrize(("cpus", "mask"), [([1], "2"), ([1, 2, 3], "e"), ([0], "1"), ([32], "1,00000000"),
                                            ([1, 33], "2,00000002"), ([], "0")])
def test_the_rps_bitmap_is_the_kernels_hex_in_groups_of_32(cpus: list[int], mask: str) -> None:
    assert cpuplace.rps_mask(cpus) == mask


class _Spawned:
    """A ProcessGroup that records what it was asked to start."""

    def __init__(self) -> None:
        self.argv: list[list[str]] = []

    def spawn(self, argv: list[str], **_: Any) -> None:
        self.argv.append(argv)


@pytest.mark.parametrize("name", ["pin+rps", "isolate"])
def test_isolate_starts_iperf3_on_the_cpus_other_than_the_links(tmp_path: Path, name: str) -> None:
    """With "isolate" each iperf3 client starts confined (taskset, before it runs: all its threads) to the
    CPUs other than the link's, the first this process may use; with the other placements, or on one CPU,
    as it always did."""
    s = validate(scenario(cpu_placement=name), CATALOG)
    procs = _Spawned()
    traffic = Traffic(Topology("t", s), procs, tmp_path)  # type: ignore[arg-type]
    traffic._launch(FlowRun(flow=s.flows[0]))
    others = sorted(os.sched_getaffinity(0))[1:] if name == "isolate" else []
    prefix = ["taskset", "-c", ",".join(map(str, others))] if others else []
    assert procs.argv == [prefix + traffic.client_argv(s.flows[0])]


class _Commands:
    """testbed's command(), recording each argv and its namespace; @failing: the argv[0] that fails."""

    def __init__(self, failing: str = "") -> None:
        self.calls: list[tuple[str | None, list[str]]] = []
        self.failing = failing

    def __call__(self, argv: list[str], netns: str | None = None, **_: Any) -> Any:
        self.calls.append((netns, list(argv)))
        failed = argv[0] == self.failing
        return type("Result", (), {"returncode": 2 if failed else 0, "stdout": "",
                                   "stderr": "sh: 1: cannot create /sys/class/net/eth0/threaded: "
                                             "Directory nonexistent\n" if failed else ""})()


def test_napi_attaches_xdp_pass_then_gro_off_then_threaded_napi_on_the_receivers_interface(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What "napi" runs, in the receiver's namespace on the interface that takes the link's departures: the
    XDP_PASS program attached in native (driver) mode, which makes the veth receive through NAPI; GRO off,
    whatever attaching did to it; threaded NAPI on, last, once the program made the NAPI."""
    program = tmp_path / "xdp_pass.bpf.o"
    commands = _Commands()
    monkeypatch.setattr(cpuplace, "command", commands)
    topo = Topology("t", validate(scenario({"emulator": "bbrkit-link"}, cpu_placement="napi"), CATALOG))
    cpuplace.thread_receive(topo, program)
    assert commands.calls == [
        ("t-d", ["ip", "link", "set", "dev", "eth0", "xdpdrv", "obj", str(program), "sec", "xdp"]),
        ("t-d", ["ethtool", "-K", "eth0", "gro", "off"]),
        ("t-d", ["sh", "-c", "echo 1 > /sys/class/net/eth0/threaded"])]


def test_a_kernel_without_threaded_napi_fails_the_run_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpuplace, "command", _Commands(failing="sh"))
    topo = Topology("t", validate(scenario({"emulator": "bbrkit-link"}, cpu_placement="napi"), CATALOG))
    with pytest.raises(HarnessError) as info:
        cpuplace.thread_receive(topo, tmp_path / "xdp_pass.bpf.o")
    message = str(info.value)
    assert message.startswith("cpu_placement napi: cannot turn threaded NAPI on") and "\n" not in message
    assert "t-d/eth0" in message and "Directory nonexistent" in message


def test_the_xdp_program_is_found_as_named_built_or_installed_beside_the_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$BBRKIT_XDP_PASS alone when set (missing: not found, so napi is not runnable); otherwise the
    checkout's build/, then PREFIX/lib/bbrkit of an installed PREFIX/bin/bbrkit-link (make install)."""
    monkeypatch.setattr(cpuplace, "CHECKOUT_BUILD", tmp_path / "checkout" / "build")
    link = tmp_path / "usr" / "bin" / "bbrkit-link"
    installed = tmp_path / "usr" / "lib" / "bbrkit" / "xdp_pass.bpf.o"
    installed.parent.mkdir(parents=True)
    installed.write_bytes(b"\x7fELF")
    monkeypatch.delenv(cpuplace.XDP_PASS_ENV, raising=False)
    assert cpuplace.xdp_pass_object(link) == installed
    assert cpuplace.xdp_pass_object(None) is None
    monkeypatch.setenv(cpuplace.XDP_PASS_ENV, str(tmp_path / "missing.bpf.o"))
    assert cpuplace.xdp_pass_object(link) is None
