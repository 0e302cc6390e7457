"""`bbrctl policy add` refuses a bad rule with one clear line and exit status 2 before it needs root or
touches anything, so these run as nobody: each case is one way an operator gets a rule wrong. The address
rules are RFC 4632's (IPv4 prefixes) and RFC 4291's (IPv6 prefixes, IPv4-mapped ::ffff:0:0/96): a prefix
with bits set past its length names no network."""

from __future__ import annotations

import pytest

from loaderutil import ctl

BAD_RULES = [
    (["arms=bbr1:90,cubic:5"], "arms: weights add up to 95.00%, not 100%"),
    (["arms=bbr1:60,cubic:60"], "arms: weights add up to 120.00%, not 100%"),
    (["arms=bbr1:90.001,cubic:9.999"], "weight '90.001' of bbr1 is not a percentage"),
    (["arms=bbr1,cubic"], "a split needs a weight per arm"),
    (["arms=cubic:50,cubic:50"], "arms: cubic appears twice"),
    (["arms=a:20,b:20,c:20,d:20,e:20"], "at most 4 arms"),
    (["arms=no_such_cc"], "unknown algorithm 'no_such_cc'"),
    (["arms=cubic", "dst=10.0.0.1/8"], "dst '10.0.0.1/8' has host bits set beyond /8"),
    (["arms=cubic", "dst=10.0.0.0/33"], "prefix length must be 0-32"),
    (["arms=cubic", "dst=2001:db8::1/32"], "has host bits set beyond /32"),
    (["arms=cubic", "dst=2001:db8::/129"], "prefix length must be 0-128"),
    (["arms=cubic", "dst=300.1.2.0/24"], "'300.1.2.0' is not an IPv4 address"),
    (["arms=cubic", "dst=10.0.0.0"], "is not a prefix (ADDRESS/LENGTH)"),
    (["arms=cubic", "lport=0"], "lport '0' is not a port (1-65535)"),
    (["arms=cubic", "rport=65536"], "rport '65536' is not a port (1-65535)"),
    (["arms=cubic", "cgroup=relative/path"], "cgroup 'relative/path' must be a path below the cgroup2 root"),
    (["arms=cubic", "cgroup=/a/../b"], "must be a path below the cgroup2 root"),
    (["arms=cubic", "cgroup=/1/2/3/4/5/6/7/8/9"], "at most 95 characters, 8 levels, names under 63 characters"),
    (["arms=cubic", f"cgroup=/{'n' * 63}"], "at most 95 characters, 8 levels, names under 63 characters"),
    (["arms=cubic", f"netns={'n' * 64}"], "netns 'nnnn"),
    (["arms=cubic", "holdback=bbr"], "holdback 'bbr' is not one of the rule's arms"),
    (["arms=cubic", "fallback=maybe"], "fallback 'maybe' is not yes or no"),
    (["arms=cubic", "priority=-1"], "priority '-1' is not 0-1000000"),
    (["arms=cubic", "colour=blue"], "unknown key 'colour'"),
    (["cubic"], "'cubic' is not KEY=VALUE"),
    (["lport=80"], "missing arms=ALGO"),
]


@pytest.mark.parametrize(("args", "message"), BAD_RULES, ids=[" ".join(a) for a, _ in BAD_RULES])
def test_bad_rule_is_one_line_and_usage_error(args: list[str], message: str) -> None:
    r = ctl("policy", "add", "web", *args, unprivileged=True)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("bbrctl: policy add web: "), lines[0]
    assert message in lines[0]
    assert r.stdout == ""


def test_bad_rule_name() -> None:
    r = ctl("policy", "add", "web server", "arms=cubic", unprivileged=True)
    assert r.returncode == 2
    assert "rule name 'web server' must be 1-15 letters" in r.stderr


def test_bbrkit_algorithm_not_attached_names_the_fix() -> None:
    """bpf_setsockopt loads no module and no BPF object: an arm must be registered when the rule is added."""
    r = ctl("policy", "add", "web", "arms=bbr_acd:50,cubic:50", unprivileged=True)
    if r.returncode == 1 and "must be run as root" in r.stderr:
        pytest.skip("bbr_acd is attached here: the rule passed validation")
    assert r.returncode == 2
    assert "bbr_acd is not attached: bbrctl attach bbr_acd first" in r.stderr


def test_valid_rule_reaches_the_root_check() -> None:
    """Everything that parses goes on to need root: validation alone never refuses a good rule."""
    r = ctl("policy", "add", "web", "arms=cubic:99.5,reno:0.5", "holdback=reno", "dst=10.0.0.0/8,2001:db8::/32",
            "lport=80", "priority=5", "fallback=yes", unprivileged=True)
    assert r.returncode == 1
    assert "must be run as root" in r.stderr


def test_unknown_verb() -> None:
    r = ctl("policy", "frob", "web", unprivileged=True)
    assert r.returncode == 2
    assert "unknown verb 'frob' (add, del, list, show, revert, migrate, explain)" in r.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["migrate"], "migrate needs a RULE name"),
    (["migrate", "a", "b"], "migrate takes one RULE name"),
    (["show", "a", "--dry-run"], "--dry-run goes with migrate only"),
    (["migrate", "a", "--migrate"], "--migrate goes with revert only"),
])
def test_migrate_usage_errors(args: list[str], message: str) -> None:
    r = ctl("policy", *args, unprivileged=True)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1 and message in r.stderr
