"""bbrbench cleanup: what crashed runs left behind."""

from __future__ import annotations

import argparse

from .common import emit, need_root

HELP = "remove leftovers of crashed runs (namespaces, processes, attachments)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="also remove those of runs that look alive")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..testbed.cleanup import cleanup_stale
    need_root()
    removed = cleanup_stale(include_live=args.all)
    emit(f"cleanup: removed {len(removed)} item(s)" if removed else "cleanup: nothing left behind")
    return 0
