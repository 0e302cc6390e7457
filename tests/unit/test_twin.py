"""bbrkit-twin (bench/twin/): the host twin of a transfer. Its records carry exactly the keys of
`bbrctl trace --format jsonl`, it is deterministic for a seed, it refuses bad input with one line, and
the core it runs shows the behaviours draft-ietf-ccwg-bbr and the kernel/v3 code name, on the
simulated path: STARTUP leaves after three rounds of less than 25% growth (draft 4.3.1.2, the kernel's
bbr_check_full_bw_reached), bbr3 leaves it on loss with inflight_longterm set (draft
BBRCheckStartupHighLoss, v3 bbr_check_loss_too_high_in_startup), a spurious loss is undone (TCP's
tcp_try_undo_dsack -> undo_cwnd), so is a spurious RTO behind an ACK blackout (tcp_try_undo_loss),
an app-limited flow reaches PROBE_RTT before the pipe is full and goes back to STARTUP (draft 4.3.4.4,
v3 bbr_exit_probe_rtt)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "build" / "bbrkit-twin"
BBRCTL = ROOT / "build" / "bbrctl"
MEANING_COLUMN = 35  # `bbrctl trace --help`: two spaces, a 23-wide key, a space, an 8-wide unit, a space
VARIANT_OWNERS = re.compile(r"^(bbr\w*)(, bbr\w*)*: ")


def twin(*args: str) -> list[dict]:
    assert TWIN.exists(), f"{TWIN} is missing: run `make` first"
    out = subprocess.run([str(TWIN), *args], capture_output=True, text=True, check=True, timeout=120)
    return [json.loads(line) for line in out.stdout.splitlines()]


def trace_keys(algo: str) -> list[str]:
    """The record keys `bbrctl trace` writes for `algo`: the common ones, then the algorithm's own."""
    text = subprocess.run([str(BBRCTL), "trace", "--help"], capture_output=True, text=True, check=True).stdout
    common: list[str] = []
    own: list[str] = []
    for line in text.split("record keys")[1].splitlines()[1:]:
        key, meaning = line.split()[0], line[MEANING_COLUMN:]
        owners = VARIANT_OWNERS.match(meaning)
        if owners is None:
            common.append(key)
        elif algo in meaning[:owners.end()].rstrip(": ").split(", "):
            own.append(key)
    return common + own


@pytest.mark.parametrize("algo", ["bbr1", "bbr2", "bbr3"])
def test_records_have_exactly_the_trace_keys(algo: str) -> None:
    records = twin("--algo", algo, "--rate", "10mbit", "--rtt", "20ms", "--duration", "2s")
    assert records[0]["event"] == "init"
    for r in records:
        assert list(r) == trace_keys(algo)
        assert r["algo"] == algo


def drain_entry(records: list[dict]) -> dict:
    return next(r for r in records if r["mode"] == "DRAIN")


@pytest.mark.parametrize("algo", ["bbr3", "bbr1"])
def test_startup_leaves_after_three_rounds_without_25_percent_growth(algo: str) -> None:
    """A 4-BDP buffer: no loss, so only the plateau ends STARTUP. The two round ends before DRAIN
    count 1 and 2 rounds without growth over the same full_bw, the third enters DRAIN with
    full_bw_reached, at the path's rate, the bandwidth still under 1.25 x full_bw."""
    records = twin("--algo", algo, "--rate", "20mbit", "--rtt", "40ms", "--buffer", "400kb", "--duration", "3s")
    drain = drain_entry(records)
    assert drain["lost"] == 0 and drain["full_bw_reached"] == 1 and drain["full_bw_cnt"] == 3, drain
    rounds = {r["round"]: r for r in records if r["event"] == "round" and r["mode"] == "STARTUP"}
    last = drain["round"]  # the round end that counted the third flat round enters DRAIN
    flat = [rounds[last - 2], rounds[last - 1]]
    assert [r["full_bw_cnt"] for r in flat] == [1, 2], flat
    assert flat[0]["full_bw_bps"] == flat[1]["full_bw_bps"] == drain["full_bw_bps"]
    assert drain["bw_bps"] < 1.25 * drain["full_bw_bps"]
    assert 0.9 * 20e6 <= drain["max_bw_bps"] <= 1.1 * 20e6
    if algo == "bbr3":
        assert drain["full_bw_now"] == 1 and drain["drain_start_round"] == drain["round"]
        assert drain["inflight_longterm"] is None  # a plateau exit sets no bound


def test_bbr3_startup_leaves_on_loss_and_sets_inflight_longterm() -> None:
    """A quarter-BDP buffer: STARTUP's overshoot loses more than 2% of a flight before the plateau
    shows; bbr3 leaves with fewer than 3 flat rounds and inflight_longterm set to at least the BDP
    estimate (v3: max(BDP, the last round's delivered volume))."""
    records = twin("--algo", "bbr3", "--rate", "20mbit", "--rtt", "40ms", "--buffer", "25kb", "--duration", "3s")
    drain = drain_entry(records)
    assert drain["lost"] > 0 and drain["full_bw_cnt"] < 3, drain
    bdp_packets = drain["max_bw_bps"] / 8 * drain["min_rtt_us"] / 1e6 / drain["mss"]
    assert drain["inflight_longterm"] is not None and drain["inflight_longterm"] >= bdp_packets, drain


def test_same_seed_same_records_other_seed_other_drops() -> None:
    args = ("--algo", "bbr3", "--rate", "10mbit", "--rtt", "40ms", "--loss", "1%", "--duration", "4s")
    first = twin(*args, "--seed", "7")
    assert first == twin(*args, "--seed", "7")
    assert first != twin(*args, "--seed", "8")
    assert first[-1]["lost"] > 0


@pytest.mark.parametrize("algo", ["bbr3", "bbr1"])
def test_spurious_loss_is_undone(algo: str) -> None:
    """One reordered packet at 3 s: marked lost (one loss, one retransmit), recovery, then undone when
    the original arrives: an 'undo' record, and the flow is open again with its cwnd back."""
    records = twin("--algo", algo, "--rate", "10mbit", "--rtt", "40ms", "--buffer", "200kb",
                   "--spurious-loss", "3s", "--duration", "4s")
    undo = [r for r in records if r["event"] == "undo"]
    assert len(undo) == 1 and undo[0]["t_ns"] > 3e9 and undo[0]["ca_state"] == "recovery", undo
    after = [r for r in records if r["t_ns"] >= undo[0]["t_ns"] and r["event"] != "undo"]
    assert after[0]["ca_state"] == "open" and after[-1]["lost"] == 1 and after[-1]["retrans"] == 1
    before = [r for r in records if r["t_ns"] < 3e9][-1]
    assert after[0]["cwnd"] >= before["cwnd"], (before, after[0])


@pytest.mark.parametrize("algo", ["bbr3", "bbr1"])
def test_ack_blackout_makes_a_spurious_rto_that_is_undone(algo: str) -> None:
    """ACKs held from 1.9 s to 2.25 s (bbr3 cruising there): the RTO (200 ms + srtt without an ACK)
    fires inside the window and marks the flight lost (ca_state loss); the first held ACK echoes a send
    time before the RTO's retransmit, so TCP's timestamp check (the kernel's tcp_try_undo_loss ->
    tcp_packet_delayed, Eifel) undoes it at 2.25 s: an 'undo' record in loss state, then open, cwnd
    back, no second recovery."""
    records = twin("--algo", algo, "--rate", "50mbit", "--rtt", "20ms", "--buffer", "85p",
                   "--ack-blackout", "1.9s-2.25s", "--duration", "3s")
    undo = [r for r in records if r["event"] == "undo"]
    assert len(undo) == 1 and undo[0]["ca_state"] == "loss" and 2.25e9 <= undo[0]["t_ns"] < 2.251e9, undo
    before = [r for r in records if r["t_ns"] < 1.9e9][-1]
    after = [r for r in records if r["t_ns"] >= undo[0]["t_ns"] and r["event"] != "undo"]
    assert all(r["ca_state"] == "open" for r in after), {r["ca_state"] for r in after}
    assert after[0]["cwnd"] >= before["cwnd"] > undo[0]["cwnd"], (before, undo[0], after[0])
    assert after[-1]["lost"] == undo[0]["lost"] > 0  # the RTO's marks only: nothing lost after


def test_bbr3_app_limited_reaches_probe_rtt_before_the_pipe_is_full() -> None:
    """Writing 5 Mbit/s into a 100 Mbit/s path: every sample is app-limited, so STARTUP never sees a
    plateau; after the 5 s PROBE_RTT interval it enters PROBE_RTT with full_bw_reached 0 and returns
    to STARTUP, which ends once the application writes without limit."""
    records = twin("--algo", "bbr3", "--rate", "100mbit", "--rtt", "20ms", "--app-limit", "5mbit@0-7s",
                   "--duration", "8s")
    modes = [(r["mode"], r["full_bw_reached"], r["t_ns"] / 1e9) for r in records if r["event"] == "mode"]
    assert modes[0][:2] == ("PROBE_RTT", 0) and 5.0 <= modes[0][2] < 5.5, modes
    assert modes[1][:2] == ("STARTUP", 0), modes
    assert any(m[0] == "DRAIN" and m[2] > 7 for m in modes), modes
    startup = [r for r in records if r["event"] == "round" and 1 < r["t_ns"] / 1e9 < 5]
    assert startup and all(r["is_app_limited"] == 1 and r["app_limited"] == 1 for r in startup)


def test_bbr3_bw_shortterm_after_a_10x_decrease_is_cut_outside_probes_and_cleared_by_them() -> None:
    """Conformance case A.16's path (100 -> 10 Mbit/s at 5 s, 40 ms; its 1 MB FIFO as the 660 full
    frames the real link holds): the FIFO overflows in CRUISE, yet bw_shortterm (v3's bw_lo) reaches
    1.3 x the new rate only once max_bw has, as Google's v3 tcp_bbr.c makes it: bbr_adapt_lower_bounds
    cuts it once per loss round, to no less than 0.7 x (bbr_loss_lower_bounds), and returns while
    probing (bbr_is_probing_bandwidth: REFILL, UP); bbr_start_bw_probe_refill and bbr_exit_probe_rtt
    clear it (bbr_reset_lower_bounds)."""
    records = twin("--algo", "bbr3", "--rate", "100mbit@0,10mbit@5s", "--rtt", "40ms", "--buffer", "660p",
                   "--duration", "25s")
    after = [r for r in records if r["t_ns"] >= 5e9]
    assert next(r for r in after if r["lost"] > after[0]["lost"])["t_ns"] < 7e9  # overflow within 2 s
    refills = [r for r in after if r["event"] == "phase" and r["bw_phase"] == "REFILL"]
    returns = [b for a, b in zip(after, after[1:], strict=False)
               if a["mode"] == "PROBE_RTT" and b["mode"] != "PROBE_RTT"]
    assert refills and returns and all(r["bw_shortterm_bps"] is None for r in refills + returns)
    assert all(r["bw_shortterm_bps"] is None for r in after if r["bw_phase"] in ("REFILL", "UP"))
    cuts = [(a["bw_shortterm_bps"] or a["max_bw_bps"], b["bw_shortterm_bps"])
            for a, b in zip(after, after[1:], strict=False)
            if b["bw_shortterm_bps"] is not None and b["bw_shortterm_bps"] < (a["bw_shortterm_bps"] or 2**64)]
    assert len(cuts) >= 3 and all(new >= 0.7 * old for old, new in cuts), cuts
    bound = 1.3 * 10e6
    short = next(r for r in after if (r["bw_shortterm_bps"] or bound + 1) <= bound)
    assert short["t_ns"] >= next(r for r in after if r["max_bw_bps"] <= bound)["t_ns"], short


def test_a_rate_cut_reaches_the_packets_already_queued() -> None:
    # STARTUP has queued ~1.5 BDP at 50 Mbit/s when the rate falls to 5 Mbit/s: the bottleneck serves each
    # packet at the rate in force when it serves it, so the round in flight is ACKed no faster than the
    # link could serve it, 50 Mbit/s until the cut and 5 from then on (each ACK an RTT after its departure).
    cut_s, rtt_s, packet_bits = 0.2, 0.02, 1448 * 8
    records = twin("--algo", "bbr1", "--rate", "50mbit@0,5mbit@0.2s", "--rtt", "20ms", "--buffer", "170p",
                   "--duration", "1s")
    before = [r for r in records if r["t_ns"] < cut_s * 1e9][-1]
    after = next(r for r in records if r["t_ns"] > cut_s * 1e9)
    ta, tb = before["t_ns"] / 1e9 - rtt_s, after["t_ns"] / 1e9 - rtt_s  # their departures
    served = ((cut_s - ta) * 50e6 + (tb - cut_s) * 5e6) / packet_bits + 1
    assert after["delivered"] - before["delivered"] <= served, (before, after)


def test_cwnd_limited_is_latched_for_the_window_as_the_kernel_does() -> None:
    # tcp_cwnd_validate() keeps tp->is_cwnd_limited for the window in flight when the cwnd was full; v3
    # grows the probe's inflight_longterm step only while cwnd-limited (bbr_probe_inflight_hi_upward), so
    # with an instantaneous flag, true only at the moment the cwnd is full, the step stopped doubling
    # (draft A.15: median ratio 1.1 per round, 2.0 with the latch).
    from bbrbench.experiments import conformance as conf
    case = next(c for c in conf.load_cases() if c.id == "A.15")
    records = [{**r, "t_s": r["t_ns"] / 1e9} for r in twin("--algo", "bbr3", "--duration", "18s",
                                                             *sum(([f"--{k.replace('_', '-')}", v] for k, v in
                                                                   conf.twin_path(case)[0].items()), []))]
    growth = next(c for c in conf.evaluate(case, "bbr3", records, "twin") if c.name.startswith("inflight_longterm"))
    assert growth.status == conf.PASS, growth


@pytest.mark.parametrize(("args", "message"), [
    (["--algo", "bbr4", "--rate", "1mbit", "--rtt", "1ms"], "bad --algo 'bbr4'"),
    (["--algo", "bbr3", "--rate", "10mbps", "--rtt", "1ms"], "bad --rate '10mbps'"),
    (["--algo", "bbr3", "--rate", "10mbit@1s", "--rtt", "1ms"], "the first rate must start at 0"),
    (["--algo", "bbr3", "--rate", "10mbit"], "--rtt is required"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--pause", "5s-4s"], "bad --pause '5s-4s'"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--loss", "5"], "bad --loss '5'"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--ack-blackout", "3s"], "bad --ack-blackout '3s'"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--ack-blackout", "3s-2s"], "window ends before"),
    (["--algo", "bbr3", "--rate", "10gbit", "--rtt", "1ms", "--duration", "3000s"], "--duration is too long"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--bogus"], "unknown option"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--mutate", "all"], "bad --mutate 'all': no such mutation"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--policer", "1mbit"], "bad --policer '1mbit'"),
    (["--algo", "bbr3", "--rate", "1mbit", "--rtt", "1ms", "--policer", "1mbit/100b"], "less than one frame"),
])
def test_bad_input_is_one_line_and_nothing_on_stdout(args: list[str], message: str) -> None:
    result = subprocess.run([str(TWIN), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr
    assert result.stderr.startswith("bbrkit-twin: ") and not result.stderr[13].isupper()


def test_help_lists_every_option() -> None:
    result = subprocess.run([str(TWIN), "--help"], capture_output=True, text=True, check=True)
    for option in ("--algo", "--rate", "--rtt", "--buffer", "--app-limit", "--pause", "--loss",
                   "--spurious-loss", "--ack-aggregation", "--ack-blackout", "--policer", "--duration", "--seed",
                   "--mutate"):
        assert option in result.stdout


def test_policer_holds_the_flow_to_its_token_rate() -> None:
    """A 10 Mbit/s token bucket ahead of a 100 Mbit/s bottleneck: what gets through, frames counted, is
    at most the token rate and the bucket's depth (30 kB), however hard the flow pushes."""
    records = twin("--algo", "bbr3", "--rate", "100mbit", "--rtt", "40ms", "--buffer", "660p", "--duration", "10s",
                   "--policer", "10mbit/30000b")
    delivered_bits = records[-1]["delivered"] * 1514 * 8
    assert delivered_bits <= 10e6 * records[-1]["t_ns"] / 1e9 + 30000 * 8
    assert delivered_bits >= 0.7 * 10e6 * records[-1]["t_ns"] / 1e9  # the flow did use the tokens
    assert records[-1]["lost"] > 0
