"""Running the cases: each case on each algorithm and runner into a results directory, or the checks again
on the records an earlier run kept."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ...errors import HarnessError
from ...testbed.host import LOSS_DECISION_ALGOS, loss_decisions, read_host
from .checks import evaluate
from .model import ALGOS, BLOCKED, NOT_APPLICABLE, RUNNERS, Case, verdict
from .plots import draw
from .real import real_records, run_real
from .report import Outcome, new_invocation, read_outcomes, read_results, write_results
from .twin import TWIN_LOSS_DECISIONS, run_twin

log = logging.getLogger(__name__)


def run_dir(out: Path, case_id: str, algo: str, runner: str) -> Path:
    """Where a run keeps its records."""
    return out / "runs" / f"{case_id}-{algo}-{runner}"


def run_one(case: Case, algo: str, runner: str, out: Path) -> Outcome:
    if algo not in case.algos:
        return Outcome(case.id, algo, runner, NOT_APPLICABLE, case.not_applicable[algo])
    work = run_dir(out, case.id, algo, runner)
    if runner == "twin":
        records, why = run_twin(case, algo, work)
        if why:
            return Outcome(case.id, algo, runner, BLOCKED, why)
    else:
        records = run_real(case, algo, work)
    checks = evaluate(case, algo, records, runner)
    return Outcome(case.id, algo, runner, verdict(checks), checks=checks,
                   plot=draw(out, case, algo, runner, records) if records else None,
                   loss_decisions=ran_with(algo, runner, work))


def ran_with(algo: str, runner: str, work: Path) -> str | None:
    """The loss-decision path of a run that made records: a real run's as bbrctl named it while attached
    (its host.json), the twin's own; None for an algorithm without the choice."""
    if runner == "twin":
        return TWIN_LOSS_DECISIONS if algo in LOSS_DECISION_ALGOS else None
    return loss_decisions(read_host(work), algo)


def runners_for(case: Case, wanted: str) -> list[str]:
    """The runners --runner asks for that the case can use: a twin case's condition has no real path; a
    real case's path runs on the twin too (twin_path), where the twin has its conditions."""
    runners = [r for r in RUNNERS if wanted in ("both", r)]
    return runners if case.runner == "real" else [r for r in runners if r == "twin"]


def run(algos: list[str], cases: list[Case], runner: str, out: Path) -> list[Outcome]:
    """Each case on each algorithm; outcomes already in out (an earlier invocation) are kept unless rerun,
    so several shorter invocations build one table."""
    out.mkdir(parents=True, exist_ok=True)
    invocation = new_invocation()
    outcomes = {(o.case, o.algo, o.runner): o for o in read_outcomes(out)}
    for case in cases:
        for algo in algos:
            for r in runners_for(case, runner):
                log.info("%s %s (%s)", case.id, algo, r)
                try:
                    result = run_one(case, algo, r, out)
                except HarnessError as exc:
                    result = Outcome(case.id, algo, r, BLOCKED, f"run failed: {exc}")
                outcomes[(case.id, algo, r)] = result
                write_results(out, list(outcomes.values()), invocation)
    ordered = sorted(outcomes.values(), key=lambda o: (int(o.case.split(".")[1]), ALGOS.index(o.algo),
                                                       RUNNERS.index(o.runner)))
    write_results(out, ordered, invocation)
    return ordered


def stored_records(out: Path, case: Case, algo: str, runner: str) -> list[dict[str, Any]] | None:
    """The records an earlier run kept in out, or None where it kept none."""
    work = run_dir(out, case.id, algo, runner)
    if runner == "real":
        return real_records(work, algo) if (work / "raw" / "events.json").is_file() else None
    for name in ("twin-triggered.jsonl", "twin.jsonl") if case.trigger else ("twin.jsonl",):
        if (work / name).is_file():
            records = [json.loads(line) for line in (work / name).read_text().splitlines() if line.strip()]
            for r in records:
                r["t_s"] = r["t_ns"] / 1e9
            return records
    return None


def reevaluate(out: Path, cases: list[Case]) -> list[Outcome]:
    """--report-only: every kept outcome's checks again, as this revision's checks and case data read its
    stored records (the runs stay as they were measured); outcomes without records stay as they are."""
    by_id = {c.id: c for c in cases}
    outcomes = read_outcomes(out)
    for i, o in enumerate(outcomes):
        case = by_id.get(o.case)
        if case is None or o.verdict == NOT_APPLICABLE or o.why:  # no run, or it failed: nothing to read
            continue
        records = stored_records(out, case, o.algo, o.runner)
        if records:
            checks = evaluate(case, o.algo, records, o.runner)
            work = run_dir(out, o.case, o.algo, o.runner)
            outcomes[i] = Outcome(o.case, o.algo, o.runner, verdict(checks), checks=checks,
                                  plot=draw(out, case, o.algo, o.runner, records),
                                  loss_decisions=ran_with(o.algo, o.runner, work))
    path = out / "conformance.json"
    doc = read_results(path)
    doc["outcomes"] = [o.as_dict() for o in outcomes]
    doc["checked_at"] = new_invocation()
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return outcomes
