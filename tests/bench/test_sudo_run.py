"""`bbrbench run` under sudo (a Slurm task's one sudo rule): pinned arguments, the code root runs must be
root's, the scenario read without following links, a new --out, and the run handed over by a process
running as the user, never by root writing or chowning where the user points."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bbrbench import sudo
from bbrbench.errors import HarnessError, UsageError
from bbrbench.results import write_json
from benchutil import NOBODY, bbrbench_cmd, needs_net

# One cubic flow for a second: the shortest run that makes every file of a run directory.
SHORT_SCENARIO = 'duration_s = 1\n[bottleneck]\nrate_mbit = 20\nbuffer_packets = 50\n[[flows]]\nalgo = "cubic"\n'

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="acts as root for another user (setuid, chown)")


def under_sudo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY)}
    return subprocess.run(bbrbench_cmd(*args), capture_output=True, text=True, timeout=60, env=env)


def nobodys(path: Path) -> Path:
    os.chown(path, NOBODY, NOBODY)
    return path


def written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def root_dir() -> Iterator[Path]:
    """A directory of root's, 0755, on a path of root's alone (not under the world-writable /tmp, which
    check_root_owned refuses), that the user can traverse."""
    made = Path(tempfile.mkdtemp(prefix="bbrbench-test-sudo-", dir="/run"))
    made.chmod(0o755)
    try:
        yield made
    finally:
        shutil.rmtree(made)


@needs_root
def test_only_the_pinned_arguments_are_accepted(tmp_path: Path) -> None:
    scenario = nobodys(written(tmp_path / "s.toml", 'name = "s"\n'))
    for extra in ([], ["duration_s=1"], ["--profile", "quick", "--no-plots"], ["--json", "--no-plots"]):
        result = under_sudo("-q", "run", "--out", str(tmp_path / "out"), str(scenario), *extra)
        assert result.returncode == 2, result.stderr
        assert "only --no-plots --out DIR SCENARIO_FILE" in result.stderr and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@needs_root
def test_an_existing_out_or_a_linked_scenario_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "etc"
    target.mkdir()
    scenario = nobodys(written(tmp_path / "s.toml", 'name = "s"\n'))
    (tmp_path / "link").symlink_to(target)
    for out in (target, tmp_path / "link"):
        result = under_sudo("-q", "run", "--no-plots", "--out", str(out), str(scenario))
        assert result.returncode == 2 and "exists; give a new directory" in result.stderr, result.stderr
    assert not list(target.iterdir())
    shadow = tmp_path / "shadow"
    shadow.write_text("root's\n")
    os.chmod(shadow, 0o600)
    (tmp_path / "s-link.toml").symlink_to(shadow)
    with pytest.raises(UsageError, match="not a link"):
        sudo.read_no_follow(tmp_path / "s-link.toml", NOBODY)
    other = tmp_path / "other.toml"
    other.write_text("x = 1\n")
    os.chown(other, NOBODY + 1, NOBODY + 1)
    with pytest.raises(UsageError, match="not a regular file of yours"):
        sudo.read_no_follow(other, NOBODY)
    assert sudo.read_no_follow(scenario, NOBODY) == b'name = "s"\n'


@needs_root
def test_code_root_runs_must_be_roots_alone(root_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="/tmp is not root's alone"):
        sudo.check_root_owned(tmp_path)
    tree = root_dir / "checkout"
    (tree / "build").mkdir(parents=True)
    os.chmod(tree, 0o755)
    sudo.check_root_owned(tree / "build")
    nobodys(tree)
    with pytest.raises(HarnessError, match="is not root's alone"):
        sudo.check_root_owned(tree / "build")
    os.chown(tree, 0, 0)
    os.chmod(tree / "build", 0o775)
    with pytest.raises(HarnessError, match="is not root's alone"):
        sudo.check_root_owned(tree / "build")


@needs_root
def test_the_run_is_handed_over_as_the_user(root_dir: Path) -> None:
    tmp_path = root_dir
    run = tmp_path / "staged"
    (run / "raw").mkdir(parents=True)
    write_json(run / "summary.json", "summary", {})
    (run / "raw" / "ss.csv").write_text("1\n")
    home = tmp_path / "home"
    home.mkdir()
    nobodys(home)
    sudo.hand_over(run, home / "out", NOBODY, NOBODY)
    files = [home / "out", home / "out" / "summary.json", home / "out" / "raw" / "ss.csv"]
    assert all(os.stat(f).st_uid == NOBODY for f in files) and files[2].read_text() == "1\n"
    # Where the user may not write, neither may the hand-over (root would have): nothing is written.
    etc = tmp_path / "etc"
    etc.mkdir()
    with pytest.raises(HarnessError, match=f"cannot write {etc / 'out'} as user {NOBODY}"):
        sudo.hand_over(run, etc / "out", NOBODY, NOBODY)
    assert not list(etc.iterdir())


def test_sudo_is_recognised_only_as_root_for_another_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    monkeypatch.setenv("SUDO_GID", str(NOBODY))
    assert sudo.sudo_user() == ((NOBODY, NOBODY) if os.geteuid() == 0 else None)
    monkeypatch.setenv("SUDO_UID", "0")
    assert sudo.sudo_user() is None
    args = argparse.Namespace(overrides=[], profile=None, json=False, no_plots=True, out="o")
    sudo.check_pinned(args)
    monkeypatch.setenv("BBRCTL", "/home/ann/bbrctl")
    with pytest.raises(UsageError, match="not BBRCTL"):
        sudo.check_pinned(args)


@pytest.mark.root
@pytest.mark.net
@needs_net
def test_a_run_under_sudo_is_made_in_staging_and_handed_over(root_dir: Path) -> None:
    """A real run through the entry point, as sudo would start it (SUDO_UID/SUDO_GID; this machine has no
    sudo): the user's scenario in, every file of the run the user's, nothing left in root's staging."""
    home = root_dir / "home"
    home.mkdir()
    nobodys(home)
    scenario = nobodys(written(home / "s.toml", SHORT_SCENARIO))
    before = set(Path(tempfile.gettempdir()).glob(f"{sudo.STAGING_PREFIX}*"))
    result = under_sudo("-q", "run", "--no-plots", "--out", str(home / "run"), str(scenario))
    assert result.returncode == 0, result.stderr
    made = [home / "run", *(home / "run").rglob("*")]
    assert {"summary.json", "host.json", "scenario.json"} <= {p.name for p in made}
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in made} == {(NOBODY, NOBODY)}
    assert set(Path(tempfile.gettempdir()).glob(f"{sudo.STAGING_PREFIX}*")) == before
