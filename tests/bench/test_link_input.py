"""Bad bottleneck input for bbrkit-link fails before anything is built: scenario keys (aqm, aqm_params,
rate traces and shapes, burst loss, emulator) and the binary's own options, each with one line."""
from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bbrbench import aqm, ratetrace
from bbrbench.errors import HarnessError
from bbrbench.scenario import AlgoCatalog, ScenarioError, apply_override, validate
from bbrbench.testbed.emulation import Emulation, ack_path_options, describe_ack_path, describe_conditions
from bbrbench.testbed.linkemu import LinkEmulator
from bbrbench.testbed.topology import Topology

ROOT = Path(__file__).resolve().parents[2]
LINK = ROOT / "build" / "bbrkit-link"
CATALOG = AlgoCatalog(kernel=frozenset({"cubic"}), bbrkit=frozenset())
BASE: dict[str, Any] = {"name": "t", "duration_s": 5, "bottleneck": {"rate_mbit": 20},
                        "senders": [{"name": "s0", "rtt_ms": 20}], "flows": [{"algo": "cubic"}]}


def raw(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        apply_override(data, key.replace("__", "."), value)
    return data


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        validate(data, CATALOG)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.fixture
def bad_trace(tmp_path: Path) -> Path:
    path = tmp_path / "bad.trace"
    path.write_text("1\n5\n3\n")
    return path


@pytest.mark.parametrize(("changes", "message"), [
    ({"bottleneck__aqm": "red"}, "bottleneck.aqm: must be one of"),
    ({"bottleneck__aqm": "fq_codel", "bottleneck__aqm_params": {"target": 5}},
     "bottleneck.aqm_params.target: unknown key"),
    ({"bottleneck__aqm": "fq_codel", "bottleneck__aqm_params": {"target_ms": -1}},
     "bottleneck.aqm_params.target_ms: must be in (0, 10000] ms"),
    ({"bottleneck__aqm": "codel", "bottleneck__aqm_params": {"target_ms": 200}},
     "bottleneck.aqm_params.target_ms: above interval_ms (100 ms)"),
    ({"bottleneck__aqm": "fq_codel", "bottleneck__aqm_params": {"flows": 0}},
     "bottleneck.aqm_params.flows: must be"),
    ({"bottleneck__aqm": "step"}, "bottleneck.aqm_params.threshold_ms: required with aqm = \"step\""),
    ({"bottleneck__aqm_params": {"ecn": True}}, "bottleneck.aqm_params: fifo takes no parameters"),
    ({"bottleneck__rate_trace": "/nonexistent.trace"}, "bottleneck.rate_trace: /nonexistent.trace: cannot read"),
    ({"bottleneck__rate_shape": {"kind": "sine", "low_mbit": 1, "high_mbit": 2, "period_s": 1}},
     "bottleneck.rate_shape.kind: must be one of"),
    ({"bottleneck__rate_shape": {"kind": "square", "low_mbit": 5, "high_mbit": 2, "period_s": 1}},
     "bottleneck.rate_shape.high_mbit: must be at least low_mbit"),
    ({"bottleneck__gilbert_elliott": {"p": 0.1, "r": 2, "loss_good": 0, "loss_bad": 1}},
     "bottleneck.gilbert_elliott.r: must be"),
    ({"bottleneck__gilbert_elliott": {"p": 0.1}}, "bottleneck.gilbert_elliott.r: required"),
    ({"bottleneck__emulator": "kernel", "bottleneck__aqm": "step", "bottleneck__aqm_params": {"threshold_ms": 1}},
     "bottleneck.emulator: the kernel has no qdisc for rate traces, burst loss, jitter, the step marker, a "
     "shaped ACK path, a policer, reordering, duplication, a packet log or injected stalls"),
    ({"bottleneck__emulator": "kernel", "bottleneck__ack_path": {"rate_mbit": 1}},
     "bottleneck.emulator: the kernel has no qdisc"),
    ({"bottleneck__ack_path": {"rate_mbit": 1, "rate_trace": "x"}},
     "bottleneck.ack_path.rate_trace: conflicts with bottleneck.ack_path.rate_mbit"),
    ({"bottleneck__ack_path": {"rate_trace": "/nonexistent.trace"}},
     "bottleneck.ack_path.rate_trace: /nonexistent.trace: cannot read"),
    ({"bottleneck__ack_path": {"aqm": "step"}}, "bottleneck.ack_path.aqm: must be one of"),
    ({"bottleneck__ack_path": {"aqm": "codel", "buffer_bytes": 3000}},
     "bottleneck.ack_path.buffer_bytes: only with aqm = \"fifo\""),
    ({"bottleneck__ack_path": {"buffer_packets": 10, "buffer_bytes": 3000}},
     "bottleneck.ack_path.buffer_bytes: conflicts with bottleneck.ack_path.buffer_packets"),
    ({"bottleneck__ack_path": {"loss_pct": 100}}, "bottleneck.ack_path.loss_pct: must be in [0, 100)"),
    ({"bottleneck__ack_path": {"delay": 5}}, "bottleneck.ack_path.delay: unknown key"),
    ({"bottleneck__ack_path": {"aggregation": {"kind": "burst"}}},
     "bottleneck.ack_path.aggregation.kind: must be one of slot, count, onoff"),
    ({"bottleneck__ack_path": {"aggregation": {"interval_ms": 5}}}, "bottleneck.ack_path.aggregation.kind: required"),
    ({"bottleneck__ack_path": {"aggregation": {"kind": "count", "acks": 4}}},
     "bottleneck.ack_path.aggregation.timeout_ms: required"),
    ({"bottleneck__ack_path": {"aggregation": {"kind": "onoff", "on_ms": 1, "off_ms": 2, "acks": 3}}},
     "bottleneck.ack_path.aggregation.acks: unknown key"),
    ({"bottleneck__ack_path": {"aggregation": {"kind": "slot", "interval_ms": 5, "max_interval_ms": 2}}},
     "bottleneck.ack_path.aggregation.max_interval_ms: below interval_ms"),
    ({"bottleneck__policer": {"rate_mbit": 10}}, "bottleneck.policer.burst_bytes: required"),
    ({"bottleneck__policer": {"rate_mbit": 0, "burst_bytes": 1500}}, "bottleneck.policer.rate_mbit: must be"),
    ({"bottleneck__reorder": {"probability": 0.2}}, "bottleneck.reorder: needs bottleneck.delay_ms > 0"),
    ({"bottleneck__delay_ms": 5, "bottleneck__reorder": {"probability": 2}},
     "bottleneck.reorder.probability: must be between 0 and 1"),
    ({"bottleneck__duplicate_pct": 101}, "bottleneck.duplicate_pct: must be between 0 and 100"),
    ({"bottleneck__emulator": "kernel", "bottleneck__duplicate_pct": 1}, "bottleneck.emulator: the kernel has no"),
    ({"bottleneck__jitter_ms": -1}, "bottleneck.jitter_ms: must be"),
    ({"bottleneck__emulator": "netem"}, "bottleneck.emulator: must be one of"),
    ({"tcp_ecn": 3}, "tcp_ecn: must be"),
])
def test_bad_bottleneck_keys_are_named(changes: dict[str, Any], message: str) -> None:
    assert message in error_of(raw(**changes))


def test_a_malformed_trace_names_its_line(bad_trace: Path) -> None:
    assert f"bottleneck.rate_trace: {bad_trace}: line 3: expected a millisecond count" in \
        error_of(raw(bottleneck__rate_trace=str(bad_trace)))


def test_a_trace_sets_the_rate_from_its_mean(tmp_path: Path) -> None:
    """Two opportunities per ms over 1 s: 24 Mbit/s."""
    path = tmp_path / "24mbit.trace"
    path.write_text("".join(f"{ms}\n{ms}\n" for ms in range(1, 1001)))
    b = validate(raw(bottleneck={"rate_trace": str(path)}), CATALOG).bottleneck
    assert b.rate_mbit == pytest.approx(24.0)
    assert b.needs_link


def test_generated_shapes_deliver_their_rates(tmp_path: Path) -> None:
    square = ratetrace.generate({"kind": "square", "low_mbit": 12, "high_mbit": 48, "period_s": 1.0}, 4.0,
                                tmp_path / "sq.trace")
    lines = [int(x) for x in square.path.read_text().split()]
    first_half = sum(1 for ms in lines if ms <= 500)
    second_half = sum(1 for ms in lines if 500 < ms <= 1000)
    assert first_half * 1500 * 8 / 0.5 == pytest.approx(48e6, rel=0.01)
    assert second_half * 1500 * 8 / 0.5 == pytest.approx(12e6, rel=0.01)
    assert square.period_ms == 4000 and square.mean_mbit == pytest.approx(30, rel=0.01)
    walk = ratetrace.generate({"kind": "random_walk", "low_mbit": 10, "high_mbit": 50, "period_s": 0.5,
                               "step_mbit": 10}, 10.0, tmp_path / "rw.trace")
    assert 10 <= walk.mean_mbit <= 50


def test_an_ack_path_becomes_the_links_rev_options_and_its_description(tmp_path: Path) -> None:
    """The ACK path needs the link (needs_link), reaches it as --rev- options (--rev-aqm always, since any
    --rev- option is what shapes that direction) and is named in the implementation string."""
    trace = tmp_path / "up.trace"
    trace.write_text("1\n2\n")
    b = validate(raw(bottleneck__ack_path={"rate_trace": str(trace), "delay_ms": 10, "loss_pct": 1,
                                           "buffer_packets": 50}), CATALOG).bottleneck
    assert b.needs_link
    assert b.ack_path is not None
    assert ack_path_options(b.ack_path) == ["--rev-aqm", "fifo", "--rev-trace", str(trace.resolve()),
                                            "--rev-delay-us", "10000", "--rev-loss", "0.01",
                                            "--rev-limit-pkts", "50"]
    assert describe_ack_path(b.ack_path) == (f"ACK path trace {trace}, tail-drop FIFO, delay 10 ms, "
                                             f"independent loss 1%")


def test_path_conditions_become_the_links_options() -> None:
    """Policer, link delay, reorder, duplicate and ACK aggregation reach bbrkit-link as its own options, and
    results name each (never as netem or tc police: the link's own implementations)."""
    b = validate(raw(bottleneck__delay_ms=10, bottleneck__policer={"rate_mbit": 10, "burst_bytes": 30000},
                     bottleneck__reorder={"probability": 0.25, "gap": 5}, bottleneck__duplicate_pct=1,
                     bottleneck__ack_path={"aggregation": {"kind": "slot", "interval_ms": 2, "max_interval_ms": 4,
                                                           "packets": 16}}), CATALOG).bottleneck
    opts = Emulation(Topology("t", validate(raw(bottleneck__delay_ms=1), CATALOG)), None).link_options()
    assert "--delay-us" in opts
    assert b.needs_link and b.ack_path is not None
    assert ack_path_options(b.ack_path)[-2:] == ["--rev-aggregate", "slot,2000,4000,16"]
    assert describe_conditions(b) == [
        "link delay 10 ms", "token-bucket policer (RFC 2697 single rate, no EBS) 10 Mbit/s burst 30000 bytes",
        "netem-style reorder 0.25 gap 5", "netem-style duplicate 1%"]
    assert describe_ack_path(b.ack_path).endswith("ACK aggregation: netem-like slot every 2..4 ms, at most 16 per slot")


# mm-link's LinkQueue refuses an empty line, and myatoi (strtol) takes leading blanks and a sign but nothing
# after the digits (a comment, a carriage return, a trailing blank); the scenario check and the link agree.
@pytest.mark.skipif(not LINK.exists(), reason="bbrkit-link not built (make)")
@pytest.mark.parametrize(("text", "message"), [
    ("1\n\n2\n", "line 2: empty (Mahimahi refuses empty lines)"),
    ("# comment\n5\n", "line 1: expected a millisecond count"),
    ("5\r\n10\n", "line 1: expected a millisecond count"),
    ("5 \n", "line 1: expected a millisecond count"),
    ("5\n-3\n", "line 2: expected a millisecond count"),
    (" 5\n+10\n", None),
    ("5\n10", None),
])
def test_traces_are_read_as_mahimahi_reads_them(tmp_path: Path, text: str, message: str | None) -> None:
    path = tmp_path / "t.trace"
    path.write_text(text)
    result = subprocess.run([LINK, "--left", "lo", "--right", "lo2", "--tag", "t", "--trace", str(path)],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    if message is None:
        assert ratetrace.load(str(path)).period_ms == 10
        assert "--right: no interface 'lo2'" in result.stderr  # got past the trace
        return
    assert f"--trace {path}: {message}" in result.stderr
    assert f"{path}: {message}" in error_of(raw(bottleneck__rate_trace=str(path)))


def test_aqm_params_become_tc_arguments() -> None:
    assert aqm.tc_args("fq_codel", {"target_ms": 5, "interval_ms": 100, "ecn": 0, "quantum_bytes": 300,
                                    "flows": 64}) == \
        ["target", "5000us", "interval", "100000us", "noecn", "quantum", "300", "flows", "64"]


# Each kernel qdisc's arguments as the SYNOPSIS of its man page gives them (iproute2's tc-cake(8),
# tc-fq_codel(8), tc-codel(8), tc-pie(8)): a keyword and whether a value follows it.
TC_SYNOPSIS: dict[str, dict[str, bool]] = {
    "cake": {**dict.fromkeys(("bandwidth", "rtt", "memlimit", "fwmark", "overhead", "mpu"), True),
             **dict.fromkeys(("unlimited", "autorate-ingress", "datacentre", "lan", "metro", "regional", "internet",
                              "oceanic", "satellite", "interplanetary", "besteffort", "diffserv8", "diffserv4",
                              "diffserv3", "flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost",
                              "dual-dsthost", "triple-isolate", "nat", "nonat", "wash", "nowash", "split-gso",
                              "no-split-gso", "ack-filter", "ack-filter-aggressive", "no-ack-filter", "ptm", "atm",
                              "noatm", "conservative", "raw", "ingress", "egress"), False)},
    "fq_codel": {**dict.fromkeys(("limit", "flows", "target", "interval", "quantum", "ce_threshold",
                                  "ce_threshold_selector", "memory_limit"), True),
                 **dict.fromkeys(("ecn", "noecn"), False)},
    "codel": {**dict.fromkeys(("limit", "target", "interval", "ce_threshold"), True),
              **dict.fromkeys(("ecn", "noecn"), False)},
    "pie": {**dict.fromkeys(("limit", "target", "tupdate", "alpha", "beta"), True),
            **dict.fromkeys(("ecn", "noecn", "bytemode", "nobytemode", "dq_rate_estimator", "no_dq_rate_estimator"),
                            False)},
}


def _tc_words(argv: list[str]) -> dict[str, str | None]:
    """A qdisc's argv checked against its man page's synopsis: keyword -> value (None: a bare keyword)."""
    qdisc, rest = argv[0], argv[1:]
    grammar = TC_SYNOPSIS[qdisc]
    words: dict[str, str | None] = {}
    while rest:
        word = rest.pop(0)
        assert word in grammar, f"tc-{qdisc}(8) has no argument {word!r}: {argv}"
        if grammar[word]:
            assert rest and rest[0] not in grammar, f"tc-{qdisc}(8): {word} needs a value: {argv}"
            words[word] = rest.pop(0)
        else:
            words[word] = None
    return words


@pytest.mark.skipif(not Path("/usr/share/man/man8/tc-cake.8.gz").exists(), reason="iproute2's man pages absent")
@pytest.mark.parametrize("qdisc", list(TC_SYNOPSIS))
def test_the_synopses_are_the_installed_man_pages(qdisc: str) -> None:
    import gzip
    import re
    text = gzip.decompress(Path(f"/usr/share/man/man8/tc-{qdisc}.8.gz").read_bytes()).decode()
    synopsis = text[text.index(".SH SYNOPSIS"):text.index(".SH DESCRIPTION")]
    # '*' marks tc-cake(8)'s defaults
    assert {k.rstrip("*") for k in re.findall(r"^\.BR? (\S+)$", synopsis, re.M)} == set(TC_SYNOPSIS[qdisc])


@pytest.mark.parametrize("name", [n for n, a in aqm.AQMS.items() if a.qdisc and n != "fifo"])
def test_every_aqm_parameter_is_a_kernel_qdisc_argument(name: str) -> None:
    """All of an AQM's parameters at once, at values its kernel qdisc can take, give an argv its man page
    accepts, the values in tc's units."""
    params = {key: 1.0 for key in aqm.AQMS[name].params}
    if name == "cake":
        params |= {"target_ms": 2.0, "interval_ms": 40.0, "flows": aqm.CAKE_QUEUES}
    elif "flows" in params:
        params["flows"] = 64
    assert aqm.kernel_problem(name, params) is None
    words = _tc_words(aqm.qdisc_args(name, params, 100, 10**6, None))
    if name == "cake":
        # one tin and per-flow isolation, as bbrkit-link's subset; rtt is the interval, its target rtt/20
        assert words == {"unlimited": None, "memlimit": str(10**6), "besteffort": None, "flows": None,
                         "rtt": "40000us"}
    else:
        assert words["limit"] == "100" and words["target"] == "1000us" and "ecn" in words


@pytest.mark.parametrize(("params", "problem"), [
    ({"flows": 64}, "flows = 64: the kernel's cake has a fixed 1024 queues, tc-cake(8) takes no count"),
    ({"ecn": False}, "ecn = 0: the kernel's cake always marks ECT packets, tc-cake(8) has no noecn"),
    ({"target_ms": 2}, "target_ms = 2: the kernel's cake sets target to rtt/20 (5000 us here)"),
    ({"interval_ms": 200}, "target_ms = 5: the kernel's cake sets target to rtt/20 (10000 us here)"),
])
def test_cake_parameters_the_kernel_cannot_take_need_the_link(params: dict[str, float], problem: str) -> None:
    """Refused with emulator = "kernel", before anything is built; with "auto" the link runs them."""
    changes = {"bottleneck__aqm": "cake", "bottleneck__aqm_params": params}
    assert (f'bottleneck.emulator = "kernel": bottleneck.aqm_params {problem}' in
            error_of(raw(bottleneck__emulator="kernel", **changes)))
    b = validate(raw(**changes), CATALOG).bottleneck
    assert b.needs_link and problem in (aqm.kernel_problem("cake", b.aqm_params) or "")


def test_a_kernel_cake_run_records_what_its_qdisc_fixed() -> None:
    b = validate(raw(bottleneck__aqm="cake", bottleneck__aqm_params={"interval_ms": 40, "target_ms": 2}),
                 CATALOG)
    assert not b.bottleneck.needs_link
    assert Emulation(Topology("t", b), None).implementation() == (
        "kernel tbf + cake (besteffort, flows: 1024 queues, target = rtt/20, ECN always on, unlimited (no target "
        "scaling at low rates))")
    fq = validate(raw(bottleneck__aqm="fq_codel"), CATALOG)
    assert Emulation(Topology("t", fq), None).implementation() == "kernel tbf + fq_codel"


@pytest.mark.skipif(not LINK.exists(), reason="bbrkit-link not built (make)")
@pytest.mark.parametrize(("args", "message"), [
    (["--aqm", "red"], "--aqm 'red': not one of fifo, codel, fq_codel, pie, cake, step"),
    (["--aqm", "step"], "--aqm step needs --step-us"),
    (["--aqm", "fifo", "--target-us", "5000"],
     "--target-us and --ecn apply to codel, fq_codel, cake and pie, not fifo"),
    (["--trace", "/nonexistent"], "--trace /nonexistent: No such file or directory"),
    (["--rev-aqm", "red"], "--rev-aqm 'red': not one of fifo, codel, fq_codel, pie, cake, step"),
    (["--rev-rate-bps", "100000", "--rev-trace", "/nonexistent"], "give at most one of --rev-rate-bps and --rev-trace"),
    (["--rev-trace", "/nonexistent"], "--rev-trace /nonexistent: No such file or directory"),
    (["--rev-loss", "1.5"], "--rev-loss: '1.5' is not a probability in 0..1"),
    (["--rev-loss", "0.1", "--rev-ge", "0,1,0,0"], "--rev-ge and --rev-loss: give one loss model"),
    (["--rev-aqm", "codel", "--rev-limit-bytes", "3000"], "--rev-limit-bytes: only for fifo and step"),
    (["--reorder", "0.5,3"], "--reorder needs --delay-us"),
    (["--reorder", "0.5"], "--reorder '0.5': expected P,GAP"),
    (["--police", "10,100"], "--police: '10' out of range"),
    (["--duplicate", "1.1"], "--duplicate: '1.1' is not a probability"),
    (["--rev-aggregate", "slot"], "--rev-aggregate 'slot': expected slot,MIN_US[,MAX_US[,PKTS]]"),
    (["--rev-aggregate", "count,4"], "--rev-aggregate 'count,4': expected"),
    (["--rev-aggregate", "slot,100,50"], "--rev-aggregate: '50' out of range 100.."),
    (["--ge", "1,2,3,4,5"], "--ge '1,2,3,4,5': expected netem's gemodel P [R [1-H [1-K]]], in percent"),
    (["--ge", "10% 200%"], "--ge: '200%' is not a percentage in 0..100"),
    (["--ge", "10 x"], "--ge: 'x' is not a percentage in 0..100"),
    (["--busy-poll-us", "1000001"], "--busy-poll-us: '1000001' out of range 0..1000000"),
    (["--busy-poll-us", "-1"], "--busy-poll-us: not a non-negative integer"),
    (["--stall", "1"], "--stall '1': expected PCT,US"),
    (["--stall", "101,300"], "--stall: '101' is not a percentage in 0..100"),
    (["--stall", "1,0"], "--stall: '0' out of range 1..1000000"),
    (["--rev-stall", "1,1000001"], "--rev-stall: '1000001' out of range 1..1000000"),
    (["--cpu", "1023"], "--cpu 1023: not a CPU this process may run on"),
    (["--cpu", "1024"], "--cpu: '1024' out of range 0..1023"),
    (["--cpu-latency-us", "1000001"], "--cpu-latency-us: '1000001' out of range 0..1000000"),
    (["--cpu-latency-us", "-1"], "--cpu-latency-us: not a non-negative integer"),
    (["--xdp-idle-us", "101"], "--xdp-idle-us: '101' out of range 0..100"),
    (["--xdp-idle-us", "x"], "--xdp-idle-us: not a non-negative integer"),
    (["--src-delay", "10.0.0.1"], "--src-delay '10.0.0.1': expected ADDR,US"),
    (["--src-delay", "fe80::1,100"], "--src-delay 'fe80::1,100': expected ADDR,US"),
    (["--src-delay", "10.0.0.1,x"], "--src-delay: not a non-negative integer"),
    (["--src-delay", "10.0.0.1,100", "--src-delay", "10.0.0.1,200"], "--src-delay: 10.0.0.1 given twice"),
    ([a for i in range(17) for a in ("--src-delay", f"10.0.0.{i + 1},{i + 1}")],
     "--src-delay: at most 256 addresses and 16 distinct delays"),
])
def test_the_link_binary_rejects_bad_options_in_one_line(args: list[str], message: str) -> None:
    rate = [] if "--trace" in args else ["--rate-bps", "1000000"]
    result = subprocess.run([LINK, "--left", "lo", "--right", "lo2", "--tag", "t", *rate, *args],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def two_senders(*rtts_ms: float) -> Any:
    return validate(raw(senders=[{"name": f"s{i}", "rtt_ms": r} for i, r in enumerate(rtts_ms)],
                        bottleneck__aqm="fq_codel"), CATALOG)


@pytest.mark.parametrize(("netem", "link", "rtts_ms", "mechanism"), [
    (False, True, (10, 50), "link"), (True, True, (10, 50), "netem"), (False, False, (10, 50), "delayline"),
    (False, True, tuple(range(1, 18)), "delayline"), (False, True, (0, 0), None)])
def test_the_link_serves_the_senders_delays_where_it_runs_and_the_kernel_has_no_netem(
        monkeypatch: pytest.MonkeyPatch, netem: bool, link: bool, rtts_ms: tuple[float, ...],
        mechanism: str | None) -> None:
    """The kernel's netem first; else the link when it runs and has a line for each distinct delay (16); else
    a delay line per sender."""
    from bbrbench.testbed import emulation

    monkeypatch.setattr(emulation, "qdisc_available", lambda *args: netem)
    monkeypatch.setattr(emulation, "find_binary", lambda *args: Path("/bin/true"))
    assert emulation.delay_mechanism(two_senders(*rtts_ms), "probe", link) == mechanism


def test_each_sender_with_a_delay_reaches_the_link_as_its_address_and_rtt() -> None:
    """Each sender's whole RTT (forward and return) waits after the link, keyed by its address; a sender without
    delay gets no line, and the topology builds no delay namespace for any of them."""
    s = two_senders(10, 0, 50.5)
    topo = Topology("t", s)
    topo.link_netns = "t-q"
    topo.delays_in_link()
    assert [h.delay_netns for h in topo.hosts.values()] == [None, None, None]
    opts = Emulation(topo, "link").link_options()
    assert [opts[i + 1] for i, o in enumerate(opts) if o == "--src-delay"] == \
        [f"{topo.hosts['s0'].addr},10000", f"{topo.hosts['s2'].addr},50500"]
    assert "each sender's RTT as a delay after the link" in Emulation(topo, "link").implementation()
    assert "--src-delay" not in Emulation(topo, "delayline").link_options()


def test_the_record_names_the_links_idle_path_where_it_ran() -> None:
    """The link's ready line says whether its XDP idle path is attached; results record it with the bottleneck."""
    topo = Topology("t", two_senders(10, 0, 50.5))
    topo.link_netns = "t-q"
    emulation = Emulation(topo, "delayline")
    emulation.link = LinkEmulator("t-q", "l", "r", "t", [])
    assert "XDP" not in emulation.implementation()  # not started: nothing attached
    emulation.link.ready_event = {"xdp_idle_us": 10}
    assert ", frames finding it idle that serialise in 10 us or less forwarded by XDP;" in emulation.implementation()
    emulation.link.ready_event = {"xdp_idle_us": -1, "xdp_idle_off": "an AQM or step marking"}
    assert "XDP" not in emulation.implementation()


def test_delays_given_to_a_link_that_does_not_run_stop_the_run() -> None:
    with pytest.raises(HarnessError, match="no link runs"):
        Emulation(Topology("t", two_senders(10, 50)), "link").start()
