"""bbrbench(1) and bbrbench's bash completion, both generated from its parser (scripts/bbrbench-gen.py, as
bbrctl-gen does for bbrctl): every command and option, the man page's EXIT STATUS, ENVIRONMENT, FILES and
scenario format, completion of commands, options, choices and scenario names."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bbrbench import cli

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "scripts" / "bbrbench-gen.py"


def generate(what: str) -> str:
    # The system's python3, as make runs it: building the parser needs the standard library only.
    return subprocess.run(["python3", str(GEN), what], env={"PYTHONPATH": str(ROOT / "bench"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True).stdout


def test_man_page_has_every_command_and_the_sections_users_look_for() -> None:
    page = generate("man")
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    for command in sub.choices:
        assert f".SS {command}" in page
    for section in ("EXIT STATUS", "ENVIRONMENT", "FILES", "SCENARIO FORMAT"):
        assert f".SH {section}\n" in page
    for status in (cli.EXIT_FAILED, cli.EXIT_INVALID, cli.EXIT_NOT_RUNNABLE, cli.EXIT_INTERRUPTED):
        assert f".TP\n{status}\n" in page
    for word in ("BBRCTL", "BBRKIT_DELAY", "rate_mbit", "warmup_s", "\\-\\-json"):
        assert word in page
    rendered = subprocess.run(["man", "-l", "-"], input=page, capture_output=True, text=True)
    assert rendered.returncode == 0 and "warning" not in rendered.stderr
    # fidelity's help reads "95% CIs" (its %% is argparse's escape, not text).
    assert "95% CIs" in rendered.stdout and "95%%" not in rendered.stdout


def complete(script: Path, *words: str) -> list[str]:
    quoted = " ".join(f"'{w}'" for w in words)
    out = subprocess.run(["bash", "-c", f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
                          "_bbrbench; printf '%s\\n' \"${COMPREPLY[@]}\""], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return out.stdout.split()


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "bbrbench.bash"
    path.write_text(generate("completion"))
    return path


def test_completion_of_commands_options_and_values(script: Path) -> None:
    assert complete(script, "bbrbench", "co") == ["compare", "conformance"]
    assert complete(script, "bbrbench", "-v", "rep") == ["report", "reproduce"]
    assert "--json" in complete(script, "bbrbench", "compare", "--")
    assert complete(script, "bbrbench", "compare", "--delay", "") == ["p95", "mean"]
    assert complete(script, "bbrbench", "reproduce", "--profile", "") == ["quick", "standard", "paper"]
    assert complete(script, "bbrbench", "compare", "--reps", "") == []
    assert set(complete(script, "bbrbench", "run", "")) >= {"compare", "mix", "smoke"}
    assert "cubic" in complete(script, "bbrbench", "compare", "")
    assert complete(script, "bbrbench", "cluster", "") == ["init", "add-host", "add-user", "revoke", "scheduler",
                                                           "worker"]
    assert "--ca" in complete(script, "bbrbench", "cluster", "init", "--")
    assert "--address" in complete(script, "bbrbench", "cluster", "add-host", "--")


def test_make_builds_the_completion_the_generator_writes() -> None:
    built = ROOT / "build" / "bbrbench.bash"
    if not built.is_file():
        pytest.skip("make has not run")
    assert built.read_text() == generate("completion"), "build/bbrbench.bash is stale: make"
