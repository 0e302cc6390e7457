"""bbrbench rollout as a pipeline runs it: against a fake exporter and a fake Prometheus query API on
127.0.0.1 (each answer a function of how many requests came before, so nothing depends on timing) and a
fake bbrctl that records what it was asked. The exit status tells passed, reverted and inconclusive apart;
--log writes one timestamped JSON object per step; --ramp promotes only after every guard passed."""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from rolloututil import arm, exposition

from bbrbench.cli import main
from bbrbench.cli.rollout import EXIT_INCONCLUSIVE, EXIT_PASSED, EXIT_REVERTED

Answer = Callable[[int, str], tuple[str, str]]  # (request number, path) -> (content type, body)
RULE_JSON = {"rules": [{"name": "web", "slot": 0, "priority": 100, "cgroup": None, "lport": 8080, "rport": None,
                        "dst": [], "fallback": False, "holdback": "cubic",
                        "arms": [{"algo": "bbr3", "weight": 10}, {"algo": "cubic", "weight": 90}]}]}


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], str]]:
    """serve(answer) starts an HTTP server on 127.0.0.1 answering GETs with answer(n, path); returns its
    base URL. Every server is shut down afterwards."""
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Answer) -> str:
        count = [0]

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                kind, body = answer(count[0], self.path)
                count[0] += 1
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    try:
        yield start
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


@pytest.fixture
def fake_bbrctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], Path]:
    """fake_bbrctl(with_migrate) installs a bbrctl that appends its arguments to a file (returned) and
    answers policy show and policy --help."""
    def install(with_migrate: bool) -> Path:
        calls = tmp_path / "calls"
        (tmp_path / "rule.json").write_text(json.dumps(RULE_JSON))
        verbs = "  revert RULE\n" + ("  migrate RULE           move established connections\n" if with_migrate else "")
        script = tmp_path / "bbrctl"
        script.write_text(f"""#!/bin/sh
echo "$*" >> {calls}
case "$*" in
"policy show"*) cat {tmp_path / 'rule.json'} ;;
"policy --help") printf '%s' '{verbs}' ;;
esac
""")
        script.chmod(0o755)
        monkeypatch.setenv("BBRCTL", str(script))
        return calls
    return install


def exporter(stalls: Callable[[int], int]) -> Answer:
    """Scrape n: bbr3 with stalls(n) of 10 flows stalled, cubic with none; steady goodput."""
    return lambda n, path: ("text/plain; version=0.0.4",
                            exposition({"bbr3": arm(n, 8e6, stalls(n)), "cubic": arm(n, 8e6, 0)}))


def rollout(url_opt: list[str], *extra: str) -> int:
    # A window of 20 intervals: a guard needs 3, so a loaded machine's slow scrapes change no outcome.
    return main(["rollout", "web", *url_opt, "--window", "1", "--interval", "0.05", "--guard", "stalls=0.05",
                 *extra])


def test_breach_reverts_and_exits_nonzero(serve: Callable[[Answer], str], fake_bbrctl: Callable[[bool], Path],
                                          tmp_path: Path) -> None:
    calls = fake_bbrctl(False)
    url = serve(exporter(lambda n: 5))
    log = tmp_path / "steps.jsonl"
    assert rollout(["--url", f"{url}/metrics"], "--log", str(log)) == EXIT_REVERTED
    assert "policy revert web" in calls.read_text().splitlines()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events][0] == "start" and [e["event"] for e in events][-2:] == ["revert", "end"]
    assert events[-1]["outcome"] == "breached" and events[-1]["reverted"] is True
    for e in events:  # each stamped in UTC, in order
        assert datetime.datetime.fromisoformat(e["time"]).utcoffset() == datetime.timedelta(0)
    assert [e["time"] for e in events] == sorted(e["time"] for e in events)


def test_equal_arms_pass(serve: Callable[[Answer], str], fake_bbrctl: Callable[[bool], Path]) -> None:
    calls = fake_bbrctl(False)
    url = serve(exporter(lambda n: 0))
    assert rollout(["--url", f"{url}/metrics"]) == EXIT_PASSED
    assert not calls.exists() or "revert" not in calls.read_text()


def test_noisy_arms_are_inconclusive(serve: Callable[[Answer], str], fake_bbrctl: Callable[[bool], Path]) -> None:
    """Stalls that come and go, a mean excess at the margin itself (0.1 every other interval): however many
    intervals, the interval straddles the margin, so neither reverted nor passed."""
    calls = fake_bbrctl(False)
    url = serve(exporter(lambda n: n % 2))
    assert rollout(["--url", f"{url}/metrics"]) == EXIT_INCONCLUSIVE
    assert not calls.exists() or "revert" not in calls.read_text()


def test_no_revert_still_exits_breached(serve: Callable[[Answer], str], fake_bbrctl: Callable[[bool], Path]) -> None:
    calls = fake_bbrctl(False)
    url = serve(exporter(lambda n: 5))
    assert rollout(["--url", f"{url}/metrics"], "--no-revert") == EXIT_REVERTED
    assert not calls.exists() or "revert" not in calls.read_text()


def test_migrate_absent_is_refused_before_anything(serve: Callable[[Answer], str],
                                                   fake_bbrctl: Callable[[bool], Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    calls = fake_bbrctl(False)
    url = serve(exporter(lambda n: 5))
    assert rollout(["--url", f"{url}/metrics"], "--migrate") == 2
    assert "bbrctl policy migrate" in capsys.readouterr().err
    assert calls.read_text().splitlines() == ["policy --help"]


def test_migrate_follows_revert(serve: Callable[[Answer], str], fake_bbrctl: Callable[[bool], Path]) -> None:
    calls = fake_bbrctl(True)
    url = serve(exporter(lambda n: 5))
    assert rollout(["--url", f"{url}/metrics"], "--migrate") == EXIT_REVERTED
    lines = calls.read_text().splitlines()
    assert lines[-2:] == ["policy revert web", "policy migrate web"]


def test_ramp_promotes_after_passing_and_stops_at_a_breach(serve: Callable[[Answer], str],
                                                           fake_bbrctl: Callable[[bool], Path],
                                                           tmp_path: Path) -> None:
    """Steps 1, 10, 50: the arms are equal until the rule gives bbr3 50%, where it stalls; the rule is
    written with 1% then 10% then 50%, other keys kept, and reverted in the third step."""
    calls = fake_bbrctl(False)
    url = serve(exporter(lambda n: 5 if "arms=bbr3:50," in calls.read_text() else 0))
    log = tmp_path / "steps.jsonl"
    assert rollout(["--url", f"{url}/metrics"], "--ramp", "1,10,50", "--log", str(log)) == EXIT_REVERTED
    adds = [line for line in calls.read_text().splitlines() if line.startswith("policy add")]
    assert adds == [f"policy add web replace=yes arms=bbr3:{p},cubic:{100 - p} holdback=cubic priority=100 lport=8080"
                    for p in (1, 10, 50)]
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events.count("promote") == 2 and events[-2:] == ["revert", "end"]


@pytest.mark.parametrize("ramp", ["1,x", "10,5", "0,50", "50,101", "100"])
def test_bad_ramp(ramp: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rollout", "web", "--ramp", ramp]) == 2
    assert "--ramp step" in capsys.readouterr().err


def test_prometheus_source_judges_the_fleet(serve: Callable[[Answer], str],
                                            fake_bbrctl: Callable[[bool], Path]) -> None:
    """Through the query API: two hosts' series arrive summed per arm; bbr3's stalls on one host breach."""
    calls = fake_bbrctl(False)
    seen: list[str] = []

    def api(n: int, path: str) -> tuple[str, str]:
        parsed = urlparse(path)
        assert parsed.path == "/api/v1/query"
        seen.append(parse_qs(parsed.query)["query"][0])
        result = []
        for host_stalls in (5, 0):
            text = exposition({"bbr3": arm(n, 8e6, host_stalls), "cubic": arm(n, 8e6, 0)})
            for line in text.splitlines():
                if line.startswith("#") or "_bucket" in line:
                    continue
                name_labels, value = line.rsplit(" ", 1)
                name, labels = name_labels.split("{", 1)
                pairs = (kv.split("=", 1) for kv in labels.rstrip("}").split(","))
                metric = {"__name__": name, **{k: v.strip('"') for k, v in pairs if k in ("arm", "holdback")}}
                result.append({"metric": metric, "value": [n, value]})
        return "application/json", json.dumps({"status": "success", "data": {"resultType": "vector",
                                                                             "result": result}})

    url = serve(api)
    assert rollout(["--prometheus", url]) == EXIT_REVERTED
    assert seen and all('rule="web"' in q and q.startswith("sum by (__name__, arm, holdback)") for q in seen)
    assert "policy revert web" in calls.read_text()


def test_ramp_stays_at_an_inconclusive_step(serve: Callable[[Answer], str],
                                            fake_bbrctl: Callable[[bool], Path]) -> None:
    """Without evidence that the guards pass, the candidate is not promoted: the rule stays at 1%."""
    calls = fake_bbrctl(False)
    url = serve(exporter(lambda n: n % 2))
    assert rollout(["--url", f"{url}/metrics"], "--ramp", "1,10") == EXIT_INCONCLUSIVE
    adds = [line for line in calls.read_text().splitlines() if line.startswith("policy add")]
    assert len(adds) == 1 and "arms=bbr3:1,cubic:99" in adds[0]
    assert "revert" not in calls.read_text()


def test_ramp_to_full_share_after_a_pass(serve: Callable[[Answer], str], fake_bbrctl: Callable[[bool], Path]) -> None:
    """At 100% the holdback gets nothing to compare with (here, as it would, it has no flow left): the step
    after a passed one is applied, not watched."""
    calls = fake_bbrctl(False)

    def answer(n: int, path: str) -> tuple[str, str]:
        full = "arms=bbr3:100," in calls.read_text()
        return "text/plain", exposition({"bbr3": arm(n, 8e6, 0), "cubic": arm(n, 8e6, 0, flows=0 if full else 10)})
    url = serve(answer)
    assert rollout(["--url", f"{url}/metrics"], "--ramp", "50,100") == EXIT_PASSED
    adds = [line for line in calls.read_text().splitlines() if line.startswith("policy add")]
    assert [a.split()[4] for a in adds] == ["arms=bbr3:50,cubic:50", "arms=bbr3:100,cubic:0"]
