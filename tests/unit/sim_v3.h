/* SPDX-License-Identifier: GPL-2.0 */
/* Drives bbr3_core.h (bbr2, bbr3) through synthetic ACKs: a steady 90-packet-BDP flow at 20 ms.
 * Include after sim.h.
 */
#ifndef SIM_V3_H
#define SIM_V3_H

#define PKTS 90 /* a 90-packet BDP: 4.5 packets/ms at 20 ms */
#define BW sim_bw(PKTS, SIM_RTT_US)
#define ACKS_PER_ROUND 10

static const __typeof__(params) defaults = BBRKIT_PARAMS_DEFAULTS(BBR3_PARAMS_TABLE);

static __attribute__((unused)) struct bbr3 *st(void)
{
	return &host_bbr3;
}

/* One ACK of a steady 4.5 packets/ms flow (a 2 ms slice), with `inflight` in flight before it. */
static __attribute__((unused)) void ack(u32 inflight, int losses, bool round_end)
{
	sim_advance_us(SIM_RTT_US / ACKS_PER_ROUND);
	sim_ack((struct sim_ack){ .acked = PKTS / ACKS_PER_ROUND,
		.rtt_us = SIM_RTT_US,
		.interval_us = SIM_RTT_US / ACKS_PER_ROUND,
		.losses = losses,
		.round_end = round_end,
		.prior_in_flight = inflight });
}

/* A 2 ms ACK of 9 packets, not ending a round, with `inflight` in flight before it; the caller sets
 * what it tests in rs (which starts zeroed) before it goes in.
 */
static __attribute__((unused)) struct rate_sample ack_sample(u32 inflight)
{
	struct rate_sample rs = { 0 };

	sim_advance_us(2000);
	rs.prior_delivered = core()->next_rtt_delivered - 1;
	rs.delivered = 9;
	rs.acked_sacked = 9;
	rs.interval_us = 2000;
	rs.rtt_us = SIM_RTT_US;
	rs.prior_in_flight = inflight;
	sim_tp.delivered += 9;
	return rs;
}

/* A round of ACKS_PER_ROUND ACKs, the first of which ends the previous round. */
static __attribute__((unused)) void round_of(u32 inflight)
{
	for (int i = 0; i < ACKS_PER_ROUND; i++)
		ack(inflight, 0, i == 0);
}

/* STARTUP, DRAIN, then PROBE_BW with 90 packets per round and a small flight. */
static __attribute__((unused)) void start(void)
{
	params = defaults;
	sim_tp.snd_cwnd = 200;
	sim_to_probe_bw();
	CHECK_EQ(core()->mode, BBRKIT_PROBE_BW);
}

static __attribute__((unused)) u32 phase(void)
{
	return core()->cycle_idx;
}

/* Rounds in the current phase until it changes; returns how many, at most `max`. */
static __attribute__((unused)) int rounds_until_phase_changes(u32 inflight, int max)
{
	u32 p = phase();
	int n = 0;

	while (phase() == p && core()->mode == BBRKIT_PROBE_BW && n < max) {
		round_of(inflight);
		n++;
	}
	return n;
}

/* Into UP through REFILL, with a generous cwnd. */
static __attribute__((unused)) void to_up(void)
{
	start();
	params.probe_wait_base_ms = 100;
	params.probe_wait_rand_ms = 0;
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	rounds_until_phase_changes(80, 100);
	rounds_until_phase_changes(80, 10);
	sim_tp.snd_cwnd = 200;
}

/* STARTUP for three rounds, then a recovery round in which `loss_acks` ACKs report `losses` each,
 * of a 100-packet flight; end_round() ends it.
 */
static __attribute__((unused)) void lossy_startup_round(int loss_acks, int losses)
{
	params = defaults;
	sim_tp.packets_out = 1000; /* a queue: stay in DRAIN */
	sim_round(10, SIM_RTT_US);
	sim_round(20, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	sim_tp.inet_conn.icsk_ca_state = TCP_CA_Recovery;
	for (int i = 0; i < loss_acks; i++) {
		sim_advance_us(1000);
		sim_ack((struct sim_ack){ .acked = 8,
			.rtt_us = SIM_RTT_US,
			.interval_us = 1000,
			.losses = losses,
			.prior_in_flight = 100 });
	}
}

static __attribute__((unused)) void end_round(void)
{
	sim_advance_us(SIM_RTT_US);
	sim_ack((struct sim_ack){ .acked = 8,
		.rtt_us = SIM_RTT_US,
		.interval_us = 1000,
		.round_end = true,
		.prior_in_flight = 100 });
}

#endif /* SIM_V3_H */
