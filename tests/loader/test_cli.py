"""bbrctl's command line: every subcommand takes -v and --help the same way, --version names the
build, and the help, the man page and the completion come from one command table."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from loaderutil import ALGOS, ctl
from netutil import ROOT, start_trace, stop_trace

COMMANDS = ["list", "attach", "detach", "upgrade", "show", "set", "flows", "trace", "policy", "apply", "export", "ss",
            "features"]
GEN = ROOT / "build" / "bbrctl-gen"


def test_main_help_lists_every_command_and_algorithm() -> None:
    out = ctl("--help").stdout
    listed = re.findall(r"^  (\w+) ", out.split("commands")[1], re.M)
    assert listed == COMMANDS
    assert all(a in out for a in ALGOS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_takes_v(command: str) -> None:
    for flag in ("--help", "-h"):
        result = ctl(command, flag)
        assert result.returncode == 0 and result.stderr == ""
        assert result.stdout.startswith(f"usage: bbrctl {command} [-v]")
        assert "-v, --verbose" in result.stdout
    # -v parses like any other option: a usage error that follows is still reported as such.
    bad = ctl(command, "-v", "--bogus")
    assert bad.returncode == 2 and bad.stderr == (
        f"bbrctl: {command}: unknown option '--bogus' (usage: {bad.stderr.split('(usage: ')[1]}")


@pytest.mark.parametrize("args", [["-x", "list"], ["frob"], [], ["list", "--bogus"], ["list", "extra"],
                                  ["attach"], ["trace", "--format", "xml"]], ids=lambda a: " ".join(a) or "none")
def test_usage_errors_exit_2(args: list[str]) -> None:
    """A bad command line is exit status 2, a failed command 1 (bbrctl(8), EXIT STATUS)."""
    result = ctl(*args)
    assert result.returncode == 2 and result.stdout == "" and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("args", [["-j", "list", "--bogus"], ["list", "--bogus", "--json"], ["-j", "attach", "bbr1"],
                                  ["-j", "set", "bbr_acd", "rtt_factor=2"]], ids=lambda a: " ".join(a))
def test_json_usage_errors_are_one_json_document(args: list[str]) -> None:
    """Under -j or --json stdout holds one JSON object even for a usage error (--json given after the bad
    option counts too), and a command without a JSON document refuses -j instead of printing text."""
    result = ctl(*args)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    doc = json.loads(result.stdout)
    assert doc["exit_status"] == 2 and doc["command"] == args[1 if args[0] == "-j" else 0]
    assert doc["error"] in result.stderr


def test_version_is_git_describe_of_the_build() -> None:
    """`git describe` of the commit the binary was built from: HEAD's, or an ancestor's when commits were
    made after the build."""
    result = ctl("--version")
    assert result.returncode == 0 and result.stdout.startswith("bbrctl ")
    described = result.stdout.split()[1].removesuffix("-dirty")
    commit = described.rsplit("-g", 1)[-1]  # v1.2-3-gabc1234 or just abc1234
    # safe.directory: git reads a checkout that another user owns only when told to; a read is safe.
    ancestor = subprocess.run(["git", "-c", f"safe.directory={ROOT}", "-C", str(ROOT), "merge-base", "--is-ancestor",
                               commit, "HEAD"], capture_output=True, text=True)
    assert ancestor.returncode == 0, f"{described}: not HEAD or one of its ancestors ({ancestor.stderr.strip()})"


def test_version_hashes_the_bpf_objects_it_embeds() -> None:
    """The second line is what the harness pools runs by: the SHA-256 of build/<algo>.bpf.o, concatenated in
    name order, so it changes with the programs and not with the commit."""
    sources = sorted(ROOT.glob("bpf/*.bpf.c"))
    objects = b"".join((ROOT / "build" / source.name.replace(".bpf.c", ".bpf.o")).read_bytes() for source in sources)
    assert ctl("--version").stdout.splitlines()[1] == f"algorithm objects sha256 {hashlib.sha256(objects).hexdigest()}"


def test_record_keys_of_trace_help_match_the_output_header(attach, tmp_path) -> None:
    """The keys `trace --help` lists are the CSV header a real trace of every algorithm writes, in its
    order (a trace of fewer algorithms leaves out the others' own keys; the help lists them in
    `bbrctl list` order)."""
    keys = [line.split()[0] for line in ctl("trace", "--help").stdout.split("record keys")[1].splitlines()[1:]
            if line.strip()]
    assert len(keys) == len(set(keys))
    for algo in ALGOS:
        attach(algo)
    out = tmp_path / "trace.csv"
    stop_trace(start_trace(out, *sorted(ALGOS), fmt="csv"))
    assert out.read_text().splitlines()[0].split(",") == keys


def complete(*words: str) -> list[str]:
    """What bash completion offers for the command line `words` (the last one being typed)."""
    script = ROOT / "build" / "bbrctl.bash"
    quoted = " ".join(f"'{w}'" for w in words)
    out = subprocess.run(["bash", "-c", f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
                          "_bbrctl; printf '%s\\n' \"${COMPREPLY[@]}\""], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_completion_offers_commands_algorithms_and_parameter_keys() -> None:
    assert [w for w in complete("bbrctl", "") if not w.startswith("-")] == COMMANDS
    assert complete("bbrctl", "attach", "bbr_") == ["bbr_acd", "bbr_draft", "bbr_rttgain"]
    assert complete("bbrctl", "set", "bbr_acd", "") == ["tolerance_us=", "rtt_factor=", "steady_acks=", "halve_once="]
    assert complete("bbrctl", "set", "bbr_rttgain", "alpha=0.5", "pr") == ["probe_exit="]
    assert complete("bbrctl", "trace", "--format", "") == ["jsonl", "csv"]
    assert "--object" in complete("bbrctl", "upgrade", "--")
    assert "-j" in complete("bbrctl", "-")


def test_man_page_documents_every_command_option_and_parameter() -> None:
    page = subprocess.run([str(GEN), "man"], capture_output=True, text=True, check=True).stdout
    assert page.startswith(".TH BBRCTL 8")
    for command in COMMANDS:
        assert f".SS bbrctl {command} [\\-v]" in page
    for word in ("\\-\\-object", "\\-\\-format", "tolerance_us", "gain_floor", "min_rtt_us", "acd_halvings",
                 ".SH EXIT STATUS\n.TP\n0\n", "\n2\na usage error", "\\-\\-json"):
        assert word in page
    rendered = subprocess.run(["man", "-l", "-"], input=page, capture_output=True, text=True)
    assert rendered.returncode == 0 and "warning" not in rendered.stderr


def test_make_install_puts_man_pages_and_completion_in_place(installed: Path) -> None:
    for path in ("usr/bin/bbrctl", "usr/share/man/man8/bbrctl.8", "usr/share/man/man1/bbrbench.1",
                 "usr/share/bash-completion/completions/bbrctl",
                 "usr/share/bash-completion/completions/bbrbench"):
        assert (installed / path).is_file(), path
