"""A run directory as a gzipped tar, and back: packed on a worker (or by the sudo entry point of a Slurm
task), unpacked by the client as plain files only, within bounds, and only if it is the run asked for.
"""

from __future__ import annotations

import io
import logging
import shutil
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import HarnessError
from ..results import read_json
from ..sweep.store import accept_run
from ..testbed.host import HOST_FILE, host_name

log = logging.getLogger(__name__)

# A run's files (raw samples, summaries, plots) are tens of MiB; a result larger unpacked is refused
# rather than held in the client's memory.
RESULT_MAX_BYTES = 1 << 30
GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib's framing flag for a gzip header and trailer


def pack(directory: Path) -> bytes:
    """directory as a gzipped tar (its files only: a run writes no links)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    return buffer.getvalue()



def _member_path(member: tarfile.TarInfo, root: Path) -> Path:
    """Where a member goes: a directory or a regular file (not sparse: a GNU or pax sparse member of a few
    bytes expands to any size), by a relative name that stays inside root."""
    name = PurePosixPath(member.name)
    plain = member.isdir() or (member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and member.sparse is None)
    if name.is_absolute() or ".." in name.parts or not plain:
        raise HarnessError(f"result member {member.name!r}: only plain files and directories inside the run "
                           f"directory are accepted")
    return root.joinpath(*[p for p in name.parts if p != "."])


def _gunzip(data: bytes) -> bytes:
    """The whole gzip stream, decompressed before any file is written: its CRC and length are checked only
    at its end (a damaged tail would otherwise be read as file content), and a bomb stops at the cap."""
    stream = zlib.decompressobj(wbits=GZIP_WBITS)
    tar = stream.decompress(data, RESULT_MAX_BYTES + 1)
    if len(tar) > RESULT_MAX_BYTES:
        raise HarnessError(f"results refused: larger than {RESULT_MAX_BYTES >> 20} MiB unpacked")
    if not stream.eof or stream.unused_data:
        raise HarnessError("results arrived damaged (the gzip stream is cut short or followed by junk)")
    return tar


def extract_new(data: bytes, root: Path) -> None:
    """The tar's files and directories under root, a new directory, written by this process with its own
    modes: no links, devices, sparse files or owners from the sender (tarfile's filter='data' does part of
    this from Python 3.11.4 only), and no more than RESULT_MAX_BYTES written in all, whatever the headers say."""
    root.parent.mkdir(parents=True, exist_ok=True)
    root.mkdir()  # not an existing directory or a link to one
    left = RESULT_MAX_BYTES
    try:
        with tarfile.open(fileobj=io.BytesIO(_gunzip(data)), mode="r:") as tar:
            for member in tar:
                path = _member_path(member, root)
                if member.isdir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                if member.size > left:
                    raise HarnessError(f"results refused: larger than {RESULT_MAX_BYTES >> 20} MiB unpacked")
                left -= member.size
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None  # a regular file's
                with source, path.open("xb") as fh:
                    fh.write(source.read(member.size))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise HarnessError(f"results arrived damaged ({exc})") from None


def check_complete(staged: Path, host: dict[str, Any] | None) -> None:
    """A run is taken in only whole: its summary and its host record, the record of the host that
    delivered it when that is known (a worker's health report)."""
    read_json(staged / "summary.json", "summary")
    record = read_json(staged / HOST_FILE, "host")
    if host is not None and (host_name(record), record.get("hostname")) != (host_name(host), host.get("hostname")):
        raise HarnessError(f"its host record names {record.get('hostname')!r}, not the host that delivered it "
                           f"({host.get('hostname')!r})")


def unpack(data: bytes, run_dir: Path, raw: dict[str, Any], submitted: dict[str, Any],
           host: dict[str, Any] | None = None) -> None:
    """The run directory from a packed result (a worker's, a Slurm task's), accepted only when it is the
    run asked for (its scenario.json holds this job's scenario and the submitting record of this try),
    complete, and, given `host`, recorded as run there; whatever was at run_dir (an unfinished earlier
    try) is replaced only once the new one is accepted."""
    partial = run_dir.with_name(run_dir.name + ".part")
    if partial.exists():
        shutil.rmtree(partial)
    try:
        extract_new(data, partial)
        check_complete(partial, host)
    except HarnessError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise HarnessError(f"{run_dir}: {exc}") from None
    accept_run(partial, run_dir, raw, submitted)
