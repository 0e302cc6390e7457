/* SPDX-License-Identifier: GPL-2.0 */
/* The BBRv1 core: bbr1 and its variants (bbr_rttgain, bbr_acd).
 *
 * The model and the state machine of the kernel's net/ipv4/tcp_bbr.c (6.10+), rewritten for the BPF
 * struct_ops environment: STARTUP, DRAIN, PROBE_BW gain cycling, PROBE_RTT, the windowed
 * max-bandwidth and min-RTT filters, cwnd = gain x BDP + ACK-aggregation allowance + TSO budget,
 * long-term bandwidth sampling (policer detection), packet conservation and cwnd restore around loss
 * recovery. It stands on bbr_substrate.h (the state, filters, pacing and cwnd helpers, clock, output
 * accessors), which bbr3_core.h shares.
 *
 * Differences from the kernel, all forced by the environment or by the variants:
 * - The two stamps the kernel keeps in jiffies (min_rtt_stamp, probe_rtt_done_stamp) are kept in
 *   ticks of 1024 us, tp->tcp_mstamp shifted right: no helper call per ACK, and finer than HZ=250
 *   jiffies. Durations are rounded up to whole ticks. Where it shows: PROBE_RTT starts and ends up
 *   to one jiffy (4 ms at HZ=250) earlier or later than the kernel's, so the ACK that enters or
 *   leaves it can differ (the lockstep check counts these separately).
 * - The two u64 microsecond stamps (cycle, ACK-aggregation epoch) are kept as their low 32 bits.
 *   The kernel only ever takes their difference to a later stamp through tcp_stamp_us_delta(),
 *   which truncates to u32, so the unsigned 32-bit difference taken here is the same number,
 *   also after idle periods of any length. This frees 12 bytes of the 104-byte icsk_ca_priv for
 *   the variants' own state (bbr_core.ext).
 * - Variants plug in through the bbr_variant_*() hooks declared below; each algorithm file defines
 *   all of them (bbr1 with BBRv1's own behaviour) and the compiler inlines them, so a hook costs
 *   nothing at run time.
 *
 * The algorithm file includes this header, defines the hooks, then includes bbr_ops.h.
 */
#ifndef BBR_CORE_H
#define BBR_CORE_H

/* This core's entry points are bbr1_main(), bbr1_init(), ... (bbr_ops.h calls them through BBRKIT_CC),
 * not bbr_*(): those are the kernel's own BBR, exported as kfuncs, which the lockstep check calls beside them.
 */
#define BBRKIT_CC(fn) bbr1_##fn

#include "bbr_substrate.h"

BBR_INLINE u32 bbr_core_startup_pacing_gain(void)
{
	return BBR_HIGH_GAIN;
}

#define CYCLE_LEN 8 /* phases in a PROBE_BW pacing gain cycle */

/* Window length of the bandwidth filter, in rounds: a whole gain cycle plus slack. */
#define BBR_BW_RTTS (CYCLE_LEN + 2)
/* Random starting phase of the gain cycle, among this many phases (never the 3/4 phase). */
#define BBR_CYCLE_RAND 7
/* Minimum rounds in a long-term sampling interval. */
#define BBR_LT_INTVL_MIN_RTTS 4
/* Lost/delivered, in BBR_UNIT, above which an interval is lossy (20%): maybe a policer. */
#define BBR_LT_LOSS_THRESH 50
/* Two intervals whose bandwidths differ by at most 1/8 (BBR_UNIT) are consistent... */
#define BBR_LT_BW_RATIO (BBR_UNIT / 8)
/* ...or by at most 4 kbit/s, in bytes/s. */
#define BBR_LT_BW_DIFF_BYTES_PER_SEC (4000 / 8)
/* Rounds to pace at the policed rate before probing again. */
#define BBR_LT_BW_MAX_RTTS 48

/* Hooks each algorithm file defines. */
BBR_INLINE void bbr_variant_init(struct sock *sk, struct bbr_core *b);
/* Every ACK, after the model update and before pacing and cwnd are set. */
BBR_INLINE void bbr_variant_on_ack(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs);
/* PROBE_BW probe phase: true ends the phase now. */
BBR_INLINE bool bbr_variant_end_probe(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs);
/* The pacing gain to use on this ACK, given the state machine's gain b->pacing_gain. */
BBR_INLINE u32 bbr_variant_pacing_gain(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs);
/* TCP just entered Recovery; may start packet conservation and set *cwnd. */
BBR_INLINE void bbr_variant_recovery_start(struct sock *sk, struct bbr_core *b, u32 acked, u32 *cwnd);
/* cwnd during packet conservation, from the current cwnd (already reduced by losses). */
BBR_INLINE u32 bbr_variant_conservation_cwnd(
	struct sock *sk, struct bbr_core *b, u32 acked, u32 cwnd, u32 bw);
/* Fill the variant's part of a state record. */
BBR_INLINE void bbr_variant_fill(struct bbrkit_flow *f, const struct bbr_core *b);

/* PROBE_BW gain of each phase: probe at 5/4, drain at 3/4, cruise at 1 for six phases. */
BBR_INLINE u32 bbr_cycle_gain(u32 idx)
{
	if (idx == 0)
		return BBR_UNIT * 5 / 4;
	if (idx == 1)
		return BBR_UNIT * 3 / 4;
	return BBR_UNIT;
}

/* Room for full-sized TSO skbs in the sender's qdisc and TSO engine and the receiver's GRO. */
BBR_INLINE u32 bbr_quantization_budget(struct sock *sk, const struct bbr_core *b, u32 cwnd)
{
	cwnd += 3 * bbr_tso_segs_goal(sk, b);
	/* An even cwnd avoids a lone segment waiting for a delayed ACK. */
	cwnd = (cwnd + 1) & ~1U;
	/* The probe phase must get inflight above BDP even for tiny BDPs. */
	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx == 0)
		cwnd += 2;
	return cwnd;
}

BBR_INLINE u32 bbr_inflight(struct sock *sk, const struct bbr_core *b, u32 bw, u32 gain)
{
	return bbr_quantization_budget(sk, b, bbr_bdp(b, bw, gain));
}

/* BBRv1 adds the allowance once the pipe is full. */
BBR_INLINE u32 bbr_ack_aggregation_cwnd(const struct bbr_core *b)
{
	return b->full_bw_reached ? bbr_aggregation_allowance(b) : 0;
}

BBR_INLINE void bbr_check_probe_rtt_done(struct sock *sk, struct bbr_core *b, u32 now);

BBR_INLINE void bbr_core_cwnd_event(struct sock *sk, struct bbr_core *b, enum tcp_ca_event event)
{
	if (bbr_restart_from_idle(sk, b, event) && b->mode == BBRKIT_PROBE_RTT)
		bbr_check_probe_rtt_done(sk, b, bbr_now_ticks(tcp_sk(sk)));
}

BBR_INLINE void bbr1_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	bbr_core_cwnd_event(sk, bbr_core_of(sk), event);
}

/* Recovery: conservation in the first round (as the variant decides), restore on exit. */
BBR_INLINE bool bbr_set_cwnd_to_recover_or_restore(
	struct sock *sk, struct bbr_core *b, const struct rate_sample *rs, u32 acked, u32 bw, u32 *new_cwnd)
{
	u8 prev_state = b->prev_ca_state;
	u8 state = inet_csk(sk)->icsk_ca_state;
	u32 cwnd = bbr_out_cwnd(sk, b);

	/* An ACK for P packets releases at most 2P: first take out the lost ones here, then
	 * bbr_set_cwnd() slow-starts towards the target.
	 */
	if (rs->losses > 0)
		cwnd = (s32)(cwnd - rs->losses) > 1 ? cwnd - rs->losses : 1;

	if (state == TCP_CA_Recovery && prev_state != TCP_CA_Recovery) {
		bbr_variant_recovery_start(sk, b, acked, &cwnd);
	} else if (prev_state >= TCP_CA_Recovery && state < TCP_CA_Recovery) {
		cwnd = bbr_max_u32(cwnd, b->prior_cwnd);
		b->packet_conservation = 0;
	}
	b->prev_ca_state = state;

	if (b->packet_conservation) {
		*new_cwnd = bbr_variant_conservation_cwnd(sk, b, acked, cwnd, bw);
		return true;
	}
	*new_cwnd = cwnd;
	return false;
}

/* BBRv1's recovery entry: start a round now and cut cwnd to what is actually in flight. */
BBR_INLINE void bbr_v1_recovery_start(struct sock *sk, struct bbr_core *b, u32 acked, u32 *cwnd)
{
	struct tcp_sock *tp = tcp_sk(sk);

	b->packet_conservation = 1;
	b->next_rtt_delivered = tp->delivered;
	*cwnd = bbr_packets_in_flight(tp) + acked;
}

/* BBRv1's packet conservation: send one packet per packet ACKed. */
BBR_INLINE u32 bbr_v1_conservation_cwnd(struct sock *sk, u32 acked, u32 cwnd)
{
	return bbr_max_u32(cwnd, bbr_packets_in_flight(tcp_sk(sk)) + acked);
}

/* Slow-start towards the target cwnd, or snap down to it once the pipe is full. */
BBR_INLINE void bbr_set_cwnd(
	struct sock *sk, struct bbr_core *b, const struct rate_sample *rs, u32 acked, u32 bw, u32 gain)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cwnd = bbr_out_cwnd(sk, b), target_cwnd;

	if (!acked)
		goto done; /* nothing fully ACKed: only apply the caps */

	if (bbr_set_cwnd_to_recover_or_restore(sk, b, rs, acked, bw, &cwnd))
		goto done;

	target_cwnd = bbr_bdp(b, bw, gain);
	target_cwnd += bbr_ack_aggregation_cwnd(b);
	target_cwnd = bbr_quantization_budget(sk, b, target_cwnd);

	if (b->full_bw_reached) /* only cut cwnd once the pipe was filled */
		cwnd = bbr_min_u32(cwnd + acked, target_cwnd);
	else if (cwnd < target_cwnd || tp->delivered < TCP_INIT_CWND)
		cwnd = cwnd + acked;
	cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET);

done:
	cwnd = bbr_min_u32(cwnd, tp->snd_cwnd_clamp);
	if (b->mode == BBRKIT_PROBE_RTT) /* drain the queue, refresh min_rtt */
		cwnd = bbr_min_u32(cwnd, BBR_CWND_MIN_TARGET);
	bbr_out_set_cwnd(sk, b, cwnd);
}

/* End the gain cycle phase when its time is up and/or its inflight target is reached. */
BBR_INLINE bool bbr_is_next_cycle_phase(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool is_full_length = bbr_stamp_delta_us(tp->delivered_mstamp, b->cycle_stamp) > b->min_rtt_us;
	u32 inflight, bw;

	/* Gain 1 paces at the estimate: only the clock matters. */
	if (b->pacing_gain == BBR_UNIT)
		return is_full_length;

	if (b->pacing_gain > BBR_UNIT && bbr_variant_end_probe(sk, b, rs))
		return true;

	inflight = bbr_packets_in_net_at_edt(sk, b, rs->prior_in_flight);
	bw = bbr_max_bw(b);

	/* Probing raises inflight to gain x BDP, which may take more than min_rtt; but not
	 * against losses, since a small buffer may not hold that much.
	 */
	if (b->pacing_gain > BBR_UNIT)
		return is_full_length && (rs->losses || inflight >= bbr_inflight(sk, b, bw, b->pacing_gain));

	/* Draining: stop as soon as inflight is down to BDP, not to underuse the pipe. */
	return is_full_length || inflight <= bbr_inflight(sk, b, bw, BBR_UNIT);
}

BBR_INLINE void bbr_advance_cycle_phase(struct sock *sk, struct bbr_core *b)
{
	b->cycle_idx = (b->cycle_idx + 1) & (CYCLE_LEN - 1);
	b->cycle_stamp = (u32)tcp_sk(sk)->delivered_mstamp;
}

BBR_INLINE void bbr_update_cycle_phase(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	if (b->mode == BBRKIT_PROBE_BW && bbr_is_next_cycle_phase(sk, b, rs))
		bbr_advance_cycle_phase(sk, b);
}

BBR_INLINE void bbr_reset_probe_bw_mode(struct sock *sk, struct bbr_core *b)
{
	b->mode = BBRKIT_PROBE_BW;
	/* Random start, but never in the 3/4 phase: the advance below moves one step on. */
	b->cycle_idx = CYCLE_LEN - 1 - bbr_out_random(sk, b) % BBR_CYCLE_RAND;
	bbr_advance_cycle_phase(sk, b);
}

BBR_INLINE void bbr_reset_mode(struct sock *sk, struct bbr_core *b)
{
	if (!b->full_bw_reached)
		b->mode = BBRKIT_STARTUP;
	else
		bbr_reset_probe_bw_mode(sk, b);
}

/* A long-term interval ended: two consistent lossy intervals mean a policer. */
BBR_INLINE void bbr_lt_bw_interval_done(struct sock *sk, struct bbr_core *b, u32 bw)
{
	u32 diff;

	if (b->lt_bw) {
		diff = bw > b->lt_bw ? bw - b->lt_bw : b->lt_bw - bw;
		if ((diff * BBR_UNIT <= BBR_LT_BW_RATIO * b->lt_bw) ||
			(bbr_rate_bytes_per_sec(tcp_sk(sk), diff, BBR_UNIT) <=
				BBR_LT_BW_DIFF_BYTES_PER_SEC)) {
			b->lt_bw = (bw + b->lt_bw) >> 1; /* average of the two intervals */
			b->lt_use_bw = 1;
			b->pacing_gain = BBR_UNIT; /* avoid drops at the policer */
			b->lt_rtt_cnt = 0;
			return;
		}
	}
	b->lt_bw = bw;
	bbr_reset_lt_bw_sampling_interval(sk, b);
}

/* Token-bucket policer detection: sample the delivery rate over intervals that start and end
 * with a loss; two consistent, lossy intervals give the policed rate.
 */
BBR_INLINE void bbr_lt_bw_sampling(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 lost, delivered, t;
	u64 bw;

	if (b->lt_use_bw) {
		if (b->mode == BBRKIT_PROBE_BW && b->round_start && ++b->lt_rtt_cnt >= BBR_LT_BW_MAX_RTTS) {
			bbr_reset_lt_bw_sampling(sk, b);
			bbr_reset_probe_bw_mode(sk, b); /* probe again */
		}
		return;
	}

	/* Start at the first loss, once the policer's tokens are exhausted. */
	if (!b->lt_is_sampling) {
		if (!rs->losses)
			return;
		bbr_reset_lt_bw_sampling_interval(sk, b);
		b->lt_is_sampling = 1;
	}

	/* Running out of data would underestimate the rate. */
	if (rs->is_app_limited) {
		bbr_reset_lt_bw_sampling(sk, b);
		return;
	}

	if (b->round_start)
		b->lt_rtt_cnt++;
	if (b->lt_rtt_cnt < BBR_LT_INTVL_MIN_RTTS)
		return;
	if (b->lt_rtt_cnt > 4 * BBR_LT_INTVL_MIN_RTTS) {
		bbr_reset_lt_bw_sampling(sk, b); /* interval too long */
		return;
	}

	/* End the interval at a loss, when the tokens are surely exhausted. */
	if (!rs->losses)
		return;

	lost = tp->lost - b->lt_last_lost;
	delivered = tp->delivered - b->lt_last_delivered;
	if (!delivered || (lost << BBR_SCALE) < BBR_LT_LOSS_THRESH * delivered)
		return;

	t = bbr_ms(tp->delivered_mstamp) - b->lt_last_stamp;
	if ((s32)t < 1)
		return; /* shorter than a millisecond: wait */
	if (t >= ~0U / USEC_PER_MSEC) {
		bbr_reset_lt_bw_sampling(sk, b); /* would overflow */
		return;
	}
	t *= USEC_PER_MSEC;
	bw = (u64)delivered * BW_UNIT / t;
	bbr_lt_bw_interval_done(sk, b, (u32)bw);
}

/* Rounds and the max bandwidth filter. */
BBR_INLINE void bbr_update_bw(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u64 bw;

	b->round_start = 0;
	if (rs->delivered < 0 || rs->interval_us <= 0)
		return; /* not a valid observation */

	if (!bbr_after(b->next_rtt_delivered, rs->prior_delivered)) {
		b->next_rtt_delivered = tp->delivered;
		b->rtt_cnt++;
		b->round_start = 1;
		b->packet_conservation = 0;
	}

	bbr_lt_bw_sampling(sk, b, rs);

	/* clang 14 rejects signed 64-bit division in BPF; interval_us > 0 was checked above. */
	bw = (u64)rs->delivered * BW_UNIT / (u64)rs->interval_us;

	/* App-limited samples describe the application, not the path: use them only when they
	 * show at least the current estimate.
	 */
	if (!rs->is_app_limited || bw >= bbr_max_bw(b))
		bbr_minmax_running_max(&b->bw, BBR_BW_RTTS, b->rtt_cnt, (u32)bw);
}

BBR_INLINE void bbr_check_drain(struct sock *sk, struct bbr_core *b)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (b->mode == BBRKIT_STARTUP && b->full_bw_reached) {
		b->mode = BBRKIT_DRAIN;
		bbr_out_set_ssthresh(sk, b, bbr_inflight(sk, b, bbr_max_bw(b), BBR_UNIT));
	}
	if (b->mode == BBRKIT_DRAIN &&
		bbr_packets_in_net_at_edt(sk, b, bbr_packets_in_flight(tp)) <=
			bbr_inflight(sk, b, bbr_max_bw(b), BBR_UNIT))
		bbr_reset_probe_bw_mode(sk, b); /* queue drained */
}

BBR_INLINE void bbr_check_probe_rtt_done(struct sock *sk, struct bbr_core *b, u32 now)
{
	if (!(b->probe_rtt_done_stamp && bbr_after(now, b->probe_rtt_done_stamp)))
		return;

	b->min_rtt_stamp = now; /* wait a whole window before the next PROBE_RTT */
	bbr_out_set_cwnd(sk, b, bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd));
	bbr_reset_mode(sk, b);
}

/* The min_rtt filter, and PROBE_RTT when it expires: hold 4 packets in flight for
 * max(200 ms, one round), so that competing flows drain the queue together.
 */
BBR_INLINE void bbr_update_min_rtt(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 now = bbr_now_ticks(tp);
	bool filter_expired = bbr_after(now, b->min_rtt_stamp + BBR_MIN_RTT_WIN_TICKS);

	if (rs->rtt_us >= 0 && ((u64)rs->rtt_us < b->min_rtt_us || (filter_expired && !rs->is_ack_delayed))) {
		b->min_rtt_us = (u32)rs->rtt_us;
		b->min_rtt_stamp = now;
	}

	if (filter_expired && !b->idle_restart && b->mode != BBRKIT_PROBE_RTT) {
		b->mode = BBRKIT_PROBE_RTT;
		bbr_save_cwnd(sk, b);
		b->probe_rtt_done_stamp = 0;
	}

	if (b->mode == BBRKIT_PROBE_RTT) {
		u32 inflight = bbr_packets_in_flight(tp);

		/* Samples taken at 4 packets say nothing about the path's bandwidth. */
		bbr_out_set_app_limited(sk, b, (tp->delivered + inflight) ?: 1);
		if (!b->probe_rtt_done_stamp && inflight <= BBR_CWND_MIN_TARGET) {
			/* 0 means "not armed", so never arm at 0. */
			b->probe_rtt_done_stamp = (now + BBR_PROBE_RTT_MODE_TICKS) ?: 1;
			b->probe_rtt_round_done = 0;
			b->next_rtt_delivered = tp->delivered;
		} else if (b->probe_rtt_done_stamp) {
			if (b->round_start)
				b->probe_rtt_round_done = 1;
			if (b->probe_rtt_round_done)
				bbr_check_probe_rtt_done(sk, b, now);
		}
	}
	/* Idle restart ends with the first ACK of new data. */
	if (rs->delivered > 0)
		b->idle_restart = 0;
}

BBR_INLINE void bbr1_update_gains(struct bbr_core *b)
{
	switch (b->mode) {
	case BBRKIT_STARTUP:
		b->pacing_gain = BBR_HIGH_GAIN;
		b->cwnd_gain = BBR_HIGH_GAIN;
		break;
	case BBRKIT_DRAIN:
		b->pacing_gain = BBR_DRAIN_GAIN;
		b->cwnd_gain = BBR_HIGH_GAIN; /* keep cwnd while draining */
		break;
	case BBRKIT_PROBE_BW:
		b->pacing_gain = b->lt_use_bw ? BBR_UNIT : bbr_cycle_gain(b->cycle_idx);
		b->cwnd_gain = BBR_CWND_GAIN;
		break;
	default: /* BBRKIT_PROBE_RTT */
		b->pacing_gain = BBR_UNIT;
		b->cwnd_gain = BBR_UNIT;
		break;
	}
}

BBR_INLINE void bbr_update_model(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	bbr_update_bw(sk, b, rs);
	bbr_update_ack_aggregation(sk, b, rs);
	bbr_update_cycle_phase(sk, b, rs);
	bbr_check_full_bw_reached(b, rs);
	bbr_check_drain(sk, b);
	bbr_update_min_rtt(sk, b, rs);
	bbr1_update_gains(b);
}

/* The callbacks, on the state b: the socket's own (bbr_core_of()) in the shipped programs. */

/* cong_control: the per-ACK entry point. */
BBR_INLINE void bbr_core_main(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	u32 bw;

	bbr_update_model(sk, b, rs);
	bbr_variant_on_ack(sk, b, rs);

	bw = bbr_bw(b);
	bbr_set_pacing_rate(sk, b, bw, bbr_variant_pacing_gain(sk, b, rs));
	bbr_set_cwnd(sk, b, rs, rs->acked_sacked, bw, b->cwnd_gain);
}

/* The substrate's reset, the variant's own state, then the request to pace. */
BBR_INLINE void bbr_core_init(struct sock *sk, struct bbr_core *b)
{
	bbr_core_reset(sk, b);
	bbr_variant_init(sk, b);
	bbr_out_request_pacing(sk, b);
}

/* Spurious recovery: restart full-pipe detection and policer sampling. */
BBR_INLINE u32 bbr_core_undo_cwnd(struct sock *sk, struct bbr_core *b)
{
	b->full_bw = 0;
	b->full_bw_cnt = 0;
	bbr_reset_lt_bw_sampling(sk, b);
	return bbr_out_cwnd(sk, b);
}

/* Entering recovery: save cwnd for the restore; BBR keeps its own ssthresh. */
BBR_INLINE u32 bbr_core_ssthresh(struct sock *sk, struct bbr_core *b)
{
	bbr_save_cwnd(sk, b);
	return bbr_out_ssthresh(sk, b);
}

BBR_INLINE void bbr_core_set_state(struct sock *sk, struct bbr_core *b, u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		struct rate_sample rs = { .losses = 1 };

		b->prev_ca_state = TCP_CA_Loss;
		b->full_bw = 0;
		b->round_start = 1; /* an RTO ends the round */
		bbr_lt_bw_sampling(sk, b, &rs);
	}
}

BBR_INLINE void bbr1_main(struct sock *sk, const struct rate_sample *rs)
{
	bbr_core_main(sk, bbr_core_of(sk), rs);
}

BBR_INLINE void bbr1_init(struct sock *sk)
{
	bbr_core_init(sk, bbr_core_of(sk));
}

BBR_INLINE u32 bbr1_undo_cwnd(struct sock *sk)
{
	return bbr_core_undo_cwnd(sk, bbr_core_of(sk));
}

BBR_INLINE u32 bbr1_ssthresh(struct sock *sk)
{
	return bbr_core_ssthresh(sk, bbr_core_of(sk));
}

BBR_INLINE void bbr1_set_state(struct sock *sk, u8 new_state)
{
	bbr_core_set_state(sk, bbr_core_of(sk), new_state);
}

#define bbr1_sndbuf_expand bbr_core_sndbuf_expand
#define bbr1_min_tso_segs bbr_core_min_tso_segs

/* The substrate's record plus the variant's part; addresses and time are the caller's. */
BBR_INLINE void bbr1_fill_flow(struct bbrkit_flow *f, struct sock *sk, const struct bbr_core *b, u8 event)
{
	bbr_fill_flow_common(f, sk, b, event);
	bbr_variant_fill(f, b);
}

#endif /* BBR_CORE_H */
