"""What this machine offers: congestion controls, qdiscs, nftables, bbrctl. Probed at run time, never assumed."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..scenario import AlgoCatalog
from .procs import command, find_binary

log = logging.getLogger(__name__)
KERNEL_CC_PATH = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
BBRCTL_TIMEOUT_S = 20.0


def bbrctl_path() -> Path | None:
    return find_binary("bbrctl", "BBRCTL")


def bbrctl(*args: str, timeout: float = BBRCTL_TIMEOUT_S, check: bool = True) -> str:
    path = bbrctl_path()
    if path is None:
        raise HarnessError("bbrctl: not found on PATH or in build/ (make, make install, or set BBRCTL)")
    return command([str(path), *args], timeout=timeout, check=check).stdout


def bbrctl_list() -> dict[str, Any] | None:
    """`bbrctl list --json`, or None when bbrctl is not built."""
    if bbrctl_path() is None:
        return None
    try:
        data = json.loads(bbrctl("list", "--json"))
    except (HarnessError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def kernel_ccs() -> set[str]:
    return set(KERNEL_CC_PATH.read_text().split())


def catalog() -> AlgoCatalog:
    """The kernel's congestion controls, bbrkit's, and the range of every bbrkit parameter: one `bbrctl list
    --json`, which needs no root (the parameter tables are compiled into bbrctl), so a scenario is checked in
    full before anything is built, by any user. Without bbrctl, the kernel's own are all there is."""
    if bbrctl_path() is None:
        return AlgoCatalog(kernel=frozenset(kernel_ccs()), bbrkit=frozenset())
    try:
        listing = json.loads(bbrctl("list", "--json"))
    except ValueError as e:
        raise HarnessError(f"bbrctl list --json: not JSON ({e})") from e
    algos = [a for a in listing.get("algorithms", []) if isinstance(a, dict) and isinstance(a.get("name"), str)]
    bbrkit = frozenset(a["name"] for a in algos)
    params = {a["name"]: {p["name"]: (float(p["min"]), float(p["max"])) for p in a.get("params", [])}
              for a in algos}
    return AlgoCatalog(kernel=frozenset(listing.get("kernel_available", [])) - bbrkit, bbrkit=bbrkit, params=params)


def bbrkit_attached() -> set[str]:
    listing = bbrctl_list() or {}
    return {a["name"] for a in listing.get("algorithms", []) if isinstance(a, dict) and a.get("attached")}


def bbrkit_attachments() -> dict[str, dict[str, Any]]:
    """What each attached bbrkit algorithm runs with, as `bbrctl list --json` names it: params, trace,
    flows and, for bbr2/bbr3, loss_decisions ("per-packet" or "ack-time")."""
    listing = bbrctl_list() or {}
    return {a["name"]: dict(a.get("features") or {}) for a in listing.get("algorithms", [])
            if isinstance(a, dict) and a.get("attached") and isinstance(a.get("name"), str)}


def bbrkit_without_trace(algos: list[str]) -> list[str]:
    """Those of the attached algorithms whose attachment has no trace ring buffer (bbrctl features)."""
    listing = bbrctl_list() or {}
    return [a["name"] for a in listing.get("algorithms", []) if isinstance(a, dict) and a.get("name") in algos
            and not (a.get("features") or {}).get("trace", False)]


def bbrkit_show(algo: str) -> list[dict[str, Any]]:
    """The parameter records of `bbrctl show --json ALGO` (name, value, default, min, max, ...)."""
    try:
        data = json.loads(bbrctl("show", "--json", algo))
    except (HarnessError, ValueError):
        return []
    params = data.get("params", []) if isinstance(data, dict) else []
    return [p for p in params if isinstance(p, dict) and isinstance(p.get("name"), str)]


def bbrkit_params(algo: str, key: str = "value") -> dict[str, float]:
    """An algorithm's live parameter values (key="value") or its defaults (key="default")."""
    return {p["name"]: float(p[key]) for p in bbrkit_show(algo)
            if isinstance(p.get(key), (int, float)) and not isinstance(p.get(key), bool)}


def format_param(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@cache
def have_tool(name: str) -> bool:
    return shutil.which(name) is not None


def qdisc_available(qdisc: str, probe_netns: str, args: Sequence[str] = ()) -> bool:
    """Whether the kernel can create this qdisc (given @args): tried on lo of a scratch namespace."""
    result = command(["tc", "qdisc", "add", "dev", "lo", "root", qdisc, *args], netns=probe_netns, check=False)
    if result.returncode == 0:
        command(["tc", "qdisc", "del", "dev", "lo", "root"], netns=probe_netns, check=False)
        return True
    return False
