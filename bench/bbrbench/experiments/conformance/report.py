"""Outcomes, the results file (conformance.json) and the reports made from it: the text table and
docs/conformance.md."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...testbed.host import LOSS_DECISION_ALGOS, NOT_RECORDED, with_loss_decisions
from .cases import CaseError
from .model import ALGOS, BLOCKED, DRAFT, FAIL, INFO, NOT_APPLICABLE, RUNNERS, Case, Check
from .twin import TWIN_LOSS_DECISIONS

RESULTS_FORMAT = "bbrbench-conformance/1"


@dataclass
class Outcome:
    case: str
    algo: str
    runner: str
    verdict: str
    why: str = ""
    checks: list[Check] = field(default_factory=list)
    plot: str | None = None
    # bbr2, bbr3 and bbr_draft: the path their loss decisions ran ("per-packet", "ack-time", the twin's own).
    loss_decisions: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "algo": self.algo, "runner": self.runner, "verdict": self.verdict,
                "why": self.why, "checks": [c.as_dict() for c in self.checks], "plot": self.plot,
                "loss_decisions": self.loss_decisions}

    def summary(self) -> str:
        if self.verdict in (NOT_APPLICABLE, BLOCKED) and self.why:
            return self.why
        judged = [c for c in self.checks if c.status != INFO]
        failed = [c for c in judged if c.status == FAIL]
        shown = failed or [c for c in judged if c.status == BLOCKED] or judged
        return "; ".join(f"{c.name}: {c.measured or c.expected}" for c in shown[:2])


def table_rows(outcomes: list[Outcome]) -> list[list[str]]:
    return [[o.case, with_loss_decisions(o.algo, o.loss_decisions), o.runner, o.verdict, o.summary()]
            for o in outcomes]


def recorded_path(o: dict[str, Any]) -> str | None:
    """An outcome's loss-decision path as conformance.json holds it: "not recorded" for a bbr2, bbr3 or
    bbr_draft run written before outcomes carried it; None where no run made loss decisions (another
    algorithm, or an outcome with a reason: not applicable, or the run could not be made)."""
    if o["why"] or o["algo"] not in LOSS_DECISION_ALGOS:
        return None
    return o.get("loss_decisions") or NOT_RECORDED


TABLE_HEADERS = ("case", "algo", "runner", "verdict", "numbers / why")


def exit_status(outcomes: list[Outcome]) -> int:
    """A test runner's: 1 when any case failed; blocked and not applicable cases do not fail the run."""
    return 1 if any(o.verdict == FAIL for o in outcomes) else 0


def read_outcomes(out: Path) -> list[Outcome]:
    path = out / "conformance.json"
    if not path.is_file():
        return []
    return [Outcome(o["case"], o["algo"], o["runner"], o["verdict"], o["why"], [Check(**c) for c in o["checks"]],
                    o["plot"], recorded_path(o)) for o in read_results(path)["outcomes"]]


def table(outcomes: list[Outcome], cases: list[Case]) -> str:
    from ...analysis import tables
    wanted = {c.id for c in cases}
    return tables.text(TABLE_HEADERS, table_rows([o for o in outcomes if o.case in wanted]), labels=5)


def write_results(out: Path, outcomes: list[Outcome], invocation: dict[str, Any]) -> None:
    """conformance.json: the outcomes, and every invocation that ran into it (revision, command, kernel, the
    load it ran under): outcomes kept from an earlier one stay as that one measured them."""
    path = out / "conformance.json"
    earlier = read_results(path)["invocations"] if path.is_file() else []
    invocations = [i for i in earlier if i["started"] != invocation["started"]] + [
        {**invocation, "loadavg_end": [round(x, 2) for x in os.getloadavg()]}]
    doc = {"format": RESULTS_FORMAT, "draft": DRAFT, "invocations": invocations,
           "outcomes": [o.as_dict() for o in outcomes]}
    path.write_text(json.dumps(doc, indent=2) + "\n")


def new_invocation() -> dict[str, Any]:
    from ... import provenance
    return {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "bbrbench": provenance.record(),
            "kernel": os.uname().release, "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def read_results(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CaseError(f"{path}: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
        raise CaseError(f"{path}: not a {RESULTS_FORMAT} file")
    return doc


def markdown(doc: dict[str, Any], cases: list[Case], plots: str | None = None) -> str:
    """docs/conformance.md from a results file: the verdict table, then per case the draft's statement,
    what is checked, and each algorithm's verdict with its numbers; plots: where the report finds the
    runs' plots (each verdict links its own), relative to it."""
    from ...analysis import tables
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for o in doc["outcomes"]:
        by.setdefault((o["case"], o["algo"]), []).append(o)

    def cell(case_id: str, algo: str) -> str:
        found = by.get((case_id, algo), [])
        if not found:
            return "not run"
        if found[0]["verdict"] == NOT_APPLICABLE:
            return NOT_APPLICABLE
        ordered = sorted(found, key=lambda o: RUNNERS.index(o["runner"]))
        return ", ".join(linked(f"{o['verdict']} ({ran(o)})", o) for o in ordered)

    def ran(o: dict[str, Any]) -> str:
        """The runner, and for bbr2, bbr3 and bbr_draft the loss-decision path: "real: ack-time"."""
        path = recorded_path(o)
        return f"{o['runner']}: {path}" if path else o["runner"]

    def linked(text: str, o: dict[str, Any]) -> str:
        return f"[{text}]({plots}/{Path(o['plot']).name})" if plots and o.get("plot") else text
    lines = [MARKDOWN_HEAD.format(draft=DRAFT, twin_path=TWIN_LOSS_DECISIONS), ""]
    for inv in doc["invocations"]:
        load = "-".join(f"{x:g}" for x in (inv["loadavg_start"][0], inv["loadavg_end"][0]))
        lines.append(f"- {inv['started']}, revision {inv['bbrbench'].get('revision') or 'unknown'}, kernel "
                     f"{inv['kernel']}, 1-minute load {load}: `{inv['bbrbench'].get('command') or 'bbrbench'}`")
    if "checked_at" in doc:
        chk = doc["checked_at"]
        lines.append(f"- checks and case data read again from the stored records at revision "
                     f"{chk['bbrbench'].get('revision') or 'unknown'} ({chk['started']}): "
                     f"`{chk['bbrbench'].get('command') or 'bbrbench'}`")
    lines.append("")
    rows = [[c.id, c.title, c.runner, *[cell(c.id, a) for a in ALGOS]] for c in cases]
    lines += [tables.markdown(["case", "title", "runner", *ALGOS], rows, labels=6), ""]
    for c in cases:
        lines += [f"## {c.id} {c.title}", "", f"Draft: {c.statement}", ""]
        if c.note:
            lines += [f"Note: {c.note}", ""]
        for a in ALGOS:
            if not by.get((c.id, a)):
                lines.append(f"- {a}: not run")
            for o in by.get((c.id, a), [])[:1 if cell(c.id, a) == NOT_APPLICABLE else None]:
                runner = "" if o["verdict"] == NOT_APPLICABLE else f" ({ran(o)})"
                plot_link = f" ({linked('plot', o)})" if plots and o.get("plot") else ""
                lines.append(f"- {a}{runner}: **{o['verdict']}**" + (f": {o['why']}" if o["why"] else "") + plot_link)
                lines += [f"  - {k['name']}: {k['measured'] or '-'} (expected {k['expected'] or '-'}): {k['status']}"
                          for k in o["checks"]]
        lines.append("")
    return "\n".join([*lines, GENERATED_END, ""])


GENERATED_END = "<!-- end of the generated report: what follows is written by hand and kept on regeneration -->"


def write_markdown(path: Path, text: str) -> None:
    """The report, with whatever the file held after GENERATED_END kept below it."""
    old = path.read_text() if path.is_file() else ""
    kept = old.split(GENERATED_END, 1)[1].lstrip("\n") if GENERATED_END in old else ""
    path.write_text(text + ("\n" + kept if kept else ""))

MARKDOWN_HEAD = """# Conformance: the BBR draft's test cases

<!-- generated by `bbrbench conformance --doc` (every case, one clean revision, the plots in
data/conformance/) down to the end marker; edit the cases (bench/bbrbench/scenarios/conformance/cases.toml)
or the checks, not that part -->

The example test cases of {draft}, Appendix A (A.1-A.22), run by `bbrbench conformance` on bbrkit's bbr3,
bbr2, bbr1 and bbr_draft (the draft's own pseudocode): real transfers through the testbed checked against
the algorithm's own state (`bbrctl trace`), or the deterministic twin where a real path cannot force the
condition. Verdicts: pass, fail (the behaviour contradicts the case: a check outside its tolerance, written
before the runs), blocked (the path did not bring about the case's precondition, a key the records lack, or
the twin missing), not applicable (only where the algorithm's design, v1, v2alpha or v3, lacks the state
machine the case tests; the reason quotes it; bbr_draft has the draft's whole state machine, so every case
applies to it). Each verdict links its run's plot: the link's rate (dotted), the estimates and windows,
every phase in a colour of its own, the trigger (red) and each undo (blue, dashed).
Beside each bbr2, bbr3 and bbr_draft verdict's runner is the path its loss decisions took: "per-packet"
(bbrctl attached the per-packet loss programs: hooks on the kernel's transmit and loss marking, or the
ACK's walk of the retransmit queue), "ack-time" (the stand-in that judges losses when the ACK reports
them), as `bbrctl list` named it while the real run was attached;
the twin's is its own ({twin_path}), and "not recorded" marks a run made before outcomes carried it.
Every check is shown to fail on a twin with the step it checks broken
(tests/bench/test_conformance_mutations.py, `bbrkit-twin --mutate`).

The runs (each outcome is the last invocation's that ran it; a shared 2-CPU machine with other jobs
running, so not a quiet machine, and the load says how busy):
"""
