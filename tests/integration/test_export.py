"""bbrctl export and bbrctl ss on live connections: loopback transfers in a network namespace, placed by a
policy rule half on bbr1 (attached) and half on cubic. The exposition is held to Prometheus' own checker
(promtool check metrics, which lints names: units, _total on counters) on a real scrape; every series the
shipped rules and dashboard query is one the exporter writes; the histograms agree with the flow counts;
a POST is refused with 405; and the keys bbrctl ss --help names are the keys its JSON has."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netutil import BBRCTL, NS_PREFIX, bbrctl, kernel_features, run
from test_prometheus import used_metric_names

PORT = 18093
EXPORT_PORT = 19573
PROMETHEUS_PORT = 19591
ROOT = Path(__file__).resolve().parents[2]
RULE = "exptest"
# The rule splits connections 50:50 by a hash of their 4-tuple, and the ephemeral ports make that a coin
# per connection: with 6, one arm in 32 runs had none (CI saw it); with 16, one in 32768.
FLOWS = 16
# The old names, gone in one release: bit/s units, counters without _total, shares and rates as averages.
OLD_NAMES = ("_bps", "bbrkit_policy_bytes_acked", "bbrkit_policy_segs_out", "bbrkit_policy_retrans_segs",
             "bbrkit_policy_closed_total", "bbrkit_algo_mode_share", "bbrkit_algo_phase_share",
             "bbrkit_algo_loss_rate", "bbrkit_algo_ecn_rate", "bbrkit_algo_delivered_bytes",
             "bbrkit_flow_bytes_acked{", "bbrkit_exporter_flows_dropped")
TRAFFIC = f"""
import socket, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", {PORT}))
srv.listen(64)
def drain(c):
    while c.recv(1 << 16):
        pass
def accept():
    while True:
        c, _ = srv.accept()
        threading.Thread(target=drain, args=(c,), daemon=True).start()
        # The accepted end is the placed one (lport={PORT}): it sends too.
        threading.Thread(target=send, args=(c,), daemon=True).start()
def send(s):
    data = b"x" * (1 << 16)
    while True:
        s.sendall(data)
threading.Thread(target=accept, daemon=True).start()
clients = [socket.create_connection(("127.0.0.1", {PORT})) for _ in range({FLOWS})]
for c in clients:
    threading.Thread(target=drain, args=(c,), daemon=True).start()
threading.Event().wait()
"""

pytestmark = pytest.mark.skipif(not shutil.which("promtool"), reason="needs promtool (Debian's prometheus)")


@pytest.fixture
def placed_traffic(attach: Callable[[str], None]) -> Iterator[str]:
    """A namespace with FLOWS loopback connections whose accepted ends the rule placed; yields its name.
    Afterwards the traffic, the rule and the namespace are gone."""
    attach("bbr1")
    attach("bbr3")  # no flows: its bbr3-only families (PROBE_BW phases) are written all the same
    ns = f"{NS_PREFIX}exp"
    run(["ip", "netns", "add", ns])
    proc = None
    try:
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        bbrctl("policy", "add", RULE, f"lport={PORT}", "arms=bbr1:50,cubic:50", "holdback=cubic")
        proc = subprocess.Popen(["ip", "netns", "exec", ns, "python3", "-c", TRAFFIC], start_new_session=True)
        yield ns
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        bbrctl("policy", "del", RULE, check=False)
        run(["ip", "netns", "del", ns], check=False)


@pytest.fixture
def metrics_url() -> Iterator[str]:
    proc = subprocess.Popen([str(BBRCTL), "export", "--listen", f"127.0.0.1:{EXPORT_PORT}", "--flows", "100"],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{EXPORT_PORT}/metrics"
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and scrape(url) is None:
            time.sleep(0.1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def scrape(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return str(r.read().decode())
    except OSError:
        return None


def value(text: str, name: str, **labels: str) -> float:
    """The one sample of name whose labels include these."""
    found = [float(m.group(2)) for m in re.finditer(rf"^{re.escape(name)}{{([^}}]*)}} (\S+)$", text, re.M)
             if all(f'{k}="{v}"' in m.group(1) for k, v in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def families(text: str) -> set[str]:
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


def placed_scrape(url: str) -> str:
    """A scrape once every connection is placed and live (both arms' flows add up to FLOWS)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = scrape(url)
        if text and f'rule="{RULE}"' in text and sum(
                value(text, "bbrkit_policy_flows", rule=RULE, arm=arm) for arm in ("bbr1", "cubic")) == FLOWS:
            return text
        time.sleep(0.2)
    raise AssertionError(f"the exporter never showed {FLOWS} placed flows")


def test_scrape_passes_promtool_and_has_what_the_rules_query(placed_traffic: str, metrics_url: str) -> None:
    text = placed_scrape(metrics_url)
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), \
        check.stdout + check.stderr
    assert not [old for old in OLD_NAMES if old in text]
    version = subprocess.run([str(BBRCTL), "--version"], capture_output=True, text=True).stdout.split()[1]
    assert value(text, "bbrkit_build_info", version=version) == 1
    # Every bbrkit_ series the shipped rules and dashboard use is a family the exporter writes.
    assert used_metric_names() - families(text) == set()
    for arm in ("bbr1", "cubic"):
        flows = value(text, "bbrkit_policy_flows", rule=RULE, arm=arm)
        # The histograms count the live flows; +Inf holds them all; the smallest bucket never more.
        assert value(text, "bbrkit_policy_srtt_seconds_count", rule=RULE, arm=arm) == flows
        assert value(text, "bbrkit_policy_srtt_seconds_bucket", rule=RULE, arm=arm, le="+Inf") == flows
        assert value(text, "bbrkit_policy_delivery_rate_bytes_per_second_count", rule=RULE, arm=arm) == flows
        assert value(text, "bbrkit_policy_srtt_seconds_sum", rule=RULE, arm=arm) > 0
        assert value(text, "bbrkit_policy_acked_bytes_total", rule=RULE, arm=arm) > 0
    # Per algorithm: bbr1's own records (its flows iterator), and the placed connections' totals, cubic's too.
    assert value(text, "bbrkit_algo_srtt_seconds_count", algo="bbr1") >= value(
        text, "bbrkit_policy_flows", rule=RULE, arm="bbr1")
    assert value(text, "bbrkit_algo_placed_acked_bytes_total", algo="cubic") >= value(
        text, "bbrkit_policy_acked_bytes_total", rule=RULE, arm="cubic")
    assert len(re.findall(r"^bbrkit_flow_acked_bytes_total\{", text, re.M)) == FLOWS
    phases = re.findall(r'^bbrkit_algo_phase_flows\{algo="(\w+)",phase="(\w+)"\} \d+$', text, re.M)
    assert {algo for algo, _ in phases} == {"bbr3"} and len(phases) == 4


def test_post_is_refused_with_405(placed_traffic: str, metrics_url: str) -> None:
    for body in (b"", b"x" * 100_000):
        req = urllib.request.Request(metrics_url, data=body, method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 405 and e.value.headers["Allow"] == "GET, HEAD"
    assert scrape(metrics_url) is not None  # and it still serves


def test_ss_json_has_the_keys_its_help_names(placed_traffic: str) -> None:
    help_text = subprocess.run([str(BBRCTL), "ss", "--help"], capture_output=True, text=True).stdout
    named = re.findall(r"^  (\w+) {2,}", help_text.split("each with the keys:", 1)[1], re.M)
    inode = os.stat(f"/run/netns/{placed_traffic}").st_ino
    deadline = time.monotonic() + 20
    while True:  # until both ends of every connection are up
        mine = [s for s in json.loads(bbrctl("ss", "--json").stdout)["sockets"] if s["netns"] == inode]
        if len(mine) >= 2 * FLOWS or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(mine) >= 2 * FLOWS
    assert all(list(s) == named for s in mine), (named, mine[0])
    assert {s["arm"] for s in mine if s["local"].endswith(f":{PORT}")} == {"bbr1", "cubic"}


def test_rollout_reads_a_real_prometheus(placed_traffic: str, metrics_url: str, tmp_path: Path) -> None:
    """Prometheus (Debian's) scrapes the exporter every 2 s (a scrape slower than the interval is dropped:
    2 s leaves room on a loaded machine); bbrbench rollout --prometheus judges the rule
    from its query API: both arms get samples, and the retransmission guard, with a margin loopback cannot
    reach, is never breached (passed, or inconclusive where a few retransmissions cannot bound the ratio)."""
    if not shutil.which("prometheus"):
        pytest.skip("needs prometheus (Debian's)")
    conf = tmp_path / "prometheus.yml"
    conf.write_text("global: {scrape_interval: 2s}\nscrape_configs:\n  - job_name: bbrkit\n"
                    f"    static_configs: [{{targets: ['127.0.0.1:{EXPORT_PORT}']}}]\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{PROMETHEUS_PORT}"
    try:
        query = urllib.parse.quote(f'bbrkit_policy_flows{{rule="{RULE}"}}')
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            body = scrape(f"{base}/api/v1/query?query={query}")
            if body and len(json.loads(body)["data"]["result"]) == 2:
                break
            time.sleep(0.5)
        else:
            raise AssertionError("Prometheus never had the rule's series")
        r = subprocess.run([str(ROOT / ".venv" / "bin" / "bbrbench"), "rollout", RULE, "--prometheus", base,
                            "--window", "16", "--interval", "2", "--guard", "retrans=0.5", "--json"],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PATH": f"{BBRCTL.parent}:{os.environ['PATH']}"})
        doc = json.loads(r.stdout)
        # What this test guards is the reading: both arms' samples come from Prometheus. The guard's verdict
        # on a few loopback retransmissions may be passed or inconclusive (too few to bound the ratio), but
        # never a breach.
        assert (r.returncode, doc["outcome"]) in ((0, "passed"), (5, "undecided")), \
            (r.stderr, json.dumps(doc["checks"]), json.dumps(doc["summary"]))
        assert doc["holdback"] == "cubic"
        assert {arm: m["retrans_rate"]["n"] >= 3 for arm, m in doc["summary"].items()} == {"bbr1": True,
                                                                                              "cubic": True}
    finally:
        os.killpg(prom.pid, signal.SIGTERM)
        prom.wait(timeout=30)


def test_ramp_step_rewrites_weights_and_keeps_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """bbrbench rollout's ramp step against the real bbrctl: the rule is written with the candidate at the
    step's share and every other key as it was."""
    from bbrbench.cli.rollout import set_share

    rule = "ramptest"
    keys = ["lport=18094", "rport=443", "dst=192.0.2.0/24,2001:db8::/32", "priority=7", "fallback=yes"]
    bbrctl("policy", "add", rule, "arms=reno:1,cubic:99", "holdback=cubic", *keys)
    try:
        before = json.loads(bbrctl("policy", "show", rule, "--json").stdout)["rules"][0]
        monkeypatch.setenv("BBRCTL", str(BBRCTL))
        set_share(rule, 10)
        after = json.loads(bbrctl("policy", "show", rule, "--json").stdout)["rules"][0]
    finally:
        bbrctl("policy", "del", rule, check=False)
    assert {a["algo"]: a["weight"] for a in after["arms"]} == {"reno": 10, "cubic": 90}
    unchanged = ("priority", "cgroup", "lport", "rport", "dst", "fallback", "holdback")
    assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}


TOTALS_PORT = 18094
TOTALS_ALGOS = ("bbr1", "bbr3")
TOTALS_BYTES = 3 << 20  # per connection: several hundred segments, enough for a few losses
TOTALS_CONNS = 3  # per algorithm
FIN_BYTES = 1  # the FIN takes one sequence number, so tcpi_bytes_acked counts it
# Clients choose the algorithm by setsockopt (no policy): the counters cover every connection. The server
# runs reno, so that only the clients count. Each client
# sends TOTALS_BYTES and waits for the server's one-byte reply, which acknowledges all of it; its
# tcpi_bytes_acked and tcpi_total_retrans (struct tcp_info offsets 120 and 100) are printed. It prints {}
# once all have sent. Each "finish" then ends one connection per algorithm, prints what its tcp_info said
# just before, and waits until the server has closed its end too: the connection is in TIME_WAIT, gone
# from the kernel's socket hash, but its owner has not called close(2), which runs the algorithm's release.
# "close" does that and prints {}.
TOTALS_TRAFFIC = f"""
import json, socket, struct, sys, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
srv.bind(("127.0.0.1", {TOTALS_PORT}))
srv.listen(64)
def serve(c):
    got = 0
    while got < {TOTALS_BYTES}:
        got += len(c.recv(1 << 16))
    c.sendall(b"k")
    while c.recv(1 << 16):
        pass
    c.close()
def accept():
    while True:
        threading.Thread(target=serve, args=(srv.accept()[0],), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
conns = {{}}
for algo in {TOTALS_ALGOS!r}:
    for _ in range({TOTALS_CONNS}):
        c = socket.socket()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, algo.encode())
        c.connect(("127.0.0.1", {TOTALS_PORT}))
        c.sendall(b"x" * {TOTALS_BYTES})
        assert c.recv(1) == b"k"
        conns.setdefault(algo, []).append(c)
print("{{}}", flush=True)
def info(c):
    raw = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
    return struct.unpack_from("Q", raw, 120)[0], struct.unpack_from("I", raw, 100)[0]
finished = []
for line in sys.stdin:
    out = {{}}
    for algo, cs in conns.items():
        if line == "finish\\n":
            c = cs.pop()
            out[algo] = info(c)
            c.shutdown(socket.SHUT_WR)
            while c.recv(1 << 16):
                pass
            finished.append(c)
    while line == "close\\n" and finished:
        finished.pop().close()
    print(json.dumps(out), flush=True)
"""


def algo_totals(url: str) -> dict[str, tuple[float, float]]:
    text = scrape(url)
    assert text is not None
    return {algo: (value(text, "bbrkit_algo_acked_bytes_total", algo=algo),
                   value(text, "bbrkit_algo_retransmitted_segments_total", algo=algo)) for algo in TOTALS_ALGOS}


@pytest.mark.parametrize("upgraded", [False, True], ids=["attached", "upgraded"])
def test_algo_totals_count_every_connection_closed_and_live(attach: Callable[[str], None], metrics_url: str,
                                                            upgraded: bool) -> None:
    """Connections on bbr1 and bbr3 by setsockopt, over a lossy loopback: the per-algorithm
    counters rise by what the connections' own tcp_info says, live and after they close, and never drop
    between scrapes as connections move from live to closed. After an upgrade, the new object's
    connections add to the same pinned totals."""
    for algo in TOTALS_ALGOS:
        attach(algo)
    if upgraded:
        if not kernel_features()["link-update"]["available"]:
            pytest.skip("the kernel cannot update struct_ops links")
        bbrctl("upgrade", TOTALS_ALGOS[0])
    ns = f"{NS_PREFIX}tot"
    run(["ip", "netns", "add", ns])
    proc = None
    try:
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        # One in ten of the clients' data segments (64 KB each on lo) dropped on receipt: nftables, as kernels
        # without netem have it; a drop on output would be a local error, which TCP does not retransmit. SYN
        # and FIN pass, so that tcp_info's count before the close is the connection's last.
        run(["ip", "netns", "exec", ns, "nft", f"add table inet loss; add chain inet loss in {{ type filter hook "
             f"input priority 0; }}; add rule inet loss in tcp dport {TOTALS_PORT} tcp flags & (fin | syn) == 0 "
             "numgen random mod 10 0 drop"])
        before = algo_totals(metrics_url)
        proc = subprocess.Popen(["ip", "netns", "exec", ns, "python3", "-c", TOTALS_TRAFFIC], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert proc.stdin is not None and proc.stdout is not None
        assert json.loads(proc.stdout.readline()) == {}
        live = algo_totals(metrics_url)
        # A scraper runs while the connections close, round by round; this thread scrapes after each step,
        # one of them while the finished connections are neither live nor released.
        scraped: list[dict[str, tuple[float, float]]] = []
        rounds = [live]
        closing = threading.Event()

        def scrape_until_closed() -> None:
            while not closing.is_set():
                scraped.append(algo_totals(metrics_url))

        scraper = threading.Thread(target=scrape_until_closed)
        scraper.start()
        finals: dict[str, list[list[int]]] = {algo: [] for algo in TOTALS_ALGOS}
        try:
            for _ in range(TOTALS_CONNS):
                for command in ("finish", "close"):
                    proc.stdin.write(command + "\n")
                    proc.stdin.flush()
                    for algo, final in json.loads(proc.stdout.readline()).items():
                        finals[algo].append(final)
                    rounds.append(algo_totals(metrics_url))
        finally:
            closing.set()
            scraper.join()
        after = rounds[-1]
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        run(["ip", "netns", "del", ns], check=False)
    for algo in TOTALS_ALGOS:
        # Live only: every byte sent is acknowledged already.
        assert live[algo][0] - before[algo][0] >= TOTALS_CONNS * TOTALS_BYTES, (algo, live[algo], before[algo])
        for seen in (scraped, rounds):
            series = [s[algo] for s in seen]
            assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(series, series[1:])), (algo, series)
        acked = after[algo][0] - before[algo][0]
        retrans = after[algo][1] - before[algo][1]
        told_acked = sum(f[0] for f in finals[algo])
        told_retrans = sum(f[1] for f in finals[algo])
        # What tcp_info said before the close, plus the FIN, which the server's FIN acknowledged.
        assert told_acked >= TOTALS_CONNS * TOTALS_BYTES and told_retrans > 0, (algo, finals[algo])
        assert acked == told_acked + TOTALS_CONNS * FIN_BYTES, (algo, acked, told_acked)
        assert retrans == told_retrans, (algo, retrans, told_retrans)
