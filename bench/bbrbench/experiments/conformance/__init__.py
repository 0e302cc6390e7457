"""bbrbench conformance: the BBR draft's example test cases (draft-ietf-ccwg-bbr-06, Appendix A, A.1-A.22),
run on bbr3, bbr2, bbr1 and bbr_draft (the draft's own pseudocode) and checked against each algorithm's own
state.

The cases are data (scenarios/conformance/cases.toml: path, sender schedule, runner, tolerances); the
checks are the check_* functions (checks_states, checks_paths), one per case, each reading the records
of one flow: `bbrctl trace` records of a real transfer through the testbed (runner "real", real.py), or
the JSON lines of the deterministic host simulator build/bbrkit-twin (runner "twin", twin.py), which print
the same keys. Each check gives a Check:
pass / fail / blocked (the records lack a key it reads, or the twin is missing) / info (a number shown,
not judged); a case's verdict is fail if any check failed, else blocked if any was blocked, else pass;
"not applicable" comes from the case data, with its reason.

The package's parts: model (Case, Check, the record helpers), cases (the case file read and checked),
checks_states and checks_paths (the checks) with checks (which case has which), twin and real (the
runners), plots, report (outcomes, the results file, the table and the Markdown), doc
(docs/conformance.md from one clean revision) and run (the loop).
"""

from .cases import CASES_FILE, CaseError, load_cases, parse_case, plan, select
from .checks import CHECKERS, evaluate
from .doc import doc_path, require_clean_checkout, write_doc
from .model import ALGOS, BLOCKED, FAIL, NOT_APPLICABLE, PASS, RUNNERS, Case, Check, key_of, payload_bps, runs, verdict
from .real import rate_trace_lines, real_records, real_scenario, run_real
from .report import GENERATED_END, Outcome, exit_status, markdown, read_outcomes, read_results, table, write_markdown
from .run import reevaluate, run, run_one, runners_for
from .twin import run_twin, trigger_options, twin_path

__all__ = ["ALGOS", "BLOCKED", "CASES_FILE", "CHECKERS", "FAIL", "GENERATED_END", "NOT_APPLICABLE", "PASS", "RUNNERS",
           "Case", "CaseError", "Check", "Outcome", "doc_path", "evaluate", "exit_status", "key_of", "load_cases",
           "markdown", "parse_case", "payload_bps", "plan", "rate_trace_lines", "read_outcomes", "read_results",
           "real_records", "real_scenario", "reevaluate", "require_clean_checkout", "run", "run_one", "run_real",
           "run_twin", "runners_for", "runs", "select", "table", "trigger_options", "twin_path", "verdict",
           "write_doc", "write_markdown"]
