"""detach is refused while a network namespace's default congestion control is the algorithm, and the error
says how to change that default in a way the kernel takes: outside the root namespace only an algorithm of
net.ipv4.tcp_allowed_congestion_control (tcp_set_default_congestion_control() refuses others with EPERM).
The test follows the advice to the letter and then detaches."""

from __future__ import annotations

import re
from collections.abc import Callable

from loaderutil import ctl, snapshot
from netutil import NetPair

KEY = "net.ipv4.tcp_congestion_control"


def test_detach_advice_names_defaults_the_kernel_takes(attach: Callable[[str], None],
                                                       netpair: Callable[..., NetPair]) -> None:
    attach("bbr1")
    pair = netpair()
    previous = pair.exec(pair.sender, ["sysctl", "-n", KEY]).stdout.strip()
    pair.exec(pair.sender, ["sysctl", "-qw", f"{KEY}=bbr1"])
    try:
        before = snapshot()
        r = ctl("detach", "bbr1")
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
        assert snapshot() == before
        m = re.search(r"outside the root network namespace one of net\.ipv4\.tcp_allowed_congestion_control: (.+)\)$",
                      r.stderr.strip())
        assert m, r.stderr
        for choice in (cc for cc in m.group(1).split() if cc != "bbr1"):  # every one offered works
            done = pair.exec(pair.sender, ["sysctl", "-w", f"{KEY}={choice}"], check=False)
            assert done.returncode == 0, done.stderr
    finally:
        pair.exec(pair.sender, ["sysctl", "-qw", f"{KEY}={previous}"], check=False)
    assert ctl("detach", "bbr1").returncode == 0
