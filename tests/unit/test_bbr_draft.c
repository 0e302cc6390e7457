// SPDX-License-Identifier: GPL-2.0
/* bbr_draft: the decisions where draft-ietf-ccwg-bbr-06's pseudocode and Google's v3 differ, each
 * checked against the draft's text (section and function named in each test). The shared core's
 * behaviour is test_bbr3.c's.
 */
#include "bbr_draft.bpf.c"
#include "sim.h"
#include "sim_v3.h"

static u8 undo_state(void)
{
	return draft_state(core())->undo_state;
}

/* STARTUP's queue kept: 1000 packets in flight hold the flow in DRAIN. */
static void to_drain(void)
{
	params = defaults;
	sim_fill_pipe(90, 1000);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
}

/* 5.3.2 EnterDrain(): BBR.DrainPacingGain = 0.5; the parameter reaches the flow on its next ACK. */
TEST(drain_paces_at_half_and_its_gain_is_live)
{
	to_drain();
	CHECK_EQ(core()->pacing_gain, BBR_UNIT / 2);
	CHECK_EQ(core()->cwnd_gain, BBR_UNIT * 2);
	params.drain_gain_permille = 350;
	sim_round(90, SIM_RTT_US);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT * 35 / 100); /* 89: v3's 1/2.885 is 88 */
}

/* 5.3.2 CheckDrainDone(): round_count > drain_start_round + 3 ends DRAIN with the flight still
 * above the BDP (v3 stays until the flight drains).
 */
TEST(drain_ends_after_three_rounds_whatever_the_flight)
{
	to_drain();
	CHECK_EQ(st()->drain_start_round, core()->rtt_cnt);
	for (int i = 0; i < 3; i++)
		sim_round(90, SIM_RTT_US);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
	sim_round(90, SIM_RTT_US);
	CHECK_EQ(core()->mode, BBRKIT_PROBE_BW);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
}

/* 5.3.2: C.inflight <= Inflight(1.0) ends DRAIN on the first ACK that sees it. */
TEST(drain_ends_once_the_flight_is_one_bdp)
{
	to_drain();
	sim_tp.packets_out = 90 + 3 * bbr_tso_segs_goal(sk, core()); /* the BDP and its budget: above */
	ack(200, 0, false);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
	sim_tp.packets_out = 60;
	ack(200, 0, false);
	CHECK_EQ(core()->mode, BBRKIT_PROBE_BW);
}

/* 5.3.1.2 CheckFullBWReached() returns unless BBR.round_start: a fast sample mid-round does not
 * restart the plateau count (v3 compares every ACK's sample).
 */
TEST(plateau_is_judged_on_round_starts_only)
{
	params = defaults;
	sim_tp.packets_out = 1000;
	sim_round(10, SIM_RTT_US);
	sim_round(20, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	CHECK_EQ(core()->full_bw_cnt, 2);
	sim_advance_us(1000);
	sim_ack((struct sim_ack){
		.acked = 4, .rtt_us = SIM_RTT_US, .interval_us = 1000, .prior_in_flight = 40 });
	CHECK_EQ(core()->full_bw_cnt, 2); /* 4 packets/ms, twice full_bw, ignored mid-round */
	sim_round(40, SIM_RTT_US);
	CHECK(core()->full_bw_reached);
	CHECK(st()->full_bw_now);
}

/* 5.3.1.3: a loss exit of STARTUP sets BBR.undo_state = Startup; 5.5.11.2: a spurious recovery
 * then returns to STARTUP with full_bw_reached cleared, and inflight_longterm back to what
 * SaveStateUponLoss() kept at the round's first loss (none: Infinity).
 */
TEST(spurious_loss_exit_of_startup_returns_to_startup)
{
	lossy_startup_round(6, 2);
	end_round();
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
	CHECK_EQ(undo_state(), DRAFT_UNDO_STARTUP);
	CHECK(st()->inflight_hi != ~0U);
	bbrkit_on_undo_cwnd(sk);
	CHECK_EQ(core()->mode, BBRKIT_STARTUP);
	CHECK(!core()->full_bw_reached);
	CHECK_EQ(st()->inflight_hi, ~0U);
	CHECK_EQ(undo_state(), DRAFT_UNDO_NONE);
}

/* A plateau exit is not a loss: an undo leaves DRAIN alone. */
TEST(undo_after_a_plateau_exit_keeps_the_state)
{
	to_drain();
	CHECK_EQ(undo_state(), DRAFT_UNDO_NONE);
	bbrkit_on_undo_cwnd(sk);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
	CHECK(core()->full_bw_reached);
}

/* 5.5.10.2 HandleInflightTooHigh() in UP sets undo_state = ProbeBW_UP; the undo restarts the probe
 * with REFILL and restores inflight_longterm to at least its value at the loss round's first loss
 * (NoteLoss() -> SaveStateUponLoss(); v3 saves only on recovery entry, in ssthresh).
 */
TEST(spurious_loss_that_ended_up_restarts_the_probe)
{
	to_up();
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	st()->inflight_hi = 150;
	sim_tp.packets_out = 100; /* DOWN lasts: the flight is above the BDP */
	ack(100, 5, false);	  /* 5 of 100 lost: over 2% */
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->inflight_hi < 150);
	CHECK_EQ(undo_state(), DRAFT_UNDO_PROBE_UP);
	CHECK_EQ(st()->undo_inflight_hi, 150);
	bbrkit_on_undo_cwnd(sk);
	CHECK_EQ(phase(), BBRKIT_V3_REFILL);
	CHECK_EQ(st()->inflight_hi, 150);
}

/* 5.5.11.2: no return from ProbeRTT; the saved bounds still come back. */
TEST(undo_in_probe_rtt_keeps_probe_rtt)
{
	to_up();
	st()->inflight_hi = 150;
	ack(100, 5, false);
	CHECK_EQ(undo_state(), DRAFT_UNDO_PROBE_UP);
	core()->mode = BBRKIT_PROBE_RTT;
	bbrkit_on_undo_cwnd(sk);
	CHECK_EQ(core()->mode, BBRKIT_PROBE_RTT);
	CHECK_EQ(st()->inflight_hi, 150);
}

/* 5.5.11.1: entering recovery (ssthresh) saves the state and clears undo_state, in the kernel's
 * order (losses marked, then ssthresh).
 */
TEST(recovery_entry_saves_the_bounds_and_clears_undo_state)
{
	to_up();
	st()->inflight_hi = 150;
	ack(100, 5, false);
	bbr_draft_ssthresh(sk);
	CHECK_EQ(undo_state(), DRAFT_UNDO_NONE);
	CHECK_EQ(st()->undo_inflight_hi, st()->inflight_hi);
}

/* 5.6.4.4 OnEnterFastRecovery() saves the state before the episode's losses are handled: with the
 * per-packet path the kernel has marked them before ssthresh, but their decision (HandleLostPacket():
 * NoteLoss() saves, then HandleInflightTooHigh() cuts) applies after the save, so a spurious episode
 * of one loss in UP is undone to UP's inflight_longterm and restarts the probe.
 */
TEST(recovery_entry_saves_before_the_marked_losses_cut_the_probe)
{
	to_up();
	st()->inflight_hi = 150;
	st()->pp_on = 1;
	host_bbr3_pp = (struct bbr3_pp){ .pending = 1, .inflight_hi = 120, .cwnd = 150 };
	bbr_draft_ssthresh(sk);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->inflight_hi < 150);
	CHECK_EQ(st()->undo_inflight_hi, 150);
	CHECK_EQ(undo_state(), DRAFT_UNDO_PROBE_UP);
	bbrkit_on_undo_cwnd(sk);
	CHECK_EQ(phase(), BBRKIT_V3_REFILL);
	CHECK_EQ(st()->inflight_hi, 150);
}

/* 5.3.3.9 AdaptLongTermModel() has no loss response: a too-lossy ACK with no newly marked loss
 * leaves UP and inflight_longterm alone (v3's bbr_adapt_upper_bounds() cuts here).
 */
TEST(ack_with_old_losses_does_not_cut_the_probe)
{
	to_up();
	st()->inflight_hi = 150;
	sim_tp.lost += 10; /* marked earlier in this loss round */
	ack(100, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	CHECK(st()->inflight_hi >= 150);
}

/* 5.3.3.6 precautionary deceleration: after a probe that went too high, UP stops once C.inflight
 * (the flight now, not the ACKed packet's) reaches inflight_longterm; a round of feedback without
 * too much loss then re-probes at once (precautionary acceleration).
 */
TEST(precautionary_probe_stops_at_inflight_longterm_then_reprobes)
{
	to_up();
	st()->prev_probe_too_high = 1;
	st()->inflight_hi = 100;
	sim_tp.packets_out = 99;
	ack(90, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	sim_tp.packets_out = 100;
	ack(90, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->stopped_risky_probe);
	CHECK(!st()->prev_probe_too_high);
	ack(90, 0, true);
	CHECK_EQ(phase(), BBRKIT_V3_REFILL);
}

/* 5.3.3.1: ProbeBW_DOWN paces at 0.90 (v3: 0.91). */
TEST(down_paces_at_0_90)
{
	start();
	bbr3_start_bw_probe_down(sk, core(), st());
	sim_tp.packets_out = 200;
	ack(200, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT * 90 / 100);
}

/* ack_phase: 1 (the draft's) judges the probe's losses until a round after UP ends; 0 stops when
 * it ends.
 */
TEST(ack_phase_parameter_decides_how_long_probe_losses_count)
{
	to_up();
	bbr3_start_bw_probe_down(sk, core(), st());
	ack(90, 0, false);
	CHECK(st()->bw_probe_samples);
	ack(90, 0, true);
	CHECK(!st()->bw_probe_samples);

	to_up();
	params.ack_phase = 0;
	bbr3_start_bw_probe_down(sk, core(), st());
	ack(90, 0, false);
	CHECK(!st()->bw_probe_samples);
}

/* 5.3.4.3: PROBE_RTT once the ProbeRTT filter is ProbeRTTInterval old (a live parameter: 5 or
 * 10 s), with cwnd gain 0.5.
 */
TEST(probe_rtt_interval_is_live)
{
	start();
	params.probe_rtt_interval_ms = 10000;
	sim_tp.packets_out = 80;
	for (int i = 0; i < 300 && core()->mode != BBRKIT_PROBE_RTT; i++)
		round_of(80); /* 6 s of 20 ms rounds, no lower RTT */
	CHECK_EQ(core()->mode, BBRKIT_PROBE_BW);
	params.probe_rtt_interval_ms = 5000;
	ack(80, 0, false);
	CHECK_EQ(core()->mode, BBRKIT_PROBE_RTT);
	CHECK_EQ(core()->cwnd_gain, BBR_UNIT / 2);
}

/* 5.6.4.4: leaving fast recovery restores the last known good cwnd (v3: only leaving RTO recovery). */
TEST(leaving_fast_recovery_restores_cwnd)
{
	start();
	core()->prior_cwnd = 120;
	sim_tp.snd_cwnd = 40;
	core()->prev_ca_state = TCP_CA_Recovery;
	bbr_draft_set_state(sk, TCP_CA_Open);
	CHECK_EQ(sim_tp.snd_cwnd, 120);
}
