"""The idle study's table from idle_options.py's --out file: per option, each round's added p99 (its ping p99
less the round's first bridge median; for the bare wake-ups, their own p50 / p99), how many rounds meet 50 us,
and for the link its own added delay at departure.

    python3 table.py idle-options.json"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any

BOUND_US = 50.0


def main() -> None:
    rows: list[dict[str, Any]] = json.load(open(sys.argv[1], encoding="utf-8"))["rows"]
    by_option: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_option[r["option"]].append(r)
    print("| option | added p99 per round, µs | rounds within 50 µs | the link's own added p99 at departure, µs |")
    print("| --- | --- | --- | --- |")
    for option, runs in by_option.items():
        if option.startswith("wake-up"):
            figures = ", ".join(f"{r['p50_us']:.0f} / {r['p99_us']:.0f}" for r in runs)
            print(f"| {option} (p50 / p99) | {figures} | | |")
            continue
        added = [r["added_p99_us"] for r in runs]
        inner = ", ".join(str(r["link_added_p99_us"]) for r in runs) if "link_added_p99_us" in runs[0] else ""
        within = "" if option.startswith("bridge") and option != "bridge again" else \
            f"{sum(a <= BOUND_US for a in added)} of {len(added)}"
        print(f"| {option} | {', '.join(f'{a:.0f}' for a in added)} | {within} | {inner} |")


if __name__ == "__main__":
    main()
