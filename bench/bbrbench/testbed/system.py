"""What this machine offers: congestion controls, qdiscs, nftables, bbrctl. Probed at run time, never assumed."""

from __future__ import annotations

import json
import logging
import os
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..scenario import AlgoCatalog
from .netns import command, find_binary

log = logging.getLogger(__name__)
KERNEL_CC_PATH = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
BBRCTL_TIMEOUT_S = 20.0
# The line of `bbrctl --help` that names the algorithms built into it (loader/cli.c).
HELP_ALGORITHMS = "algorithms:"


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


def bbrkit_names_from_help() -> frozenset[str]:
    """The algorithms built into bbrctl, from the last line of `bbrctl --help`, which needs no root."""
    lines = [line for line in bbrctl("--help").splitlines() if line.startswith(HELP_ALGORITHMS)]
    return frozenset(lines[-1].removeprefix(HELP_ALGORITHMS).split()) if lines else frozenset()


def catalog() -> AlgoCatalog:
    listing = bbrctl_list()
    if listing is None and bbrctl_path() is not None and os.geteuid() != 0:
        # Without root, bbrctl list and show fail, and every bbrkit algorithm would read as unknown. --help
        # names them without root; their parameters' ranges stay unchecked until a run (as root) lists them.
        names = bbrkit_names_from_help()
        log.info("note: bbrkit algorithms cannot be listed without root (bbrctl list needs it): names from "
                 "bbrctl --help (%s), parameters not checked", ", ".join(sorted(names)) or "none")
        return AlgoCatalog(kernel=frozenset(kernel_ccs() - names), bbrkit=names)
    algos = [a for a in (listing or {}).get("algorithms", []) if isinstance(a, dict) and "name" in a]
    bbrkit = {a["name"] for a in algos}
    params: dict[str, dict[str, tuple[float, float] | None]] = {}
    for a in algos:
        ranges = {p["name"]: (float(p["min"]), float(p["max"])) for p in bbrkit_show(a["name"])
                  if isinstance(p.get("min"), (int, float)) and isinstance(p.get("max"), (int, float))}
        params[a["name"]] = {name: ranges.get(name) for name in a.get("params", []) if isinstance(name, str)}
    return AlgoCatalog(kernel=frozenset(kernel_ccs() - bbrkit), bbrkit=frozenset(bbrkit), params=params)


def bbrkit_attached() -> set[str]:
    listing = bbrctl_list() or {}
    return {a["name"] for a in listing.get("algorithms", []) if isinstance(a, dict) and a.get("attached")}


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


def qdisc_available(kind: str, probe_netns: str) -> bool:
    """Whether the kernel can create a qdisc of this kind: tried on lo of a scratch namespace."""
    args = {"netem": ["delay", "1ms"], "cake": ["bandwidth", "10mbit"]}.get(kind, [])
    result = command(["tc", "qdisc", "add", "dev", "lo", "root", kind, *args], netns=probe_netns, check=False)
    if result.returncode == 0:
        command(["tc", "qdisc", "del", "dev", "lo", "root"], netns=probe_netns, check=False)
        return True
    return False
