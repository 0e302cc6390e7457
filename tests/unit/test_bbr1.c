// SPDX-License-Identifier: GPL-2.0
/* BBRv1 semantics of the shared core, driven through bbr1's host build. */
#include "bbr1.bpf.c"
#include "sim.h"

TEST(minmax_tracks_windowed_max)
{
	struct bbr_minmax m;

	bbr_minmax_reset(&m, 0, 0);
	CHECK_EQ(bbr_minmax_running_max(&m, 10, 1, 100), 100);
	CHECK_EQ(bbr_minmax_running_max(&m, 10, 2, 50), 100);
	CHECK_EQ(bbr_minmax_running_max(&m, 10, 5, 70), 100);
	CHECK_EQ(bbr_minmax_running_max(&m, 10, 11, 60), 100); /* 10 rounds old: still in */
	/* Round 12: the 100 sample expired; the best later sample (70 at round 5) takes over. */
	CHECK_EQ(bbr_minmax_running_max(&m, 10, 12, 40), 70);
	CHECK_EQ(bbr_minmax_running_max(&m, 10, 13, 200), 200);
}

TEST(minmax_forgets_everything_after_a_silent_window)
{
	struct bbr_minmax m;

	bbr_minmax_reset(&m, 0, 0);
	bbr_minmax_running_max(&m, 10, 1, 100);
	CHECK_EQ(bbr_minmax_running_max(&m, 10, 30, 5), 5);
}

TEST(init_without_rtt_sample_paces_for_a_nominal_1ms)
{
	/* No timestamps and a retransmitted SYN: high_gain x 10 packets per 1 ms. */
	double want = 10.0 / 1000 * SIM_MSS * 1e6 * (BBR_HIGH_GAIN / 256.0) * 0.99;

	sim_tp.srtt_us = 0;
	sim_tp.rtt_min.s[0].v = ~0U;
	memset(sim_tp.inet_conn.icsk_ca_priv, 0, sizeof(sim_tp.inet_conn.icsk_ca_priv));
	bbr1_init(sk);
	CHECK_EQ(core()->min_rtt_us, ~0U);
	CHECK(!core()->has_seen_rtt);
	CHECK_NEAR(sk->sk_pacing_rate, want, want * 1e-3);
	CHECK_EQ(bbr_bdp(core(), sim_bw(10, 1000), BBR_UNIT), TCP_INIT_CWND); /* capped: no RTT */
}

TEST(init_resets_what_an_ack_before_it_left)
{
	struct bbr_core clean, left;
	struct bbr_core *b = core();

	clean = *b;
	/* The ACK of the SYN on a socket given bbr1 before connect() runs before init. */
	memset(sim_tp.inet_conn.icsk_ca_priv, 0xa5, sizeof(sim_tp.inet_conn.icsk_ca_priv));
	left = *b;
	bbr1_init(sk);
	/* As the kernel's bbr_init(): all but the gains, which the first ACK sets from the mode. */
	CHECK_EQ(b->pacing_gain, left.pacing_gain);
	CHECK_EQ(b->cwnd_gain, left.cwnd_gain);
	b->pacing_gain = clean.pacing_gain;
	b->cwnd_gain = clean.cwnd_gain;
	CHECK(memcmp(b, &clean, sizeof(clean)) == 0);
}

TEST(init_starts_in_startup_with_pacing)
{
	struct bbr_core *b = core();
	/* high_gain x initial cwnd / handshake RTT, less the 1% margin. */
	double want = 10.0 / SIM_RTT_US * SIM_MSS * 1e6 * (BBR_HIGH_GAIN / 256.0) * 0.99;

	CHECK_EQ(b->mode, BBRKIT_STARTUP);
	/* Like the kernel's bbr_init(): the gains are set from the mode by the first ACK. */
	CHECK_EQ(b->pacing_gain, 0);
	CHECK_EQ(b->cwnd_gain, 0);
	CHECK_EQ(sim_tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
	CHECK_EQ(sk->sk_pacing_status, SK_PACING_NEEDED);
	CHECK_EQ(b->min_rtt_us, SIM_RTT_US);
	CHECK(b->has_seen_rtt);
	CHECK_NEAR(sk->sk_pacing_rate, want, want * 1e-3);
	CHECK(sizeof(struct bbr_core) <= sizeof(sim_tp.inet_conn.icsk_ca_priv));
}

TEST(startup_grows_cwnd_by_acked)
{
	sim_tp.packets_out = 10;
	sim_round(10, SIM_RTT_US);
	CHECK_EQ(core()->pacing_gain, BBR_HIGH_GAIN);
	CHECK_EQ(core()->cwnd_gain, BBR_HIGH_GAIN);
	CHECK_EQ(sim_tp.snd_cwnd, TCP_INIT_CWND + 10);
	CHECK_EQ(core()->min_rtt_us, SIM_RTT_US);
	CHECK_EQ(core()->rtt_cnt, 1);
}

TEST(startup_exits_after_three_rounds_without_25_percent_growth)
{
	struct bbr_core *b = core();
	u32 growth[] = { 10, 20, 40, 80 };

	sim_tp.packets_out = 1000; /* a big queue: DRAIN must not end at once */
	for (unsigned i = 0; i < sizeof(growth) / sizeof(growth[0]); i++)
		sim_round(growth[i], SIM_RTT_US);
	CHECK_EQ(b->full_bw_cnt, 0);
	/* 90 is under 80 x 1.25: each such round counts. */
	sim_round(90, SIM_RTT_US);
	sim_round(90, SIM_RTT_US);
	CHECK_EQ(b->full_bw_cnt, 2);
	CHECK_EQ(b->mode, BBRKIT_STARTUP);
	sim_round(90, SIM_RTT_US);
	CHECK(b->full_bw_reached);
	CHECK_EQ(b->mode, BBRKIT_DRAIN);
	CHECK_EQ(b->pacing_gain, BBR_DRAIN_GAIN);
	CHECK_EQ(b->cwnd_gain, BBR_HIGH_GAIN);
	/* ssthresh is set to the 1 x BDP inflight target on entering DRAIN: BDP 90 packets plus
	 * 3 TSO bursts of 12 segments (STARTUP's pacing rate, 18.6 MB/s >> 10 = 18.1 kB).
	 */
	CHECK_EQ(sim_tp.snd_ssthresh, 90 + 3 * 12);
}

TEST(startup_growth_resets_the_count)
{
	struct bbr_core *b = core();

	sim_tp.packets_out = 1000;
	sim_round(10, SIM_RTT_US);
	sim_round(11, SIM_RTT_US);
	sim_round(12, SIM_RTT_US);
	CHECK_EQ(b->full_bw_cnt, 2);
	sim_round(16, SIM_RTT_US); /* >= 1.25 x 10: growth again */
	CHECK_EQ(b->full_bw_cnt, 0);
	CHECK_EQ(b->mode, BBRKIT_STARTUP);
}

TEST(app_limited_rounds_do_not_end_startup)
{
	sim_tp.packets_out = 1000;
	sim_round(10, SIM_RTT_US);
	for (int i = 0; i < 5; i++) {
		sim_advance_us(SIM_RTT_US);
		sim_ack((struct sim_ack){ .acked = 10,
			.rtt_us = SIM_RTT_US,
			.interval_us = SIM_RTT_US,
			.round_end = true,
			.app_limited = true });
	}
	CHECK(!core()->full_bw_reached);
	CHECK_EQ(core()->mode, BBRKIT_STARTUP);
}

TEST(drain_ends_when_inflight_falls_to_bdp)
{
	struct bbr_core *b = core();

	sim_fill_pipe(90, 1000);
	CHECK_EQ(b->mode, BBRKIT_DRAIN);
	sim_tp.packets_out = 200; /* still above 1 x BDP (90 + TSO budget) */
	sim_advance_us(1000);
	sim_ack((struct sim_ack){ .acked = 4, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK_EQ(b->mode, BBRKIT_DRAIN);
	sim_tp.packets_out = 90;
	sim_advance_us(1000);
	sim_ack((struct sim_ack){ .acked = 4, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK_EQ(b->mode, BBRKIT_PROBE_BW);
}

TEST(probe_bw_random_start_is_never_the_drain_phase)
{
	unsigned seen = 0;

	sim_to_probe_bw();
	for (u32 r = 0; r < 50; r++) {
		host_random_value = r;
		bbr_reset_probe_bw_mode(sk, core());
		seen |= 1U << core()->cycle_idx;
	}
	CHECK_EQ(seen, 0xFFU & ~(1U << 1));
}

TEST(probe_bw_gain_cycle)
{
	struct bbr_core *b = core();
	struct sim_ack small = {
		.acked = 1, .rtt_us = SIM_RTT_US, .interval_us = 1000, .prior_in_flight = 10
	};
	struct sim_ack big = small;

	big.prior_in_flight = 10000;
	sim_to_probe_bw();
	host_random_value = 0;
	bbr_reset_probe_bw_mode(sk, b);
	CHECK_EQ(b->cycle_idx, 0);

	/* Probe (5/4): needs a full min_rtt AND inflight at 5/4 x BDP. */
	sim_advance_us(SIM_RTT_US / 2);
	sim_ack(big);
	CHECK_EQ(b->cycle_idx, 0);
	CHECK_EQ(b->pacing_gain, BBR_UNIT * 5 / 4);
	sim_advance_us(SIM_RTT_US);
	sim_ack(small);
	CHECK_EQ(b->cycle_idx, 0);
	sim_ack(big);
	CHECK_EQ(b->cycle_idx, 1);
	CHECK_EQ(b->pacing_gain, BBR_UNIT * 3 / 4);

	/* Drain (3/4): ends early once inflight is down to BDP. */
	sim_ack(big);
	CHECK_EQ(b->cycle_idx, 1);
	sim_ack(small);
	CHECK_EQ(b->cycle_idx, 2);
	CHECK_EQ(b->pacing_gain, BBR_UNIT);

	/* Cruise (1): one min_rtt each, whatever the inflight. */
	for (u32 idx = 2; idx < 8; idx++) {
		sim_advance_us(SIM_RTT_US / 2);
		sim_ack(small);
		CHECK_EQ(b->cycle_idx, idx);
		sim_advance_us(SIM_RTT_US / 2 + 1);
		sim_ack(small);
		CHECK_EQ(b->cycle_idx, (idx + 1) % CYCLE_LEN);
	}
	CHECK_EQ(b->pacing_gain, BBR_UNIT * 5 / 4);
}

TEST(probe_phase_ends_on_loss_after_full_length)
{
	struct bbr_core *b = core();

	sim_to_probe_bw();
	host_random_value = 0;
	bbr_reset_probe_bw_mode(sk, b);
	sim_advance_us(SIM_RTT_US + 1);
	sim_ack((struct sim_ack){
		.acked = 1, .rtt_us = SIM_RTT_US, .interval_us = 1000, .losses = 1, .prior_in_flight = 10 });
	CHECK_EQ(b->cycle_idx, 1);
}

TEST(pacing_rate_is_gain_times_bw_less_one_percent)
{
	u32 bw = sim_bw(10, 1000); /* 10 packets/ms */
	double want = 0.01 * SIM_MSS * 1e6 * 0.99;

	sim_set_probe_bw(bw, SIM_RTT_US, 2);
	bbr_set_pacing_rate(sk, core(), bw, BBR_UNIT);
	CHECK_NEAR(sk->sk_pacing_rate, want, want * 1e-4);
	bbr_set_pacing_rate(sk, core(), bw, BBR_UNIT * 5 / 4);
	CHECK_NEAR(sk->sk_pacing_rate, want * 1.25, want * 1e-4);
	/* Once the pipe is full the rate may also fall. */
	bbr_set_pacing_rate(sk, core(), bw, BBR_UNIT * 3 / 4);
	CHECK_NEAR(sk->sk_pacing_rate, want * 0.75, want * 1e-4);
}

TEST(pacing_rate_never_falls_in_startup)
{
	unsigned long before = sk->sk_pacing_rate;

	bbr_set_pacing_rate(sk, core(), sim_bw(1, 1000000), BBR_HIGH_GAIN);
	CHECK_EQ(sk->sk_pacing_rate, before);
}

TEST(cwnd_target_is_two_bdp_plus_tso_budget)
{
	struct rate_sample rs = { .acked_sacked = 10 };
	u32 bw = sim_bw(10, 1000);

	/* BDP = 10 packets/ms x 20 ms = 200; gain 2 -> 400. The pacing rate (~14.3 MB/s) >> 10 is
	 * 13999 bytes = 9 segments: budget 3 x 9 = 27, then rounded up to even: 428.
	 */
	sim_set_probe_bw(bw, SIM_RTT_US, 2);
	sim_tp.snd_cwnd = 1000;
	bbr_set_cwnd(sk, core(), &rs, 10, bw, BBR_CWND_GAIN);
	CHECK_EQ(sim_tp.snd_cwnd, 428);
	/* The probe phase adds two packets so that inflight can exceed BDP. */
	sim_set_probe_bw(bw, SIM_RTT_US, 0);
	sim_tp.snd_cwnd = 1000;
	bbr_set_cwnd(sk, core(), &rs, 10, bw, BBR_CWND_GAIN);
	CHECK_EQ(sim_tp.snd_cwnd, 430);
	/* Below target: grow by what was ACKed. */
	sim_tp.snd_cwnd = 100;
	bbr_set_cwnd(sk, core(), &rs, 10, bw, BBR_CWND_GAIN);
	CHECK_EQ(sim_tp.snd_cwnd, 110);
}

TEST(cwnd_includes_ack_aggregation_allowance)
{
	struct rate_sample rs = { .acked_sacked = 10 };
	u32 bw = sim_bw(10, 1000);

	sim_set_probe_bw(bw, SIM_RTT_US, 2);
	core()->extra_acked[0] = 30;
	sim_tp.snd_cwnd = 1000;
	bbr_set_cwnd(sk, core(), &rs, 10, bw, BBR_CWND_GAIN);
	CHECK_EQ(sim_tp.snd_cwnd, 428 + 30);
}

TEST(ack_aggregation_measures_excess_acked)
{
	u32 bw = sim_bw(10, 1000);

	sim_set_probe_bw(bw, SIM_RTT_US, 2);
	sim_tp.snd_cwnd = 1000;
	sim_ack((struct sim_ack){ .acked = 10, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	/* 1 ms later 10 packets are expected; a burst of 50 is 40 beyond that (+10 from the
	 * epoch's first ACK, which expected nothing).
	 */
	sim_advance_us(1000);
	sim_ack((struct sim_ack){ .acked = 50, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK_EQ(bbr_extra_acked(core()), 50);
}

TEST(probe_rtt_after_ten_seconds_without_new_min)
{
	struct bbr_core *b = core();
	u32 cwnd_before;
	int acks = 0;

	sim_to_probe_bw();
	/* RTT samples above min_rtt for almost 10 s: no PROBE_RTT yet. */
	while (bbr_now_ticks(&sim_tp) - b->min_rtt_stamp <
		BBR_MIN_RTT_WIN_TICKS - BBR_US_TO_TICKS(SIM_RTT_US)) {
		sim_round(90, SIM_RTT_US + 1000);
		acks++;
		CHECK(b->mode != BBRKIT_PROBE_RTT);
	}
	CHECK(acks > 400);
	cwnd_before = sim_tp.snd_cwnd;
	sim_round(90, SIM_RTT_US + 1000);
	sim_round(90, SIM_RTT_US + 1000);
	CHECK_EQ(b->mode, BBRKIT_PROBE_RTT);
	CHECK_EQ(sim_tp.snd_cwnd, BBR_CWND_MIN_TARGET);
	CHECK(b->prior_cwnd >= cwnd_before);
	CHECK_EQ(b->pacing_gain, BBR_UNIT);
	CHECK_EQ(b->cwnd_gain, BBR_UNIT);
	/* The expired filter took the current sample as the new minimum. */
	CHECK_EQ(b->min_rtt_us, SIM_RTT_US + 1000);
}

TEST(probe_rtt_lasts_200ms_and_a_round)
{
	struct bbr_core *b = core();
	u32 prior;

	sim_to_probe_bw();
	b->min_rtt_stamp -= BBR_MIN_RTT_WIN_TICKS + 1;
	sim_round(90, SIM_RTT_US);
	CHECK_EQ(b->mode, BBRKIT_PROBE_RTT);
	prior = b->prior_cwnd;

	/* Inflight reaches 4 packets: the 200 ms clock starts. */
	sim_tp.packets_out = 4;
	sim_advance_us(1000);
	sim_ack((struct sim_ack){ .acked = 2, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK(b->probe_rtt_done_stamp != 0);
	/* 300 ms without a completed round: still probing. */
	for (int i = 0; i < 30; i++) {
		sim_advance_us(10000);
		sim_ack((struct sim_ack){ .acked = 2, .rtt_us = SIM_RTT_US, .interval_us = 10000 });
	}
	CHECK_EQ(b->mode, BBRKIT_PROBE_RTT);
	/* A round completes after 200 ms: back to PROBE_BW with the saved cwnd. */
	sim_round(4, SIM_RTT_US);
	CHECK_EQ(b->mode, BBRKIT_PROBE_BW);
	CHECK(sim_tp.snd_cwnd >= prior);
}

TEST(probe_rtt_not_left_before_200ms)
{
	struct bbr_core *b = core();

	sim_to_probe_bw();
	b->min_rtt_stamp -= BBR_MIN_RTT_WIN_TICKS + 1;
	sim_round(90, SIM_RTT_US);
	sim_tp.packets_out = 4;
	sim_advance_us(1000);
	sim_ack((struct sim_ack){ .acked = 2, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	for (int i = 0; i < 9; i++) /* rounds end, but only 180 ms pass */
		sim_round(4, SIM_RTT_US);
	CHECK_EQ(b->mode, BBRKIT_PROBE_RTT);
	sim_round(4, SIM_RTT_US);
	sim_round(4, SIM_RTT_US);
	CHECK_EQ(b->mode, BBRKIT_PROBE_BW);
}

TEST(recovery_conserves_packets_for_a_round_then_restores)
{
	struct bbr_core *b = core();

	sim_set_probe_bw(sim_bw(10, 1000), SIM_RTT_US, 2);
	sim_tp.snd_cwnd = 300;
	sim_tp.packets_out = 250;
	bbr1_ssthresh(sk); /* TCP calls it on entering recovery */
	CHECK_EQ(b->prior_cwnd, 300);

	sim_tp.inet_conn.icsk_ca_state = TCP_CA_Recovery;
	sim_ack((struct sim_ack){ .acked = 5, .losses = 2, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK(b->packet_conservation);
	CHECK_EQ(sim_tp.snd_cwnd, 250 + 5); /* cut to what is in flight, plus what was ACKed */

	sim_tp.packets_out = 253;
	sim_ack((struct sim_ack){ .acked = 4, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK_EQ(sim_tp.snd_cwnd, 253 + 4); /* one out per one ACKed */

	sim_round(4, SIM_RTT_US); /* the round ends: slow start towards the target again */
	CHECK(!b->packet_conservation);
	CHECK_EQ(sim_tp.snd_cwnd, 257 + 4);

	sim_tp.inet_conn.icsk_ca_state = TCP_CA_Open;
	sim_ack((struct sim_ack){ .acked = 1, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK(sim_tp.snd_cwnd >= 300);
}

TEST(losses_come_off_cwnd)
{
	sim_set_probe_bw(sim_bw(10, 1000), SIM_RTT_US, 2);
	sim_tp.snd_cwnd = 300;
	sim_ack((struct sim_ack){ .acked = 1, .losses = 20, .rtt_us = SIM_RTT_US, .interval_us = 1000 });
	CHECK_EQ(sim_tp.snd_cwnd, 300 - 20 + 1);
}

TEST(long_term_sampling_detects_a_policer)
{
	struct bbr_core *b = core();
	u32 policed = sim_bw(100, SIM_RTT_US); /* 5 packets/ms */

	sim_to_probe_bw();
	/* Every round loses 30 of 100 packets (>20%) at a steady rate: a token bucket. */
	for (int i = 0; i < 7; i++) {
		sim_advance_us(SIM_RTT_US);
		sim_ack((struct sim_ack){ .acked = 100,
			.losses = 30,
			.rtt_us = SIM_RTT_US,
			.interval_us = SIM_RTT_US,
			.round_end = true });
		CHECK(!b->lt_use_bw);
	}
	CHECK_NEAR(b->lt_bw, policed, policed / 100);
	sim_advance_us(SIM_RTT_US);
	sim_ack((struct sim_ack){ .acked = 100,
		.losses = 30,
		.rtt_us = SIM_RTT_US,
		.interval_us = SIM_RTT_US,
		.round_end = true });
	CHECK(b->lt_use_bw);
	CHECK_NEAR(bbr_bw(b), policed, policed / 100);
	CHECK_EQ(b->pacing_gain, BBR_UNIT);

	/* After 48 rounds at the policed rate, probe again. */
	for (int i = 0; i < 47; i++)
		sim_round(100, SIM_RTT_US);
	CHECK(b->lt_use_bw);
	sim_round(100, SIM_RTT_US);
	CHECK(!b->lt_use_bw);
}

TEST(low_loss_is_not_a_policer)
{
	struct bbr_core *b = core();

	sim_to_probe_bw();
	for (int i = 0; i < 20; i++) {
		sim_advance_us(SIM_RTT_US);
		sim_ack((struct sim_ack){ .acked = 100,
			.losses = 5,
			.rtt_us = SIM_RTT_US,
			.interval_us = SIM_RTT_US,
			.round_end = true });
	}
	CHECK(!b->lt_use_bw);
}

TEST(idle_restart_paces_at_estimate_and_skips_probe_rtt)
{
	struct bbr_core *b = core();
	u32 bw = sim_bw(10, 1000);
	double want = 0.01 * SIM_MSS * 1e6 * 0.99;

	sim_set_probe_bw(bw, SIM_RTT_US, 0); /* probe phase: gain 5/4 */
	sim_tp.app_limited = 1;
	b->min_rtt_stamp -= BBR_MIN_RTT_WIN_TICKS + 1;
	bbr1_cwnd_event(sk, CA_EVENT_TX_START);
	CHECK(b->idle_restart);
	CHECK_NEAR(sk->sk_pacing_rate, want, want * 1e-4);
	sim_advance_us(1000);
	sim_ack((struct sim_ack){ .acked = 2, .rtt_us = SIM_RTT_US + 500, .interval_us = 1000 });
	CHECK(!b->idle_restart);
	CHECK_EQ(b->mode, BBRKIT_PROBE_BW);
	CHECK_EQ(b->min_rtt_us, SIM_RTT_US + 500);
}

TEST(rto_ends_the_round_and_resets_full_bw)
{
	struct bbr_core *b = core();

	sim_to_probe_bw();
	bbr1_set_state(sk, TCP_CA_Loss);
	CHECK_EQ(b->prev_ca_state, TCP_CA_Loss);
	CHECK_EQ(b->full_bw, 0);
	CHECK(b->round_start);
}

TEST(undo_restarts_full_pipe_detection)
{
	struct bbr_core *b = core();

	sim_to_probe_bw();
	b->lt_use_bw = 1;
	sim_tp.snd_cwnd = 77;
	CHECK_EQ(bbr1_undo_cwnd(sk), 77);
	CHECK_EQ(b->full_bw, 0);
	CHECK_EQ(b->full_bw_cnt, 0);
	CHECK(!b->lt_use_bw);
}

TEST(trace_records_rounds_and_mode_changes_only_when_enabled)
{
	int rounds = 0, modes = 0;

	sim_to_probe_bw();
	CHECK_EQ(host_trace_n, 0);

	check_setup();
	host_trace_enabled = true;
	sim_to_probe_bw();
	for (int i = 0; i < host_trace_n; i++) {
		rounds += host_trace_log[i].event == BBRKIT_EV_ROUND;
		modes += host_trace_log[i].event == BBRKIT_EV_MODE;
	}
	/* One record per round; the round that filled the pipe reports the mode change. */
	CHECK_EQ(rounds + modes, core()->rtt_cnt);
	CHECK_EQ(modes, 1);
	CHECK_EQ(host_trace_log[host_trace_n - 1].mode, BBRKIT_PROBE_BW);
	CHECK_EQ(host_trace_log[0].cwnd, TCP_INIT_CWND + 10);
	CHECK_EQ(host_trace_log[0].min_rtt_us, SIM_RTT_US);
}

/* The record in the draft's names, for BBRv1: the restart from idle gets its own "idle" record with
 * idle_restart and tp->app_limited set (the next ACK of data clears idle_restart: bbr_update_min_rtt),
 * the gain cycle's phase and the ACK aggregation estimate are the kernel's cycle_idx and extra_acked,
 * and the bounds BBRv1 does not have are 0.
 */
TEST(record_carries_idle_restart_cycle_and_aggregation_v1_has_no_bounds)
{
	struct bbr_core *b = core();
	const struct bbrkit_flow *r;

	sim_set_probe_bw(sim_bw(10, 1000), SIM_RTT_US, 3);
	b->extra_acked[0] = 17;
	b->prior_cwnd = 55;
	host_trace_enabled = true;
	sim_tp.app_limited = 1;
	bbr1_cwnd_event(sk, CA_EVENT_TX_START); /* the algorithm's own entry: no record */
	CHECK_EQ(host_trace_n, 0);
	b->idle_restart = 0;
	bbrkit_on_cwnd_event(sk, CA_EVENT_TX_START);
	CHECK_EQ(host_trace_n, 1);
	bbrkit_on_cwnd_event(sk, CA_EVENT_TX_START); /* already restarting: nothing new */
	CHECK_EQ(host_trace_n, 1);
	r = &host_trace_log[0];
	CHECK_EQ(r->event, BBRKIT_EV_IDLE);
	CHECK(r->flags & BBRKIT_F_IDLE_RESTART);
	CHECK(r->flags & BBRKIT_F_APP_LIMITED);
	CHECK(!(r->flags & BBRKIT_F_FULL_BW_NOW));
	CHECK_EQ(r->cycle_idx, 3);
	CHECK_EQ(r->extra_acked, 17);
	CHECK_EQ(r->prior_cwnd, 55);
	CHECK_EQ(r->max_bw, sim_bw(10, 1000));
	CHECK_EQ(r->inflight_longterm, 0);
	CHECK_EQ(r->bw_shortterm, 0);
	CHECK_EQ(r->drain_start_round, 0);
}

TEST(sndbuf_and_tso_segs)
{
	CHECK_EQ(bbr_core_sndbuf_expand(sk), 3);
	sk->sk_pacing_rate = BBR_MIN_TSO_RATE_BIT_PER_SEC / 8 - 1;
	CHECK_EQ(bbr_core_min_tso_segs(sk), 1);
	sk->sk_pacing_rate = BBR_MIN_TSO_RATE_BIT_PER_SEC / 8;
	CHECK_EQ(bbr_core_min_tso_segs(sk), 2);
}

/* Kernel 5.10+: only an RTT below min_rtt restarts the 10 s window. On a path without jitter
 * every sample equals min_rtt, and PROBE_RTT must still come after 10 s.
 */
TEST(rtt_equal_to_min_rtt_does_not_postpone_probe_rtt)
{
	struct bbr_core *b = core();
	u32 stamp, waited;

	sim_to_probe_bw();
	stamp = b->min_rtt_stamp;
	for (int i = 0; i < 600 && b->mode != BBRKIT_PROBE_RTT; i++)
		sim_round(90, SIM_RTT_US);
	CHECK_EQ(b->mode, BBRKIT_PROBE_RTT);
	waited = bbr_now_ticks(&sim_tp) - stamp;
	CHECK(waited > BBR_MIN_RTT_WIN_TICKS);
	CHECK(waited <= BBR_MIN_RTT_WIN_TICKS + BBR_US_TO_TICKS(SIM_RTT_US));
}

/* Kernel 5.14+: the first round ends with the first packet sent after init, also when the
 * algorithm is switched in mid-connection, and also past 2^31 delivered packets.
 */
TEST(first_round_counts_from_the_delivered_count_at_init)
{
	memset(sim_tp.inet_conn.icsk_ca_priv, 0, sizeof(sim_tp.inet_conn.icsk_ca_priv));
	sim_tp.delivered = 0x80000005U;
	bbr1_init(sk);
	CHECK_EQ(core()->next_rtt_delivered, 0x80000005U);
	sim_round(10, SIM_RTT_US);
	CHECK_EQ(core()->rtt_cnt, 1);
	CHECK(core()->round_start);
}

/* setsockopt(TCP_CONGESTION) on a socket idle for 20 s: tcp_mstamp still holds its last ACK's
 * time, so the min_rtt window must start at the current time (the kernel: tcp_jiffies32).
 */
TEST(init_stamps_min_rtt_with_the_current_time)
{
	host_clock_us = sim_tp.tcp_mstamp + 20 * USEC_PER_SEC;
	memset(sim_tp.inet_conn.icsk_ca_priv, 0, sizeof(sim_tp.inet_conn.icsk_ca_priv));
	bbr1_init(sk);
	CHECK_EQ(core()->min_rtt_stamp, bbr_ticks(host_clock_us));
	sim_tp.tcp_mstamp = host_clock_us;
	sim_round(10, SIM_RTT_US + 2000);
	CHECK(core()->mode != BBRKIT_PROBE_RTT);
	CHECK_EQ(core()->min_rtt_us, SIM_RTT_US);
}

/* The kernel's tcp_stamp_us_delta() truncates to u32: after 40 min of idle the phase is over. */
TEST(gain_cycle_advances_after_a_long_idle)
{
	struct bbr_core *b = core();

	sim_set_probe_bw(sim_bw(10, 1000), SIM_RTT_US, 2);
	sim_tp.app_limited = 1;
	sim_advance_us(40ULL * 60 * USEC_PER_SEC);
	bbr1_cwnd_event(sk, CA_EVENT_TX_START);
	sim_advance_us(SIM_RTT_US);
	sim_ack((struct sim_ack){ .acked = 1, .rtt_us = SIM_RTT_US, .interval_us = SIM_RTT_US });
	CHECK_EQ(b->mode, BBRKIT_PROBE_BW);
	CHECK_EQ(b->cycle_idx, 3);
}

/* The long-term interval is timed in whole milliseconds of delivered_mstamp, as in the kernel,
 * so that the policed rate is the kernel's to the last bit.
 */
TEST(long_term_interval_is_timed_in_milliseconds)
{
	struct bbr_core *b = core();
	u64 start_us, end_us, want;
	u32 delivered0;

	sim_to_probe_bw();
	sim_advance_us(SIM_RTT_US + 300); /* off the millisecond and the 1024 us grids */
	sim_ack((struct sim_ack){ .acked = 100,
		.losses = 30,
		.rtt_us = SIM_RTT_US,
		.interval_us = SIM_RTT_US,
		.round_end = true });
	CHECK(b->lt_is_sampling);
	start_us = sim_tp.delivered_mstamp;
	delivered0 = sim_tp.delivered;
	for (int i = 0; i < 10 && !b->lt_bw; i++) {
		sim_advance_us(SIM_RTT_US + 170);
		sim_ack((struct sim_ack){ .acked = 100,
			.losses = 30,
			.rtt_us = SIM_RTT_US,
			.interval_us = SIM_RTT_US,
			.round_end = true });
	}
	CHECK(b->lt_bw != 0);
	end_us = sim_tp.delivered_mstamp;
	want = (u64)(sim_tp.delivered - delivered0) * BW_UNIT / ((end_us / 1000 - start_us / 1000) * 1000);
	CHECK_EQ(b->lt_bw, want);
}
