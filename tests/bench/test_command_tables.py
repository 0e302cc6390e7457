"""The command tables the docs show against the command lines they describe, as `make check-readme` does
for the record keys: bench/README.md's bbrbench table has exactly the parser's commands, each with exactly
its options (and an option's choices where the table spells them); every `bbrbench ...` and `bbrctl ...`
command line in README.md and docs/reference.md names a real command and only options it takes, and the
reference's bbrctl block shows every bbrctl command. No root: bbrctl only prints its help."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from bbrbench import cli

ROOT = Path(__file__).resolve().parents[2]
BBRCTL = ROOT / "build" / "bbrctl"
COMMON = {"-h", "--help", "-v", "--verbose", "-q", "--quiet"}
LONG_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def bbrbench_commands() -> dict[str, argparse.ArgumentParser]:
    """'compare', ..., with a command that has subcommands listed as 'cluster init'."""
    def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        action = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        return dict(action.choices) if action else {}

    out: dict[str, argparse.ArgumentParser] = {}
    for name, p in subparsers(cli.build_parser()).items():
        inner = subparsers(p)
        out.update({f"{name} {n}": q for n, q in inner.items()} if inner else {name: p})
    return out


def long_options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings if s.startswith("--")} - COMMON


def table_rows(path: Path, begin: str, end: str) -> dict[str, str]:
    """The first cell of each row between the markers, keyed by its command (the words before an option
    or argument)."""
    text = path.read_text()
    block = text[text.index(begin):text.index(end)]
    rows: dict[str, str] = {}
    for line in block.splitlines():
        m = re.match(r"\| `([^`]+)` \|", line)
        if m:
            cell = m.group(1).replace("\\|", "|")
            words = [w for w in cell.split() if re.fullmatch(r"[a-z][a-z-]*", w)]
            command = " ".join(words[:2]) if words[0] == "cluster" else words[0]
            rows[command] = cell
    return rows


def test_bench_readme_command_table_is_the_parser() -> None:
    commands = bbrbench_commands()
    rows = table_rows(ROOT / "bench" / "README.md", "<!-- bbrbench commands", "<!-- end bbrbench commands -->")
    assert list(rows) == list(commands), "bench/README.md's command table lists other commands than the parser"
    for name, cell in rows.items():
        parser = commands[name]
        assert set(LONG_OPTION.findall(cell)) == long_options(parser), f"{name}: options differ from the parser"
        for action in parser._actions:
            choices = re.search(rf"{re.escape(action.option_strings[-1])} ([\w|]+)\]", cell) \
                if action.option_strings and action.choices else None
            if choices:
                assert choices.group(1).split("|") == list(action.choices), f"{name} {action.option_strings}"


def bbrctl_commands() -> dict[str, set[str]]:
    """bbrctl's commands (`bbrctl --help`) and each one's long options (`bbrctl CMD --help`)."""
    if not BBRCTL.is_file():
        pytest.fail("build/bbrctl is missing: make")
    main_help = subprocess.run([str(BBRCTL), "--help"], capture_output=True, text=True, check=True).stdout
    names = re.findall(r"^  (\w+) ", main_help.split("commands")[1].split("\n\n")[0], re.M)
    out = {}
    for name in names:
        text = subprocess.run([str(BBRCTL), name, "--help"], capture_output=True, text=True, check=True).stdout
        out[name] = set(LONG_OPTION.findall(text.split("options:")[1].split("\n\n")[0])) - COMMON
    global_help = main_help.split("commands")[0]
    out[""] = set(LONG_OPTION.findall(global_help)) - COMMON
    return out


def command_lines(path: Path, tool: str) -> list[str]:
    """Every `tool ...` command line in the file's code blocks and inline code."""
    text = path.read_text()
    pieces = re.findall(r"```[a-z]*\n(.*?)```", text, re.S) + re.findall(r"`([^`\n]+)`", text)
    lines = [ln.split("#")[0].strip() for piece in pieces for ln in piece.splitlines()]
    return [ln[ln.index(tool + " "):] for ln in lines if re.search(rf"(^|[\s/]){tool} [a-z-]", ln)]


@pytest.mark.parametrize("doc", ["README.md", "docs/reference.md", "bench/README.md"])
def test_every_command_line_in_the_docs_is_accepted(doc: str) -> None:
    bench = bbrbench_commands()
    ctl = bbrctl_commands()
    for line in command_lines(ROOT / doc, "bbrbench"):
        given = [w for w in line.split()[1:] if not w.startswith("-")]
        name = " ".join(given[:2]) if given[:1] == ["cluster"] else (given[0] if given else "")
        allowed = COMMON | {"--version"} | (long_options(bench[name]) if name in bench else set())
        assert name in bench or not name, f"{doc}: {line!r}: no such bbrbench command"
        assert set(LONG_OPTION.findall(line)) <= allowed, f"{doc}: {line!r}: an option bbrbench {name} lacks"
    for line in command_lines(ROOT / doc, "bbrctl"):
        name = next((w for w in line.split()[1:] if not w.startswith("-")), "")
        assert name in ctl, f"{doc}: {line!r}: no such bbrctl command"
        allowed = COMMON | {"--version"} | ctl[""] | ctl[name]
        assert set(LONG_OPTION.findall(line)) <= allowed, f"{doc}: {line!r}: an option bbrctl {name} lacks"


def test_reference_shows_every_bbrctl_command() -> None:
    shown = {next((w for w in line.split()[1:] if not w.startswith("-")), "")
             for line in command_lines(ROOT / "docs" / "reference.md", "bbrctl")}
    assert set(bbrctl_commands()) - {""} <= shown
