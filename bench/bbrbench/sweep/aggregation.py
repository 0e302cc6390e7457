"""Aggregating a sweep: per point the mean and 95% CI of every metric over its finished repetitions
(never pooling hosts of different kernels or algorithm objects, or a dirty tree's runs with others, unless
asked; repetitions of several invocations tested for a batch effect), sweep.json, sweep.csv, runs.csv, the
console table and the results page (sweep.html)."""

from __future__ import annotations

import csv
import logging
from pathlib import Path
from typing import Any

from ..analysis import html, pages, tables
from ..analysis.stats import batch_effect_p, mean_ci95
from ..errors import HarnessError
from ..results import read_json, write_json
from ..testbed.host import host_key, host_name, read_host
from .plans import Plan, Point, load_plan
from .store import DONE_MARK, NOT_RUNNABLE, done_runs, link_labels

log = logging.getLogger(__name__)


def metric_value(summary: dict[str, Any], path: str) -> float | None:
    """'total.NAME', 'steady.NAME', 'tcp.COUNTER' (the senders' TCP counters), 'algo.ALGO.NAME' or
    'flow.LABEL.NAME' from a run's summary.json."""
    kind, _, rest = path.partition(".")
    value: Any = None
    if kind in ("total", "steady", "tcp"):
        value = (summary.get(kind) or {}).get(rest)
    elif kind == "algo":
        algo, _, name = rest.rpartition(".")
        value = summary.get("by_algo", {}).get(algo, {}).get(name)
    elif kind == "flow":
        label, _, name = rest.rpartition(".")
        value = next((f.get(name) for f in summary.get("flows", []) if f.get("label") == label), None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _kinds_text(kinds: dict[tuple[str, str, str], dict[str, Any]]) -> str:
    return "; ".join(f"{h.get('hostname')}: kernel {k[0]}, {k[1][:20]}, {k[2]}" for k, h in kinds.items())


def _check_hosts(point: Point, hosts: list[dict[str, Any]], mix_hosts: bool) -> None:
    kinds = {host_key(h): h for h in hosts}
    if len(kinds) > 1 and not mix_hosts:
        raise HarnessError(f"point ({point.label}): repetitions ran on hosts whose kernels, algorithm objects or "
                           f"CPU counts differ ({_kinds_text(kinds)}); rerun them on one kind of host or pass "
                           f"--mix-hosts to pool them")


def _check_host_sets(rows: list[dict[str, Any]], point_hosts: dict[str, list[dict[str, Any]]],
                     mix_hosts: bool) -> None:
    """Points compared across hosts: the kinds of host behind each point must be the same set, or a
    difference between points may be one between hosts (refused unless mix_hosts); the same hosts, or the
    comparison is less balanced than it could be (a warning, and `host_sets_differ` in sweep.json)."""
    kinds = {pid: {host_key(h): h for h in hosts} for pid, hosts in point_hosts.items() if hosts}
    labels = {row["id"]: row["label"] for row in rows}
    if len({frozenset(k) for k in kinds.values()}) > 1 and not mix_hosts:
        which = "; ".join(f"({labels[pid]}) on {_kinds_text(k)}" for pid, k in kinds.items())
        raise HarnessError(f"points ran on different kinds of host, so their differences may be the hosts' "
                           f"({which}); rerun on one kind of host or pass --mix-hosts")
    names = {pid: frozenset(host_name(h) for h in hosts) for pid, hosts in point_hosts.items() if hosts}
    if len(set(names.values())) > 1:
        log.warning("points ran on different sets of hosts (%s): host and point are partly confounded; more "
                    "repetitions spread them", "; ".join(f"({row['label']}) on {', '.join(row['hosts'])}"
                                                        for row in rows if row["id"] in names))
        for row in rows:
            row["host_sets_differ"] = True


# A batch effect worth a warning: the invocations' means differ at this level (one-way ANOVA).
BATCH_ALPHA = 0.01


def _invocation(run_dir: Path) -> tuple[str, str]:
    """(revision, command) of the bbrbench command a repetition was run for (on a cluster worker, the
    submitting client's); one invocation is one batch. Results without the record (older, or written by
    other tools) are one unknown batch."""
    if not (run_dir / "scenario.json").is_file():
        return "", ""
    scenario = read_json(run_dir / "scenario.json", "run")
    made_by = scenario.get("submitted_by") or scenario.get("bbrbench", {})
    return str(made_by.get("revision", "")), str(made_by.get("command", ""))


def _check_invocations(point: Point, invocations: list[tuple[str, str]], mix_hosts: bool) -> None:
    dirty = sorted({rev for rev, _ in invocations if rev.endswith("-dirty")})
    if dirty and len(set(invocations)) > 1 and not mix_hosts:
        raise HarnessError(f"point ({point.label}): repetitions from a dirty tree ({', '.join(dirty)}) would pool "
                           f"with other invocations'; rerun them from a clean tree or pass --mix-hosts")


def _batch_effects(point: Point, metrics: list[str], summaries: list[dict[str, Any]],
                   factors: dict[str, list[Any]]) -> dict[str, float]:
    """Per metric and factor (the invocation, the host), the p-value of a batch effect between the groups
    of repetitions that pool here, where it is below BATCH_ALPHA (logged: pooled, but worth a look).
    Returned under 'METRIC' for invocations, as before, and 'METRIC by host' for hosts."""
    found = {}
    for factor, levels in factors.items():
        for metric in metrics:
            groups: dict[Any, list[float]] = {}
            for summary, level in zip(summaries, levels):
                v = metric_value(summary, metric)
                if v is not None:
                    groups.setdefault(level, []).append(v)
            p = batch_effect_p(list(groups.values()))
            if p is not None and p < BATCH_ALPHA:
                found[metric if factor == "invocation" else f"{metric} by {factor}"] = p
                log.warning("point (%s): %s differs between the %d %ss pooled here (one-way ANOVA p = %.2g)",
                            point.label, metric, len(groups), factor, p)
    return found


# The sweep's results page, beside table.txt.
PAGE = "sweep.html"
LEGEND = ("Mean ± 95% confidence half-width over repetitions. A point whose runs failed the trust check (of "
          "bbrkit-link or a delay line) has every cell marked: those runs are left out, the tooltip names them "
          "and why.")


def trust_failures(summary: dict[str, Any]) -> list[str] | None:
    """Why a run failed the trust check of its bbrkit-link or delay lines (analysis/trust.py); None when it
    passed or ran through neither.
    Such a run is never pooled: not by a sweep, a compare or a reproduction report."""
    trust = summary.get("trust", {})
    return None if trust.get("ok", True) else list(trust.get("failed", []))


def repetitions_status(pooled: int, planned: int, untrusted: int) -> str:
    """A point's status: the repetitions pooled, and those the trust check left out."""
    return f"{pooled}/{planned} repetitions" + (
        f" ({untrusted} failed the trust check, not pooled)" if untrusted else "")


def aggregate(out: Path, mix_hosts: bool = False) -> str:
    """sweep.json, sweep.csv, runs.csv, table.txt and sweep.html from the finished runs. HarnessError when a
    point would pool repetitions from hosts of different kernels or algorithm objects, unless mix_hosts."""
    plan_ = load_plan(out)
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    all_hosts: dict[str, dict[str, Any]] = {}
    point_hosts: dict[str, list[dict[str, Any]]] = {}
    for point in plan_.points:
        point_dir = out / "points" / point.id
        row: dict[str, Any] = {"id": point.id, "overrides": point.overrides, "label": point.label, "metrics": {}}
        if (point_dir / NOT_RUNNABLE).is_file():
            row["status"] = "not runnable: " + (point_dir / NOT_RUNNABLE).read_text().strip()
            rows.append(row)
            continue
        summaries = []
        untrusted: list[dict[str, Any]] = []
        invocations: list[tuple[str, str]] = []
        hosts: list[dict[str, Any]] = []
        names: list[str] = []
        for rep in range(plan_.repetitions):
            run_dir = point_dir / f"rep{rep}"
            if (run_dir / DONE_MARK).is_file():
                summary = read_json(run_dir / "summary.json", "summary")
                host = read_host(run_dir)
                runs.append({"point": point.id, "label": point.label, "rep": rep, "overrides": point.overrides,
                             "summary": summary, "host": host or {}})
                if (failed := trust_failures(summary)) is not None:
                    # listed in runs.csv and on compare's page, never pooled
                    untrusted.append({"rep": rep, "failed": failed})
                    continue
                summaries.append(summary)
                invocations.append(_invocation(run_dir))
                names.append(host_name(host) if host is not None else "")
                if host is not None:
                    hosts.append(host)
                    all_hosts[host_name(host)] = host
        _check_hosts(point, hosts, mix_hosts)
        _check_invocations(point, invocations, mix_hosts)
        if batch := _batch_effects(point, plan_.metrics, summaries, {"invocation": invocations, "host": names}):
            row["batch_effects"] = batch
        point_hosts[point.id] = hosts
        row["hosts"] = sorted({str(h.get("hostname")) for h in hosts})
        row["status"] = repetitions_status(len(summaries), plan_.repetitions, len(untrusted))
        row["untrusted"] = len(untrusted)
        row["untrusted_runs"] = untrusted
        row["repetitions"] = len(summaries)
        for metric in plan_.metrics:
            values = [v for v in (metric_value(s, metric) for s in summaries) if v is not None]
            if values:
                m, ci = mean_ci95(values)
                row["metrics"][metric] = {"mean": m, "ci95": ci, "n": len(values), "values": values}
        rows.append(row)
    _check_host_sets(rows, point_hosts, mix_hosts)
    # Hosts by hostname, told apart by machine id where clones share one.
    names_unique = len({h.get("hostname") for h in all_hosts.values()}) == len(all_hosts)
    host_fields = ("kernel", "cpus", "bbrctl_version", "objects_sha256", "algorithms_sha256")
    hosts_summary = {str(h.get("hostname")) + ("" if names_unique else f" ({name[:8]})"):
                     {k: h.get(k) for k in host_fields} for name, h in sorted(all_hosts.items())}
    write_json(out / "sweep.json", "sweep", {"name": plan_.name, "metrics": plan_.metrics, "points": rows,
                                             "hosts": hosts_summary})
    keys = sorted({k for p in plan_.points for k in p.overrides})
    with (out / "sweep.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(keys + ["status"] + [f"{m}{s}" for m in plan_.metrics for s in ("_mean", "_ci95", "_n")])
        for row in rows:
            cells: list[Any] = [row["overrides"].get(k, "") for k in keys] + [row["status"]]
            for metric in plan_.metrics:
                stat = row["metrics"].get(metric)
                extra: list[Any] = ["", "", 0]
                if stat:
                    extra = [stat["mean"], "" if stat["ci95"] is None else stat["ci95"], stat["n"]]
                cells += extra
            writer.writerow(cells)
    write_runs_csv(out, plan_, runs, keys)
    link_labels(out, plan_)
    text = sweep_table(plan_, rows, hosts_summary)
    (out / "table.txt").write_text(text + "\n")
    write_page(out, plan_, rows, hosts_summary, [r["host"] for r in runs if r["host"]])
    return text


def write_page(out: Path, plan_: Plan, rows: list[dict[str, Any]], hosts: dict[str, dict[str, Any]],
               run_hosts: list[dict[str, Any]]) -> Path:
    """sweep.html: the table, its cells marked as compare's are (pages), each run's trust verdict, the facts."""
    keys = sorted({k for p in plan_.points for k in p.overrides})
    facts = [f"{len(plan_.points)} point(s)" + (f" over {', '.join(keys)}" if keys else "")
             + f", {plan_.repetitions} repetition(s) each, interleaved (every point once, then the next round)."]
    if host := pages.host_fact(run_hosts):
        facts.append(host)
    body = sweep_table(plan_, rows, hosts, "html") + pages.verdicts(
        [(row["label"], done_runs(out, row["id"])) for row in rows])
    return html.write_page(out / PAGE, f"bbrbench sweep: {plan_.name}", facts, body, LEGEND, [])


RUN_HOST_FIELDS = ("hostname", "machine_id", "kernel", "cpus", "bbrctl_version")


def write_runs_csv(out: Path, plan_: Plan, runs: list[dict[str, Any]], keys: list[str]) -> None:
    """runs.csv: one row per finished run (tidy data for pandas or R), its point's overrides, every
    metric of the sweep, whether it passed the trust check (failed runs are listed, not pooled)
    and the host that ran it."""
    with (out / "runs.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["point", "label", "rep", *keys, *plan_.metrics, "trusted", "trust_failed",
                         *(f"host_{f}" for f in RUN_HOST_FIELDS)])
        for r in runs:
            values = [metric_value(r["summary"], m) for m in plan_.metrics]
            trust = r["summary"].get("trust", {})
            writer.writerow([r["point"], r["label"], r["rep"], *(r["overrides"].get(k, "") for k in keys),
                             *("" if v is None else v for v in values), int(trust.get("ok", True)),
                             "; ".join(trust.get("failed", [])), *(r["host"].get(f, "") for f in RUN_HOST_FIELDS)])


def sweep_table(plan_: Plan, rows: list[dict[str, Any]], hosts: dict[str, dict[str, Any]], form: str = "text") -> str:
    """The table as console text, or as HTML whose cells are marked for runs left out by the trust check; a
    sweep whose runs came from more than one host names them per point (and, as text, below)."""
    mixed = len(hosts) > 1
    header = ["point"] + [m.split(".", 1)[1] for m in plan_.metrics] + ["status"] + (["hosts"] if mixed else [])
    body: list[list[str | tables.Marked | None]] = []
    for row in rows:
        marks = pages.untrusted_marks(row) if form == "html" else []
        cells: list[str | tables.Marked | None] = [row["label"]]
        for m in plan_.metrics:
            stat = row["metrics"].get(m)
            cells.append(pages.cell(None if stat is None else format_mean(stat["mean"], stat["ci95"]), marks))
        cells.append(row["status"])
        if mixed:
            cells.append(", ".join(row.get("hosts", [])))
        body.append(cells)
    if form == "html":
        return tables.html(header, body)
    text = tables.text(header, body) + "\n(mean ± 95% confidence half-width over repetitions)"
    if mixed:
        text += "\nhosts: " + "; ".join(f"{name} (kernel {h['kernel']}, {h['cpus']} CPUs, {h['bbrctl_version']})"
                                        for name, h in hosts.items())
    return text


def format_mean(mean: float, ci95: float | None) -> str:
    return f"{mean:.3g}" if ci95 is None else f"{mean:.3g} ± {ci95:.2g}"
