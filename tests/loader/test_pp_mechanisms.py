"""Each mechanism of the per-packet loss path (fentry, kprobe, walk) can be turned off by its name in
BBRCTL_DISABLE, as the kernel's own refusals turn them off: `bbrctl features` and attach skip it with
that reason and take the next one the kernel allows, or the ACK-time path where none is left."""
from __future__ import annotations

import json
import os

import pytest

from loaderutil import ctl
from netutil import bbrctl, kernel_features, pp_mechanism


def test_disabling_the_chosen_mechanism_falls_back_with_its_name(detached, monkeypatch) -> None:
    """The mechanism this kernel would use is disabled: features and attach pass it over, naming the
    disable, and the attachment runs the one features names next (per-packet) or judges at ACK time."""
    feature = kernel_features()["per-packet"]
    if not feature["available"]:
        pytest.skip(f"the kernel allows no per-packet mechanism ({feature['note']})")
    chosen = feature["note"].split(" ")[0]
    already = os.environ.get("BBRCTL_DISABLE", "")
    monkeypatch.setenv("BBRCTL_DISABLE", ",".join(filter(None, (already, chosen))))
    reason = f"{chosen}: BBRCTL_DISABLE has '{chosen}'"
    fallback = kernel_features()["per-packet"]
    assert reason in fallback["note"], fallback
    detached("bbr3")
    try:
        attached = bbrctl("attach", "bbr3")
        listed = json.loads(bbrctl("list", "--json").stdout)["algorithms"]
        path = next(a for a in listed if a["name"] == "bbr3")["features"]["loss_decisions"]
        if fallback["available"]:
            assert path == "per-packet"
            assert pp_mechanism("bbr3") == fallback["note"].split(" ")[0] != chosen
        else:
            assert path == "ack-time"
            assert reason in attached.stderr, attached.stderr
    finally:
        ctl("detach", "bbr3")
