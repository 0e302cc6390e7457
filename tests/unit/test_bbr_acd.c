// SPDX-License-Identifier: GPL-2.0
/* bbr_acd: the congestion detector and cwnd halving of seed 002, section 4. */
#include "bbr_acd.bpf.c"
#include "sim.h"

#define MIN_RTT_US 10000
#define BW sim_bw(8, 1000) /* 8 packets/ms: 1 x BDP = 80 packets at 10 ms */

static void converged(void)
{
	params = (struct bbr_acd_params)BBRKIT_PARAMS_DEFAULTS(BBR_ACD_PARAMS);
	sim_set_probe_bw(BW, MIN_RTT_US, 3);
}

/* One ACK with an RTT sample; its delivery rate (5 packets/ms) stays under the estimate. */
static void ack(long rtt_us)
{
	sim_advance_us(200);
	sim_ack((struct sim_ack){ .acked = 1, .rtt_us = rtt_us, .interval_us = 200 });
}

static bool congested(void)
{
	return acd_state(core())->congested;
}

TEST(three_steady_elevated_samples_declare_congestion)
{
	converged();
	ack(15000);
	ack(15500);
	CHECK(!congested());
	CHECK_EQ(acd_state(core())->steady, 1);
	ack(15200);
	CHECK(congested());
	CHECK_EQ(acd_state(core())->steady, 2);
}

TEST(a_jump_beyond_tolerance_resets_the_count)
{
	converged();
	ack(15000);
	ack(15500);
	ack(16600); /* 1100 us > 1000 us tolerance */
	CHECK(!congested());
	CHECK_EQ(acd_state(core())->steady, 0);
	ack(16000);
	ack(16900);
	CHECK(congested());
}

TEST(steady_rtt_at_min_rtt_is_not_congestion)
{
	converged();
	for (int i = 0; i < 10; i++)
		ack(MIN_RTT_US);
	CHECK(!congested());
	CHECK_EQ(acd_state(core())->steady, 0);
}

TEST(rtt_above_factor_times_min_rtt_declares_congestion)
{
	converged();
	ack(MIN_RTT_US * 2);
	CHECK(!congested()); /* strictly greater than 2 x min_rtt */
	ack(MIN_RTT_US * 2 + 5000);
	CHECK(congested());
	params.rtt_factor_permille = 3000;
	ack(MIN_RTT_US * 3 - 1000);
	CHECK(!congested());
}

TEST(steady_acks_is_a_live_parameter)
{
	converged();
	params.steady_acks = 4;
	ack(15000);
	ack(15100);
	ack(15200);
	CHECK(!congested());
	ack(15300);
	CHECK(congested());
}

TEST(rtts_under_one_ms_do_not_wrap)
{
	/* The listing's unsigned "rtt >= last - 1000" is false for last < 1000: no steady count
	 * could ever build on a LAN. A true absolute difference counts these as steady.
	 */
	converged();
	core()->min_rtt_us = 100;
	ack(500);
	ack(600);
	ack(700);
	CHECK(congested());
	CHECK_EQ(acd_state(core())->steady, 2);
}

/* Figure 6 and the authors' modules: an ACK without an RTT sample (rtt = -1) breaks the run. */
TEST(ack_without_rtt_sample_resets_the_steady_count)
{
	converged();
	ack(15000);
	ack(15500);
	ack(-1);
	CHECK_EQ(acd_state(core())->steady, 0);
	CHECK(!congested());
	ack(15200);
	CHECK_EQ(acd_state(core())->steady, 1);
	CHECK(!congested());
}

/* Enter recovery on an ACK with the given RTT and losses. */
static void enter_recovery(long rtt_us, int losses)
{
	bbr1_ssthresh(sk);
	sim_tp.inet_conn.icsk_ca_state = TCP_CA_Recovery;
	sim_advance_us(200);
	sim_ack((struct sim_ack){ .acked = 1, .losses = losses, .rtt_us = rtt_us, .interval_us = 200 });
}

TEST(recovery_with_congestion_halves_every_ack_of_the_round)
{
	struct bbr_core *b = core();
	u32 prior;

	converged();
	sim_tp.snd_cwnd = 200;
	sim_tp.packets_out = 190;
	ack(15000);
	ack(15100);
	enter_recovery(15200, 0);
	prior = b->prior_cwnd; /* saved by ssthresh on entering recovery */
	CHECK(prior > 160);
	CHECK(b->packet_conservation);
	/* The ACKs before recovery brought cwnd to its target, 183: min(183 / 2, 1 x BDP + TSO budget = 102). */
	CHECK_EQ(sim_tp.snd_cwnd, 91);
	CHECK_EQ(acd_state(b)->halvings, 1);
	ack(15200);
	CHECK_EQ(sim_tp.snd_cwnd, 45);
	ack(15200);
	ack(15200);
	ack(15200);
	CHECK_EQ(sim_tp.snd_cwnd, 5); /* 22, 11, 5 */
	ack(15200);
	CHECK_EQ(sim_tp.snd_cwnd, BBR_CWND_MIN_TARGET); /* never under 4 packets */
	CHECK_EQ(acd_state(b)->halvings, 1);

	sim_round(1, 15200); /* the round ends */
	CHECK(!b->packet_conservation);
	sim_tp.inet_conn.icsk_ca_state = TCP_CA_Open;
	ack(15200);
	CHECK(sim_tp.snd_cwnd >= prior); /* restored */
}

TEST(halve_once_halves_one_time_per_episode)
{
	converged();
	params.halve_once = 1;
	sim_tp.snd_cwnd = 120;
	sim_tp.packets_out = 100;
	ack(MIN_RTT_US * 3);
	enter_recovery(MIN_RTT_US * 3, 0);
	CHECK_EQ(sim_tp.snd_cwnd, 60);
	ack(MIN_RTT_US * 3);
	ack(MIN_RTT_US * 3);
	CHECK_EQ(sim_tp.snd_cwnd, 60);
	sim_advance_us(200);
	sim_ack((struct sim_ack){ .acked = 1, .losses = 3, .rtt_us = MIN_RTT_US * 3, .interval_us = 200 });
	CHECK_EQ(sim_tp.snd_cwnd, 57); /* losses still come off */
}

/* The 4.14 kernel the paper modified sizes "1 x BDP" with bbr_target_cwnd(): BDP plus the TSO
 * budget (3 bursts of 7 segments at 8 packets/ms, rounded up to even): 80 + 21 -> 102.
 */
TEST(halving_is_bounded_by_bdp_plus_tso_budget)
{
	struct bbr_core *b = core();

	converged();
	ack(MIN_RTT_US * 3);
	sim_tp.snd_cwnd = 400;
	sim_tp.packets_out = 390;
	enter_recovery(MIN_RTT_US * 3, 0);
	CHECK_EQ(sim_tp.snd_cwnd, bbr_inflight(sk, b, BW, BBR_UNIT));
	CHECK_EQ(sim_tp.snd_cwnd, 102);
}

/* With halve_once, later losses of the round come off cwnd, but not below 4 packets. */
TEST(halve_once_keeps_four_packets_despite_losses)
{
	converged();
	params.halve_once = 1;
	sim_tp.snd_cwnd = 10;
	sim_tp.packets_out = 8;
	ack(MIN_RTT_US * 3);
	enter_recovery(MIN_RTT_US * 3, 0);
	CHECK_EQ(sim_tp.snd_cwnd, 5);
	sim_advance_us(200);
	sim_ack((struct sim_ack){ .acked = 1, .losses = 3, .rtt_us = MIN_RTT_US * 3, .interval_us = 200 });
	CHECK_EQ(sim_tp.snd_cwnd, BBR_CWND_MIN_TARGET);
}

TEST(recovery_without_congestion_neither_halves_nor_conserves)
{
	struct bbr_core *b = core();
	u32 before;

	converged();
	sim_tp.snd_cwnd = 150;
	sim_tp.packets_out = 50; /* BBRv1 would cut cwnd to inflight + acked = 51 */
	ack(MIN_RTT_US);
	before = sim_tp.snd_cwnd;
	enter_recovery(MIN_RTT_US, 2);
	CHECK(!b->packet_conservation);
	CHECK_EQ(acd_state(b)->halvings, 0);
	/* Only the lost packets come off, then the usual cwnd logic: min(cwnd + acked, target). */
	CHECK_EQ(sim_tp.snd_cwnd, before - 2 + 1);
}

TEST(second_episode_counts_again)
{
	converged();
	sim_tp.snd_cwnd = 200;
	ack(MIN_RTT_US * 3);
	enter_recovery(MIN_RTT_US * 3, 0);
	sim_tp.inet_conn.icsk_ca_state = TCP_CA_Open;
	sim_round(1, MIN_RTT_US * 3);
	enter_recovery(MIN_RTT_US * 3, 0);
	CHECK_EQ(acd_state(core())->halvings, 2);
}

/* Raw words bpftool can write that no documented range contains, or 0 below a range. */
static const __u32 garbage[] = { 0, 0xffffffff, 0x80000000 };
#define NGARBAGE (sizeof(garbage) / sizeof(garbage[0]))

TEST(garbage_steady_acks_acts_as_the_default)
{
	for (size_t i = 0; i < NGARBAGE; i++) {
		check_setup(); /* a fresh connection */
		converged();
		params.steady_acks = garbage[i];
		ack(15000);
		ack(15100);
		CHECK(!congested()); /* 0 clamped to 2 would declare congestion here */
		ack(15200);
		CHECK(congested());
	}
}

TEST(garbage_rtt_factor_acts_as_the_default)
{
	for (size_t i = 0; i < NGARBAGE; i++) {
		check_setup(); /* a fresh connection */
		converged();
		params.rtt_factor_permille = garbage[i];
		ack(MIN_RTT_US * 19 / 10);
		CHECK(!congested());	   /* 0 clamped to 1.0 would declare congestion here */
		ack(MIN_RTT_US * 21 / 10); /* 2 ms apart, not steady: only the factor declares */
		CHECK(congested());
	}
}

TEST(garbage_tolerance_acts_as_the_default)
{
	/* 0 is a valid tolerance (only equal samples are steady); the other words are not. */
	for (size_t i = 1; i < NGARBAGE; i++) {
		check_setup(); /* a fresh connection */
		converged();
		params.tolerance_us = garbage[i];
		ack(15000);
		ack(16100); /* 1100 us apart: beyond the default 1000 us */
		ack(17200);
		CHECK(!congested());
		CHECK_EQ(acd_state(core())->steady, 0);
	}
}

TEST(garbage_halve_once_acts_as_the_default)
{
	for (size_t i = 1; i < NGARBAGE; i++) {
		check_setup(); /* a fresh connection */
		converged();
		params.halve_once = garbage[i];
		sim_tp.snd_cwnd = 120;
		sim_tp.packets_out = 100;
		ack(MIN_RTT_US * 3);
		enter_recovery(MIN_RTT_US * 3, 0);
		CHECK_EQ(sim_tp.snd_cwnd, 60);
		ack(MIN_RTT_US * 3);
		CHECK_EQ(sim_tp.snd_cwnd, 30); /* halves on every ACK of the round, as the listing */
		sim_tp.inet_conn.icsk_ca_state = TCP_CA_Open;
		sim_round(1, MIN_RTT_US * 3);
	}
}

TEST(trace_reports_detector_state)
{
	struct bbrkit_flow f = { 0 };

	converged();
	ack(15000);
	ack(15100);
	ack(15200);
	bbr1_fill_flow(&f, sk, core(), BBRKIT_EV_SNAPSHOT);
	CHECK_EQ(f.variant[BBRKIT_VAR_ACD_STEADY], 2);
	CHECK_EQ(f.variant[BBRKIT_VAR_ACD_CONGESTED], 1);
	CHECK_EQ(f.variant[BBRKIT_VAR_ACD_HALVINGS], 0);
}
