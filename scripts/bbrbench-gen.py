#!/usr/bin/env python3
"""Writes bbrbench(1) in roff (`man`) or its bash completion (`completion`) from bbrbench's own argument
parser, so that both list exactly the commands, options and choices the harness accepts, as bbrctl-gen
does for bbrctl. Run with bench/ on PYTHONPATH and the standard library only (the parser needs nothing
else)."""
from __future__ import annotations

import argparse
import shlex
import sys

from bbrbench.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_NOT_RUNNABLE, build_parser
from bbrbench.scenario import SCENARIO_DIR

# Positional arguments the completion fills from something other than the parser.
ALGO_WORDS = "cubic bbr reno $(bbrctl --help 2>/dev/null | sed -n 's/^algorithms: //p')"


def roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line for line in text.splitlines())


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    # argparse keeps no public list of a parser's actions
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def option_lines(parser: argparse.ArgumentParser) -> list[str]:
    lines: list[str] = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = ", ".join(action.option_strings) or str(action.metavar or action.dest)
        metavar = "" if not action.option_strings or action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
        lines += [".TP", f".B {roff(names)}{roff(metavar)}", roff((action.help or "").replace("%%", "%"))]
    return lines


def commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], prefix: str) -> list[str]:
    """One subsection per command; a command with subcommands (cluster init) gets one per subcommand."""
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    out: list[str] = []
    for name, p in sub.choices.items():
        out += [f".SS {roff(prefix + name)}", roff((helps.get(name) or "").replace("%%", "%")),
                ".PP", ".nf", roff(p.format_usage().strip()), ".fi", *option_lines(p)]
        inner = _subparsers(p)
        if inner:
            out += commands(inner, f"{prefix}{name} ")
    return out


def scenario_names() -> list[str]:
    return sorted(str(p.relative_to(SCENARIO_DIR).with_suffix("")) for p in SCENARIO_DIR.glob("*.toml"))


SCENARIO_FORMAT = [
    ".SH SCENARIO FORMAT",
    "A scenario is a TOML file; SCENARIO is a file name in bbrbench's scenarios directory",
    f"({', '.join(scenario_names())}) or a path. Unknown keys, wrong types and impossible values are",
    "errors (exit status 2, one line naming the key). Top level:",
    ".BR duration_s \" (s, 30),\" sample_interval_ms \" (100),\" queue_sample_hz \" (100),\" trace \" (true).\"",
    ".TP", ".B [bottleneck]",
    "rate_mbit (required), shaper (tbf or htb), burst_bytes, one of buffer_packets, buffer_bytes or",
    "buffer_bdp (default 1 BDP, at least 10 packets), bdp_rtt_ms, loss_pct, aqm (fifo, fq_codel, codel,",
    "pie, step, cake), aqm_params, emulator (auto, kernel, bbrkit\\-link), rate_trace, rate_shape,",
    "gilbert_elliott, mtu, offloads.",
    ".TP", ".B [[senders]]",
    "name, rtt_ms, or delay_fwd_ms and delay_rev_ms (default: one sender without delay).",
    ".TP", ".B [[flows]]",
    "algo (required), sender, count, start_s, start_step_s, duration_s or bytes, params (bbrkit",
    "parameters, as bbrctl set), label, optional.",
    ".TP", ".B [socket]", "buffer_bdp or buffer_bytes.",
    ".TP", ".B [metrics]",
    "convergence_jain (0.95), convergence_window_s (1), warmup_s (1: the start-up after the last flow's",
    "start that the steady-state metrics, and compare's table, leave out).",
    ".TP", ".B [sweep]", "repetitions, grid, cases, metrics.",
    ".TP", ".B [profiles.NAME]", "overrides applied by \\-\\-profile NAME.",
    ".PP",
    "Overrides on the command line use dotted keys and TOML values: bottleneck.rate_mbit=20,",
    "flows.0.algo=bbr, flows.*.count=4. Every key with its unit, default and meaning, and every metric's",
    "definition: bench/README.md in the source tree.",
]


def man() -> str:
    parser = build_parser()
    sub = _subparsers(parser)
    assert sub is not None
    out = [".TH BBRBENCH 1 \"\" \"bbrkit\" \"User Commands\"",
           ".SH NAME", "bbrbench \\- " + roff(parser.description or ""),
           ".SH SYNOPSIS", ".B bbrbench", "[\\fB\\-v\\fR|\\fB\\-q\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
           ".SH DESCRIPTION",
           "bbrbench runs congestion-control experiments in network namespaces (bottleneck, delay line,",
           "traffic, sampling, metrics and plots) and reproduces the seed papers' figures. Commands that",
           "create namespaces need root. Every command has \\-\\-help. Results go to stdout (with",
           "\\-\\-json on compare, run and report: one JSON document), messages to stderr.",
           ".SH OPTIONS", *option_lines(parser),
           ".SH COMMANDS"]
    out += commands(sub, "")
    out += SCENARIO_FORMAT
    out += [".SH EXIT STATUS",
            ".TP", "0", "done",
            ".TP", str(EXIT_FAILED), "failed (a run, a tool, a results directory of another kind)",
            ".TP", str(EXIT_INVALID), "invalid scenario or usage: one line naming the key or option; nothing was "
                                      "created",
            ".TP", str(EXIT_NOT_RUNNABLE), "not runnable on this kernel (e.g. an AQM neither the kernel nor "
                                           "bbrkit\\-link has)",
            ".TP", str(EXIT_INTERRUPTED), "interrupted (Ctrl\\-C, SIGTERM): the test network is removed, finished "
                                          "runs are kept, and the message says how to resume",
            ".SH ENVIRONMENT",
            ".TP", ".B BBRCTL", "bbrctl to run (default: PATH, then the checkout's build/)",
            ".TP", ".B BBRKIT_DELAY", "the delay line bbrkit\\-delay to run (same lookup)",
            ".TP", ".B BBRKIT_LINK", "the link emulator bbrkit\\-link to run (same lookup)",
            ".TP", ".B BBRBENCH_CLUSTER_CERTS", "default of \\-\\-cluster\\-certs and of cluster scheduler and "
                                                "worker \\-\\-certs",
            ".TP", ".B BBRBENCH_STATE_DIR", "where runs record what they change outside their namespaces "
                                            "(default /run/bbrbench)",
            ".SH FILES",
            ".TP", ".I results/", "default results directories under the working directory: "
                                  "compare\\-PROFILE (resumable), run\\-NAME\\-TIME, sweep\\-NAME\\-TIME, "
                                  "reproduce\\-PROFILE",
            ".TP", ".I /run/bbrbench/PREFIX.json", "a run's record of its bbrkit attachments and parameters, for "
                                                   "cleanup after a crash",
            ".TP", ".I ~/.config/bbrbench/cluster/", "this member's certificate (cluster add\\-host, add\\-user)",
            ".TP", ".I ~/.config/bbrbench/cluster\\-ca/", "the cluster's authority and its key (cluster init)",
            ".SH SEE ALSO", ".BR bbrctl (8)"]
    return "\n".join(out) + "\n"


def _value_words(action: argparse.Action) -> str:
    """What completes the value of an option: its choices, a directory, nothing for numbers and free words
    (a count, a profile, KEY=VALUE), else any file."""
    if action.choices:
        return f"COMPREPLY=($(compgen -W {shlex.quote(' '.join(map(str, action.choices)))} -- \"$cur\"))"
    if action.dest in ("out", "certs", "cluster_certs") and action.metavar != "FILE":
        return "COMPREPLY=($(compgen -d -- \"$cur\"))"
    free = action.type in (int, float) or action.dest in ("profile", "cluster", "host", "only", "rate") or \
        "=" in str(action.metavar or "")
    return "COMPREPLY=()" if free else "COMPREPLY=($(compgen -f -- \"$cur\"))"


def _positional_words(parser: argparse.ArgumentParser) -> str:
    dests = {a.dest for a in parser._actions if not a.option_strings}
    if "algos" in dests:
        return f"COMPREPLY=($(compgen -W \"{ALGO_WORDS}\" -- \"$cur\"))"
    if "scenario" in dests:
        names = " ".join(scenario_names())
        return f"COMPREPLY=($(compgen -W '{names}' -- \"$cur\") $(compgen -f -X '!*.toml' -- \"$cur\"))"
    if "dir" in dests or "pool" in dests:
        return "COMPREPLY=($(compgen -d -- \"$cur\"))"
    return "COMPREPLY=()"


def _command_case(name: str, parser: argparse.ArgumentParser) -> list[str]:
    """The case arm of one command: its options after '-', an option's value, else its positionals."""
    options = [s for a in parser._actions for s in a.option_strings]
    lines = [f"\t{name})", f"\t\tif [[ $cur == -* ]]; then COMPREPLY=($(compgen -W '{' '.join(options)}' -- \"$cur\"))"
             "; return; fi", "\t\tcase $prev in"]
    for action in parser._actions:
        if action.option_strings and action.nargs != 0:
            lines.append(f"\t\t{'|'.join(action.option_strings)}) {_value_words(action)}; return ;;")
    lines += ["\t\tesac", f"\t\t{_positional_words(parser)}", "\t\t;;"]
    return lines


def completion() -> str:
    parser = build_parser()
    sub = _subparsers(parser)
    assert sub is not None
    top = [s for a in parser._actions for s in a.option_strings]
    lines = ["# bash completion for bbrbench, generated by scripts/bbrbench-gen.py from bbrbench's own parser.",
             "_bbrbench()", "{", "\tlocal cur prev cmd i", "\tCOMPREPLY=()", "\tcur=${COMP_WORDS[COMP_CWORD]}",
             "\tprev=${COMP_WORDS[COMP_CWORD-1]}", "\tcmd=",
             "\tfor ((i = 1; i < COMP_CWORD; i++)); do", "\t\tcase ${COMP_WORDS[i]} in",
             f"\t\t{'|'.join(sub.choices)}) cmd=${{COMP_WORDS[i]}}",
             # cluster's subcommand: the word after it names the parser that completes the rest.
             "\t\t\t[[ $cmd == cluster && $((i + 1)) -lt $COMP_CWORD ]] && cmd=\"cluster ${COMP_WORDS[i+1]}\"",
             "\t\t\tbreak ;;", "\t\tesac", "\tdone", "\tcase $cmd in",
             f"\t'') COMPREPLY=($(compgen -W '{' '.join(top + list(sub.choices))}' -- \"$cur\")) ;;"]
    for name, p in sub.choices.items():
        inner = _subparsers(p)
        if inner is None:
            lines += _command_case(name, p)
            continue
        lines += [f"\t{name}) COMPREPLY=($(compgen -W '{' '.join(inner.choices)}' -- \"$cur\")) ;;"]
        for inner_name, inner_p in inner.choices.items():
            lines += _command_case(f"'{name} {inner_name}'", inner_p)
    lines += ["\tesac", "}", "complete -o filenames -F _bbrbench bbrbench"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv[1:] == ["man"]:
        sys.stdout.write(man())
    elif argv[1:] == ["completion"]:
        sys.stdout.write(completion())
    else:
        sys.stderr.write("usage: bbrbench-gen.py man|completion\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
