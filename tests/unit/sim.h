/* SPDX-License-Identifier: GPL-2.0 */
/* Drives one algorithm's host build with synthetic ACKs and rate samples.
 * Include after the algorithm's .bpf.c file.
 */
#ifndef SIM_H
#define SIM_H

#include "check.h"

#define SIM_MSS 1448
#define SIM_START_US 1000000ULL /* the connection starts at t = 1 s */
#define SIM_RTT_US 20000	/* base RTT of the simulated path */
#define SIM_TRACE_MAX 1024

static struct tcp_sock sim_tp;
static struct sock *const sk = (struct sock *)&sim_tp;
static struct bbrkit_flow host_trace_log[SIM_TRACE_MAX];
static int host_trace_n;

static void host_trace_record(const struct bbrkit_flow *f)
{
	if (host_trace_n < SIM_TRACE_MAX)
		host_trace_log[host_trace_n++] = *f;
}

static struct bbr_core *core(void)
{
	return bbr_core_of(sk);
}

/* A new connection right after the handshake, initialised by the algorithm. */
static void check_setup(void)
{
	memset(&sim_tp, 0, sizeof(sim_tp));
	sim_tp.mss_cache = SIM_MSS;
	sim_tp.snd_cwnd = TCP_INIT_CWND;
	sim_tp.snd_cwnd_clamp = ~0U;
	sim_tp.inet_conn.icsk_sk.sk_max_pacing_rate = ~0UL;
	sim_tp.inet_conn.icsk_sk.sk_pacing_shift = 10;
	sim_tp.tcp_mstamp = SIM_START_US;
	sim_tp.delivered_mstamp = SIM_START_US;
	host_clock_us = SIM_START_US;
	/* The handshake gave the first RTT sample, as on a real connection. */
	sim_tp.srtt_us = SIM_RTT_US << 3;
	sim_tp.rtt_min.s[0].v = SIM_RTT_US;
	host_random_value = 0;
	host_trace_enabled = false;
	host_trace_n = 0;
	BBRKIT_CC(init)(sk);
}

struct sim_ack {
	u32 acked;	  /* packets newly delivered */
	long rtt_us;	  /* RTT sample, -1 for none */
	long interval_us; /* delivery interval of the rate sample */
	int losses;	  /* packets newly marked lost */
	u32 delivered_ce; /* of `acked`, packets that carried a CE mark */
	bool round_end;	  /* the ACKed data was sent after the round began */
	bool app_limited;
	u32 prior_in_flight;
};

/* One ACK at the current time. */
static __attribute__((unused)) void sim_ack(struct sim_ack a)
{
	struct rate_sample rs = { 0 };

	/* A round ends when the ACKed packet was sent after the previous round's end. */
	rs.prior_delivered = a.round_end ? sim_tp.delivered : core()->next_rtt_delivered - 1;
	rs.delivered = (s32)a.acked;
	rs.acked_sacked = a.acked;
	rs.interval_us = a.interval_us;
	rs.rtt_us = a.rtt_us;
	rs.losses = a.losses;
	rs.is_app_limited = a.app_limited;
	rs.prior_in_flight = a.prior_in_flight;
	rs.delivered_ce = (s32)a.delivered_ce;
	sim_tp.delivered += a.acked;
	sim_tp.delivered_ce += a.delivered_ce;
	sim_tp.lost += (u32)a.losses;
	sim_tp.delivered_mstamp = sim_tp.tcp_mstamp;
	if (a.rtt_us >= 0)
		sim_tp.rack.rtt_us = (u32)a.rtt_us;
	bbrkit_on_ack(sk, &rs);
}

static __attribute__((unused)) void sim_advance_us(u64 us)
{
	sim_tp.tcp_mstamp += us;
	host_clock_us += us;
}

/* One round trip of the path: `pkts` delivered in one RTT, ACKed at its end. */
static __attribute__((unused)) void sim_round(u32 pkts, long rtt_us)
{
	sim_advance_us((u64)rtt_us);
	sim_ack((struct sim_ack){ .acked = pkts,
		.rtt_us = rtt_us,
		.interval_us = rtt_us,
		.round_end = true,
		.prior_in_flight = pkts });
}

/* STARTUP with doubling bandwidth, then flat at `flat_pkts` per round until the pipe is
 * full; the sender holds `packets_out` in flight (big values keep the flow in DRAIN).
 */
static __attribute__((unused)) void sim_fill_pipe(u32 flat_pkts, u32 packets_out)
{
	u32 pkts = 10;

	sim_tp.packets_out = packets_out;
	while (!core()->full_bw_reached) {
		sim_round(pkts, SIM_RTT_US);
		pkts = pkts * 2 < flat_pkts ? pkts * 2 : flat_pkts;
	}
}

/* A flow in PROBE_BW at 90 packets per 20 ms round (4.5 packets/ms). */
static __attribute__((unused)) void sim_to_probe_bw(void)
{
	sim_fill_pipe(90, 20);
}

/* Bandwidth in the core's fixed point for `pkts` per `us`. */
static __attribute__((unused)) u32 sim_bw(u64 pkts, u64 us)
{
	return (u32)(pkts * BW_UNIT / us);
}

/* A converged PROBE_BW state set directly: bw, min_rtt, phase with its gains (the family's own, so
 * that the v3 tests need no BBRv1 code), pipe full.
 */
static __attribute__((unused)) void sim_set_probe_bw(u32 bw, u32 min_rtt_us, u32 cycle_idx)
{
	struct bbr_core *b = core();

	b->mode = BBRKIT_PROBE_BW;
	b->full_bw_reached = 1;
	b->cycle_idx = cycle_idx;
	b->cycle_stamp = (u32)sim_tp.delivered_mstamp;
	BBRKIT_CC(update_gains)(b);
	b->min_rtt_us = min_rtt_us;
	b->min_rtt_stamp = bbr_now_ticks(&sim_tp);
	bbr_minmax_reset(&b->bw, b->rtt_cnt, bw);
	sk->sk_pacing_rate = bbr_bw_to_pacing_rate(sk, bw, BBR_UNIT);
}

#endif /* SIM_H */
