"""Helpers shared by the test suites: running bbrctl, a two-host network with a tbf bottleneck,
iperf3 transfers, and the leftover check."""
from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bbrbench.errors import HarnessError
from bbrbench.testbed.delayline import DelayLine
from bbrbench.testbed.netns import Namespaces, list_netns
from bbrbench.testbed.procs import command, wait_listening

ROOT = Path(__file__).resolve().parents[1]

BBRCTL = ROOT / "build" / "bbrctl"
PIN_ROOT = Path("/sys/fs/bpf/bbrkit")
NS_PREFIX = f"bbk{os.getpid() % 100000}-"  # unique per test session
_ns_counter = itertools.count()


def may_write(path: Path) -> bool:
    """Whether this user may write @path, or create it when it does not exist yet: a contributor may run the
    suite in a checkout that someone else owns."""
    return os.access(path if path.exists() else path.parent, os.W_OK)


def run(cmd: list[str], check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The harness's command runner: a failure is one line naming the command and its last error line."""
    return command(cmd, timeout=timeout, check=check)


def bbrctl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([str(BBRCTL), *args], check=check)


def tracers(algo: str) -> int:
    """The algorithm's ctl.tracers: how many `bbrctl trace` read its records (the BPF side emits while > 0)."""
    out = run(["bpftool", "-j", "map", "dump", "pinned", str(PIN_ROOT / algo / "ctl")]).stdout
    return int(json.loads(out)[0]["formatted"]["value"][".data.ctl"][0]["ctl"]["tracers"])


def start_trace(out: Path, *algos: str, fmt: str = "jsonl") -> subprocess.Popen[str]:
    """`bbrctl trace --format FMT --out OUT ALGOS`, returned once each algorithm's ctl.tracers is 1:
    records flow from then on, and SIGINT stops the tracer cleanly (it sets its handlers before it raises
    the count). A fixed head start would leave a slow start-up missing the flow's first records."""
    tracer = subprocess.Popen([str(BBRCTL), "trace", "--format", fmt, "--out", str(out), *algos], text=True,
                              stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 10
    while not all(tracers(a) == 1 for a in algos):
        if tracer.poll() is not None or time.monotonic() > deadline:
            tracer.kill()
            _, err = tracer.communicate()
            raise AssertionError(f"bbrctl trace {' '.join(algos)} did not start: {err.strip()}")
        time.sleep(0.02)
    return tracer


def stop_trace(tracer: subprocess.Popen[str]) -> None:
    """SIGINT, as a user's ^C: the tracer flushes, lowers the counts and exits 0."""
    tracer.send_signal(signal.SIGINT)
    _, err = tracer.communicate(timeout=10)
    assert tracer.returncode == 0, err


def kernel_features() -> dict[str, dict]:
    """`bbrctl features --json`, by key: what this kernel lets bbrkit do."""
    return {f["key"]: f for f in json.loads(bbrctl("features", "--json").stdout)["features"]}


def flows_mechanism(algo: str) -> str | None:
    """How `bbrctl flows` reads an attached algorithm: "map-iterator", "iter-tcp" or None."""
    listed = json.loads(bbrctl("list", "--json").stdout)["algorithms"]
    return next(a for a in listed if a["name"] == algo).get("features", {}).get("flows")


def pp_mechanism(algo: str) -> str:
    """How an attachment's per-packet loss path runs ("fentry", "kprobe" or "walk"), read from its pinned
    transmit hook: the program is bbr3_pp_<mechanism>_sent (loader/telemetry.c), and the kernel's
    15-character program name keeps the mechanism."""
    link = json.loads(run(["bpftool", "-j", "link", "show", "pinned", str(PIN_ROOT / algo / "pp-sent")]).stdout)
    prog = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(link["prog_id"])]).stdout)
    return str(prog["name"]).split("_")[2]


def flows_json(algo: str, netns: int) -> list[dict]:
    """The algorithm's live flows in one network namespace (other tests or benchmarks may run)."""
    flows = json.loads(bbrctl("flows", "--json", algo).stdout)["flows"]
    return [f for f in flows if f["netns"] == netns]


def wait_for_flow(algo: str, netns: int, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for flow in flows_json(algo, netns):
            return flow
        time.sleep(0.2)
    raise AssertionError(f"no {algo} flow in netns {netns} in `bbrctl flows`")


def available_ccs() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


@dataclass
class NetPair:
    """Two network namespaces joined by veth through a tbf bottleneck. With an RTT, a third namespace
    in the middle runs bbrkit's delay line (for kernels without netem) and holds the bottleneck."""

    sender: str
    receiver: str
    sender_addr: str
    receiver_addr: str
    rate_mbit: int
    namespaces: Namespaces
    middle: str | None = None
    delay: DelayLine | None = None

    def exec(self, ns: str, cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return run(["ip", "netns", "exec", ns, *cmd], **kwargs)  # type: ignore[arg-type]

    def netns_inode(self, ns: str) -> int:
        """The inode bbrctl reports as a flow's `netns`."""
        return os.stat(f"/run/netns/{ns}").st_ino

    def popen(self, ns: str, cmd: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)


def make_netpair(rate_mbit: int, queue_bytes: int, rtt_ms: float = 0) -> NetPair:
    n = next(_ns_counter)
    subnet = f"198.18.{200 + n % 50}"
    pair = NetPair(f"{NS_PREFIX}{n}s", f"{NS_PREFIX}{n}r", f"{subnet}.1", f"{subnet}.2", rate_mbit,
                   Namespaces())
    if rtt_ms:
        pair.middle = f"{NS_PREFIX}{n}m"
    for ns in (pair.sender, pair.receiver, pair.middle):
        if ns:
            pair.namespaces.add(ns)
    if pair.middle:
        pair.namespaces.veth(pair.sender, "v0", pair.middle, "ml")
        pair.namespaces.veth(pair.middle, "mr", pair.receiver, "v1")
        half_us = int(rtt_ms * 500)
        pair.delay = DelayLine(pair.middle, "ml", "mr", half_us, half_us, tag=f"{NS_PREFIX}{n}")
        pair.delay.start()
    else:
        pair.namespaces.veth(pair.sender, "v0", pair.receiver, "v1")
    run(["ip", "-n", pair.sender, "addr", "add", f"{pair.sender_addr}/24", "dev", "v0"])
    run(["ip", "-n", pair.receiver, "addr", "add", f"{pair.receiver_addr}/24", "dev", "v1"])
    run(["ip", "-n", pair.sender, "link", "set", "v0", "up"])
    run(["ip", "-n", pair.receiver, "link", "set", "v1", "up"])
    # The bottleneck belongs in a router: on the sender's own interface, TCP Small Queues would let
    # only ~1 ms of data wait in it, so no queue could build (BBR's probe would never reach its target).
    # Without a middle namespace it stays on the sender, which is fine for plain throughput checks.
    shaper_ns, shaper_if = (pair.middle, "mr") if pair.middle else (pair.sender, "v0")
    # Burst: a few ms at the rate, so that tbf shapes accurately without starving TSO bursts.
    burst = max(32 * 1024, rate_mbit * 1_000_000 // 8 // 250)
    run(["tc", "-n", shaper_ns, "qdisc", "add", "dev", shaper_if, "root", "tbf", "rate",
         f"{rate_mbit}mbit", "burst", str(burst), "limit", str(queue_bytes)])
    return pair


def remove_netpair(pair: NetPair) -> None:
    if pair.delay:
        pair.delay.stop()
    pair.namespaces.destroy()


def iperf_pair(pair: NetPair, algo: str, seconds: float, port: int = 5201,
               extra: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """Starts an iperf3 server in the receiver and a JSON-reporting client in the sender."""
    server = pair.popen(pair.receiver, ["iperf3", "-s", "-1", "-p", str(port)])
    try:
        wait_listening(pair.receiver, [port], servers=[server], what="iperf3 server")
    except HarnessError:
        server.kill()
        raise
    return pair.popen(pair.sender, ["iperf3", "-c", pair.receiver_addr, "-p", str(port), "-C", algo,
                                    "-t", str(seconds), "-J", *extra])


def iperf_result(client: subprocess.Popen[str], timeout: float = 60) -> dict:
    out, err = client.communicate(timeout=timeout)
    assert client.returncode == 0, f"iperf3 failed: {err or out[-2000:]}"
    return json.loads(out)


def namespaces(prefix: str = "") -> list[str]:
    """The network namespaces now on this machine whose names start with @prefix, as the harness lists
    them for its own clean-up (list_netns); a failing `ip` fails the test rather than reading as none."""
    return [ns for ns in list_netns(check=True) if ns.startswith(prefix)]


def leftovers() -> list[str]:
    return [f"netns {ns}" for ns in namespaces(NS_PREFIX)]


def pins() -> dict[str, list[str]]:
    """bbrctl's pins: each algorithm directory under PIN_ROOT with the names pinned in it."""
    if not PIN_ROOT.is_dir():
        return {}
    return {d.name: sorted(p.name for p in d.iterdir()) for d in sorted(PIN_ROOT.iterdir())}
