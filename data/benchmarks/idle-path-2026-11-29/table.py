"""Prints the markdown table of docs/link-timing.md's "The idle path" section from linkbench JSON files:
each run's start, load average, the idle goal's figure and floor, the thread's idle rows and the capacity goals.
Usage: python3 table.py linkbench-*.json"""

from __future__ import annotations

import json
import sys


def cell(value: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def main(paths: list[str]) -> None:
    print("| run (UTC) | load at start | idle added p99, µs (floor) | idle path frames | through the thread "
          "| thread, whole-gap poll | thread, `--cpu-latency-us 0` | tail drop | FQ-CoDel, 1024 flows "
          "| 64-byte payloads |")
    print("| --- " * 10 + "|")
    for path in paths:
        with open(path, encoding="utf-8") as f:
            r = json.load(f)
        d, goals = r["delay"], {g["check"]: g for g in r["goals"]}
        idle = goals["idle_added_delay_p99_within_50us"]
        verdict = {True: "met", False: "NOT MET", None: "NOT DECIDED"}[idle["met"]]
        ratios = [cell(g["figure"], "{:.2f}") for name, g in goals.items() if g["run"]]
        print(f"| {r['started_utc'][11:16]} | {r['load']['start'][0]:.1f} "
              f"| {cell(idle['figure'])} ({cell(idle['floor'])}): {verdict} "
              f"| {d['idle']['xdp_idle_pkts']} of {d['idle']['in_pkts']} "
              f"| {cell(d['idle_thread']['added_p99_us'])} | {cell(d['idle_gap_poll']['added_p99_us'])} "
              f"| {cell(d['idle_cpu_latency_0']['added_p99_us'])} | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
