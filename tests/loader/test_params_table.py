"""One definition per parameter: include/bbrkit_params.h's tables make the params struct, the BPF
objects' defaults, bbrctl's descriptors and docs/reference.md's table. These check that the made things
agree where a hand edit could still split them: the docs copy, and each built object against bbrctl.
The outside reference is the object's BTF as bpftool decodes it, which is what `bpftool map update`
writes by position. No root needed."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from loaderutil import PARAM_ALGOS
from netutil import BBRCTL, ROOT

GEN = ROOT / "build" / "bbrctl-gen"
REFERENCE = ROOT / "docs" / "reference.md"
FIELD_BYTES = 4  # every parameter is a __u32
PERMILLE = 1000


def described(algo: str) -> list[dict]:
    out = subprocess.run([str(BBRCTL), "list", "--json"], capture_output=True, text=True, check=True).stdout
    return next(a["params"] for a in json.loads(out)["algorithms"] if a["name"] == algo)


def stored(param: dict) -> int:
    return round(param["default"] * PERMILLE) if param["kind"] == "ratio" else int(param["default"])


def test_reference_table_is_the_generated_one() -> None:
    generated = subprocess.run([str(GEN), "params-table"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"^<!-- parameters: .*? -->\n(.*?)^<!-- end parameters -->", REFERENCE.read_text(),
                      re.S | re.M)
    assert found, "docs/reference.md lost its parameter table markers"
    assert found.group(1) == generated, "docs/reference.md: paste the output of build/bbrctl-gen params-table"


@pytest.mark.parametrize("algo", PARAM_ALGOS)
def test_object_struct_and_defaults_are_bbrctls(algo: str, tmp_path) -> None:
    obj = ROOT / "build" / f"{algo}.bpf.o"
    params = described(algo)
    btf = json.loads(subprocess.run(["bpftool", "-j", "btf", "dump", "file", str(obj)], capture_output=True,
                                    text=True, check=True).stdout)["types"]
    types = {t["id"]: t for t in btf}
    var = next(t for t in btf if t["kind"] == "VAR" and t["name"] == "params")
    struct = types[var["type_id"]]
    assert [m["name"] for m in struct["members"]] == [p["field"] for p in params]
    assert [m["bits_offset"] for m in struct["members"]] == [i * FIELD_BYTES * 8 for i in range(len(params))]
    assert struct["size"] == FIELD_BYTES * len(params)
    section = tmp_path / "data.params"
    subprocess.run(["llvm-objcopy", "-O", "binary", "--only-section=.data.params", str(obj), str(section)], check=True)
    data = section.read_bytes()
    values = [int.from_bytes(data[i:i + FIELD_BYTES], "little") for i in range(0, len(data), FIELD_BYTES)]
    assert values == [stored(p) for p in params]
