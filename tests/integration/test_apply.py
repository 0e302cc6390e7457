"""`bbrctl apply` restores a host's declared state the way bbrkit.service does at boot: run with the unit's
own command line in a private mount namespace on a fresh bpffs and a fresh cgroup2 mount (what a boot
gives: no pins, no attachments, the cgroup hierarchy as systemd mounts it), then again to find nothing to
change, then with an empty file to take it all away. The namespace and its mounts end with the test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netutil import BBRCTL

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "dist" / "systemd" / "bbrkit.service"
SHIPPED_CONF = "/etc/bbrkit/bbrkit.conf"

CONF = """# what a host declares
attach bbr3 beta=0.6 ecn=1
rule web arms=bbr3:90,cubic:10 lport=8080   # the canary
rule api arms=reno rport=443 priority=5
"""

# Runs inside the private mount namespace: the fresh mounts, then each command; prints what each said.
BOOT = """
import json, subprocess, sys
start, shipped, conf, empty, bbrctl, audit, edited = sys.argv[1:8]
for line in subprocess.run(["findmnt", "-rno", "TARGET", "-t", "cgroup2"], capture_output=True,
                           text=True).stdout.split():
    subprocess.run(["umount", "-l", line], check=True)
subprocess.run(["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"], check=True)
subprocess.run(["mkdir", "-p", "/run/bbrkit-boot-test"], check=True)
subprocess.run(["mount", "-t", "tmpfs", "none", "/run/bbrkit-boot-test"], check=True)
subprocess.run(["mkdir", "/run/bbrkit-boot-test/cgroup2"], check=True)
subprocess.run(["mount", "-t", "cgroup2", "cgroup2", "/run/bbrkit-boot-test/cgroup2"], check=True)
env = {"BBRKIT_AUDIT_LOG": audit, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
def run(*argv):
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    return {"status": r.returncode, "out": r.stdout, "err": r.stderr}
boot_cmd = [bbrctl if w.endswith("/bbrctl") else conf if w == shipped else w for w in start.split()]
out = {"dry": run(bbrctl, "apply", "--dry-run", conf), "boot": run(*boot_cmd),
       "again": run(bbrctl, "apply", "--dry-run", conf), "edited": run(bbrctl, "apply", "-n", edited),
       "rules": run(bbrctl, "policy", "list", "--json"),
       "params": run(bbrctl, "show", "bbr3", "--json"), "clear": run(bbrctl, "apply", empty),
       "pins": subprocess.run(["find", "/sys/fs/bpf/bbrkit", "-mindepth", "1"], capture_output=True,
                              text=True).stdout.split()}
print(json.dumps(out))
"""


def exec_start() -> str:
    return next(line.split("=", 1)[1] for line in UNIT.read_text().splitlines() if line.startswith("ExecStart="))


def test_the_unit_runs_apply_on_the_shipped_config() -> None:
    assert exec_start() == f"@BINDIR@/bbrctl apply {SHIPPED_CONF}"


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs util-linux unshare")
def test_boot_restores_the_declared_state_on_fresh_mounts(tmp_path: Path) -> None:
    conf, empty, audit = tmp_path / "bbrkit.conf", tmp_path / "empty.conf", tmp_path / "audit.log"
    conf.write_text(CONF)
    edited = tmp_path / "edited.conf"
    edited.write_text(CONF.replace("bbr3:90,cubic:10", "bbr3:50,cubic:50").replace("rule api", "# rule api"))
    empty.write_text("# nothing declared\n")
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", BOOT,
                        exec_start(), SHIPPED_CONF, str(conf), str(empty), str(BBRCTL), str(audit), str(edited)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    plan = ["+ attach bbr3", "~ set bbr3 beta=0.6 (now 0.7) ecn=1 (now 0)",
            "+ rule web arms=bbr3:90,cubic:10 holdback=cubic lport=8080 priority=100",
            "+ rule api arms=reno:100 holdback=reno rport=443 priority=5"]
    assert out["dry"]["status"] == 0, out["dry"]["err"]
    assert out["dry"]["out"].splitlines() == plan
    assert out["boot"]["status"] == 0, out["boot"]["err"]
    assert out["boot"]["out"].splitlines()[:len(plan)] == plan
    assert out["again"]["out"] == "nothing to change\n", out["again"]
    assert out["edited"]["out"].splitlines() == [
        "~ rule web arms=bbr3:50,cubic:50 holdback=cubic lport=8080 priority=100 "
        "(was arms=bbr3:90,cubic:10 holdback=cubic lport=8080 priority=100)", "- rule api"]
    rules = json.loads(out["rules"]["out"])["rules"]
    assert [(r["name"], r["priority"], [a["algo"] for a in r["arms"]]) for r in rules] == [
        ("web", 100, ["bbr3", "cubic"]), ("api", 5, ["reno"])]
    params = {p["name"]: p["value"] for p in json.loads(out["params"]["out"])["params"]}
    assert (params["beta"], params["ecn"]) == (0.6, 1)
    assert out["clear"]["status"] == 0, out["clear"]["err"]
    assert out["clear"]["out"].splitlines()[:3] == ["- rule web", "- rule api", "- detach bbr3"]
    assert out["pins"] == [], out["pins"]
    log = audit.read_text().splitlines()
    changes = [line.split(" ", 3)[3] for line in log]
    assert changes == [*(f"apply {conf}: {step}" for step in plan), f"apply {conf}",
                       f"apply {empty}: - rule web", f"apply {empty}: - rule api", f"apply {empty}: - detach bbr3",
                       f"apply {empty}"]
