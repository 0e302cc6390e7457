"""Which rule a connection gets when rules change under it: equal priorities go to the rule created first
whatever slot it sits in, an edit keeps a rule's place and counters, and a cgroup rule keeps matching its
cgroup after the cgroup is removed and made again (a restarted service: same path, new id). What a
connection got is read by the client itself, getsockopt(TCP_CONGESTION), the kernel's own answer."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netutil import BBRCTL, NS_PREFIX, bbrctl, run

PORT = 18613

# Keeps what it accepts open: a connection stays established until its client goes.
LISTENER = f"""
import socket
srv = socket.create_server(("127.0.0.1", {PORT}))
print("listening", flush=True)
held = []
while True:
    held.append(srv.accept()[0])
"""

HOLDER = f"""
import socket, sys
s = socket.create_connection(("127.0.0.1", {PORT}))
print(s.getsockname()[1], flush=True)
sys.stdin.read()
"""

CLIENT = f"""
import socket
s = socket.create_connection(("127.0.0.1", {PORT}))
print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\\0").decode())
"""


@pytest.fixture
def netns() -> Iterator[str]:
    """A namespace with a listener on PORT that accepts and closes every connection."""
    name = f"{NS_PREFIX}order"
    run(["ip", "netns", "add", name])
    listener = None
    try:
        run(["ip", "-n", name, "link", "set", "lo", "up"])
        listener = subprocess.Popen(["ip", "netns", "exec", name, sys.executable, "-c", LISTENER],
                                    stdout=subprocess.PIPE, text=True)
        assert listener.stdout and listener.stdout.readline().strip() == "listening"
        yield name
    finally:
        if listener:
            listener.kill()
            listener.wait()
        run(["ip", "netns", "del", name], check=False)


@pytest.fixture
def cgroot() -> Iterator[Path]:
    """The cgroup v2 hierarchy through a mount of the test's own; what the test made under it goes after."""
    mnt = Path(tempfile.mkdtemp(prefix="bbrkit-test-cg2-"))
    run(["mount", "-t", "cgroup2", "none", str(mnt)])
    try:
        yield mnt
    finally:
        for d in sorted(mnt.glob(f"{NS_PREFIX}*/**/"), key=lambda p: -len(p.parts)):
            d.rmdir()
        run(["umount", str(mnt)])
        mnt.rmdir()


@pytest.fixture
def rules() -> Iterator[Callable[..., str]]:
    """Factory: rules(NAME, KEY=VALUE...) adds a rule and returns its warnings; all go afterwards."""
    added: list[str] = []

    def factory(name: str, *kv: str) -> str:
        added.append(name)
        return bbrctl("policy", "add", name, *kv).stderr

    try:
        yield factory
    finally:
        for name in dict.fromkeys(added):
            bbrctl("policy", "del", name, check=False)
        assert not Path("/sys/fs/bpf/bbrkit/-policy").exists()


def connect(ns: str, cgroup: Path | None = None) -> str:
    """The congestion control of a new connection to the listener, opened from cgroup (else the caller's)."""
    cmd = ["ip", "netns", "exec", ns, sys.executable, "-c", CLIENT]
    if cgroup:
        cmd = ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh", *cmd]
    return run(cmd).stdout.strip()


def connections(rule: str) -> list[int]:
    shown = json.loads(bbrctl("policy", "show", rule, "--json").stdout)["rules"][0]
    return [arm["connections"] for arm in shown["arms"]]


def test_equal_priority_goes_to_the_older_rule_and_edits_keep_place_and_counters(
        netns: str, rules: Callable[..., str]) -> None:
    rules("first", f"rport={PORT}", "arms=cubic")
    rules("older", f"rport={PORT}", "arms=reno")
    bbrctl("policy", "del", "first")  # frees the lowest slot for the newest rule
    rules("newest", f"rport={PORT}", "arms=bbr")
    assert [r["name"] for r in json.loads(bbrctl("policy", "list", "--json").stdout)["rules"]] == ["newest", "older"]
    assert connect(netns) == "reno"
    assert connections("older") == [1]
    rules("older", f"rport={PORT}", "arms=reno", "fallback=yes", "replace=yes")
    assert connections("older") == [1]
    assert connect(netns) == "reno"
    assert connections("older") == [1 + 1]
    # Another algorithm in the arms: the one that stays keeps its counters, the new one starts at zero.
    rules("older", f"rport={PORT}", "arms=cubic:0,reno:100", "replace=yes")
    assert connections("older") == [0, 2]
    rules("newest", f"rport={PORT}", "arms=bbr", "priority=99", "replace=yes")
    assert connect(netns) == "bbr"


def test_cgroup_rule_follows_a_cgroup_made_again(netns: str, cgroot: Path, rules: Callable[..., str]) -> None:
    svc = cgroot / f"{NS_PREFIX}svc"
    svc.mkdir()
    (svc / "sub").mkdir()
    other = cgroot / f"{NS_PREFIX}svd"  # same length, one letter off: no match
    other.mkdir()
    rules("svc", f"cgroup=//{svc.name}/", f"rport={PORT}", "arms=reno")
    default = connect(netns)
    assert default != "reno"
    assert (connect(netns, svc), connect(netns, svc / "sub"), connect(netns, other)) == ("reno", "reno", default)
    (svc / "sub").rmdir()
    svc.rmdir()
    svc.mkdir()  # the service restarted: the same path, a new cgroup id
    (svc / "sub").mkdir()
    assert (connect(netns, svc), connect(netns, svc / "sub"), connect(netns, other)) == ("reno", "reno", default)


def test_warnings_for_rules_that_reach_everything_or_nothing(rules: Callable[..., str]) -> None:
    """A rule without keys takes every connection of the host: its arm is the host's default here, so that
    nothing changes for anyone while it exists."""
    default = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    assert rules("web", f"lport={PORT}", "arms=reno", "priority=10") == ""
    assert rules("narrow", f"lport={PORT}", f"rport={PORT + 1}", "arms=cubic", "priority=20") == (
        "bbrctl: policy add narrow: warning: rule narrow is shadowed by rule web (priority 10, earlier): "
        "it gets no connection\n")
    assert rules("wide", f"rport={PORT + 1}", "arms=cubic", "priority=30") == ""
    assert rules("first", f"lport={PORT}", "arms=cubic", "priority=5") == (
        "bbrctl: policy add first: warning: rule first now shadows rule web (priority 10): that rule gets no "
        "connection\nbbrctl: policy add first: warning: rule first now shadows rule narrow (priority 20): that "
        "rule gets no connection\n")
    assert rules("all", f"arms={default}", "priority=1000") == (
        "bbrctl: policy add all: warning: rule all matches every connection (no cgroup, netns, lport, rport or dst)\n")


def test_netns_selector_by_name_and_inode(netns: str, rules: Callable[..., str]) -> None:
    other = f"{NS_PREFIX}other"
    run(["ip", "netns", "add", other])
    try:
        default = connect(netns)
        rules("elsewhere", f"netns={other}", f"rport={PORT}", "arms=reno")
        assert connect(netns) == default
        rules("here", f"netns={netns}", f"rport={PORT}", "arms=reno")
        assert connect(netns) == "reno"
        inode = Path(f"/run/netns/{netns}").stat().st_ino
        rules("here", f"netns={inode}", f"rport={PORT}", "arms=cubic" if default != "cubic" else "bbr",
              "replace=yes")
        assert connect(netns) != "reno"
        assert json.loads(bbrctl("policy", "show", "here", "--json").stdout)["rules"][0]["netns"] == str(inode)
    finally:
        run(["ip", "netns", "del", other], check=False)
    r = run([str(BBRCTL), "policy", "add", "nowhere", "netns=nope", "arms=reno"], check=False)
    assert r.returncode == 2 and r.stderr.strip().endswith(
        "netns 'nope': /run/netns/nope: No such file or directory"), r.stderr


def test_explain_says_which_rule_which_arm_and_why(netns: str, rules: Callable[..., str]) -> None:
    rules("web", f"lport={PORT}", "arms=reno", "priority=10")
    rules("api", "rport=443", "arms=cubic")
    holder = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout
        eph = int(holder.stdout.readline())
        out = bbrctl("policy", "explain", f"127.0.0.1:{eph}").stdout.splitlines()
    finally:
        holder.kill()
        holder.wait()
    server = out.index(next(line for line in out if line.startswith(f"127.0.0.1:{PORT} 127.0.0.1:{eph} ")))
    client = out.index(next(line for line in out if line.startswith(f"127.0.0.1:{eph} 127.0.0.1:{PORT} ")))
    assert out[server].endswith(": runs reno")
    assert out[server + 1:server + 5] == [
        "  placed by rule web, arm reno",
        f"  now: rule web, arm reno: its 4-tuple hashes to {out[server + 2].split()[9]} of 10000, in reno's "
        "share [0, 10000)",
        "  rule web (priority 10, created 1): matches, first",
        f"  rule api (priority 100, created 2): no: rport=443, the connection's is {eph}"]
    assert out[client + 1:client + 5] == [
        "  not placed by the policy: no rule matched when it was established, or it is older than the policy",
        "  now: no rule matches; new connections like it keep the namespace default",
        f"  rule web (priority 10, created 1): no: lport={PORT}, the connection's is {eph}",
        f"  rule api (priority 100, created 2): no: rport=443, the connection's is {PORT}"]


def test_a_route_locking_its_algorithm_is_counted_and_shown(netns: str, rules: Callable[..., str]) -> None:
    """`ip route ... congctl lock` wins over the policy (tcp_set_congestion_control(): EPERM): the connection
    keeps the route's algorithm, counted as a fallback under the route's lock."""
    run(["ip", "-n", netns, "route", "replace", "local", "127.0.0.1", "dev", "lo", "table", "local", "congctl",
         "lock", "cubic"])
    rules("locked", f"rport={PORT}", "arms=reno")
    assert connect(netns) == "cubic"
    arm = json.loads(bbrctl("policy", "show", "locked", "--json").stdout)["rules"][0]["arms"][0]
    assert (arm["connections"], arm["fallbacks"], arm["locked"]) == (1, 1, 1)
    assert "1 fallbacks (1 under a route's congctl lock)" in bbrctl("policy", "show", "locked").stdout
