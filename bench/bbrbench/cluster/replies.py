"""What the client accepts from a worker: a health report and a run's reply, each checked field by field
before anything of it is used or written to a file. A malformed one is refused in one line, and the run
it carried is redone (elsewhere now, or on resume)."""

from __future__ import annotations

from typing import Any

from ..errors import HarnessError

# A worker's message is one line of `bbrbench run`'s stderr; longer is not a message.
MAX_TEXT_CHARS = 2000
RUN_STATUSES = ("done", "not_runnable", "failed", "timeout")


def one_line(value: object, what: str) -> str:
    """value as a string fit to be written into a results file as one line: refused if it is not a string,
    is too long, or holds control characters (a newline would inject a line of its own)."""
    if not isinstance(value, str):
        raise HarnessError(f"{what}: not a string ({type(value).__name__})")
    if len(value) > MAX_TEXT_CHARS:
        raise HarnessError(f"{what}: longer than {MAX_TEXT_CHARS} characters")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        raise HarnessError(f"{what}: holds control characters")
    return value


def health_report(report: object) -> dict[str, Any]:
    """A worker's health() answer, or HarnessError naming what is wrong with it."""
    if not isinstance(report, dict):
        raise HarnessError(f"health report: not a mapping ({type(report).__name__})")
    for key in ("hostname", "kernel"):
        one_line(report.get(key), f"health report {key}")
    for key in ("machine_id", "bbrctl_version", "objects_sha256"):
        if report.get(key) is not None:
            one_line(report[key], f"health report {key}")
    if not isinstance(report.get("cpus"), int) or isinstance(report.get("cpus"), bool):
        raise HarnessError("health report cpus: not a number")
    problems = report.get("problems")
    if not isinstance(problems, list):
        raise HarnessError("health report problems: not a list")
    for problem in problems:
        one_line(problem, "health report problem")
    return report


def run_reply(reply: object, nonce: str) -> tuple[str, str, bytes | None]:
    """A run's reply as (status, message, packed run directory or None), or HarnessError: a status the
    client knows, a one-line message, the nonce of this try, and an archive exactly when it says done."""
    if not isinstance(reply, dict):
        raise HarnessError(f"reply: not a mapping ({type(reply).__name__})")
    status = reply.get("status")
    if status not in RUN_STATUSES:
        raise HarnessError(f"reply: unknown status {str(status)[:40]!r}")
    message = one_line(reply.get("message", ""), "reply message")
    if reply.get("nonce") != nonce:
        raise HarnessError("reply: not for this try (its nonce differs)")
    tar = reply.get("tar")
    if status == "done" and not isinstance(tar, bytes):
        raise HarnessError("reply: done without an archive")
    if status != "done" and tar is not None:
        raise HarnessError(f"reply: {status} with an archive")
    return status, message, tar
