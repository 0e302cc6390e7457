"""The delay line (bbrkit-delay and bbrbench/testbed/delayline.py) on real namespaces, as root."""

from __future__ import annotations

import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from bbrbench.analysis import trust  # noqa: E402
from bbrbench.experiments.delaybench import RECEIVER_ADDR, Chain  # noqa: E402
from bbrbench.testbed.delayline import DelayLine, DelayLineError  # noqa: E402
from bbrbench.testbed.procs import wait_listening  # noqa: E402
from bbrbench.testbed.wire import kill_wire_processes  # noqa: E402

pytestmark = [pytest.mark.net, pytest.mark.skipif(os.geteuid() != 0, reason="needs root for namespaces")]

DEFAULT_BINARY = REPO / "build" / "bbrkit-delay"
UDP_PORT = 9000
# Python timestamps in user space add scheduling noise on top of the delay line's own error.
ONE_WAY_TOLERANCE_US = 1500
RTT_TOLERANCE_US = 1000
_serial = itertools.count()


@pytest.fixture(scope="module")
def binary() -> Path:
    """The delay-line binary, brought up to date by the project's own build rule (make knows its sources,
    headers and flags)."""
    if os.environ.get("BBRKIT_DELAY"):
        return Path(os.environ["BBRKIT_DELAY"])
    subprocess.run(["make", "-s", "-C", str(REPO), "build/bbrkit-delay"], check=True)
    return DEFAULT_BINARY


@pytest.fixture
def chain() -> Iterator[Chain]:
    c = Chain(f"bbdt-{os.getpid()}-{next(_serial)}-")
    try:
        c.create()
        yield c
    finally:
        c.destroy()


def ping_median_us(chain: Chain, count: int = 20) -> float:
    samples = chain.ping(count, 0.02)
    assert len(samples) >= count - 1, f"only {len(samples)} of {count} pings answered"
    return statistics.median(samples)


ECHO_SERVER = f"""
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{RECEIVER_ADDR}", {UDP_PORT}))
s.settimeout(10)
while True:
    data, peer = s.recvfrom(100)
    if data == b"end":
        break
    s.sendto(data + b" %d" % time.clock_gettime_ns(time.CLOCK_REALTIME), peer)
"""


def one_way_delays_us(chain: Chain, count: int = 30) -> tuple[float, float]:
    """Median sender->receiver and receiver->sender delays, from CLOCK_REALTIME stamps in both namespaces
    (one kernel, one clock)."""
    server = subprocess.Popen(["ip", "netns", "exec", chain.receiver, sys.executable, "-c", ECHO_SERVER])
    try:
        wait_listening(chain.receiver, [UDP_PORT], udp=True, servers=[server])
        client = subprocess.run(
            ["ip", "netns", "exec", chain.sender, sys.executable, "-c", f"""
import socket, time
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.settimeout(2)
for _ in range({count}):
    c.sendto(b"%d" % time.clock_gettime_ns(time.CLOCK_REALTIME), ("{RECEIVER_ADDR}", {UDP_PORT}))
    t0, t1 = map(int, c.recv(100).split())
    print(t1 - t0, time.clock_gettime_ns(time.CLOCK_REALTIME) - t1)
    time.sleep(0.01)
c.sendto(b"end", ("{RECEIVER_ADDR}", {UDP_PORT}))
"""], capture_output=True, text=True, timeout=30, check=True)
    finally:
        server.wait(timeout=15)
    pairs = [tuple(map(int, line.split())) for line in client.stdout.splitlines()]
    return (statistics.median(p[0] for p in pairs) / 1000, statistics.median(p[1] for p in pairs) / 1000)


def test_configured_delay_shows_in_ping_rtt(chain: Chain, binary: Path) -> None:
    assert chain.ping(1) == [], "the two hosts must not reach each other without the delay line"
    with DelayLine(chain.delay, "l0", "r0", 0, 0, tag=f"{chain.prefix}dl", binary=binary):
        chain.ping(2, 0.1)
        without_delay = ping_median_us(chain)
    with DelayLine(chain.delay, "l0", "r0", 6000, 6000, tag=f"{chain.prefix}dl", binary=binary):
        chain.ping(2, 0.1)
        with_delay = ping_median_us(chain)
    assert without_delay < RTT_TOLERANCE_US
    assert abs(with_delay - 12_000) < RTT_TOLERANCE_US, with_delay


def test_asymmetric_delays_add_up_each_in_its_direction(chain: Chain, binary: Path) -> None:
    with DelayLine(chain.delay, "l0", "r0", 3000, 9000, tag=f"{chain.prefix}dl", binary=binary) as line:
        chain.ping(2, 0.1)
        rtt = ping_median_us(chain)
        forward, backward = one_way_delays_us(chain)
        stats = line.stats()
    assert abs(rtt - 12_000) < RTT_TOLERANCE_US, rtt
    assert abs(forward - 3000) < ONE_WAY_TOLERANCE_US, forward
    assert abs(backward - 9000) < ONE_WAY_TOLERANCE_US, backward
    assert (stats["lr_delay_us"], stats["rl_delay_us"]) == (3000, 9000)


def test_tcp_passes_both_ways_and_is_counted(chain: Chain, binary: Path) -> None:
    server = subprocess.Popen(["ip", "netns", "exec", chain.receiver, "iperf3", "-s", "-p", "5201"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    received = []
    try:
        with DelayLine(chain.delay, "l0", "r0", 1000, 1000, tag=f"{chain.prefix}dl", binary=binary) as line:
            time.sleep(0.3)
            for reverse in ([], ["-R"]):
                run = subprocess.run(["ip", "netns", "exec", chain.sender, "iperf3", "-J", "-c", RECEIVER_ADDR,
                                      "-p", "5201", "-n", "20M", *reverse],
                                     check=True, capture_output=True, text=True, timeout=30)
                received.append(json.loads(run.stdout)["end"]["sum_received"]["bytes"])
        stats = line.stats()
    finally:
        server.kill()
        server.wait()
    # iperf3 -n ends the test once the sender has written 20 MB: what was still queued is not delivered
    # (on a busy machine 13.7 of 20 MB arrived). Megabytes of payload crossed each way, every byte the
    # receiver read was counted on its way, and ACKs alone would be far less.
    assert min(received) > 5e6, received
    assert stats["lr_bytes"] > received[0] and stats["rl_bytes"] > received[1], (stats, received)
    assert stats["lr_drop_queue"] == stats["rl_drop_queue"] == 0


# The delay line is stopped this long while frames arrive: each leaves this much late, less its delay, far
# over the trust check's limits and far under the 1 s after which a receive stamp reads as a clock step.
STALL_S = 0.1
STALLED_FRAMES = 20
SEND_DATAGRAMS = f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range({STALLED_FRAMES}):
    s.sendto(b"late", ("{RECEIVER_ADDR}", {UDP_PORT}))
"""


def test_a_delay_line_that_cannot_keep_time_fails_the_trust_check(chain: Chain, binary: Path) -> None:
    """The delay line reports its lateness per direction (late departures, the latest, added-delay p50/p99);
    stopped (SIGSTOP) while frames arrive, it sends them late by the stop, counted from their kernel receive
    stamps, and analysis/trust.py fails the run on that sender's data direction's added delay."""
    with DelayLine(chain.delay, "l0", "r0", 2000, 2000, tag=f"{chain.prefix}dl", binary=binary) as line:
        chain.ping(3, 0.05)  # resolves ARP, so that the stalled datagrams leave at once
        before = line.stats()
        assert line._proc is not None
        os.kill(line._proc.pid, signal.SIGSTOP)
        try:
            subprocess.run(["ip", "netns", "exec", chain.sender, sys.executable, "-c", SEND_DATAGRAMS], check=True,
                           timeout=30)
            time.sleep(STALL_S)
        finally:
            os.kill(line._proc.pid, signal.SIGCONT)
        chain.ping(2, 0.05)
        after = line.stats()
    for d in ("lr", "rl"):
        assert 0 <= before[f"{d}_added_p50_us"] <= before[f"{d}_added_p99_us"] <= before[f"{d}_late_max_us"]
        assert before[f"{d}_late_wakeups"] <= before[f"{d}_pkts"], before
    stalled_us = STALL_S * 1e6 - 2000
    assert after["lr_late_wakeups"] - before["lr_late_wakeups"] >= STALLED_FRAMES, after
    assert after["lr_late_max_us"] >= stalled_us and after["lr_added_p50_us"] >= stalled_us * 7 / 8, after
    verdict = trust.assess(None, {"base_rtt_ms": 4}, [{"sender": "s1", **after}])
    assert not verdict["ok"], verdict
    assert any("sender s1, data direction: added delay p50" in why for why in verdict["failed"])
    assert verdict["checks"]["delay_line_s1_lr_late_share"] > 0  # recorded beside it, not judged

def interfaces(netns: str) -> list[str]:
    out = subprocess.run(["ip", "-n", netns, "-o", "link"], capture_output=True, text=True, check=True).stdout
    return sorted(line.split(":")[1].strip() for line in out.splitlines())


def test_stop_leaves_nothing_behind(chain: Chain, binary: Path) -> None:
    def state() -> tuple[str, str]:
        flags = subprocess.run(["ip", "-n", chain.delay, "-o", "link", "show", "l0"], capture_output=True,
                               text=True, check=True).stdout
        ipv6 = subprocess.run(["ip", "netns", "exec", chain.delay, "sysctl", "-n", "net.ipv6.conf.l0.disable_ipv6"],
                              capture_output=True, text=True, check=True).stdout.strip()
        return ("UP" if ",UP" in flags else "DOWN", ipv6)

    before = state()
    links = interfaces(chain.delay)
    line = DelayLine(chain.delay, "l0", "r0", 1000, 1000, tag=f"{chain.prefix}dl", binary=binary)
    line.start()
    pid = line._proc.pid if line._proc else 0
    assert state() == ("UP", "1")
    line.stop()
    line.stop()
    assert not running(pid)
    assert state() == before
    assert interfaces(chain.delay) == links
    assert line.stats()["lr_pkts"] >= 0


def test_kill_wire_processes_kills_an_orphan(chain: Chain, binary: Path) -> None:
    tag = f"{chain.prefix}orphan"
    # The shell exits at once, so the delay line is re-parented: an orphan as a crashed run leaves it.
    subprocess.run(["sh", "-c", f"setsid ip netns exec {chain.delay} {binary} --left l0 --right r0 "
                    f"--delay-lr-us 1000 --delay-rl-us 1000 --tag {tag} >/dev/null 2>&1 &"], check=True)
    deadline = time.monotonic() + 5
    while not _pids_with_tag(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = _pids_with_tag(tag)
    assert pids, "the orphan did not start"
    assert kill_wire_processes(f"{chain.prefix}other") == 0
    assert kill_wire_processes(chain.prefix) == 1
    assert not [pid for pid in pids if running(pid)]


def running(pid: int) -> bool:
    """Alive and not a zombie: this machine's init may reap orphans late."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _pids_with_tag(tag: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", "--", f"--tag {tag}$"], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


@pytest.mark.parametrize("args, message", [
    (["--right", "r0", "--delay-lr-us", "1", "--delay-rl-us", "1", "--tag", "t"], "--left is required"),
    (["--left", "l0", "--right", "r0", "--delay-lr-us", "ten", "--delay-rl-us", "1", "--tag", "t"],
     "--delay-lr-us: not a non-negative integer"),
    (["--left", "l0", "--right", "r0", "--delay-lr-us", "1", "--delay-rl-us", "99999999999", "--tag", "t"],
     "--delay-rl-us: '99999999999' out of range"),
    (["--left", "nosuch0", "--right", "r0", "--delay-lr-us", "1", "--delay-rl-us", "1", "--tag", "t"],
     "--left: no interface 'nosuch0'"),
    (["--left", "l0", "--right", "r0", "--delay-lr-us", "1", "--delay-rl-us", "1", "--tag", "a b"],
     "--tag 'a b'"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
])
def test_bad_arguments_fail_with_one_clear_line(chain: Chain, binary: Path, args: list[str], message: str) -> None:
    proc = subprocess.run(["ip", "netns", "exec", chain.delay, str(binary), *args], capture_output=True, text=True,
                          timeout=10)
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_wrapper_rejects_bad_input_before_starting(chain: Chain, binary: Path) -> None:
    with pytest.raises(DelayLineError, match="delay_lr_us"):
        DelayLine(chain.delay, "l0", "r0", -5, 0, tag="x", binary=binary)
    with pytest.raises(DelayLineError, match="no interface 'nosuch0'"):
        DelayLine(chain.delay, "l0", "nosuch0", 1, 1, tag=f"{chain.prefix}dl", binary=binary).start()
    with pytest.raises(DelayLineError, match="not found"):
        DelayLine(chain.delay, "l0", "r0", 1, 1, tag="x", binary=Path("/nonexistent/bbrkit-delay")).start()
    assert not _pids_with_tag(f"{chain.prefix}dl")
