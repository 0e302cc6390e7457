"""The ABI version (include/bbrkit.h): every BPF object carries it in its read-only data and attach pins it;
`upgrade --object` refuses an object of another version, and flows and trace an attachment of another, each
with one line that names both versions, changing nothing."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from loaderutil import PIN_ROOT, ctl, snapshot
from netutil import ROOT, bbrctl, run

ABI_SECTION = ".rodata.abi"


def abi_version() -> int:
    header = (ROOT / "include" / "bbrkit.h").read_text()
    return int(header.split("#define BBRKIT_ABI_VERSION ")[1].split()[0])


def one_line_error(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 1 and result.stdout == "", result.stdout
    assert len(result.stderr.splitlines()) == 1 and expected in result.stderr, result.stderr


def test_every_object_carries_the_abi_version(tmp_path: Path) -> None:
    if shutil.which("llvm-objcopy") is None:
        pytest.skip("needs llvm-objcopy")
    for source in sorted((ROOT / "bpf").glob("*.bpf.c")):
        obj = ROOT / "build" / source.name.replace(".bpf.c", ".bpf.o")
        section = tmp_path / f"{obj.name}.abi"
        run(["llvm-objcopy", "-O", "binary", f"--only-section={ABI_SECTION}", str(obj), str(section)])
        assert struct.unpack("<I", section.read_bytes()) == (abi_version(),), obj.name


def patched(tmp_path: Path, version: int) -> Path:
    """build/bbr_acd.bpf.o with another ABI version in its read-only data."""
    if shutil.which("llvm-objcopy") is None:
        pytest.skip("needs llvm-objcopy")
    value = tmp_path / "abi.bin"
    value.write_bytes(struct.pack("<I", version))
    out = tmp_path / "bbr_acd-other-abi.bpf.o"
    run(["llvm-objcopy", f"--update-section={ABI_SECTION}={value}", str(ROOT / "build" / "bbr_acd.bpf.o"), str(out)])
    return out


def test_upgrade_refuses_an_object_of_another_abi(detached, attach, tmp_path: Path) -> None:
    detached("bbr_acd")  # an attachment of our own, whatever another bbrctl build attached
    attach("bbr_acd")
    other = patched(tmp_path, abi_version() + 1)
    before = snapshot()
    one_line_error(ctl("upgrade", "--object", str(other), "bbr_acd"),
                   f"upgrade bbr_acd: {other} has ABI version {abi_version() + 1}, this bbrctl reads "
                   f"{abi_version()}: rebuild it")
    assert snapshot() == before


def test_readers_refuse_an_attachment_of_another_abi(detached, attach) -> None:
    """The pinned version is replaced by hand, as if another bbrctl build had attached bbr1."""
    detached("bbr1")
    attach("bbr1")
    pin = PIN_ROOT / "bbr1" / "abi"
    assert pin.exists()
    assert ctl("flows", "bbr1").returncode == 0
    pin.unlink()
    one_line_error(ctl("flows", "bbr1"), "flows: bbr1 was attached by a bbrctl without ABI versions")
    run(["bpftool", "map", "create", str(pin), "type", "array", "key", "4", "value", "4", "entries", "1",
         "name", "abi"])
    version = abi_version() + 1
    run(["bpftool", "map", "update", "pinned", str(pin), "key", "0", "0", "0", "0", "value",
         *(str(b) for b in struct.pack("<I", version))])
    expected = f"bbr1 was attached with ABI version {version}, this bbrctl reads {abi_version()}: detach and attach"
    one_line_error(ctl("flows", "bbr1"), f"flows: {expected}")
    # Under --json the error is also the one document on stdout.
    as_json = ctl("flows", "--json")
    assert as_json.returncode == 1 and expected in json.loads(as_json.stdout)["error"], as_json.stdout
    assert len(as_json.stderr.splitlines()) == 1 and expected in as_json.stderr
    one_line_error(ctl("trace", "bbr1"), f"trace: {expected}")
    # detach reads no records and is the way out.
    assert "bbr1 detached" in bbrctl("detach", "bbr1").stdout
