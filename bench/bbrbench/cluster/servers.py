"""The cluster's long-running processes: the scheduler, and a worker with its nanny on each test host."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from .certs import CA_KEY_FILE, expiry, security
from .worker import RESOURCE, close_http

# Preloaded in every worker and its nanny: its dask_setup and dask_teardown hooks.
WORKER_MODULE = close_http.__module__


def start_commands(directory: Path, host: str, port: int) -> tuple[list[str], list[str]]:
    """The scheduler's command line (on `host`) and a worker's (its own address is given with --host)."""
    bbrbench = [sys.executable, "-m", "bbrbench", "cluster"]
    return ([*bbrbench, "scheduler", "--certs", str(directory), "--host", host, "--port", str(port)],
            [*bbrbench, "worker", f"tls://{host}:{port}", "--certs", str(directory)])


def _serve(make: Callable[[], Any]) -> None:
    """Runs the Dask server make() builds (in the event loop it binds to) until it finishes or SIGINT or
    SIGTERM close it (a worker's runs cleaning up)."""
    import asyncio

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with make() as server:
            close_http(server)
            ends = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(server.finished())]
            await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
            for task in ends:
                task.cancel()

    asyncio.run(main())


def ca_key_problem(certs: Path, ca_dir: Path) -> str:
    """Why a scheduler may not run here ('' if it may): the authority's key beside its certificate, or
    readable by it in the authority's directory (its default, ca_dir). Every member can run code in the scheduler (Dask
    trusts them all), so one that could read the key could make certificates the CRL does not know."""
    for key in (certs / CA_KEY_FILE, ca_dir / CA_KEY_FILE):
        if key.exists() and (key.parent == certs or os.access(key, os.R_OK)):
            return f"{key}: the authority's key is readable here; run the scheduler under an account without it"
    return ""


def serve_scheduler(certs: Path, host: str, port: int, ca_dir: Path, announce: Callable[[str], None]) -> None:
    """A scheduler on host:port, its HTTP server closed as soon as it started; never where the authority's
    key is readable (beside its certificate, or in ca_dir)."""
    from distributed import Scheduler
    if problem := ca_key_problem(certs, ca_dir):
        raise HarnessError(f"cluster scheduler: {problem}")
    settings = security(certs)
    announce(expiry(certs).date().isoformat())
    _serve(lambda: Scheduler(host=host, port=port, protocol="tls", security=settings, dashboard=False,
                             dashboard_address=f"{host}:0"))


def serve_worker(scheduler: str, certs: Path, host: str) -> None:
    """One worker with its nanny, listening on host only (its certificate's SANs must name it), with one
    `testbed` resource, this module preloaded in both."""
    from distributed import Nanny
    settings = security(certs)
    _serve(lambda: Nanny(scheduler, nthreads=1, resources={RESOURCE: 1}, security=settings, host=host,
                         protocol="tls", dashboard=False, dashboard_address=f"{host}:0", preload=[WORKER_MODULE],
                         preload_nanny=[WORKER_MODULE]))


