"""The harness's wait for a background server (bbrbench.testbed.procs.wait_listening), on real sockets in
this namespace: it returns once the port is bound, not before, and says which server failed and why."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from bbrbench.errors import HarnessError
from bbrbench.testbed.procs import wait_listening

BIND_AFTER_S = 0.5


def free_port(kind: socket.SocketKind) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def late_server(request: pytest.FixtureRequest) -> Iterator[tuple[subprocess.Popen[bytes], int, bool]]:
    """A server that binds its port BIND_AFTER_S after it starts and then stays up."""
    udp = request.param == "udp"
    port = free_port(socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    kind = "SOCK_DGRAM" if udp else "SOCK_STREAM"
    listen = "" if udp else "s.listen()\n"
    script = (f"import socket, time\ntime.sleep({BIND_AFTER_S})\ns = socket.socket(socket.AF_INET, socket.{kind})\n"
              f"s.bind(('127.0.0.1', {port}))\n{listen}time.sleep(30)\n")
    server = subprocess.Popen([sys.executable, "-c", script])
    try:
        yield server, port, udp
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("late_server", ["tcp", "udp"], indirect=True)
def test_returns_once_the_port_is_bound_not_before(late_server: tuple[subprocess.Popen[bytes], int, bool]) -> None:
    server, port, udp = late_server
    started = time.monotonic()
    wait_listening(None, [port], udp=udp, servers=[server])
    assert time.monotonic() - started >= BIND_AFTER_S - 0.1
    if not udp:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # ready means a client gets in


def test_a_server_that_exits_first_is_named() -> None:
    server = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    server.wait()
    with pytest.raises(HarnessError, match=r"^iperf3 server exited early \(code 3\)$"):
        wait_listening(None, [free_port(socket.SOCK_STREAM)], servers=[server], what="iperf3 server")


def test_a_port_nobody_binds_times_out_naming_it() -> None:
    port = free_port(socket.SOCK_STREAM)
    with pytest.raises(HarnessError, match=rf"^echo not listening on port {port} after 0.3 s$"):
        wait_listening(None, [port], what="echo", timeout_s=0.3)
