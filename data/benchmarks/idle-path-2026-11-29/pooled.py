"""Pools idle_path.py's rounds: per series, the RTT percentiles over every ping of every round, each against the
pooled bridge median (what linkbench's idle figure is, at 10 x the pings), and the share of pings more than 50 us
over the bridge's median of their own round. Usage: .venv/bin/python pooled.py FILE"""

from __future__ import annotations

import json
import statistics
import sys

from bbrbench.experiments.delaybench import percentile


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    base = {r["round"]: statistics.median(r["samples_us"]) for r in rows if r["series"] == "bridge"}
    pooled_base = statistics.median([x for r in rows if r["series"] == "bridge" for x in r["samples_us"]])
    print("| series | pings | p50 | p99 | p99.9 | pooled p99 less the bridge's pooled p50 | pings over their round's "
          "bridge p50 + 50 µs | rounds whose own figure is within 50 µs |")
    print("| --- " * 8 + "|")
    for name in dict.fromkeys(r["series"] for r in rows):
        mine = [r for r in rows if r["series"] == name]
        xs = [x for r in mine for x in r["samples_us"]]
        over = sum(x > base[r["round"]] + 50 for r in mine for x in r["samples_us"])
        within = sum(percentile(r["samples_us"], 99) - base[r["round"]] <= 50 for r in mine)
        print(f"| {name} | {len(xs)} | {percentile(xs, 50):.0f} | {percentile(xs, 99):.0f} "
              f"| {percentile(xs, 99.9):.0f} "
              f"| {percentile(xs, 99) - pooled_base:.0f} | {over} ({over / len(xs):.2%}) | {within} of {len(mine)} |")


if __name__ == "__main__":
    main(sys.argv[1])
