"""Fixtures shared by every test suite: the built tools, two-host networks and algorithm
attachment, each removed after the test, and a check that the session left nothing behind.

Tests split by privilege: `root` marks those that create namespaces, load BPF programs or run traffic
(everything under loader/ and integration/, and every `net` test); the rest run as any user and run
first (scripts/test.sh: `pytest -m "not root"`, then `pytest -m root`)."""
from __future__ import annotations

import fcntl
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bbrbench.testbed.cleanup import cleanup_stale
from netutil import (
    BBRCTL,
    ROOT,
    NetPair,
    available_ccs,
    bbrctl,
    flows_mechanism,
    kernel_features,
    leftovers,
    make_netpair,
    may_write,
    namespaces,
    pins,
    remove_netpair,
    run,
)

# Each way `bbrctl flows` can read state, with the `bbrctl features` key the kernel must have and the
# BBRCTL_DISABLE list that makes attach choose it.
FLOWS_MECHANISMS = {"map-iterator": ("map-iter", ""), "iter-tcp": ("iter-tcp", "map-iter")}

ROOT_DIRS = ("integration",)
# A test that attaches, detaches or builds namespaces through one of these needs root; the other
# tests of tests/loader (help, man page, completion, version) run without it.
ROOT_FIXTURES = frozenset({"attach", "detached", "keep_params", "netpair", "flows_via"})


# Debian installs bpftool, ip and tc in these, which root's PATH has and a user's does not; the tests that
# need no root still run bpftool on object files.
SBIN_DIRS = ("/usr/sbin", "/sbin")


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get("PATH", "").split(os.pathsep)
    os.environ["PATH"] = os.pathsep.join([*path, *(d for d in SBIN_DIRS if d not in path)])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: the marks must be on the items before `-m` deselects by them.
    tests_dir = config.rootpath / "tests"
    for item in items:
        top = item.path.relative_to(tests_dir).parts[0] if item.path.is_relative_to(tests_dir) else ""
        uses_root = ROOT_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if top in ROOT_DIRS or item.get_closest_marker("net") or uses_root:
            item.add_marker(pytest.mark.root)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("root") is None:
        return
    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces, BPF programs, real traffic")
    if not BBRCTL.exists():
        pytest.exit(f"{BBRCTL} is missing: run `make` first", 2)


@pytest.fixture
def netpair() -> Iterator[Callable[..., NetPair]]:
    """Factory: netpair(rate_mbit=100, queue_bytes=..., rtt_ms=0) -> NetPair, removed after the test."""
    made: list[NetPair] = []

    def factory(rate_mbit: int = 100, queue_bytes: int = 400_000, rtt_ms: float = 0) -> NetPair:
        pair = make_netpair(rate_mbit, queue_bytes, rtt_ms)
        made.append(pair)
        return pair

    try:
        yield factory
    finally:
        for pair in made:
            remove_netpair(pair)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree `make install DESTDIR=... PREFIX=/usr` writes, made once per test process (its pip build
    takes seconds) for the tests that read it, by the interpreter running the tests (not whichever python3
    is first on PATH: Debian's own would install under usr/local). pip builds in the checkout's build/lib,
    so test processes side by side (pytest -n) take turns."""
    if not may_write(ROOT / "build"):
        pytest.skip(f"make install builds in {ROOT / 'build'}, which this user cannot write")
    destdir = tmp_path_factory.mktemp("installed")
    (ROOT / "build").mkdir(exist_ok=True)
    with open(ROOT / "build" / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run(["make", "-s", "-C", str(ROOT), "install", f"DESTDIR={destdir}", "PREFIX=/usr",
             f"PYTHON={sys.executable}"], timeout=300)
    return destdir


@pytest.fixture(params=list(FLOWS_MECHANISMS))
def flows_via(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each flows mechanism the kernel allows (the others skip, with the kernel's reason); attach()
    afterwards in the test uses it."""
    key, disable = FLOWS_MECHANISMS[request.param]
    feature = kernel_features()[key]
    if not feature["available"]:
        pytest.skip(f"{request.param}: this kernel refuses it ({feature['reason']})")
    monkeypatch.setenv("BBRCTL_DISABLE", disable)
    return str(request.param)


@pytest.fixture
def attach(request: pytest.FixtureRequest) -> Iterator[Callable[[str], None]]:
    """Factory: attach(ALGO); whatever this test attached is detached afterwards. In a test that
    uses flows_via, the attachment must read flows the way it asks."""
    attached: list[str] = []

    def factory(algo: str) -> None:
        was_attached = algo in available_ccs()
        bbrctl("attach", algo)
        if not was_attached:
            attached.append(algo)
        if "flows_via" in request.fixturenames:
            wanted = request.getfixturevalue("flows_via")
            got = flows_mechanism(algo)
            if got != wanted:
                pytest.skip(f"{algo} was already attached by someone else, reading flows via {got}")

    try:
        yield factory
    finally:
        for algo in attached:
            bbrctl("detach", algo, check=False)


def _global_state() -> dict[str, list[str]]:
    """What a test could leave behind on the machine: registrations, bbrctl's pins, namespaces."""
    return {"congestion controls": sorted(available_ccs()),
            "pins": sorted(pins()),
            "namespaces": sorted(namespaces())}


@pytest.fixture(autouse=True)
def _test_left_nothing(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each root test leaves the machine as it found it, so that a leak is blamed on its test, not found
    later by an unrelated one. Autouse fixtures are set up first, so this runs after the test's own
    fixtures have cleaned up."""
    if request.node.get_closest_marker("root") is None or os.geteuid() != 0:
        yield
        return
    before = _global_state()
    yield
    after = _global_state()
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, f"the test left state behind (before, after): {changed}"


@pytest.fixture(scope="session", autouse=True)
def _no_leftovers() -> Iterator[None]:
    """Without root a test can register, pin or name nothing machine-wide, so a change seen then is someone
    else's (another user's root tests on a shared machine), not this run's: checked as root only."""
    if os.geteuid() != 0:
        yield
        return
    # What benchmark runs that died left (their owner process is gone) is removed by the next run's
    # start; removed here first, so that it is not blamed on whichever test happens to start a run.
    removed = cleanup_stale()
    if removed:
        warnings.warn(f"removed what earlier runs that died left: {', '.join(removed)}", stacklevel=1)
    registered_before = set(available_ccs())
    yield
    left = leftovers() + [f"congestion control {cc}" for cc in sorted(set(available_ccs()) - registered_before)]
    assert not left, f"tests left state behind: {left}"
