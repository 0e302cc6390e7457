"""bbrkit-link's idle path on the real kernel (root): the XDP program that forwards a frame finding the link idle
(bench/link/README.md, "The idle path"), against what the receiver's kernel stamps and counts."""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from bbrbench.experiments import linkbench
from bbrbench.experiments.delaybench import RECEIVER_ADDR, Chain
from bbrbench.testbed.linkemu import LinkEmulator
from netutil import NS_PREFIX

_count = itertools.count()
PORT = 5999
PAYLOAD_BYTES = 64
# What a datagram of PAYLOAD_BYTES is on the wire: UDP and IPv4 headers, Ethernet header.
FRAME_BYTES = PAYLOAD_BYTES + 8 + 20 + 14

# Receives datagrams until none has come for a second and prints [sequence, kernel receive stamp in ns] for each.
RECEIVER = """
import json, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_TIMESTAMPNS", 35), 1)  # 35: Linux, where Python lacks the name
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
s.settimeout(5.0)
got = []
try:
    while True:
        data, anc, _, _ = s.recvmsg(2048, 64)
        sec, nsec = struct.unpack("qq", anc[0][2][:16])
        got.append([struct.unpack("!I", data[:4])[0], sec * 10**9 + nsec])
        s.settimeout(1.0)
except socket.timeout:
    pass
print(json.dumps(got))
"""
# Sends argv[3] bursts of argv[4] datagrams of argv[6] bytes back to back, argv[5] seconds apart, numbered from 0.
SENDER = """
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dst, bursts, size, gap = (sys.argv[1], int(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
pad = bytes(int(sys.argv[6]) - 4)
for b in range(bursts):
    for i in range(size):
        s.sendto(struct.pack("!I", b * size + i) + pad, dst)
    time.sleep(gap)
"""


@contextmanager
def idle_link(options: list[str]) -> Iterator[tuple[Chain, LinkEmulator]]:
    """The delay benchmark's sender | link | receiver chain with the link as linkbench runs it."""
    with Chain(f"{NS_PREFIX}idle{next(_count)}-") as chain:
        with linkbench._link(chain, "i", options, None) as link:
            chain.ping(3, 0.05)  # neighbours resolved before anything is measured
            yield chain, link


def bursts(chain: Chain, n_bursts: int, size: int, gap_s: float) -> list[tuple[int, int]]:
    """Sends @n_bursts bursts of @size datagrams through the chain; what the receiver got, in arrival order."""
    rx = subprocess.Popen(["ip", "netns", "exec", chain.receiver, sys.executable, "-c", RECEIVER, str(PORT)],
                          stdout=subprocess.PIPE, text=True)
    try:
        assert rx.stdout and rx.stdout.readline().strip() == "ready"
        subprocess.run(["ip", "netns", "exec", chain.sender, sys.executable, "-c", SENDER, RECEIVER_ADDR,
                        str(PORT), str(n_bursts), str(size), str(gap_s), str(PAYLOAD_BYTES)], check=True, timeout=60)
        out, _ = rx.communicate(timeout=30)
    finally:
        rx.kill()
        rx.wait()
    return [(seq, stamp) for seq, stamp in json.loads(out.splitlines()[-1])]


def test_idle_pings_take_the_idle_path_and_a_link_it_does_not_fit_says_why() -> None:
    """A ping's frame at 100 Mbit/s takes 9 us to serialise, within the default 10 us: on an idle tail-drop link
    the program forwards every echo request. Off (--xdp-idle-us 0) or with an AQM, the thread takes them all and
    the ready line says why."""
    for options, setting, off in ((["--rate-bps", "100000000"], 10, ""),
                                  (["--rate-bps", "100000000", "--xdp-idle-us", "0"], -1, "--xdp-idle-us 0"),
                                  (["--rate-bps", "100000000", "--aqm", "codel"], -1, "an AQM or step marking")):
        with idle_link(options) as (chain, link):
            assert (link.ready_event["xdp_idle_us"], link.ready_event["xdp_idle_off"]) == (setting, off)
            before = link.stats()
            assert len(chain.ping(50, 0.01)) == 50
            after = link.stats()
        forwarded = after["xdp_idle_pkts"] - before["xdp_idle_pkts"]
        taken_in = after["in_pkts"] - before["in_pkts"]
        assert after["xdp_idle_us"] == setting
        if setting > 0:
            assert forwarded >= 50 and taken_in == forwarded, (before, after)  # the requests, and nothing else
        else:
            assert forwarded == 0 and taken_in >= 50, (before, after)


def test_a_burst_leaves_in_order_across_the_two_paths() -> None:
    """Bursts of 20 small datagrams at 10 Mbit/s with --xdp-idle-us 100 (85 us each): the first finds the link
    idle and leaves through the program, those arriving while it crosses queue in the thread, and the link is
    free of the program's frame again long before the thread has sent them. The program forwards a frame only
    once the thread has let go of every frame it was given, so none overtakes another: the receiver gets all,
    in order."""
    with idle_link(["--rate-bps", "10000000", "--xdp-idle-us", "100"]) as (chain, link):
        got = bursts(chain, 100, 20, 0.01)
        stats = link.stats()
    sequence = [seq for seq, _ in got]
    assert sequence == list(range(2000)), [s for a, s in zip(sequence, sequence[1:]) if s != a + 1][:10]
    # both paths carried the bursts (how many each depends on how fast the sender sends): every burst's first
    # through the program, and a hundred or more through the thread
    assert 100 <= stats["xdp_idle_pkts"] <= stats["in_pkts"] - 100, stats


def test_the_thread_starts_its_first_frame_after_the_programs_frame_has_crossed() -> None:
    """At 10 Mbit/s with --xdp-idle-us 100, a 106-byte frame takes 85 us: the first of a pair leaves at once
    through the program, and the link is busy with it until 85 us later, so the second (through the thread)
    leaves no earlier than two serialisations after the first: the receiver's stamps show the gap."""
    serialisation_ns = FRAME_BYTES * 8 * 10**9 // 10_000_000
    with idle_link(["--rate-bps", "10000000", "--xdp-idle-us", "100"]) as (chain, link):
        got = dict(bursts(chain, 100, 2, 0.01))
        stats = link.stats()
    gaps = sorted(got[2 * b + 1] - got[2 * b] for b in range(100) if 2 * b in got and 2 * b + 1 in got)
    assert len(gaps) >= 95 and stats["xdp_idle_pkts"] >= 95, stats
    # The tenth percentile, against one and a half serialisations: two is the schedule, one is what a thread that
    # ignores the program's frame gives (about 100 us measured), and the receiver stamps the pair as it gets
    # them, a softirq apart from when they left (the shortest of 200 pairs: 1.7 serialisations).
    assert gaps[len(gaps) // 10] >= 1.5 * serialisation_ns, (serialisation_ns, gaps[:20])
    assert statistics.median(gaps) < 10 * serialisation_ns, gaps  # the pairs did meet the link together
