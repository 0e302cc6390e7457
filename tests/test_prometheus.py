"""The Prometheus pieces shipped in dist/prometheus/, held to Prometheus' own tool: promtool checks the rules
file, runs its unit tests (tests/prometheus/, the alerts on series shaped as bbrctl export writes them) and
parses every query of the Grafana dashboard. That the names they use are the exporter's is checked on a
real scrape (tests/integration/test_export.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "dist" / "prometheus"
RULES = DIST / "bbrkit.rules.yml"
DASHBOARD = DIST / "bbrkit-dashboard.json"
# Grafana's variables in the dashboard's queries, as a query would see them.
GRAFANA_VARIABLES = {"$rule": ".*", "$__rate_interval": "5m"}

pytestmark = pytest.mark.skipif(not shutil.which("promtool"), reason="needs promtool (Debian's prometheus)")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)


def dashboard_queries() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def test_rules_pass_promtool_check() -> None:
    r = promtool("check", "rules", str(RULES))
    assert r.returncode == 0, r.stdout + r.stderr


def test_alerts_fire_as_their_unit_tests_say() -> None:
    r = promtool("test", "rules", str(ROOT / "tests" / "prometheus" / "bbrkit_rules_test.yml"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_dashboard_queries_parse(tmp_path: Path) -> None:
    """Each panel's query, its Grafana variables filled in, as a recording rule promtool must accept."""
    queries = dashboard_queries()
    assert len(queries) >= 10
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    for i, q in enumerate(queries):
        for var, value in GRAFANA_VARIABLES.items():
            q = q.replace(var, value)
        assert "$" not in q, q
        lines += [f"      - record: dashboard:query{i}", f"        expr: {json.dumps(q)}"]
    rules = tmp_path / "dashboard.rules.yml"
    rules.write_text("\n".join(lines) + "\n")
    r = promtool("check", "rules", str(rules))
    assert r.returncode == 0, r.stdout + r.stderr


def used_metric_names() -> set[str]:
    """The bbrkit_ series the rules and the dashboard query (not the rules' own bbrkit: names)."""
    text = RULES.read_text() + "\n".join(dashboard_queries())
    return {re.sub(r"_(bucket|sum|count)$", "", m) for m in re.findall(r"\bbbrkit_[a-z_]+", text)}


def test_queries_use_conventional_names() -> None:
    """No unit abbreviations (bit/s as _bps), counters queried with rate() end in _total."""
    names = used_metric_names()
    assert names and not [n for n in names if n.endswith("_bps")]
    text = RULES.read_text() + "\n".join(dashboard_queries())
    for counter in re.findall(r"(?:rate|increase)\((bbrkit_[a-z_]+)", text):
        assert counter.endswith("_total"), counter
