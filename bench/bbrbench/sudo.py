"""`bbrbench run` under sudo: the entry point a Slurm task runs as root through the one sudo rule of
docs/cluster.md. Whoever may use the rule may run experiments as root, and nothing more: the arguments
are pinned (a scenario file and a new --out), the code and bbrctl must be root's, the scenario is read
without following links, the run is made in a fresh root-only directory, and its files are handed over by
a process running as the user, into an --out that must not exist yet (so no link or existing directory
of the user's can make root write, or give away, anything else)."""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import HarnessError, UsageError

# sudo's record of who ran it (sudoers(5)); root then acts for that user only.
SUDO_UID_ENV, SUDO_GID_ENV = "SUDO_UID", "SUDO_GID"
# A scenario file is a few KiB of TOML; a larger one is not a scenario.
SCENARIO_MAX_BYTES = 1 << 20
STAGING_PREFIX = "bbrbench-sudo-"


def sudo_user() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran this through sudo, or None when it was not run so (or not as root)."""
    uid = os.environ.get(SUDO_UID_ENV, "")
    if os.geteuid() != 0 or not uid.isdigit() or int(uid) == 0:
        return None
    gid = os.environ.get(SUDO_GID_ENV, uid)
    return int(uid), int(gid) if gid.isdigit() else int(uid)


def check_pinned(args: argparse.Namespace) -> None:
    """Under sudo only `run --no-plots --out NEW SCENARIO_FILE`: no overrides, profile or JSON output, and
    no BBRCTL from the environment (root would run it)."""
    extra = [name for name, given in (("KEY=VALUE", args.overrides), ("--profile", args.profile),
                                      ("--json", getattr(args, "json", False)), ("BBRCTL", os.environ.get("BBRCTL")))
             if given]
    if extra or not args.no_plots or not args.out:
        raise UsageError(f"run under sudo: only --no-plots --out DIR SCENARIO_FILE is accepted"
                         f"{' (not ' + ', '.join(extra) + ')' if extra else ''}")


def check_root_owned(path: Path) -> None:
    """path and every directory above it are root's and writable by no one else: root runs this code (and
    bbrctl) for the user, so a tree the user can write to would be the user's code running as root."""
    for p in [path, *path.parents]:
        st = os.stat(p)
        if st.st_uid != 0 or st.st_mode & 0o022:
            raise HarnessError(f"run under sudo: {p} is not root's alone (owner {st.st_uid}, mode "
                               f"{stat.S_IMODE(st.st_mode):o}); install the checkout as root")


def read_no_follow(path: Path, uid: int) -> bytes:
    """The file at path, if it is a regular file of uid's with one name (not a symbolic link, nor a hard
    link to someone else's file), at most SCENARIO_MAX_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"run under sudo: {path}: {exc.strerror} (a regular file, not a link)") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_nlink != 1:
            raise UsageError(f"run under sudo: {path}: not a regular file of yours")
        data = fh.read(SCENARIO_MAX_BYTES + 1)
    if len(data) > SCENARIO_MAX_BYTES:
        raise UsageError(f"run under sudo: {path}: larger than {SCENARIO_MAX_BYTES >> 10} KiB")
    return data


def hand_over(run_dir: Path, out: Path, uid: int, gid: int) -> None:
    """run_dir's files written into a new directory out by a child process running as uid:gid, so that the
    user's own permissions decide where they may go; HarnessError if the child could not."""
    from .cluster.archive import extract_new, pack
    data = pack(run_dir)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the user, writing the files as the user would
        os.close(read_end)
        code = 0
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            extract_new(data, out)
        except BaseException as exc:  # anything: the child must report and exit, never return
            os.write(write_end, str(exc).encode()[:400])
            code = 1
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        why = fh.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise HarnessError(f"run under sudo: cannot write {out} as user {uid}: {why or 'the writer failed'}")


def staged_run(args: argparse.Namespace, user: tuple[int, int], run: Callable[[Path, Path], None]) -> None:
    """The sudo entry point: checks, then run(scenario_file, run_dir) in a fresh root-only staging
    directory, then the run handed over to the user at args.out."""
    from . import __file__ as package_init
    from .testbed.system import bbrctl_path
    check_pinned(args)
    uid, gid = user
    for code in (Path(package_init).resolve().parent, Path(sys.executable).resolve(), bbrctl_path()):
        if code is None:
            raise HarnessError("run under sudo: no bbrctl found")
        check_root_owned(Path(code).resolve())
    out = Path(args.out)
    if os.path.lexists(out):
        raise UsageError(f"run under sudo: --out {out} exists; give a new directory")
    scenario = read_no_follow(Path(args.scenario), uid)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX))  # root's, 0700, new
    try:
        staged = staging / Path(args.scenario).name
        staged.write_bytes(scenario)
        run(staged, staging / "run")
        hand_over(staging / "run", out, uid, gid)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
