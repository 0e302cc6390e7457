"""bbrbench reproduce: the reproduction README, overview, report and index agree with the summary behind
them, and say which runs stand behind each claim."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bbrbench.errors import HarnessError
from bbrbench.repro import papers, readme, report
from reprofakes import REPRO_README


def test_the_readme_states_only_what_its_summary_holds() -> None:
    """The reproduction README once contradicted its report. Its verdicts are now generated from the
    summary it cites, and outside that block it states no measured figure (no interval, no measured
    decimal in ms or Mbit/s, no verdict in bold): a README figure that differs from the summary fails here."""
    text = REPRO_README.read_text()
    head, _, rest = text.partition(readme.README_BEGIN)
    block, _, tail = rest.partition(readme.README_END)
    cited = next(line for line in block.splitlines() if line.startswith("From `"))
    summary = Path(__file__).resolve().parents[2] / cited.split("`")[1]
    expected = readme.readme_overview(json.loads(summary.read_text()), cited.split("`")[1])
    assert readme.README_BEGIN + block + readme.README_END == "\n".join(expected), \
        "README's overview differs from its summary: rebuild with bbrbench reproduce --readme"
    prose = "\n".join(part for i, part in enumerate((head + tail).split("```")) if i % 2 == 0)
    assert "±" not in prose and "+-" not in prose.replace("+- 5", "").replace("+- 10", "")
    assert not re.search(r"\d+\.\d+\s?(ms|Mbit/s)\b", prose)
    assert not re.search(r"\*\*(holds|does not hold|undecided|not decided)\*\*", prose)


def test_docs_hold_documents_and_data_reproduction_the_results_they_cite() -> None:
    """Recorded results (summaries, metadata, figures) live in data/reproduction/, documents in
    docs/; every summary the README's build command reads is there."""
    root = Path(__file__).resolve().parents[2]
    assert not [p for p in (root / "docs").rglob("*") if p.suffix in (".json", ".png", ".svg", ".csv")]
    inputs = re.findall(r"--from-summary (\S+)", REPRO_README.read_text())
    assert inputs and all(p.startswith("data/reproduction/") and (root / p).is_file() for p in inputs), inputs


def test_readme_overview_is_rewritten_in_place(tmp_path: Path) -> None:
    readme_md = tmp_path / "README.md"
    readme_md.write_text(f"intro\n\n{readme.README_BEGIN}\nstale\n{readme.README_END}\n\noutro\n")
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"experiments": {"seed000/fig4.12": {"claims": [
        {"claim": "c", "verdict": {"outcome": "holds", "text": "t"}, "post_hoc": "after",
         "wide": {"rule": "r", "verdict": {"outcome": "undecided", "text": "t"}}}]}}}))
    readme.write_readme_overview(readme_md, summary)
    text = readme_md.read_text()
    assert text.startswith("intro\n\n") and text.endswith("\n\noutro\n") and "stale" not in text
    assert "**seed000**: holds 1." in text and "| fig4.12      | c       |     holds |        undecided | post-hoc |" \
        in text
    readme_md.write_text("no markers\n")
    with pytest.raises(HarnessError, match="no generated overview"):
        readme.write_readme_overview(readme_md, summary)


def _inv(command: str, started: str) -> dict[str, Any]:
    return {"command": command, "revision": "0" * 40, "started": started, "finished": started}


def test_rerun_is_the_prescribed_from_scratch_run_and_the_newest_behind_the_claim() -> None:
    """Robustness: a fragile experiment counts as rerun only when its newest invocation is the run the section
    prescribes (--only exactly it, --reps at least n, a results/rerun* directory); the run that made it
    fragile, a smaller n or a later broader run do not count."""
    cmd = "bbrbench -q reproduce --profile standard --only seed001/fig14-15 --reps 8 --out results/"
    escalated = _inv(cmd + "standard-seed001-r8-fig14-15", "2026-11-25 21:06:09 UTC")
    rerun = _inv(cmd + "rerun2-seed001-fig14-15", "2026-11-26 18:04:00 UTC")
    assert report.rerun_of("seed001/fig14-15", set(), 8, [escalated]) is None
    assert report.rerun_of("seed001/fig14-15", set(), 8, [rerun, escalated]) is rerun
    assert report.rerun_of("seed001/fig14-15", set(), 9, [rerun, escalated]) is None
    broader = _inv("bbrbench reproduce --profile standard --only seed001 --out results/x", "2026-11-27 01:00:00 UTC")
    assert report.rerun_of("seed001/fig14-15", set(), 8, [rerun, broader]) is None
    other = _inv("bbrbench reproduce --profile standard --only seed001/fig8 --reps 3 --out results/rerun-f8",
                 "2026-11-27 02:00:00 UTC")
    assert report.rerun_of("seed001/fig14-15", set(), 8, [rerun, other]) is rerun
    # A claim drawing on two experiments (seed 004's share beside share-long) is rerun only with both.
    share = "bbrbench -q reproduce --profile standard --only seed004/share{} --reps 3 --out results/rerun2-s"
    both = _inv(share.format(" --only seed004/share-long"), "2026-11-26 19:00:00 UTC")
    alone = _inv(share.format(""), "2026-11-26 19:00:00 UTC")
    assert report.rerun_of("seed004/share", {"seed004/share-long"}, 3, [both]) is both
    assert report.rerun_of("seed004/share", {"seed004/share-long"}, 3, [alone]) is None


def test_robustness_says_which_fragile_experiments_were_rerun() -> None:
    fragile = {"outcome": "holds", "text": "", "fragile": "zero-width interval"}
    experiments = {key: {"points": [], "claims": [{"claim": f"claim of {key}", "n": 3, "verdict": fragile}]}
                   for key in ("seed001/fig8", "seed001/fig16")}
    done = _inv("bbrbench -q reproduce --profile standard --only seed001/fig8 --reps 3 --out results/rerun2-f8",
                "2026-11-26 17:38:03 UTC")
    lines = report.robustness_lines(experiments, "standard", {"seed001/fig8": [done]})
    fig8 = next(line for line in lines if line.startswith("- seed001/fig8"))
    fig16 = next(line for line in lines if line.startswith("- seed001/fig16"))
    assert "rerun from scratch at n 3" in fig8 and "its verdicts stand" in fig8 and done["command"] in fig8
    assert fig16.startswith("- seed001/fig16: to be rerun: `bbrbench -q reproduce --profile standard --only "
                            "seed001/fig16 --reps 3")


def _table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| table / figure")]


def test_the_report_overview_readme_and_index_agree_with_the_summary() -> None:
    """The committed report opens with the overview its summary gives (provenance last); every claim of the
    summary falls in exactly one row of the per-figure index, so that the rows' counts add up to the seed's
    count, which the README's overview states too; each row with verdicts names the folder its numbers come
    from, a folder of data/reproduction/ that holds a summary.json."""
    root = Path(__file__).resolve().parents[2]
    summary = json.loads((root / "data/reproduction/standard/summary.json").read_text())
    text = (root / "data/reproduction/standard/report.md").read_text()
    overview = "\n".join(report.overview_lines(summary))
    assert text.index(overview) < text.index("## How the claims are judged") < text.index("## Provenance")
    readme = REPRO_README.read_text()
    for seed in ("seed000", "seed001", "seed002", "seed004"):
        claims = [c for k, js in summary["experiments"].items() if k.partition("/")[0] == seed
                  for c in js.get("claims", [])]
        rows = report.index_rows(summary, seed)
        held = [(k, c["claim"]) for cov in papers.coverage() if cov.seed == seed for k in cov.experiments
                if k in summary["experiments"] for c in summary["experiments"][k].get("claims", [])
                if cov.holds(c["claim"])]
        mine = [(k, c["claim"]) for k, js in summary["experiments"].items() if k.partition("/")[0] == seed
                for c in js.get("claims", [])]
        assert sorted(held) == sorted(mine), f"{seed}: a claim in no row of the index, or in two"
        counted: dict[str, int] = {}
        for row in rows:
            for part in row[1].split(", "):
                outcome, _, n = part.rpartition(" ")
                if n.isdigit():
                    counted[outcome] = counted.get(outcome, 0) + int(n)
            if row[1] not in ("not reproduced", "no claim"):
                assert all((root / f.strip("`") / "summary.json").is_file() for f in row[2].split(", ")), row
        totals = report.verdict_counts(claims)
        assert counted == totals
        words = ", ".join(f"{o} {n}" for o, n in totals.items())
        assert f"**{seed}**: {words}." in readme and f"All claims: {words}." in text
    # A section drawn from several experiments points each row at the folder of the part its claims read.
    loss = next(r for r in report.index_rows(summary, "seed004") if r[0].startswith("Table 4"))
    assert loss[2] == "`data/reproduction/rerun-2026-11-26/seed004-loss/`"
