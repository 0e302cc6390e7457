"""linkbench's clean-up stops only its own iperf3 servers (root)."""
from __future__ import annotations

import itertools
import subprocess
import time

from bbrbench.experiments import linkbench
from bbrbench.testbed.netns import Namespaces, netns_pids
from netutil import NS_PREFIX

_count = itertools.count()
PORT = 15301  # outside linkbench's own ports: the bystander must not be one of its servers


def _server(netns: str | None) -> subprocess.Popen[bytes]:
    prefix = ["ip", "netns", "exec", netns] if netns else []
    return subprocess.Popen([*prefix, "iperf3", "-s", "-1", "-p", str(PORT)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_stopping_the_receivers_servers_leaves_another_namespaces_alone() -> None:
    spaces, servers = Namespaces(), list[subprocess.Popen[bytes]]()
    try:
        mine, other = spaces.add(f"{NS_PREFIX}lbs{next(_count)}"), spaces.add(f"{NS_PREFIX}lbs{next(_count)}")
        servers = [_server(mine), _server(other)]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (netns_pids(mine) and netns_pids(other)):
            time.sleep(0.05)
        linkbench._stop_servers(mine)
        assert servers[0].wait(timeout=5) is not None
        assert servers[1].poll() is None, "a server in another namespace was stopped"
    finally:
        for s in servers:
            s.kill()
            s.wait()
        spaces.destroy()
