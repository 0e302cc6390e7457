"""`bbrctl policy migrate` and `policy revert --migrate` move established connections between algorithms
while they carry data. What a socket runs is read with iproute2's `ss -ti` (sock_diag's INET_DIAG_CONG,
independent of bbrkit); that it kept its data is the receiver's own count and SHA-256 of the bytes against
what the sender wrote. The sender pauses between two halves on a line from the test, so the switch
happens mid-transfer by construction, not by timing."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netutil import NetPair, bbrctl

PORT = 18611
HALF_BYTES = 4 << 20  # 4 MiB each side of the pause: most of it still queued when the switch happens
PATTERN = bytes(range(256))

# The sender: accepts one connection, writes a half, waits for a line on stdin, writes the other half.
SENDER = f"""
import socket, sys
pattern = bytes(range(256)) * ({HALF_BYTES} // 256)
srv = socket.create_server(("0.0.0.0", {PORT}))
print("listening", flush=True)
conn, _ = srv.accept()
conn.sendall(pattern)
print("paused", flush=True)
sys.stdin.readline()
conn.sendall(pattern)
conn.close()
"""

# The receiver: reads to the end, prints the byte count and the SHA-256 of what it read.
RECEIVER = f"""
import hashlib, socket, sys
s = socket.create_connection((sys.argv[1], {PORT}))
h, n = hashlib.sha256(), 0
while chunk := s.recv(1 << 16):
    h.update(chunk)
    n += len(chunk)
print(n, h.hexdigest())
"""


def expected_digest() -> str:
    return hashlib.sha256(PATTERN * (2 * HALF_BYTES // len(PATTERN))).hexdigest()


def sender_cc(pair: NetPair) -> str:
    """The congestion control `ss -ti` reports for the sender's connection on PORT."""
    out = pair.exec(pair.sender, ["ss", "-Htin", "state", "established", f"sport = :{PORT}"]).stdout.split()
    return next(t for t in out if t in ("reno", "cubic", "bbr"))


@pytest.fixture
def rule() -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """Factory: rule(KEY=VALUE...) adds the rule "mig"; it is deleted afterwards with the policy."""
    def factory(*kv: str) -> subprocess.CompletedProcess[str]:
        return bbrctl("policy", "add", "mig", *kv)

    try:
        yield factory
    finally:
        bbrctl("policy", "del", "mig", check=False)
        assert not Path("/sys/fs/bpf/bbrkit/-policy").exists()


def paused_transfer(pair: NetPair) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
    """A transfer from the sender to the receiver, stopped at its midpoint with data still in flight."""
    sender = subprocess.Popen(["ip", "netns", "exec", pair.sender, sys.executable, "-c", SENDER],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert sender.stdout and sender.stdout.readline().strip() == "listening"
    receiver = pair.popen(pair.receiver, [sys.executable, "-c", RECEIVER, pair.sender_addr])
    assert sender.stdout.readline().strip() == "paused"
    return sender, receiver


def stop(*procs: subprocess.Popen[str]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def finish(sender: subprocess.Popen[str], receiver: subprocess.Popen[str]) -> tuple[int, str]:
    assert sender.stdin
    sender.stdin.write("go\n")
    sender.stdin.flush()
    out, err = receiver.communicate(timeout=60)
    assert receiver.returncode == 0, err
    assert sender.wait(timeout=10) == 0
    count, digest = out.split()
    return int(count), digest


@pytest.mark.net
def test_revert_migrate_switches_a_live_transfer_and_keeps_its_data(
        netpair: Callable[..., NetPair], rule: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    pair = netpair(rate_mbit=50, queue_bytes=200_000)
    rule(f"lport={PORT}", "arms=reno:0,cubic:100", "holdback=reno")
    sender, receiver = paused_transfer(pair)
    try:
        assert sender_cc(pair) == "cubic"
        dry = bbrctl("policy", "migrate", "mig", "--dry-run")  # the rule still says cubic: nothing to move
        assert dry.stdout.splitlines() == ["rule mig: 0 connections would move"]
        out = bbrctl("policy", "revert", "mig", "--migrate").stdout.splitlines()
        assert out[0] == "rule mig reverted: all connections get reno"
        assert out[1].endswith(": cubic -> reno") and f"{pair.sender_addr}:{PORT} " in out[1]
        assert out[2] == "rule mig: 1 connection moved"
        assert sender_cc(pair) == "reno"
        assert '"migrated":1' in bbrctl("policy", "show", "mig", "--json").stdout.replace(" ", "")
        count, digest = finish(sender, receiver)
    finally:
        stop(sender, receiver)
    assert (count, digest) == (2 * HALF_BYTES, expected_digest())


@pytest.mark.net
def test_migrate_follows_an_edited_rule(netpair: Callable[..., NetPair],
                                        rule: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """replace=yes reaches new connections; migrate moves the established one, and only its rule's."""
    pair = netpair(rate_mbit=50, queue_bytes=200_000)
    rule(f"lport={PORT}", "arms=reno")
    sender, receiver = paused_transfer(pair)
    try:
        assert sender_cc(pair) == "reno"
        rule(f"lport={PORT}", "arms=cubic", "replace=yes")
        assert sender_cc(pair) == "reno"
        assert bbrctl("policy", "migrate", "mig", "--dry-run").stdout.endswith("1 connection would move\n")
        assert sender_cc(pair) == "reno"
        bbrctl("policy", "migrate", "mig")
        assert sender_cc(pair) == "cubic"
        count, digest = finish(sender, receiver)
    finally:
        stop(sender, receiver)
    assert (count, digest) == (2 * HALF_BYTES, expected_digest())

