"""Helpers of the bbrctl tests: running bbrctl (also as an unprivileged user), its pins, and the
state an error must leave unchanged."""
from __future__ import annotations

import json
import os
import subprocess

from netutil import BBRCTL, PIN_ROOT, available_ccs, pins, run

ALGOS = ("bbr1", "bbr_rttgain", "bbr_acd", "bbr2", "bbr3", "bbr_draft")
PARAM_ALGOS = ("bbr_rttgain", "bbr_acd", "bbr2", "bbr3", "bbr_draft")
# Those with the per-packet loss path: on a kernel that allows it, attach pins its three hook links.
PER_PACKET_ALGOS = ("bbr2", "bbr3", "bbr_draft")
NOBODY = "65534"


def ctl(*args: str, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    """bbrctl without raising on failure; unprivileged runs it as nobody when the tests run as root, and
    as the tests' own user otherwise (who has no privileges to drop, and may not change user)."""
    drop = unprivileged and os.geteuid() == 0
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if drop else []
    return subprocess.run([*prefix, str(BBRCTL), *args], capture_output=True, text=True, timeout=30)


def attached(algo: str) -> bool:
    return (PIN_ROOT / algo / "link").exists()


def params_raw(algo: str) -> dict[str, int]:
    """The params map as bpftool decodes it from BTF: field name -> stored value."""
    out = run(["bpftool", "-j", "map", "dump", "pinned", str(PIN_ROOT / algo / "params")]).stdout
    return json.loads(out)[0]["formatted"]["value"][".data.params"][0]["params"]


def snapshot() -> dict[str, object]:
    """Everything bbrctl could change: pins, the kernel's registrations, parameter values."""
    return {"pins": pins(), "available": available_ccs(),
            "params": {a: params_raw(a) for a in PARAM_ALGOS if attached(a)}}


def struct_ops_ids() -> set[int]:
    return {m["id"] for m in json.loads(run(["bpftool", "-j", "struct_ops", "list"]).stdout)}
