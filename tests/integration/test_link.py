"""bbrkit-link with real traffic (root): the harness's own topology and emulation classes build a
sender -> router -> link -> receiver path; each test checks one property bench/link/README.md promises
against what the link and the kernel count."""
from __future__ import annotations

import bisect
import json
import os
import re
import signal
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bbrbench import ratetrace
from bbrbench.testbed.netns import Namespaces
from bbrbench.testbed.procs import command, wait_listening
from bbrbench.testbed.system import qdisc_available
from bbrbench.testbed.topology import HOST_IF, RECEIVER_ADDR
from linkpath import LinkPath, iperf, iperf_json, next_serial, nstat, ping_ms
from netutil import NS_PREFIX


def test_flow_queueing_keeps_a_sparse_flow_near_base_rtt_beside_four_bulk_flows(
        link_path: Callable[..., LinkPath]) -> None:
    """RFC 8290 section 1.3 (and CAKE's DRR++): sparse flows are served ahead of bulk ones, so their delay
    stays near the base RTT, not near the AQM's 5 ms target as one shared queue would hold it; with the
    same buffer as a FIFO, the same traffic queues them behind the bulk flows. Two sparse flows: pings
    (ICMP, hashed without ports) and a TCP request/response flow (hashed with its ports). fq_codel and
    cake are each held to the one FIFO run."""
    base_ms, target_ms = 20.0, 5.0
    aqms = ("fq_codel", "cake")
    results: dict[str, tuple[list[float], list[float]]] = {}
    for kind in (*aqms, "fifo"):
        path = link_path({"rate_mbit": 50, "aqm": kind, "buffer_bdp": 4}, rtt_ms=base_ms)
        bulk = iperf(path, ["-P", "4", "-C", "cubic"], seconds=10)
        time.sleep(3)
        with TcpRequests(path, count=60, interval_s=0.1) as requests:
            pings = ping_ms(path, count=60, interval_s=0.1)
        results[kind] = (pings, requests.rtts_ms)
        bulk.communicate(timeout=30)
        stats = path.emulation.link.stats() if path.emulation.link else {}
        assert stats["out_bytes"] * 8 / 10 > 0.8 * 50e6, (kind, stats)  # the bulk flows filled the link
        path.emulation.stop()
    for aqm in aqms:
        for sparse, fifo in zip(results[aqm], results["fifo"]):
            sparse, fifo = sorted(sparse), sorted(fifo)
            assert len(sparse) >= 55, aqm
            assert statistics.median(sparse) <= base_ms + 2.5, (aqm, sparse)
            assert sparse[int(0.95 * len(sparse))] <= base_ms + 2 * target_ms, (aqm, sparse)
            assert statistics.median(fifo) > base_ms + 2 * target_ms, fifo


# A TCP echo: the receiver answers each 100-byte request in kind; the sender times them.
ECHO_PORT = 5301
_ECHO_SERVER = f"""
import socket
s = socket.create_server(('0.0.0.0', {ECHO_PORT}))
c, _ = s.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while (data := c.recv(4096)):
    c.sendall(data)
"""
_ECHO_CLIENT = f"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], {ECHO_PORT}), timeout=5)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for _ in range(int(sys.argv[2])):
    t = time.monotonic()
    c.sendall(b'x' * 100)
    got = 0
    while got < 100:
        got += len(c.recv(4096))
    print((time.monotonic() - t) * 1000)
    time.sleep(float(sys.argv[3]))
"""


class TcpRequests:
    """The echo's requests, timed by the sender while the block runs (alongside other probes)."""

    def __init__(self, path: LinkPath, count: int, interval_s: float) -> None:
        self.path, self.count, self.interval_s = path, count, interval_s
        self.rtts_ms: list[float] = []

    def __enter__(self) -> TcpRequests:
        self.server = subprocess.Popen(["ip", "netns", "exec", self.path.topo.receiver, "python3", "-c",
                                        _ECHO_SERVER])
        wait_listening(self.path.topo.receiver, [ECHO_PORT], servers=[self.server])
        self.client = subprocess.Popen(["ip", "netns", "exec", self.path.sender, "python3", "-c", _ECHO_CLIENT,
                                        RECEIVER_ADDR, str(self.count), str(self.interval_s)],
                                       stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            out, _ = self.client.communicate(timeout=self.count * (self.interval_s + 1) + 10)
            self.rtts_ms = [float(line) for line in out.split()]
        finally:
            self.server.kill()
            self.server.wait()


def test_an_ecn_flow_is_marked_not_dropped(link_path: Callable[..., LinkPath]) -> None:
    """FQ-CoDel marks ECT packets instead of dropping them (RFC 8290 section 4.1.2): one ECN-capable
    CUBIC flow at moderate load sees CE marks echoed back (TCPDeliveredCE at the sender) and no drops."""
    path = link_path({"rate_mbit": 50, "aqm": "fq_codel", "buffer_bdp": 4}, rtt_ms=20,
                     sysctls=("net.ipv4.tcp_ecn=1",))
    flow = iperf(path, ["-C", "cubic"], seconds=6)
    flow.communicate(timeout=30)
    assert path.emulation.link is not None
    stats = path.emulation.link.stats()
    assert stats["mark_aqm"] > 0, stats
    assert stats["drop_aqm"] == 0 and stats["drop_overlimit"] == 0, stats
    assert nstat(path.sender, "TcpExtTCPDeliveredCE") > 0


LOG_INTERVAL_S = 0.01  # the link's log interval at the scenario's default queue_sample_hz


def windows(log: list[dict[str, float]], width_s: float, max_mbit: float) -> list[tuple[float, float]]:
    """(start, end) of consecutive windows of the link's log in which the queue never emptied: each row but
    the last holds more than the link can send before the next row. What the windows delivered is counted at
    the receiver (ReceiverCounts), not from the link's own counters."""
    out, start = [], 0
    floor = max_mbit * 1e6 / 8 * LOG_INTERVAL_S
    for i, row in enumerate(log):
        if row["t_mono_s"] - log[start]["t_mono_s"] >= width_s - 1e-4:
            span = log[start:i + 1]
            if all(r["backlog_bytes"] > floor for r in span[:-1]):
                out.append((log[start]["t_mono_s"], row["t_mono_s"]))
            start = i
    return out


# Reads the receiver's interface counters every interval on CLOCK_MONOTONIC (the link log's clock), keeping
# only reads bracketed within 0.3 ms (a sampler descheduled mid-read would stamp its counts too early).
_SAMPLER = """
import sys, time
end = time.monotonic() + float(sys.argv[1])
out = []
with open('/proc/net/dev') as f:
    print('ready', flush=True)
    while time.monotonic() < end:
        f.seek(0)
        t0 = time.monotonic()
        text = f.read()
        t1 = time.monotonic()
        for line in text.splitlines():
            name, _, rest = line.partition(':')
            if name.strip() == sys.argv[2] and t1 - t0 < 0.0003:
                v = rest.split()
                out.append(f'{(t0 + t1) / 2:.6f} {v[1]} {v[0]}')
        time.sleep(float(sys.argv[3]))
print('\\n'.join(out))
"""


class ReceiverCounts:
    """What left the link, as the receiver's interface counts it (frames without FCS: the link's own unit),
    sampled every interval_s in the receiver's namespace while the traffic runs."""

    def __init__(self, path: LinkPath, seconds: float, interval_s: float = 0.01) -> None:
        self.proc = subprocess.Popen(["ip", "netns", "exec", path.topo.receiver, "python3", "-c", _SAMPLER,
                                      str(seconds), HOST_IF, str(interval_s)], stdout=subprocess.PIPE, text=True)
        # Sampling from here on: traffic started before the interpreter came up would go uncounted.
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"
        self.t: list[float] = []
        self.packets: list[int] = []
        self.bytes: list[int] = []

    def finish(self) -> None:
        out, _ = self.proc.communicate(timeout=60)
        for line in out.splitlines():
            t, packets, nbytes = line.split()
            self.t.append(float(t))
            self.packets.append(int(packets))
            self.bytes.append(int(nbytes))
        assert len(self.t) > 10, out[-300:]

    def at(self, t: float) -> tuple[float, float]:
        """(packets, bytes) received by time t, interpolated between samples."""
        i = min(max(bisect.bisect_left(self.t, t), 1), len(self.t) - 1)
        f = (t - self.t[i - 1]) / (self.t[i] - self.t[i - 1])
        return (self.packets[i - 1] + f * (self.packets[i] - self.packets[i - 1]),
                self.bytes[i - 1] + f * (self.bytes[i] - self.bytes[i - 1]))

    def between(self, t0: float, t1: float) -> tuple[float, float]:
        assert self.t[0] <= t0 <= t1 <= self.t[-1], f"{t0:.3f}-{t1:.3f} s is outside the samples"
        (p0, b0), (p1, b1) = self.at(t0), self.at(t1)
        return p1 - p0, b1 - b0


def test_the_delivered_rate_follows_a_trace_per_100ms(link_path: Callable[..., LinkPath], tmp_path: Path) -> None:
    """Each 100 ms window delivers, as the receiver counts it, one full-size frame per opportunity of the
    trace in it (a 1472-byte UDP payload is a 1500-byte IP packet, which fills one of Mahimahi's 1504-byte
    opportunities with its 4-byte TUN header), within 2% (plus one frame that may straddle a window's edge).
    A UDP flood keeps the queue backlogged; the link's log says when it was, and where the trace starts."""
    trace = ratetrace.generate({"kind": "square", "low_mbit": 20, "high_mbit": 60, "period_s": 1.0}, 2.0,
                               tmp_path / "square.trace")
    opps = [int(line) for line in trace.path.read_text().split()]
    path = link_path({"rate_trace": str(trace.path), "aqm": "fifo", "buffer_packets": 1000})
    counts = ReceiverCounts(path, seconds=6.5, interval_s=0.001)  # fine enough to see the trace's steps
    flood = iperf(path, ["-u", "-b", "90M", "-l", "1472"], seconds=5)
    flood.communicate(timeout=30)
    counts.finish()
    path.emulation.stop()
    log = path.log()
    start = log[0]["t_mono_s"]  # the link logs its first row when it starts, the trace's time zero
    spans: list[tuple[float, float, int]] = []
    for t0, t1 in windows(log, 0.1, max_mbit=60):
        a, b = (t0 - start) * 1000 % trace.period_ms, (t1 - start) * 1000 % trace.period_ms
        if b < a:
            continue
        spans.append((t0, t1, sum(1 for ms in opps if a < ms <= b)))

    errors = [abs(counts.between(t0, t1)[0] - cap) / cap for t0, t1, cap in spans]
    # Most windows land within 0.5%; on this 2-vCPU VM a late wake-up now and then moves a few packets
    # across a window's edge (1.4% and 2.7% seen), so 95% of windows are held to 2% and all to 5%.
    assert len(errors) >= 20
    assert sorted(errors)[int(0.95 * len(errors)) - 1] <= 0.02, errors
    assert max(errors) <= 0.05, errors


def test_a_trace_opportunity_carries_one_full_size_ip_packet(link_path: Callable[..., LinkPath],
                                                              tmp_path: Path) -> None:
    """Mahimahi's opportunity is 1504 bytes of what its TUN device gives it, a 1500-byte IP packet and a
    4-byte header: one opportunity per ms delivers 1000 full-size packets a second, as the receiver counts
    them over 3 s of backlog, within 0.3% (1500 bytes of Ethernet frame per opportunity gave 990.7)."""
    trace = tmp_path / "1ms.trace"
    trace.write_text("1\n")
    path = link_path({"rate_trace": str(trace), "aqm": "fifo", "buffer_packets": 100})
    counts = ReceiverCounts(path, seconds=6)
    flood = iperf(path, ["-u", "-b", "14M", "-l", "1472"], seconds=5)
    flood.communicate(timeout=30)
    counts.finish()
    path.emulation.stop()
    t0 = counts.t[0] + 1.5
    packets, _ = counts.between(t0, t0 + 3)
    assert packets / 3 == pytest.approx(1000, rel=0.003)


# 1000 Mbit/s is measured, not asserted: it passed 1% in 6 of 7 runs on this 2-vCPU VM and gave 98.1% in
# one with other builds running, where the flood, the router and the link (near its ~1.2 Gbit/s limit
# here) share two CPUs (add 1000 to the list to repeat it).
@pytest.mark.parametrize("rate_mbit", [10, 100])
def test_rate_accuracy_within_one_percent(link_path: Callable[..., LinkPath], rate_mbit: int) -> None:
    """Backlogged by a UDP flood 20% above the rate, the receiver gets rate x time of frames within 1%, over
    the 100 ms windows in which the link's queue never emptied, half a second of them at least."""
    path = link_path({"rate_mbit": rate_mbit, "aqm": "fifo", "buffer_packets": 3000})
    counts = ReceiverCounts(path, seconds=7.5)
    flood = iperf(path, ["-u", "-b", f"{int(rate_mbit * 1.2)}M", "-l", "1400"], seconds=6)
    flood.communicate(timeout=30)
    path.emulation.stop()
    counts.finish()
    spans = windows(path.log(), 0.1, max_mbit=rate_mbit)
    stats = path.emulation.link.stats() if path.emulation.link else {}
    seconds = sum(t1 - t0 for t0, t1 in spans)
    assert seconds >= 0.5, f"backlogged for {seconds:.2f} s only: {json.dumps(stats)}"
    received = sum(counts.between(t0, t1)[1] for t0, t1 in spans)
    # Link time lost to late wake-ups past the 1 ms catch-up is not the rate's to deliver; the link counts it.
    forfeit_us = {row["t_mono_s"]: row["forfeit_us"] for row in path.log()}
    forfeit_s = sum(forfeit_us[t1] - forfeit_us[t0] for t0, t1 in spans) / 1e6
    assert forfeit_s < seconds / 2, f"forfeited {forfeit_s:.3f} of {seconds:.2f} s: {json.dumps(stats)}"
    assert received * 8 / (seconds - forfeit_s) == pytest.approx(rate_mbit * 1e6, rel=0.01)


def test_pie_holds_a_cubic_queue_near_its_reference_delay(link_path: Callable[..., LinkPath]) -> None:
    """RFC 8033: PIE steers the queueing delay to its 15 ms reference. A CUBIC flow with 1000 packets of
    buffer (240 ms at 50 Mbit/s, which a FIFO lets it fill) keeps a mean sojourn under 2 x 15 ms."""
    path = link_path({"rate_mbit": 50, "aqm": "pie", "buffer_packets": 1000}, rtt_ms=20)
    flow = iperf(path, ["-C", "cubic"], seconds=10)
    flow.communicate(timeout=30)
    path.emulation.stop()
    log = path.log()
    late = [r["sojourn_mean_us"] for r in log if r["t_mono_s"] > log[0]["t_mono_s"] + 5 and r["backlog_pkts"] > 0]
    assert late and statistics.mean(late) < 30_000, statistics.mean(late) if late else late
    stats = path.emulation.link.stats() if path.emulation.link else {}
    assert stats["drop_aqm"] > 0 and stats["drop_overlimit"] == 0, stats


def test_jitter_spreads_delay_without_reordering(link_path: Callable[..., LinkPath]) -> None:
    """jitter_ms: each packet waits a further uniform 0..5 ms after the link but never leaves before the one
    ahead of it (netem's rule with a rate: due = max(now + U, due ahead)); none overtakes another (a UDP
    flow's datagrams arrive in order, where a reordering jitter would swap thousands). Alone, a ping draws
    its own wait: median about 2.5 ms. Behind a flow with frames D apart the wait is the running maximum,
    P(wait <= x) = prod over j >= 0 of min(1, (x + jD) / 5 ms): at 20 Mbit/s of 1242-byte frames (D = 0.5 ms)
    its median is 3.5 ms, and bursts only raise it: about the whole 5 ms under load, not half."""
    base_ms, jitter_ms = 20.0, 5.0
    path = link_path({"rate_mbit": 50, "aqm": "fifo", "buffer_packets": 1000, "jitter_ms": jitter_ms},
                     rtt_ms=base_ms)
    rtts = sorted(ping_ms(path, count=200, interval_s=0.02))
    udp = iperf(path, ["-u", "-b", "20M", "-l", "1200", "-J"], seconds=5)
    time.sleep(0.5)
    loaded = sorted(ping_ms(path, count=150, interval_s=0.02))
    out, _ = udp.communicate(timeout=30)
    end = json.loads(out)["end"]["sum"]
    assert end["packets"] > 5000 and end.get("out_of_order", 0) == 0, end
    assert rtts[0] >= base_ms - 0.5
    assert rtts[int(0.05 * len(rtts))] < base_ms + 0.2 * jitter_ms + 1, rtts
    assert rtts[int(0.95 * len(rtts))] > base_ms + 0.8 * jitter_ms, rtts
    assert statistics.median(rtts) - base_ms == pytest.approx(jitter_ms / 2, abs=1.0), rtts
    assert 3.5 - 0.5 <= statistics.median(loaded) - base_ms <= jitter_ms + 1, loaded


def test_sojourn_is_the_queues_own_not_the_links_serialisation(link_path: Callable[..., LinkPath]) -> None:
    """The sojourn the link reports is enqueue to dequeue, what its AQM judges: lone 1000-byte pings at
    1 Mbit/s find the queue empty (under 1 ms), though each takes 8 ms to cross the link (taken at send,
    it read 8 ms and more); and every frame carried its kernel receive stamp (no fallback to read time)."""
    path = link_path({"rate_mbit": 1, "aqm": "fifo", "buffer_packets": 100})
    command(["ping", "-n", "-c", "20", "-i", "0.1", "-s", "972", RECEIVER_ADDR], netns=path.sender, timeout=30)
    stats = path.emulation.link.stats() if path.emulation.link else {}
    assert stats["out_pkts"] >= 20 and stats["sojourn_max_us"] < 1000, stats
    assert stats["rx_stamp_fallback"] == 0, stats


def test_what_waits_in_the_socket_buffer_is_counted(link_path: Callable[..., LinkPath]) -> None:
    """The receive socket is a FIFO the AQM cannot see: with the link stopped for 300 ms (SIGSTOP, as a
    CPU-starved forwarder) under a 5 Mbit/s UDP flow, the frames that piled up there are counted when it
    resumes: the longest wait (>= 250 ms), how many waited over 1 ms, and the bytes held (the filled slots of
    the receive ring, or SO_MEMINFO without one)."""
    path = link_path({"rate_mbit": 10, "aqm": "fifo", "buffer_packets": 1000})
    link = path.emulation.link
    assert link is not None and link._proc is not None
    udp = iperf(path, ["-u", "-b", "5M", "-l", "1000"], seconds=3)
    time.sleep(1)
    os.kill(link._proc.pid, signal.SIGSTOP)
    try:
        time.sleep(0.3)
    finally:
        os.kill(link._proc.pid, signal.SIGCONT)
    udp.communicate(timeout=30)
    stats = link.stats()
    assert stats["rx_wait_max_us"] >= 250_000, stats
    assert stats["rx_waited_pkts"] >= 50, stats
    assert stats["sockbuf_max_bytes"] >= 50 * 1000, stats


def test_injected_stalls_make_their_share_of_departures_late(link_path: Callable[..., LinkPath]) -> None:
    """bottleneck.stall: before 20% of departures the link's thread stops for 1 ms, and the link's own
    lateness counters see exactly those: lone pings 10 ms apart each leave alone, so a stall makes one
    departure late (by over the 200 us that counts as late), the stalls are 20% of the departures within
    five standard deviations of 500 draws, and the other departures are late only as a loaded machine makes
    them (a few percent at most for a real-time thread forwarding lone pings)."""
    path = link_path({"rate_mbit": 10, "aqm": "fifo", "buffer_packets": 100, "stall": {"percent": 20, "us": 1000}})
    pings = 500
    command(["ping", "-n", "-q", "-c", str(pings), "-i", "0.01", RECEIVER_ADDR], netns=path.sender, timeout=60)
    assert path.emulation.link is not None
    stats = path.emulation.link.stats()
    departures, stalls = stats["out_pkts"], stats["stalls_injected"]
    assert departures >= pings, stats
    sd = (departures * 0.2 * 0.8) ** 0.5
    assert abs(stalls - 0.2 * departures) <= 5 * sd, stats
    assert stalls <= stats["late_wakeups"] <= stalls + 0.05 * departures, stats
    assert stats["late_max_us"] >= 1000, stats
    assert "injected stalls: 20% of departures held 1000 us" in path.emulation.implementation()


def _rps_cpus(netns: str, dev: str) -> set[int]:
    """The CPU bitmaps of @dev's receive queues (the kernel prints them in comma-separated groups)."""
    out = command(["sh", "-c", f"cat /sys/class/net/{dev}/queues/rx-*/rps_cpus"], netns=netns).stdout
    return {int(line.strip().replace(",", ""), 16) for line in out.splitlines()}


def _cpus_allowed(pid: int) -> dict[int, set[int]]:
    """Each thread of @pid and the CPUs it may run on (its Cpus_allowed_list, e.g. "0-1,3")."""
    allowed = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        match = re.search(r"^Cpus_allowed_list:\s*(\S+)$", (task / "status").read_text(), re.M)
        assert match
        ranges = [[int(x) for x in part.split("-")] for part in match.group(1).split(",")]
        allowed[int(task.name)] = {cpu for r in ranges for cpu in range(r[0], r[-1] + 1)}
    return allowed


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: every placement runs as none")
@pytest.mark.parametrize("placement", ["pin+rps", "isolate"])
def test_pin_and_rps_place_the_link_and_every_veths_receive_work(link_path: Callable[..., LinkPath],
                                                                 placement: str) -> None:
    """cpu_placement = "pin+rps": the link's forward thread may run only on the first CPU the harness may
    use (its task's Cpus_allowed_list), the process's other threads anywhere, and every interface of every
    namespace of the path steers its receive processing to the other CPUs (rps_cpus read back); the run
    records what ran. "isolate" also confines every thread of a delay line to those other CPUs, where one runs
    (here the link serves the sender's delay itself, bench/README.md "Delay")."""
    cpus = sorted(os.sched_getaffinity(0))
    path = link_path({"rate_mbit": 10, "aqm": "fifo"}, rtt_ms=10, cpu_placement=placement)
    link = path.emulation.link
    assert link is not None and link._proc is not None
    allowed = _cpus_allowed(link._proc.pid)
    pinned = [tid for tid, cpus_allowed in allowed.items() if cpus_allowed == {cpus[0]}]
    assert len(pinned) == 1 and pinned[0] != link._proc.pid, allowed
    want = sum(1 << c for c in cpus[1:])
    seen = {(ns, dev): _rps_cpus(ns, dev) for ns in path.topo.namespaces for dev in path.topo.interfaces(ns)}
    # the router's two, the receiver's, the link's two and the sender's (its delay is the link's)
    assert len(seen) >= 6 and all(masks == {want} for masks in seen.values()), seen
    record = path.emulation.stats()["cpu_placement"]
    assert (record["ran"], record["link_cpu"], record["rps_cpus"]) == (placement, cpus[0], cpus[1:]), record
    assert path.emulation.delay != "delayline" or path.emulation.delay_lines
    for line in path.emulation.delay_lines:
        assert line._proc is not None
        threads = _cpus_allowed(line._proc.pid)
        want = set(cpus[1:] if placement == "isolate" else cpus)
        assert len(threads) >= 2 and all(c == want for c in threads.values()), threads


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: every placement runs as none")
@pytest.mark.parametrize("placement", ["napi", "napi+pin"])
def test_napi_receives_the_links_departures_in_a_napi_thread_one_frame_at_a_time(
        link_path: Callable[..., LinkPath], placement: str) -> None:
    """cpu_placement = "napi": the receiver's interface has the XDP_PASS program attached in driver mode
    (`ip -d link`), GRO off and threaded NAPI on (its sysfs file read back), so veth delivers to it through
    NAPI. A transfer through it still reaches the receiver's IP one frame per packet, as it left the link:
    the skbs IP counts (InReceives) equal the packets they carry (the ECN counters count gso_segs, so GRO
    would make them more), no frame into the link was oversized (drop_gso), and the run records what ran."""
    path = link_path({"rate_mbit": 20, "aqm": "fifo"}, rtt_ms=10, cpu_placement=placement)
    ns = path.topo.receiver
    link_info = json.loads(command(["ip", "-d", "-j", "link", "show", "dev", HOST_IF], netns=ns).stdout)[0]
    xdp_attached_drv = 1  # XDP_ATTACHED_DRV, include/uapi/linux/if_link.h
    assert link_info["xdp"]["mode"] == xdp_attached_drv and link_info["xdp"]["prog"]["id"] > 0, link_info
    assert command(["cat", f"/sys/class/net/{HOST_IF}/threaded"], netns=ns).stdout.strip() == "1"
    features = command(["ethtool", "-k", HOST_IF], netns=ns).stdout
    assert "generic-receive-offload: off" in features, features
    ecn_counters = ("IpExtInNoECTPkts", "IpExtInECT0Pkts", "IpExtInECT1Pkts", "IpExtInCEPkts")
    transfer = iperf(path, ["-C", "cubic"], seconds=3)
    _, err = transfer.communicate(timeout=30)
    assert transfer.returncode == 0, err
    time.sleep(0.5)  # the connection's last segments; then both counters at once (one nstat)
    out = command(["nstat", "-az", "IpInReceives", *ecn_counters], netns=ns).stdout
    got = {name: int(count) for name, count in re.findall(r"^(\w+)\s+(\d+)", out, re.M)}
    assert got["IpInReceives"] >= 1000 and got["IpInReceives"] == sum(got[c] for c in ecn_counters), got
    assert path.emulation.link is not None
    stats = path.emulation.link.stats()
    assert stats["drop_gso"] == 0 and stats["out_pkts"] >= 1000, stats
    record = path.emulation.stats()["cpu_placement"]
    cpus = sorted(os.sched_getaffinity(0))
    assert (record["ran"], record["napi"], record["link_cpu"]) == \
        (placement, True, cpus[0] if placement == "napi+pin" else None), record


def test_gilbert_elliott_loses_in_netems_bursts(link_path: Callable[..., LinkPath]) -> None:
    """netem's gemodel with p = 1%, r = 10%, 1-h = 100%, 1-k = 0 (the scenario's table reaches the link in
    netem's argument order): pings 1 ms apart are lost p / (p + r) = 9.1% of the time, in runs of 1/r = 10 on
    average, counted from the gaps in the replies' sequence numbers at the sender. Read in the old order
    (loss_good before loss_bad) the same line would lose 91%. The model's state moves per packet, not per
    unit of time, so the pings' spacing changes nothing but how long the 5000 take."""
    path = link_path({"rate_mbit": 50, "aqm": "fifo", "buffer_packets": 1000,
                      "gilbert_elliott": {"p": 0.01, "r": 0.1, "loss_good": 0, "loss_bad": 1}})
    count = 5000
    # ping falls behind its interval here (5000 took 23-30 s at load average 6), so the time-out is generous.
    out = command(["ping", "-n", "-c", str(count), "-i", "0.001", "-W", "1", RECEIVER_ADDR],
                  netns=path.sender, timeout=60, check=False).stdout
    seqs = sorted({int(m) for m in re.findall(r"icmp_seq=(\d+)", out)})
    assert seqs, out[-500:]
    received = set(seqs)
    lost = [n for n in range(1, count + 1) if n not in received]
    runs = sum(1 for n in lost if n - 1 not in lost)
    assert len(lost) / count == pytest.approx(0.0909, abs=0.035), len(lost)
    assert runs >= 15 and 6 <= len(lost) / runs <= 15, (len(lost), runs)


@pytest.mark.parametrize("aqm", ["fq_codel", "codel", "pie"])
def test_the_link_agrees_with_the_kernels_qdisc(link_path: Callable[..., LinkPath], aqm: str,
                                                tmp_path: Path) -> None:
    """Where the kernel has the qdisc, the same CUBIC flow behind it and behind bbrkit-link's
    implementation keeps a queueing delay within a factor of 1.5 and the same link utilisation within 5%."""
    with Namespaces() as scratch:
        if not qdisc_available(aqm, scratch.add(f"{NS_PREFIX}probe")):
            pytest.skip(f"this kernel has no {aqm} qdisc to compare bbrkit-link's with")
    results = {}
    for emulator in ("kernel", "bbrkit-link"):
        out = tmp_path / emulator
        run = subprocess.run(["bbrbench", "run", "smoke", "--quiet", "--out", str(out), f"bottleneck.aqm={aqm}",
                              f"bottleneck.emulator={emulator}", "bottleneck.buffer_packets=1000",
                              "duration_s=15"], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        results[emulator] = json.loads((out / "summary.json").read_text())["total"]
    kernel, link = results["kernel"], results["bbrkit-link"]
    assert link["utilisation"] == pytest.approx(kernel["utilisation"], rel=0.05)
    assert 1 / 1.5 <= link["queue_delay_mean_ms"] / kernel["queue_delay_mean_ms"] <= 1.5


def test_the_policer_passes_its_rate_and_drops_the_rest(link_path: Callable[..., LinkPath]) -> None:
    """A token-bucket policer (RFC 2697 single rate, no excess bucket) of 10 Mbit/s with a 15000-byte
    bucket in front of a 100 Mbit/s link: a 30 Mbit/s UDP flood of 1400-byte datagrams (1442-byte frames)
    delivers 10 Mbit/s of frames over 4 s (plus at most the bucket), the rest counted as drop_police, and
    the queue behind the policer holds at most the bucket (a policer drops instead of delaying)."""
    path = link_path({"rate_mbit": 100, "policer": {"rate_mbit": 10, "burst_bytes": 15000}})
    result = iperf_json(iperf(path, ["-u", "-b", "30M", "-l", "1400", "-J"], seconds=4))
    stats = path.emulation.link.stats() if path.emulation.link else {}
    sent = result["end"]["sum"]["packets"]
    assert stats["out_bytes"] == pytest.approx(10e6 / 8 * 4 + 15000, rel=0.03), stats
    assert stats["drop_police"] == pytest.approx(sent - stats["out_pkts"], abs=sent * 0.01), stats
    assert stats["max_backlog_bytes"] <= 15000 + 2 * 1442 and stats["drop_overlimit"] == 0, stats


def test_reorder_and_duplicate_follow_netem(link_path: Callable[..., LinkPath]) -> None:
    """netem "delay 20ms reorder 100% gap 4" sends every 4th packet at once, ahead of the delayed ones:
    of a ping's echo requests exactly one in four comes back without the 20 ms; netem "duplicate 30%"
    delivers a second copy of 30% of the packets, which ping reports as DUP! (within 4.5 standard
    deviations, and never more than the link counts)."""
    path = link_path({"rate_mbit": 50, "delay_ms": 20, "reorder": {"probability": 1.0, "gap": 4}})
    ping_ms(path, count=2, interval_s=0.05)  # ARP, which also passes the reorder count
    rtts = ping_ms(path, count=40, interval_s=0.05)
    fast = [i for i, ms in enumerate(rtts) if ms < 10]
    assert len(rtts) == 40 and len(fast) == 10, rtts
    assert all(b - a == 4 for a, b in zip(fast, fast[1:], strict=False)), rtts
    assert all(20 <= ms < 25 for i, ms in enumerate(rtts) if i not in fast), rtts
    path.emulation.stop()
    path = link_path({"rate_mbit": 50, "duplicate_pct": 30})
    # Each packet draws its own copy: 2 ms apart, as well as any spacing.
    out = command(["ping", "-n", "-c", "300", "-i", "0.002", RECEIVER_ADDR], netns=path.sender, timeout=30).stdout
    dups = out.count("DUP!")
    stats = path.emulation.link.stats() if path.emulation.link else {}
    assert abs(dups / 300 - 0.3) <= 4.5 * (0.3 * 0.7 / 300) ** 0.5, dups
    assert dups <= stats["dup_pkts"] and stats["reordered"] == 0, stats


def test_the_packet_log_is_mahimahis_and_agrees_with_the_link(link_path: Callable[..., LinkPath],
                                                             tmp_path: Path) -> None:
    """bottleneck.packet_log writes mm-link's log (link_queue.cc): read with mm-throughput-graph's rules
    (analysis.mmlog rejects what that script rejects), its departures add up to the link's out_bytes, its
    capacity lines to 20 Mbit/s over the log's span (the rate mode's "#" line per ms), each departure's delay
    is its arrival-to-departure time, and our throughput/delay figure is drawn from it."""
    from bbrbench.analysis import mmlog

    path = link_path({"rate_mbit": 20, "buffer_packets": 100, "packet_log": True}, rtt_ms=10)
    flow = iperf(path, ["-C", "cubic"], seconds=3)
    flow.communicate(timeout=30)
    time.sleep(0.1)  # the last frames leave the link's delay line (the sender's 10 ms)
    path.emulation.stop()
    stats = path.emulation.link.stats() if path.emulation.link else {}
    log = mmlog.read(path.work / "link-forward.mm")
    assert sum(b for _, b, _ in log.departures) == stats["out_bytes"], stats
    assert len(log.arrivals) == stats["in_pkts"] - stats["drop_ge"] - stats["drop_gso"] - stats["drop_bad"]
    span_s = (log.capacity[-1][0] - log.capacity[0][0] + 1) / 1000
    assert sum(b for _, b in log.capacity) * 8 / span_s == pytest.approx(20e6, rel=0.001)
    delays = sorted(d for _, _, d in log.departures)
    # Never more than a full buffer's drain (+ rounding), and the link time late wake-ups gave up.
    assert delays[-1] <= 100 * 1514 * 8 / 20e6 * 1000 + 2 + stats["forfeit_us"] / 1000, stats
    assert delays[len(delays) // 2] > 0  # cubic keeps a standing queue
    assert mmlog.plot(path.work / "link-forward.mm", tmp_path / "mm.png", "t").is_file()


def test_a_trace_runs_packet_log_counts_in_mahimahis_unit(link_path: Callable[..., LinkPath],
                                                          tmp_path: Path) -> None:
    """With a trace, mm-link's log counts every line in what its TUN device gives it (link_queue.cc's
    record_arrival and record_departure log contents.size(), the IP packet and a 4-byte header;
    record_departure_opportunity logs PACKET_SIZE, 1504): a backlogged link's departures are 1504-byte
    packets filling 1504-byte opportunities one to one, and add up to the link's Ethernet bytes less 10 per
    packet (the 14-byte Ethernet header out, the 4-byte TUN header in)."""
    from bbrbench.analysis import mmlog

    trace = tmp_path / "1ms.trace"
    trace.write_text("1\n")
    path = link_path({"rate_trace": str(trace), "aqm": "fifo", "buffer_packets": 100, "packet_log": True})
    flood = iperf(path, ["-u", "-b", "14M", "-l", "1472"], seconds=3)
    flood.communicate(timeout=30)
    path.emulation.stop()
    stats = path.emulation.link.stats() if path.emulation.link else {}
    log = mmlog.read(path.work / "link-forward.mm")
    assert {b for _, b in log.capacity} == {1504}
    assert sum(b for _, b, _ in log.departures) == stats["out_bytes"] - 10 * stats["out_pkts"], stats
    full = [b for _, b, _ in log.departures if b == 1504]
    assert len(full) >= 0.9 * len(log.departures)
    assert sum(b for _, b in log.arrivals) >= sum(b for _, b, _ in log.departures)


def test_a_real_runs_trust_fields_hold_it_to_its_configured_path(link_path: Callable[..., LinkPath]) -> None:
    """A UDP flood 20% over a 50 Mbit/s link (20 ms base RTT): the link reads through its TPACKET_V2 ring and
    sends past the qdisc layer, reports how late frames left against their schedule (added_p50_us <=
    added_p99_us) and its busy-poll time, and the trust check (analysis/trust.py) on those counters, the
    receiver's rate (iperf3's receiver figure of 1400-byte payloads, 97% of the 1442-byte frame) and the
    queue's busy share over the flood from the link's log reports every check, and the rate and delay checks
    pass: the receiver's rate within its limits of the configured one, the added delay under its limits.
    Whether the run is trusted as a whole also rests on late wake-ups and CPU, which the shared test
    machine's load decides, so that is not asserted."""
    from bbrbench.analysis import trust

    path = link_path({"rate_mbit": 50, "aqm": "fifo", "buffer_packets": 300}, rtt_ms=20)
    result = iperf_json(iperf(path, ["-u", "-b", "60M", "-l", "1400", "-J"], seconds=5))
    path.emulation.stop()
    stats = path.emulation.link.stats() if path.emulation.link else {}
    log = path.log()
    queued = [i for i, row in enumerate(log) if row["backlog_pkts"] > 0]
    flood = log[queued[0]:queued[-1] + 1]  # the rows from the flood's first queue to its last
    busy = sum(1 for row in flood if row["backlog_pkts"] > 0) / len(flood)
    received = result["end"]["sum"]["bytes"] * (1 - result["end"]["sum"]["lost_percent"] / 100) * 8 / 5 / 1e6
    verdict = trust.assess(stats, {"rate_mbit": 50, "goodput_mbps": received, "queue_busy_share": busy,
                                   "base_rtt_ms": 20})
    assert stats["rx_ring"] == 1 and stats["qdisc_bypass"] == 1, stats
    assert 0 <= stats["added_p50_us"] <= stats["added_p99_us"] and "spin_us" in stats, stats
    assert verdict["not_reported"] == [], verdict
    assert not [line for line in verdict["failed"] if "receiver" in line or "added delay" in line], verdict
    assert 0.9 <= verdict["checks"]["receiver_rate_ratio"] <= 1.0, verdict


@pytest.mark.parametrize(("rate_mbit", "slots"), [(100, 2048), (5000, 8256)])
def test_the_receive_ring_holds_20_ms_at_the_configured_rate(link_path: Callable[..., LinkPath], rate_mbit: int,
                                                             slots: int) -> None:
    """The TPACKET_V2 receive ring holds what 20 ms at the link's rate brings in full-size frames (stages.c's
    ls_ring_bytes), at least the 4 MiB socket-buffer size: 2048 slots of 2 KiB at 100 Mbit/s; at 5 Gbit/s
    8234 frames of 1518 bytes, 8235 slots, rounded up to whole 64 KiB blocks of 32 slots: 258 blocks, 8256.
    Before, 4 MiB at any rate was 10 ms of full-size frames at 2.4 Gbit/s, and linkbench's tail drop
    overflowed it."""
    path = link_path({"rate_mbit": rate_mbit, "aqm": "fifo", "buffer_packets": 1000})
    assert path.emulation.link is not None
    stats = path.emulation.link.stats()
    assert stats["rx_ring"] == 1 and stats["rx_ring_frames"] == slots, stats


def test_a_poll_over_the_whole_gap_never_runs_into_real_time_throttling() -> None:
    """The link's threads are SCHED_FIFO (--rt-prio, wire.py's RT_PRIO), and the kernel stops a FIFO thread
    that has run sched_rt_runtime_us of a sched_rt_period_us for the rest of that period (the kernel's
    sched-rt-group.rst; 950 ms of 1 s by default). A poll that never sleeps, here 20 ms after each frame with
    a ping every 10 ms, used to stall forwarding for those 50 ms once a second (linkbench, 2026-11-26: p99
    37-41 ms, the forward thread's run-queue wait 46 ms a second). The thread polls as SCHED_OTHER past 80%
    of each 100 ms and sleeps as FIFO, so no ping of 3 s waits even half of that gap."""
    from bbrbench.experiments import linkbench
    from bbrbench.experiments.delaybench import Chain

    runtime_us = int(Path("/proc/sys/kernel/sched_rt_runtime_us").read_text())
    period_us = int(Path("/proc/sys/kernel/sched_rt_period_us").read_text())
    if runtime_us < 0 or runtime_us >= period_us:
        pytest.skip("this kernel does not throttle real-time threads (sched_rt_runtime_us)")
    gap_us = period_us - runtime_us
    with Chain(f"{NS_PREFIX}rt{next_serial()}-") as chain:
        linkbench._offloads_off(chain)
        with linkbench._link(chain, "d", ["--rate-bps", "100000000", "--limit-pkts", "1000"], 20000):
            chain.ping(3, 0.2)
            rtts_us = chain.ping(300, 0.01)
    assert len(rtts_us) >= 295, f"only {len(rtts_us)} of 300 pings answered"
    assert max(rtts_us) < gap_us / 2, f"a ping waited {max(rtts_us):.0f} us (throttling stops {gap_us} us)"
