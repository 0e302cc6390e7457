// SPDX-License-Identifier: GPL-2.0
/* bbr3: the BBRv3 state machine on synthetic ACK sequences, and the behaviour of each stock-kernel
 * approximation listed in bbr3_core.h.
 */
#include "bbr3.bpf.c"
#include "sim.h"
#include "sim_v3.h"

TEST(startup_paces_at_2_77_with_cwnd_gain_2)
{
	params = defaults;
	CHECK_EQ(core()->mode, BBRKIT_STARTUP);
	sim_round(10, SIM_RTT_US);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT * 277 / 100 + 1);
	CHECK_EQ(core()->cwnd_gain, BBR_UNIT * 2);
}

TEST(startup_exits_on_bandwidth_plateau)
{
	params = defaults;
	sim_tp.packets_out = 1000; /* a queue: stay in DRAIN */
	sim_round(10, SIM_RTT_US);
	sim_round(20, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	sim_round(80, SIM_RTT_US);
	CHECK(!core()->full_bw_reached);
	sim_round(80, SIM_RTT_US);
	sim_round(90, SIM_RTT_US); /* 12% more: not growth */
	CHECK(!core()->full_bw_reached);
	sim_round(90, SIM_RTT_US);
	CHECK(core()->full_bw_reached);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
	CHECK_EQ(st()->inflight_hi, ~0U); /* a plateau sets no bound */
}

/* A recovery round of STARTUP in which 6 ACKs report 2 losses each, of a 100-packet flight; judged
 * at the loss round's end.
 */
TEST(startup_exits_on_excessive_loss)
{
	lossy_startup_round(6, 2);
	CHECK(!core()->full_bw_reached);
	end_round();
	CHECK(core()->full_bw_reached);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
	/* inflight_hi: at least the BDP and the last round's delivered volume. */
	CHECK(st()->inflight_hi != ~0U);
	CHECK(st()->inflight_hi >= bbr3_inflight(sk, core(), bbr3_max_bw(st()), BBR_UNIT));
}

/* In STARTUP v3 keeps the extra ACKed volume over windows of one round, not five
 * (bbr_update_ack_aggregation: extra_acked_win_rtts_thresh 1 until the pipe is full), so that the
 * cwnd follows the growing ACK stream: a burst's 50 extra packets are gone two round starts later.
 */
TEST(startup_forgets_extra_acked_after_two_rounds)
{
	params = defaults;
	sim_round(10, SIM_RTT_US);
	core()->extra_acked[core()->extra_acked_win_idx] = 50;
	sim_round(20, SIM_RTT_US);
	CHECK_EQ(bbr_extra_acked(core()), 50);
	sim_round(40, SIM_RTT_US);
	CHECK(!core()->full_bw_reached);
	CHECK(bbr_extra_acked(core()) < 50);
}

TEST(startup_loss_below_six_events_does_not_exit)
{
	lossy_startup_round(5, 4);
	end_round();
	CHECK(!core()->full_bw_reached);
}

/* DOWN ends once the flight is at most a BDP and 15% below inflight_hi; CRUISE lasts until the
 * probe is due; REFILL lasts one round; UP paces at 5/4 with cwnd gain 2.25.
 */
TEST(down_cruise_refill_up_timing)
{
	start();
	st()->inflight_hi = 100; /* headroom 100 x 38/256 = 14: the flight must fall to 86 */
	sim_set_probe_bw(BW, SIM_RTT_US, BBRKIT_V3_DOWN);
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_set_bw(core(), st());
	st()->bw_hi[1] = BW;
	round_of(95);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT * 91 / 100);
	ack(87, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	ack(86, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_CRUISE);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT);
	/* 20 ms rounds: the 63-round Reno bound (min(63, BDP)) comes before the 2 s clock; it counts
	 * from DOWN's start, and one round was spent in DOWN.
	 */
	CHECK_EQ(1 + rounds_until_phase_changes(80, 100), 63);
	CHECK_EQ(phase(), BBRKIT_V3_REFILL);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT);
	CHECK_EQ(rounds_until_phase_changes(80, 10), 1);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT * 5 / 4);
	CHECK_EQ(core()->cwnd_gain, BBR_UNIT * 2 + BBR_UNIT / 4);
	CHECK(st()->bw_probe_samples);
}

/* With a long RTT the wall clock decides: 2 s plus the random part of the wait. */
TEST(cruise_waits_two_to_three_seconds_on_long_paths)
{
	start();
	host_random_value = 700000; /* 700 ms of the random second; round offset 0 */
	sim_set_probe_bw(BW, SIM_RTT_US, BBRKIT_V3_DOWN);
	bbr3_start_bw_probe_down(sk, core(), st());
	CHECK_EQ(st()->probe_wait_us, 2700000);
	bbr3_start_bw_probe_cruise(core(), st());
	u64 t0 = sim_tp.tcp_mstamp;
	/* 100 ms rounds: 63 rounds would take 6.3 s. */
	while (phase() == BBRKIT_V3_CRUISE && sim_tp.tcp_mstamp - t0 < 10000000) {
		sim_advance_us(100000);
		sim_ack((struct sim_ack){ .acked = 9,
			.rtt_us = SIM_RTT_US,
			.interval_us = 2000,
			.round_end = true,
			.prior_in_flight = 80 });
	}
	CHECK_EQ(phase(), BBRKIT_V3_REFILL);
	CHECK_NEAR(sim_tp.tcp_mstamp - t0, 2700000, 100000);
}

TEST(probe_wait_is_a_live_parameter)
{
	start();
	params.probe_wait_base_ms = 300;
	params.probe_wait_rand_ms = 0;
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	CHECK_EQ(rounds_until_phase_changes(80, 100), 16); /* 300 ms of 20 ms rounds, strictly after */
	CHECK_EQ(phase(), BBRKIT_V3_REFILL);
}

TEST(probe_start_resets_bw_lo_and_inflight_lo)
{
	start();
	params.probe_wait_base_ms = 100;
	params.probe_wait_rand_ms = 0;
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	st()->bw_lo = BW / 2;
	st()->inflight_lo = 60;
	bbr3_set_bw(core(), st());
	CHECK_EQ(bbr_bw(core()), BW / 2); /* bw = min(bw_hi, bw_lo) */
	rounds_until_phase_changes(80, 100);
	CHECK_EQ(phase(), BBRKIT_V3_REFILL);
	CHECK_EQ(st()->bw_lo, ~0U);
	CHECK_EQ(st()->inflight_lo, ~0U);
	CHECK_EQ(bbr_bw(core()), bbr3_max_bw(st()));
}

/* A probe flight of 100 losing 5 (5% > 2%): inflight_hi goes to where the loss crossed 2% (the
 * 95 sent before the 5 lost ones, plus 2: approximation C) and UP ends.
 */
TEST(up_ends_on_loss_and_sets_inflight_hi)
{
	to_up();
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	ack(100, 5, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK_EQ(st()->inflight_hi, 97);
	CHECK(st()->prev_probe_too_high);
	CHECK(!st()->bw_probe_samples); /* once per probe */
}

/* A small flight that loses too much: inflight_hi is cut to beta (0.7, 180/256 as in v3) x the
 * target flight. The flight is already below the new bounds, so DOWN passes straight on to CRUISE.
 */
TEST(inflight_hi_is_cut_by_beta)
{
	to_up();
	u32 target = bbr3_target_inflight(sk, core());
	ack(40, 5, false);
	CHECK_EQ(phase(), BBRKIT_V3_CRUISE);
	CHECK_EQ(st()->inflight_hi, target * 180 / 256);
	CHECK(st()->inflight_hi > 40);
}

TEST(beta_is_a_live_parameter)
{
	to_up();
	params.beta_permille = 500;
	u32 target = bbr3_target_inflight(sk, core());
	ack(40, 5, false);
	CHECK_EQ(st()->inflight_hi, target / 2);
}

/* 3 losses in a 200-packet flight are within 2% (200 x 5/256 = 3): the probe goes on. A 4th in
 * the same loss round (approximation B: counted since the loss round began) crosses it.
 */
TEST(loss_below_threshold_does_not_end_up)
{
	to_up();
	for (int i = 0; i < 3; i++) {
		ack(200, 1, false);
		CHECK_EQ(phase(), BBRKIT_V3_UP);
	}
	ack(200, 1, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
}

TEST(loss_threshold_is_a_live_parameter)
{
	to_up();
	params.loss_thresh_permille = 100;
	ack(100, 5, false);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	params.loss_thresh_permille = 20;
	ack(100, 1, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
}

/* Approximation B: losses of the previous loss round do not count in the next one. */
TEST(losses_count_per_loss_round)
{
	to_up();
	ack(200, 1, false);
	ack(200, 1, false);
	ack(200, 1, false);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	/* The loss round started at the first loss: it ends with the next round's first ACK. */
	round_of(200);
	CHECK_EQ(bbr3_lost_in_round(&sim_tp, st()), 0);
	ack(200, 1, false);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
}

/* UP ends on reaching the inflight_hi that was too high last time. */
TEST(up_ends_at_inflight_hi_after_a_risky_probe)
{
	to_up();
	st()->inflight_hi = 120;
	st()->prev_probe_too_high = 1;
	ack(110, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	ack(121, 0, false); /* the EDT estimate adds the next TSO skb */
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->stopped_risky_probe);
}

/* UP ends on a bandwidth plateau: three rounds without 25% growth. */
TEST(up_ends_on_bandwidth_plateau)
{
	to_up();
	CHECK_EQ(rounds_until_phase_changes(100, 10), 3);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
}

/* Approximation A: a flight larger than inflight_hi that lost nothing raises inflight_hi. */
TEST(a_safe_larger_flight_raises_inflight_hi)
{
	start();
	st()->inflight_hi = 100;
	ack(130, 0, false);
	CHECK_EQ(st()->inflight_hi, 130);
}

/* Loss while cruising cuts bw_lo and inflight_lo by beta, at the end of the loss round, never
 * below what the last round delivered; cwnd follows inflight_lo.
 */
static void slow_ack(int losses, bool round_end)
{
	sim_advance_us(2000);
	sim_ack((struct sim_ack){ .acked = 3,
		.rtt_us = SIM_RTT_US,
		.interval_us = 2000,
		.losses = losses,
		.round_end = round_end,
		.prior_in_flight = 80 });
}

TEST(cruise_loss_round_cuts_lower_bounds)
{
	start();
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	round_of(80);
	slow_ack(0, true);  /* a round delivering 1.5 packets/ms */
	slow_ack(1, false); /* the loss round restarts here */
	for (int i = 0; i < 9; i++)
		slow_ack(0, false);
	CHECK_EQ(st()->bw_lo, ~0U);
	u32 cwnd = sim_tp.snd_cwnd;
	slow_ack(0, true);
	CHECK_EQ(st()->bw_lo, bbr3_mul_unit(bbr3_max_bw(st()), 180)); /* above the 1.5 delivered */
	CHECK_EQ(st()->inflight_lo, bbr3_mul_unit(cwnd, 180));
	CHECK_EQ(sim_tp.snd_cwnd, st()->inflight_lo);
	CHECK_EQ(bbr_bw(core()), st()->bw_lo);
}

/* The cut stops at what the last round delivered. */
TEST(lower_bounds_never_below_latest_delivery)
{
	start();
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	round_of(80);
	ack(80, 1, false);
	for (int i = 0; i < 9; i++)
		ack(80, 0, false);
	ack(80, 0, true);
	CHECK_EQ(st()->bw_lo, bbr3_max_bw(st())); /* the round delivered at the full rate */
}

/* PROBE_RTT after 5 s without a lower RTT sample; cwnd 0.5 x BDP there; back after 200 ms and a
 * round.
 */
TEST(probe_rtt_after_5s_at_half_bdp)
{
	start();
	u32 stamp = st()->probe_rtt_min_stamp;
	while (core()->mode != BBRKIT_PROBE_RTT && sim_tp.tcp_mstamp < SIM_START_US + 20000000)
		round_of(60);
	CHECK_EQ(core()->mode, BBRKIT_PROBE_RTT);
	CHECK_NEAR((double)(bbr_now_ticks(&sim_tp) - stamp) * 1024, 5000000, 30000);
	ack(60, 0, false);
	CHECK_EQ(sim_tp.snd_cwnd, bbr_bdp(core(), bbr_bw(core()), BBR_UNIT / 2));
	CHECK_NEAR(sim_tp.snd_cwnd, PKTS / 2, 1);
	sim_tp.packets_out = 40;
	for (int i = 0; i < 12 && core()->mode == BBRKIT_PROBE_RTT; i++)
		round_of(40);
	CHECK_EQ(core()->mode, BBRKIT_PROBE_BW);
	CHECK_EQ(phase(), BBRKIT_V3_CRUISE);
}

TEST(probe_rtt_interval_is_a_live_parameter)
{
	start();
	params.probe_rtt_interval_ms = 1000;
	u32 stamp = st()->probe_rtt_min_stamp;
	while (core()->mode != BBRKIT_PROBE_RTT && sim_tp.tcp_mstamp < SIM_START_US + 20000000)
		round_of(60);
	CHECK_NEAR((double)(bbr_now_ticks(&sim_tp) - stamp) * 1024, 1000000, 30000);
}

/* Approximation D: with ECN on, a probe whose ACKs carry more than 50% CE went too high; with
 * ECN off, CE marks are ignored.
 */
static void ce_ack(u32 ce)
{
	sim_advance_us(2000);
	sim_ack((struct sim_ack){ .acked = 9,
		.delivered_ce = ce,
		.rtt_us = SIM_RTT_US,
		.interval_us = 2000,
		.prior_in_flight = 100 });
}

TEST(ecn_off_ignores_ce)
{
	sim_tp.ecn_flags = BBR3_TCP_ECN_OK;
	to_up();
	ce_ack(9);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
}

TEST(ecn_on_ends_up_on_ce_above_threshold)
{
	sim_tp.ecn_flags = BBR3_TCP_ECN_OK;
	to_up();
	params.ecn = 1;
	params.ecn_max_rtt_us = 0;
	ack(80, 0, true); /* eligible from this round start */
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	ce_ack(4); /* 4/9 < 50% */
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	ce_ack(5);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->prev_probe_too_high);
}

TEST(ecn_needs_a_small_min_rtt_or_no_limit)
{
	sim_tp.ecn_flags = BBR3_TCP_ECN_OK;
	to_up();
	params.ecn = 1; /* the default limit 5 ms is below the 20 ms path */
	ack(80, 0, true);
	CHECK(!st()->ecn_eligible);
	ce_ack(9);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
}

/* v3 decides ECN eligibility in bbr_update_ecn_alpha, on round starts only, and never clears it: a
 * min_rtt within ecn_max_rtt_us counts from the next round start, and a flow once eligible keeps its
 * ECN response when its min_rtt is no longer within the limit (here the limit falls below it).
 */
TEST(ecn_eligibility_comes_at_a_round_start_and_stays)
{
	sim_tp.ecn_flags = BBR3_TCP_ECN_OK;
	to_up();
	params.ecn = 1;
	params.ecn_max_rtt_us = 2 * SIM_RTT_US; /* the 20 ms path is within the limit... */
	ce_ack(9);				/* ...but no round has started since: no response yet */
	CHECK(!st()->ecn_eligible);
	CHECK(!st()->ecn_in_round);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	ack(80, 0, true);
	CHECK(st()->ecn_eligible);
	params.ecn_max_rtt_us = SIM_RTT_US / 4; /* min_rtt now 4x the limit */
	ack(80, 0, true);
	CHECK(st()->ecn_eligible);
	ce_ack(9); /* 100% CE: too high */
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->prev_probe_too_high);
}

/* Telemetry: the last loss round's loss rate and the v3 state in the record. */
TEST(record_carries_v3_state)
{
	struct bbrkit_flow f = { 0 };

	start();
	round_of(80);
	ack(80, 2, false);
	round_of(80);
	bbr3_fill_flow(&f, sk, core(), BBRKIT_EV_SNAPSHOT);
	CHECK_EQ(f.variant[BBRKIT_VAR_V3_PHASE], core()->cycle_idx);
	CHECK_EQ(f.max_bw, bbr3_max_bw(st()));
	CHECK_EQ(f.inflight_longterm, st()->inflight_hi);
	CHECK(f.variant[BBRKIT_VAR_V3_LOSS_RATE] > 0);
	CHECK_EQ(f.variant[BBRKIT_VAR_V3_ECN_ALPHA], BBR_UNIT);
	CHECK_EQ(f.bw, bbr_bw(core()));
}

/* The last trace record of the given event, NULL if none. */
static const struct bbrkit_flow *last_record(u8 event)
{
	for (int i = host_trace_n - 1; i >= 0; i--)
		if (host_trace_log[i].event == event)
			return &host_trace_log[i];
	return NULL;
}

/* draft-ietf-ccwg-bbr's names in the record along STARTUP's plateau exit (v3's bbr_full_bw_reached,
 * the draft's BBRCheckStartupHighLoss/BBRCheckFullBWReached): the plateau check counts rounds without
 * 25% growth over full_bw, the third sets full_bw_now and full_bw_reached and enters DRAIN, whose
 * entry round is kept; a plateau exit sets no long-term bound, and no loss no short-term one.
 */
TEST(record_follows_startup_plateau_exit_in_the_drafts_names)
{
	const struct bbrkit_flow *r;

	params = defaults;
	host_trace_enabled = true;
	sim_tp.packets_out = 1000; /* a queue: stay in DRAIN */
	sim_round(10, SIM_RTT_US);
	sim_round(20, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	r = last_record(BBRKIT_EV_ROUND);
	CHECK(r != NULL);
	CHECK_EQ(r->full_bw_cnt, 1);
	CHECK_EQ(r->full_bw, sim_bw(40, SIM_RTT_US) + 1); /* v3 rounds the sample up */
	CHECK(!(r->flags & (BBRKIT_F_FULL_BW_NOW | BBRKIT_F_FULL_BW_REACHED)));
	sim_round(40, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	r = last_record(BBRKIT_EV_MODE);
	CHECK(r != NULL);
	CHECK_EQ(r->mode, BBRKIT_DRAIN);
	CHECK_EQ(r->full_bw_cnt, 3);
	CHECK(r->flags & BBRKIT_F_FULL_BW_NOW);
	CHECK(r->flags & BBRKIT_F_FULL_BW_REACHED);
	CHECK_EQ(r->drain_start_round, r->round);
	CHECK_EQ(r->drain_start_round, 6);
	CHECK_EQ(r->inflight_longterm, BBRKIT_VAR_NONE);
	CHECK_EQ(r->inflight_shortterm, BBRKIT_VAR_NONE);
	CHECK_EQ(r->bw_shortterm, BBRKIT_VAR_NONE);
	CHECK_EQ(r->max_bw, bbr3_max_bw(st()));
	CHECK_EQ(r->max_bw_cycle[1], bbr3_max_bw(st())); /* all samples in this (the first) cycle */
	CHECK_EQ(r->max_bw_cycle[0], 0);
}

/* v3's undo (bbr_ssthresh saves, bbr_undo_cwnd restores): a loss round in CRUISE sets the short-term
 * bounds; recovery entry saves them; lower bounds in recovery; the undo of a spurious recovery puts
 * back the saved ones, which the undo's own record then shows as the bounds in force.
 */
TEST(record_carries_the_saved_undo_state_and_the_undo_restores_it)
{
	struct bbrkit_flow f = { 0 };
	u32 saved_bw_lo, saved_inflight_lo;

	start();
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	ack(80, 3, false);
	round_of(80); /* the loss round ends: bw_lo and inflight_lo cut */
	CHECK(st()->bw_lo != ~0U);
	saved_bw_lo = st()->bw_lo;
	saved_inflight_lo = st()->inflight_lo;
	bbr3_ssthresh(sk);
	/* Recovery cuts further (on this steady path bw_latest floors a real cut at the old value). */
	st()->bw_lo = saved_bw_lo / 2;
	st()->inflight_lo = saved_inflight_lo / 2;
	bbr3_fill_flow(&f, sk, core(), BBRKIT_EV_SNAPSHOT);
	CHECK_EQ(f.undo_bw_shortterm, saved_bw_lo);
	CHECK_EQ(f.undo_inflight_shortterm, saved_inflight_lo);
	CHECK_EQ(f.undo_inflight_longterm, st()->undo_inflight_hi);
	CHECK_EQ(f.bw_shortterm, st()->bw_lo);
	CHECK_EQ(f.inflight_shortterm, st()->inflight_lo);
	host_trace_enabled = true;
	host_trace_n = 0;
	bbrkit_on_undo_cwnd(sk); /* the callback as the kernel calls it: the undo gets a record */
	CHECK_EQ(host_trace_n, 1);
	CHECK_EQ(host_trace_log[0].event, BBRKIT_EV_UNDO);
	CHECK_EQ(host_trace_log[0].bw_shortterm, saved_bw_lo);
	CHECK_EQ(host_trace_log[0].inflight_shortterm, saved_inflight_lo);
}

/* A PROBE_BW phase change within the mode makes a "phase" record, carrying the new phase; the record
 * of an ACK whose rate sample was app-limited says so, and tp->app_limited shows as its own flag.
 */
TEST(record_on_phase_change_and_app_limited_marks)
{
	const struct bbrkit_flow *r;
	struct rate_sample rs;

	to_up();
	host_trace_enabled = true;
	host_trace_n = 0;
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	st()->probe_wait_us = 0; /* the probe is due: CRUISE -> REFILL on the next ACK */
	rs = ack_sample(20);
	rs.is_app_limited = true;
	sim_tp.app_limited = 1;
	bbrkit_on_ack(sk, &rs);
	CHECK_EQ(host_trace_n, 1);
	r = &host_trace_log[0];
	CHECK_EQ(r->event, BBRKIT_EV_PHASE);
	CHECK_EQ(r->cycle_idx, BBRKIT_V3_REFILL);
	CHECK(r->flags & BBRKIT_F_RS_APP_LIMITED);
	CHECK(r->flags & BBRKIT_F_APP_LIMITED);
	rs = ack_sample(20); /* same phase, no round end: no record */
	bbrkit_on_ack(sk, &rs);
	CHECK_EQ(host_trace_n, 1);
}

/* The record carries probe_rtt_min, which alone times PROBE_RTT: an expired filter takes any sample,
 * so it can sit above min_rtt (10 s), and a new low between the two restamps it without moving
 * min_rtt.
 */
TEST(record_carries_probe_rtt_min_that_can_sit_above_min_rtt)
{
	struct bbrkit_flow f = { 0 };

	start();
	round_of(80);
	st()->probe_rtt_min_stamp -= bbr3_probe_rtt_win_ticks() + 1;
	sim_advance_us(2000);
	sim_ack((struct sim_ack){ .acked = 9, .rtt_us = SIM_RTT_US + 900, .interval_us = 2000 });
	CHECK_EQ(core()->mode, BBRKIT_PROBE_RTT);
	CHECK_EQ(st()->probe_rtt_min_us, SIM_RTT_US + 900);
	CHECK_EQ(core()->min_rtt_us, SIM_RTT_US);
	u32 stamp = st()->probe_rtt_min_stamp;
	sim_advance_us(20000);
	sim_ack((struct sim_ack){ .acked = 9, .rtt_us = SIM_RTT_US + 400, .interval_us = 2000 });
	CHECK(st()->probe_rtt_min_stamp != stamp);
	CHECK_EQ(core()->min_rtt_us, SIM_RTT_US);
	bbr3_fill_flow(&f, sk, core(), BBRKIT_EV_SNAPSHOT);
	CHECK_EQ(f.variant[BBRKIT_VAR_V3_PROBE_RTT_MIN], SIM_RTT_US + 400);
	CHECK_EQ(f.min_rtt_us, SIM_RTT_US);
}

/* An RTO as tcp_enter_loss() makes it: the flight is marked lost, ssthresh sees the old cwnd, cwnd
 * falls to the flight (now 0) + 1, then set_state(TCP_CA_Loss); ACKs then come with a flight of ~1.
 */
static void rto(u32 flight)
{
	sim_tp.packets_out = flight;
	sim_tp.lost += flight;
	sim_tp.lost_out = flight;
	bbr3_ssthresh(sk);
	sim_tp.snd_cwnd = 1;
	bbr3_set_state(sk, TCP_CA_Loss);
	sim_tp.inet_conn.icsk_ca_state = TCP_CA_Loss;
}

/* v3 judges the marked skbs with the flight they were sent in: an RTO in UP ends the probe with
 * inflight_hi at about that flight (here 150 - 1: the crossing is taken at the last mark), not at
 * the post-RTO flight of 1, and the next ACKs do not count the marks again.
 */
TEST(rto_in_up_keeps_inflight_hi_at_the_lost_flight)
{
	to_up();
	CHECK(st()->bw_probe_samples);
	rto(150);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK_EQ(st()->inflight_hi, 149);
	CHECK(st()->loss_in_round && st()->loss_in_cycle);
	CHECK_EQ(bbr3_lost_in_round(&sim_tp, st()), 0);
	for (int i = 0; i < 3 * ACKS_PER_ROUND; i++)
		ack(1 + i, 0, i % ACKS_PER_ROUND == 0);
	CHECK_EQ(st()->inflight_hi, 149);
}

/* An RTO while cruising sets no inflight_hi but is a loss of this round and cycle: the round's end
 * cuts inflight_lo by beta from the cwnd before the RTO (v3's set_state keeps it for this).
 */
TEST(rto_while_cruising_cuts_lower_bounds_from_the_old_cwnd)
{
	start();
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	sim_tp.snd_cwnd = 100;
	rto(80);
	CHECK_EQ(st()->inflight_hi, ~0U);
	CHECK(st()->loss_in_round && st()->loss_in_cycle);
	CHECK_EQ(st()->inflight_lo, 100);
	sim_tp.snd_cwnd = 10; /* regrown in loss recovery: the Reno-round bound does not start a probe */
	ack(1, 0, true);
	CHECK_EQ(st()->inflight_lo, bbr3_mul_unit(100, 180));
}

/* The phase clock is an unsigned delta: 40 minutes in CRUISE (past 2^31 us) is past the wait. */
TEST(phase_clock_survives_signed_wrap)
{
	start();
	core()->cycle_stamp = (u32)sim_tp.tcp_mstamp;
	sim_advance_us(40ULL * 60 * 1000000);
	CHECK(bbr3_has_elapsed_in_phase(sk, core(), 3000000));
	CHECK(!bbr3_has_elapsed_in_phase(sk, core(), 41U * 60 * 1000000));
}

/* Spurious recovery: the bounds saved on entry come back. */
TEST(undo_restores_bounds)
{
	start();
	st()->inflight_hi = 150;
	st()->inflight_lo = 120;
	bbr3_ssthresh(sk);
	st()->inflight_hi = 100;
	st()->inflight_lo = 80;
	bbr3_undo_cwnd(sk);
	CHECK_EQ(st()->inflight_hi, 150);
	CHECK_EQ(st()->inflight_lo, 120);
}

/* v3's bbr_update_congestion_signals: the loss that ends UP is still a loss of the
 * round DOWN starts in (loss_in_round |= rs->losses > 0 after the loss hook's reset), and of the cycle
 * (loss_in_cycle |= rs->lost > 0 at the end of the ACK); the next loss round's start in DOWN cuts
 * bw_lo and inflight_lo by beta.
 */
TEST(loss_that_ends_up_is_a_loss_of_down)
{
	to_up();
	ack(100, 5, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->loss_in_round);
	CHECK(st()->loss_in_cycle);
	CHECK_EQ(st()->inflight_lo, ~0U);
	ack(100, 0, true);
	CHECK(st()->loss_round_start);
	CHECK(st()->inflight_lo != ~0U);
	CHECK(st()->bw_lo != ~0U);
}

/* An ACK whose rate sample spans earlier CE marks but that carries none itself. */
static void ack_with_old_ce(u32 interval_ce)
{
	struct rate_sample rs = ack_sample(80);

	rs.delivered_ce = (s32)interval_ce;
	bbrkit_on_ack(sk, &rs);
}

/* v3 raises ecn_in_round from this ACK's ECE (rs->is_ece), here its rise of
 * tp->delivered_ce, not from CE anywhere in the rate sample's interval (rs->delivered_ce).
 */
TEST(ecn_in_round_is_this_acks_ce_only)
{
	sim_tp.ecn_flags = BBR3_TCP_ECN_OK;
	start();
	params.ecn = 1;
	params.ecn_max_rtt_us = 0;
	round_of(80);
	ack_with_old_ce(4);
	CHECK(!st()->loss_round_start);
	CHECK(!st()->ecn_in_round);
	sim_tp.delivered_ce += 2; /* this ACK's ECE: tcp_ecn... counts its delivered packets as CE */
	ack_with_old_ce(2);
	CHECK(!st()->loss_round_start);
	CHECK(st()->ecn_in_round);
}

/* The per-packet path's hooks gone (detached, or the kernel never called them) while a flow runs on
 * it: an ACK that reports losses the loss hook did not see is judged the ACK-time way (C: inflight_hi
 * where the loss crossed 2%, 97 as in up_ends_on_loss_and_sets_inflight_hi), not left to the per-ACK
 * check alone (which would keep the flight, 100).
 */
TEST(losses_the_hook_did_not_see_are_judged_at_ack_time)
{
	bbr3_pp_live = 1;
	check_setup();
	bbr3_pp_live = 0;
	CHECK(st()->pp_on);
	to_up();
	ack(100, 5, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK_EQ(st()->inflight_hi, 97);
}
