"""Per configuration: the link's late share and the other trust figures of the kept runs (this folder's README).

python3 table.py [FOLDER]  -- a Markdown table, one row per STUDY/CONFIGURATION folder."""
import json
import statistics
import sys
from pathlib import Path


def figures(summary: dict) -> dict:
    checks = summary.get("trust", {}).get("checks", {})
    lines = [v for k, v in checks.items() if k.startswith("delay_line") and k.endswith("late_share")]
    return {"late": checks.get("late_wakeups_share", 0) * 100, "waited": checks.get("rx_waited_pkts_share", 0) * 100,
            "p50": checks.get("added_p50_us", 0), "p99": checks.get("added_p99_us", 0),
            "cpu": checks.get("cpu_fwd_share", 0) * 100, "lines": max(lines) * 100 if lines else None,
            "trusted": not summary.get("trust", {}).get("failed"),
            "retrans": summary["total"].get("retrans_rate", 0) * 100, "jain": summary["total"].get("jain", 0) * 100}


def cells(runs: list) -> list:
    late = [r["late"] for r in runs]
    lines = [r["lines"] for r in runs if r["lines"] is not None]
    return [str(len(runs)), "%.3f (%.3f-%.3f)" % (statistics.mean(late), min(late), max(late)),
            "%.3f-%.3f" % (min(r["waited"] for r in runs), max(r["waited"] for r in runs)),
            "%.0f / %.0f" % (statistics.mean(r["p50"] for r in runs), statistics.mean(r["p99"] for r in runs)),
            "%.0f" % statistics.mean(r["cpu"] for r in runs), "%.2f" % max(lines) if lines else "none",
            "%d/%d" % (sum(r["trusted"] for r in runs), len(runs)),
            " ".join("%.2f" % r["retrans"] for r in runs),
            "%.2f-%.2f" % (min(r["jain"] for r in runs), max(r["jain"] for r in runs))]


def main(folder: Path) -> None:
    configs: dict = {}
    for path in sorted(folder.glob("*/*/rep*/summary.json")):
        name = str(path.parent.parent.relative_to(folder))
        configs.setdefault(name, []).append(figures(json.loads(path.read_text())))
    print("| study/configuration | runs | late share % mean (range) | frames > 1 ms in the socket buffer % | "
          "added p50 / p99 us | forward CPU % | delay lines' late share % (max) | trusted | retrans % per run | "
          "Jain % |")
    print("|" + " --- |" * 10)
    for name, runs in configs.items():
        print("| " + " | ".join([name, *cells(runs)]) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
