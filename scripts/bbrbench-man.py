#!/usr/bin/env python3
"""Writes bbrbench(1) in roff from bbrbench's own argument parser, so that the man page lists
exactly the commands and options the harness accepts. Run with bench/ on PYTHONPATH."""
from __future__ import annotations

import argparse
import sys

from bbrbench.cli import build_parser


def roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line for line in text.splitlines())


def option_lines(parser: argparse.ArgumentParser) -> list[str]:
    lines: list[str] = []
    for action in parser._actions:  # argparse keeps no public list of a parser's actions
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = ", ".join(action.option_strings) or action.metavar or action.dest
        metavar = "" if not action.option_strings or action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
        lines += [".TP", f".B {roff(names)}{roff(metavar)}", roff((action.help or "").replace("%%", "%"))]
    return lines


def commands(sub: argparse._SubParsersAction, prefix: str) -> list[str]:
    """One subsection per command; a command with subcommands (cluster init) gets one per subcommand."""
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    out: list[str] = []
    for name, p in sub.choices.items():
        out += [f".SS {roff(prefix + name)}", roff((helps.get(name) or "").replace("%%", "%")),
                ".PP", ".nf", roff(p.format_usage().strip()), ".fi", *option_lines(p)]
        nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        for inner in nested:
            out += commands(inner, f"{prefix}{name} ")
    return out


def main() -> int:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = [".TH BBRBENCH 1 \"\" \"bbrkit\" \"User Commands\"",
           ".SH NAME", "bbrbench \\- " + roff(parser.description or ""),
           ".SH SYNOPSIS", ".B bbrbench", "\\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
           ".SH DESCRIPTION",
           "bbrbench runs congestion-control experiments in network namespaces (bottleneck, delay line,",
           "traffic, sampling, metrics and plots) and reproduces the seed papers' figures. Commands that",
           "create namespaces need root. Every command has \\-\\-help.",
           ".SH OPTIONS", *option_lines(parser),
           ".SH COMMANDS"]
    out += commands(sub, "")
    out += [".SH SEE ALSO", ".BR bbrctl (8)"]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
