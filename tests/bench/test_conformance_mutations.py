"""The conformance checks can fail: each case runs on the twin (build/bbrkit-twin) once as the algorithm is
and once with the one step the case tests broken (`bbrkit-twin --mutate`, named after the step), and the
check of that step must pass on the first run and fail on the second, failing the case. A check that
passes a broken algorithm proves nothing (draft-ietf-ccwg-bbr-06 Appendix A; the mutations live in
bench/twin/twin.h's TWIN_MUTATIONS and the TWIN_MUTANT() hooks of bpf/).

Cases whose only algorithm fails them unmutated are judged on the check the mutation breaks alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from bbrbench.experiments import conformance as conf
from bbrbench.experiments.conformance.twin import run_twin

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "build" / "bbrkit-twin"
CASES = {c.id: c for c in conf.load_cases()}

# (case, algorithm, mutation, the check the mutation must turn from pass to fail: its name's start)
MUTATIONS = [
    ("A.1", "bbr3", "full_bw_count", "full_bw_count at the exit"),
    ("A.2", "bbr3", "loss_thresh", "STARTUP ends"),
    ("A.3", "bbr3", "drain_exit", "DRAIN not left later than the target"),
    ("A.3", "bbr2", "drain_exit", "DRAIN not left later than the target"),
    ("A.5", "bbr3", "up_plateau", "rounds in UP"),
    ("A.7", "bbr3", "app_limited_plateau", "STARTUP never left"),
    ("A.8", "bbr3", "down_gain", "DOWN pacing gain"),
    ("A.6", "bbr3", "loss_thresh", "rounds from the loss above 2% to the exit"),
    ("A.9", "bbr3", "probe_wait", "time in DOWN"),
    ("A.10", "bbr3", "probe_rtt_interval", "PROBE_RTT once the interval runs out"),
    ("A.10", "bbr2", "probe_rtt_interval", "PROBE_RTT once the interval runs out"),
    ("A.14", "bbr3", "min_cwnd", "cwnd floor MinPipeCwnd"),
    ("A.11", "bbr3", "idle_restart", "no PROBE_RTT after the restart"),
    ("A.12", "bbr3", "extra_acked", "cwnd reaches cwnd_gain x BDP + extra_acked"),
    ("A.13", "bbr3", "extra_acked", "cwnd >= cwnd_gain x BDP + extra_acked"),
    ("A.15", "bbr3", "up_step_doubling", "max_bw reaches the new rate"),
    ("A.18", "bbr3", "undo_restore", "inflight_longterm restored"),
    ("A.18", "bbr2", "undo_restore", "inflight_longterm restored"),
    ("A.19", "bbr3", "undo_restore", "inflight_shortterm restored"),
    ("A.20", "bbr3", "probe_rtt_exit", "back to STARTUP"),
    ("A.21", "bbr3", "loss_cut", "inflight_longterm cut at the exit"),
    ("A.21", "bbr2", "loss_cut", "inflight_longterm cut at the exit"),
    ("A.22", "bbr3", "app_limited_max_bw", "app-limited samples kept out of the max_bw filter"),
    ("A.22", "bbr2", "app_limited_max_bw", "app-limited samples kept out of the max_bw filter"),
    # bbr_draft: its own steps (bpf/bbr_draft.bpf.c's hooks), its parameters, and the core's steps it calls.
    # A.18 has none: bbr_draft fails it unmutated, as the draft's pseudocode does (docs/conformance.md).
    ("A.1", "bbr_draft", "full_bw_count", "full_bw_count at the exit"),
    ("A.2", "bbr_draft", "loss_thresh", "STARTUP ends"),
    ("A.3", "bbr_draft", "drain_exit", "DRAIN not left later than the target"),
    ("A.4", "bbr_draft", "drain_time_exit", "DRAIN -> PROBE_BW"),
    ("A.5", "bbr_draft", "up_plateau", "rounds in UP"),
    ("A.6", "bbr_draft", "loss_thresh", "rounds from the loss above 2% to the exit"),
    ("A.7", "bbr_draft", "app_limited_plateau", "STARTUP never left"),
    ("A.8", "bbr_draft", "down_gain", "DOWN pacing gain"),
    ("A.9", "bbr_draft", "probe_wait", "time in DOWN"),
    ("A.10", "bbr_draft", "probe_rtt_interval", "PROBE_RTT once the interval runs out"),
    ("A.11", "bbr_draft", "idle_restart", "no PROBE_RTT after the restart"),
    ("A.12", "bbr_draft", "extra_acked", "cwnd reaches cwnd_gain x BDP + extra_acked"),
    ("A.13", "bbr_draft", "extra_acked", "cwnd >= cwnd_gain x BDP + extra_acked"),
    ("A.14", "bbr_draft", "min_cwnd", "cwnd floor MinPipeCwnd"),
    ("A.15", "bbr_draft", "up_step_doubling", "max_bw reaches the new rate"),
    ("A.16", "bbr_draft", "max_bw_window", "max_bw window"),
    ("A.17", "bbr_draft", "shortterm_cut", "bw_shortterm_bps adapted"),
    ("A.19", "bbr_draft", "undo_restore", "state resumes"),
    ("A.20", "bbr_draft", "probe_rtt_exit", "back to STARTUP"),
    ("A.21", "bbr_draft", "loss_cut", "inflight_longterm cut at the exit"),
    ("A.22", "bbr_draft", "app_limited_max_bw", "app-limited samples kept out of the max_bw filter"),
]


def statuses(case: str, algo: str, work: Path, mutation: str | None, check: str) -> tuple[str, set[str]]:
    """The case's verdict and the statuses of the checks named `check...`."""
    records, why = run_twin(CASES[case], algo, work, mutation)
    assert why is None, why
    checks = conf.evaluate(CASES[case], algo, records, "twin")
    named = {c.status for c in checks if c.name.startswith(check)}
    assert named, f"{case} {algo} {mutation}: no check named {check!r} in {[c.name for c in checks]}"
    return conf.verdict(checks), named


@pytest.mark.parametrize("case, algo, mutation, check", MUTATIONS,
                         ids=[f"{c}-{a}-{m}" for c, a, m, _ in MUTATIONS])
def test_breaking_the_step_fails_its_check(case: str, algo: str, mutation: str, check: str,
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert TWIN.exists(), f"{TWIN} is missing: run `make` first"
    monkeypatch.setenv("BBRKIT_TWIN", str(TWIN))
    _, intact = statuses(case, algo, tmp_path / "intact", None, check)
    broken_verdict, broken = statuses(case, algo, tmp_path / "broken", mutation, check)
    assert intact == {conf.PASS}, f"{case} {algo}: {check} is {intact} unmutated"
    assert conf.FAIL in broken and broken_verdict == conf.FAIL, f"{case} {algo} --mutate {mutation}: {broken}"


def test_every_mutation_of_the_twin_is_tested() -> None:
    names = [line.split("(", 1)[1].split(",", 1)[0] for line in (ROOT / "bench/twin/twin.h").read_text().splitlines()
             if line.strip().startswith("X(")]
    assert names and set(names) == {m for _, _, m, _ in MUTATIONS}
