// SPDX-License-Identifier: GPL-2.0
/* bbr_rttgain: the RTT-based PROBE_BW gains of seed 000, section 3.2. */
#include "bbr_rttgain.bpf.c"
#include "sim.h"

#define MIN_RTT_US 20000
#define BW sim_bw(10, 1000) /* 10 packets/ms */

/* A converged flow in a cruise phase whose clock is far from its end, with default parameters. */
static void cruise(void)
{
	params = (struct bbr_rttgain_params)BBRKIT_PARAMS_DEFAULTS(BBR_RTTGAIN_PARAMS);
	sim_set_probe_bw(BW, MIN_RTT_US, 3);
}

/* One ACK carrying RTT sample rtt_us (-1: none), before the phase clock runs out. */
static void ack_rtt(long rtt_us)
{
	sim_advance_us(100);
	sim_ack((struct sim_ack){ .acked = 1, .rtt_us = rtt_us, .interval_us = 100, .prior_in_flight = 100 });
}

static double paced_gain(void)
{
	return (double)sk->sk_pacing_rate / (0.01 * SIM_MSS * 1e6 * 0.99);
}

TEST(cruise_gain_is_alpha_min_rtt_over_rtt)
{
	cruise();
	ack_rtt(MIN_RTT_US * 2);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 2);
	CHECK_NEAR(paced_gain(), 0.5, 1e-3);

	params.alpha_permille = 750;
	ack_rtt(MIN_RTT_US * 3 / 2);
	/* 0.75 x 20 / 30 = 0.5 */
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 2);
	ack_rtt(MIN_RTT_US);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT * 3 / 4);
	CHECK_NEAR(paced_gain(), 0.75, 1e-3);
}

TEST(no_queue_gives_alpha)
{
	cruise();
	params.alpha_permille = 500;
	ack_rtt(MIN_RTT_US);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 2);
}

TEST(ack_without_rtt_sample_keeps_the_last_gain)
{
	cruise();
	ack_rtt(MIN_RTT_US * 4);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 4);
	ack_rtt(-1);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 4);
	CHECK_NEAR(paced_gain(), 0.25, 1e-3);
}

TEST(probe_ends_at_probe_exit_times_min_rtt_and_not_before)
{
	struct bbr_core *b = core();

	cruise();
	sim_set_probe_bw(BW, MIN_RTT_US, 0);
	ack_rtt(MIN_RTT_US * 124 / 100);
	CHECK_EQ(b->cycle_idx, 0);
	CHECK_EQ(b->pacing_gain, BBR_UNIT * 5 / 4);
	CHECK_NEAR(paced_gain(), 1.25, 1e-3);
	ack_rtt(MIN_RTT_US * 125 / 100);
	CHECK_EQ(b->cycle_idx, 1);
	CHECK_EQ(b->pacing_gain, BBR_UNIT * 3 / 4);
	/* The drain phase is BBRv1's: 3/4 whatever the RTT. */
	CHECK_NEAR(paced_gain(), 0.75, 1e-3);
}

TEST(probe_exit_is_a_live_parameter)
{
	struct bbr_core *b = core();

	cruise();
	sim_set_probe_bw(BW, MIN_RTT_US, 0);
	params.probe_exit_permille = 1500;
	ack_rtt(MIN_RTT_US * 149 / 100);
	CHECK_EQ(b->cycle_idx, 0);
	params.probe_exit_permille = 1400;
	ack_rtt(MIN_RTT_US * 149 / 100);
	CHECK_EQ(b->cycle_idx, 1);
}

TEST(alpha_change_reaches_the_next_ack)
{
	cruise();
	ack_rtt(MIN_RTT_US);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT);
	params.alpha_permille = 500;
	ack_rtt(MIN_RTT_US);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 2);
}

/* Raw words bpftool can write that no documented range contains, or 0 below a range. */
static const __u32 garbage[] = { 0, 0xffffffff, 0x80000000 };
#define NGARBAGE (sizeof(garbage) / sizeof(garbage[0]))

TEST(param_rule_keeps_the_range_and_replaces_the_rest)
{
	CHECK_EQ(bbrkit_param(4, 4, 1000, 1000), 4);
	CHECK_EQ(bbrkit_param(1000, 4, 1000, 1000), 1000);
	CHECK_EQ(bbrkit_param(3, 4, 1000, 750), 750); /* not the nearest bound */
	CHECK_EQ(bbrkit_param(1001, 4, 1000, 750), 750);
	CHECK_EQ(bbrkit_param(0, 0, 1000, 500), 0);
	CHECK_EQ(bbrkit_param(0xffffffff, 0, 1000, 500), 500);
	CHECK_EQ(bbrkit_param(0xffffffff, 0, 0xffffffff, 500), 0xffffffff);
}

TEST(garbage_alpha_acts_as_the_default)
{
	for (size_t i = 0; i < NGARBAGE; i++) {
		check_setup(); /* a fresh connection */
		cruise();
		params.alpha_permille = garbage[i];
		bbr_variant_init(sk, core());
		CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT);
		ack_rtt(MIN_RTT_US * 2);
		CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 2); /* as alpha 1 */
		CHECK_NEAR(paced_gain(), 0.5, 1e-3);
	}
	cruise();
	params.alpha_permille = BBR_RTTGAIN_ALPHA_MIN - 1; /* just below: the default, not the bound */
	ack_rtt(MIN_RTT_US);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT);
	params.alpha_permille = BBR_RTTGAIN_ALPHA_MIN; /* in range, taken as written */
	ack_rtt(MIN_RTT_US);
	CHECK_EQ(rttgain_state(core())->cruise_gain, 1);
}

TEST(garbage_probe_exit_acts_as_the_default)
{
	for (size_t i = 0; i < NGARBAGE; i++) {
		check_setup(); /* a fresh connection */
		cruise();
		sim_set_probe_bw(BW, MIN_RTT_US, 0);
		params.probe_exit_permille = garbage[i];
		ack_rtt(MIN_RTT_US * 124 / 100);
		CHECK_EQ(core()->cycle_idx, 0); /* 0 clamped to 1.0 would have ended the probe here */
		ack_rtt(MIN_RTT_US * 125 / 100);
		CHECK_EQ(core()->cycle_idx, 1);
	}
}

TEST(garbage_gain_floor_acts_as_the_default)
{
	for (size_t i = 0; i < NGARBAGE; i++) {
		check_setup(); /* a fresh connection */
		cruise();
		params.gain_floor_permille = garbage[i];
		ack_rtt(MIN_RTT_US * 10);
		CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 10); /* no floor */
	}
}

TEST(gain_has_no_floor_by_default_but_never_reaches_zero)
{
	cruise();
	ack_rtt(MIN_RTT_US * 10);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 10);
	ack_rtt(MIN_RTT_US * 1000);
	CHECK_EQ(rttgain_state(core())->cruise_gain, 1);
}

TEST(gain_floor_bounds_the_cruise_gain)
{
	cruise();
	params.gain_floor_permille = 500;
	ack_rtt(MIN_RTT_US * 4);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT / 2);
	ack_rtt(MIN_RTT_US * 3 / 2);
	CHECK_EQ(rttgain_state(core())->cruise_gain, BBR_UNIT * 2 / 3);
}

TEST(startup_and_drain_are_bbr_v1)
{
	struct bbr_core *b = core();

	params.alpha_permille = 500;
	sim_tp.packets_out = 1000;
	sim_round(10, SIM_RTT_US * 2);
	CHECK_EQ(b->mode, BBRKIT_STARTUP);
	CHECK_EQ(bbr_variant_pacing_gain(sk, b, &(struct rate_sample){ .rtt_us = SIM_RTT_US * 2 }),
		BBR_HIGH_GAIN);
	sim_fill_pipe(90, 1000);
	CHECK_EQ(b->mode, BBRKIT_DRAIN);
	CHECK_EQ(bbr_variant_pacing_gain(sk, b, &(struct rate_sample){ .rtt_us = SIM_RTT_US * 2 }),
		BBR_DRAIN_GAIN);
}

TEST(trace_reports_the_gain_actually_paced)
{
	struct bbrkit_flow f = { 0 };

	cruise();
	ack_rtt(MIN_RTT_US * 2);
	bbr1_fill_flow(&f, sk, core(), BBRKIT_EV_SNAPSHOT);
	CHECK_EQ(f.pacing_gain, BBR_UNIT / 2);
	CHECK_EQ(f.variant[BBRKIT_VAR_RTTGAIN_GAIN], BBR_UNIT / 2);
}
