/* SPDX-License-Identifier: GPL-2.0 */
/* bbr3's model: v3's constants, its state beyond the substrate's (struct bbr3, in socket storage),
 * the parameters, and the primitives the per-ACK steps and the per-packet path share: bounds,
 * thresholds, the loss-rate check and the probe cycle's transitions. Included by bbr3_core.h.
 */
#ifndef BBR3_MODEL_H
#define BBR3_MODEL_H

BBR_INLINE u32 bbr_core_startup_pacing_gain(void)
{
	return BBR3_STARTUP_PACING_GAIN;
}

/* Gain of UP, in BBR_UNIT: probe for 25% more bandwidth. */
#define BBR3_UP_GAIN (BBR_UNIT * 5 / 4)
/* cwnd in PROBE_RTT, in BBR_UNIT of BDP: half a BDP drains the queue but keeps the pipe busy. */
#define BBR3_PROBE_RTT_CWND_GAIN (BBR_UNIT / 2)
/* EWMA gain of the CE fraction, in BBR_UNIT (1/16). */
#define BBR3_ECN_ALPHA_GAIN (BBR_UNIT / 16)
/* Share of ecn_alpha cut from inflight_lo per CE round, in BBR_UNIT (1/3). */
#define BBR3_ECN_FACTOR (BBR_UNIT / 3)
/* Rounds above ecn_thresh that end STARTUP. */
#define BBR3_FULL_ECN_CNT 2
/* Rounds between bandwidth probes at most, for Reno coexistence up to a 62-packet BDP. */
#define BBR3_BW_PROBE_MAX_ROUNDS 63
/* That round count starts at a random 0..this-1, for mixing among flows. */
#define BBR3_BW_PROBE_RAND_ROUNDS 2
/* Most rounds the UP slope may double (bits of bw_probe_up_rounds). */
#define BBR3_UP_ROUNDS_MAX 30
/* The kernel's TCP_ECN_OK bit of tp->ecn_flags (a #define, so not in BTF). */
#define BBR3_TCP_ECN_OK 1
/* permille x 256 / 1000 = permille x 32 / 125, as a multiply and a 24-bit shift (125 rounded up:
 * exact for 0..1000, whose results are 1/125 apart).
 */
#define BBR3_PERMILLE_TO_UNIT_MUL (32ULL * 134218)
#define BBR3_PERMILLE_TO_UNIT_SHIFT 24

/* How ACKs relate to bandwidth probing (v3's bbr_ack_phase). */
enum bbr3_ack_phase {
	BBR3_ACKS_INIT,		  /* not probing, no probe feedback */
	BBR3_ACKS_REFILLING,	  /* sending at bw to fill the pipe */
	BBR3_ACKS_PROBE_STARTING, /* inflight rising to probe */
	BBR3_ACKS_PROBE_FEEDBACK, /* ACKs of the probe */
	BBR3_ACKS_PROBE_STOPPING, /* probe over, its ACKs still arriving */
};

/* The v3 model beyond the core, in socket storage. */
struct bbr3 {
	u32 bw_hi[2];		  /* max delivery rate of the last and this probe cycle, BW_SCALE */
	u32 bw_lo;		  /* short-term bound, ~0U: none */
	u32 bw_latest;		  /* max delivery rate of the last loss round */
	u32 inflight_hi;	  /* long-term bound, packets, ~0U: none */
	u32 inflight_lo;	  /* short-term bound, packets, ~0U: none */
	u32 inflight_latest;	  /* max delivered volume of the last loss round */
	u32 bw_probe_up_cnt;	  /* packets ACKed per inflight_hi increment in UP */
	u32 bw_probe_up_acks;	  /* packets ACKed since the last increment */
	u32 probe_wait_us;	  /* wall-clock wait from DOWN to the next probe */
	u32 probe_rtt_min_us;	  /* min RTT in the probe_rtt_interval window */
	u32 probe_rtt_min_stamp;  /* ticks, when it was measured */
	u32 loss_round_delivered; /* tp->delivered that ends this loss round */
	u32 round_lost;		  /* tp->lost when this loss round began (approximation B) */
	u32 round_delivered;	  /* tp->delivered then */
	u32 round_ce;		  /* tp->delivered_ce then */
	u32 undo_bw_lo;		  /* the bounds before this recovery, for undo */
	u32 undo_inflight_lo;
	u32 undo_inflight_hi;
	u32 alpha_last_delivered; /* tp->delivered at the last ecn_alpha update */
	u32 alpha_last_delivered_ce;
	u32 last_round_lost;	  /* lost, delivered and CE-marked in the last loss round: the */
	u32 last_round_delivered; /* telemetry's rates, divided by the reader (bbr3_fill_flow) */
	u32 last_round_ce;
	u32 ack_delivered_ce;  /* tp->delivered_ce after the last ACK: a rise is this ACK's CE (v3: is_ece) */
	u32 drain_start_round; /* round at the last entry to DRAIN (telemetry: the draft's name) */
	u32 loss_seen;	       /* per-packet path: tp->lost when a callback last saw it rise, */
	u32 loss_snd_nxt;      /* and snd_nxt then: an skb that ends by it may have lost packets since */
	u32 over_hi_snd_nxt;   /* per-packet path: an skb that ends by it may have gone out with a flight
				* above inflight_hi (snd_nxt when inflight_hi was cut, or cwnd was above it) */
	u32 initialized : 1,   /* bbr3_state_init() ran */
		init_cwnd : 7, /* cwnd at init */
		full_bw_now : 1,	 /* the delivery rate plateaued recently */
		startup_ecn_rounds : 2,	 /* consecutive high-CE rounds in STARTUP */
		loss_in_cycle : 1,	 /* loss in this probe cycle */
		ecn_in_cycle : 1,	 /* CE in this probe cycle */
		bw_probe_up_rounds : 5,	 /* rounds in UP: the slope doubles each */
		bw_probe_samples : 1,	 /* rate samples reflect the probe */
		prev_probe_too_high : 1, /* the last UP hit too much loss/CE */
		stopped_risky_probe : 1, /* the last UP stopped at inflight_hi */
		loss_round_start : 1,	 /* this ACK starts a loss round */
		loss_in_round : 1,	 /* loss in this loss round */
		ecn_in_round : 1,	 /* CE in this loss round */
		ack_phase : 3,		 /* enum bbr3_ack_phase */
		ecn_eligible : 1,	 /* ECN-capable path, small min_rtt: kept once set */
		sent_over_hi : 1,	 /* cwnd was above inflight_hi after the last callback */
		unused_a : 2;
	u32 ecn_alpha : 9,		  /* EWMA of the CE fraction, BBR_UNIT */
		rounds_since_probe : 8,	  /* rounds since the last probe */
		loss_events_in_round : 4, /* ACKs reporting losses in this loss round (STARTUP) */
		pp_on : 1,		  /* the per-packet path judges this flow's lost skbs */
		pp_walk : 1,		  /* ...and the ACK finds them (BBRKIT_PP_WALK), not a hook */
		unused_b : 9;
};

/* An algorithm whose table extends v3's rows (bbr_draft) names its table and struct. */
#ifndef BBR3_PARAMS_TABLE
#define BBR3_PARAMS_TABLE BBR3_PARAMS
#define BBR3_PARAMS_STRUCT bbr3_params
#endif
struct BBR3_PARAMS_STRUCT params SEC(".data.params") = BBRKIT_PARAMS_DEFAULTS(BBR3_PARAMS_TABLE);

/* Rule hooks each algorithm file defines. */
/* The plateau estimator, every ACK: sets b->full_bw_reached in STARTUP, s->full_bw_now for UP. */
BBR_INLINE void bbr3_variant_check_full_bw(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw);
/* UP, after the inflight_hi check: true ends the probe (no loss or CE too high seen). */
BBR_INLINE bool bbr3_variant_probe_up_done(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw);

/* The ACKed skb's send state as this ACK's checks read it: v3's rs->tx_in_flight and rs->lost. */
struct bbr3_acked {
	u32 tx_in_flight;
	u32 lost;
};

#ifdef __bpf__
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3);
} bbr3_storage SEC(".maps");

BBR_INLINE struct bbr3 *bbr3_state(struct sock *sk, bool create)
{
	return bpf_sk_storage_get(&bbr3_storage, sk, 0, create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
}
#else
static struct bbr3 host_bbr3; /* the unit tests' one socket */

BBR_INLINE struct bbr3 *bbr3_state(struct sock *sk, bool create)
{
	return &host_bbr3;
}
#endif

BBR_INLINE u32 bbr3_permille_to_unit(u32 permille)
{
	return (u32)(((u64)permille * BBR3_PERMILLE_TO_UNIT_MUL) >> BBR3_PERMILLE_TO_UNIT_SHIFT);
}

BBR_INLINE u32 bbr3_max_bw(const struct bbr3 *s)
{
	return bbr_max_u32(s->bw_hi[0], s->bw_hi[1]);
}

/* v3's bw = min(bw_hi, bw_lo), published where the substrate's helpers read their estimate. */
BBR_INLINE void bbr3_set_bw(struct bbr_core *b, const struct bbr3 *s)
{
	b->bw.s[0].v = bbr_min_u32(bbr3_max_bw(s), s->bw_lo);
}

BBR_INLINE u32 bbr3_mul_unit(u32 v, u32 gain)
{
	return (u32)(((u64)v * gain) >> BBR_SCALE);
}

/* The parameters, each read (they are live), clamped and converted where a decision needs it:
 * most ACKs need one or two of them, so none is read up front.
 */
BBR_INLINE u32 bbr3_loss_thresh(void) /* BBR_UNIT */
{
	return bbr3_permille_to_unit(BBRKIT_PARAM(params.loss_thresh_permille, BBR3_LOSS_THRESH));
}

/* The factor kept by a cut, BBR_UNIT. v3 stores the cut (BBR_UNIT * 30 / 100 = 76) and keeps
 * BBR_UNIT less it (180/256): the kept factor is rounded up, as there, not down (179/256).
 */
BBR_INLINE u32 bbr3_beta(void)
{
	return BBR_UNIT -
		bbr3_permille_to_unit(BBRKIT_PERMILLE - BBRKIT_PARAM(params.beta_permille, BBR3_BETA));
}

BBR_INLINE u32 bbr3_headroom(void) /* BBR_UNIT */
{
	return bbr3_permille_to_unit(BBRKIT_PARAM(params.headroom_permille, BBR3_HEADROOM));
}

BBR_INLINE u32 bbr3_ecn_thresh(void) /* BBR_UNIT */
{
	return bbr3_permille_to_unit(BBRKIT_PARAM(params.ecn_thresh_permille, BBR3_ECN_THRESH));
}

BBR_INLINE u32 bbr3_probe_rtt_win_ticks(void)
{
	return BBR_US_TO_TICKS(
		BBRKIT_PARAM(params.probe_rtt_interval_ms, BBR3_PROBE_RTT_INTERVAL) * USEC_PER_MSEC);
}

/* ECN eligibility, decided where v3 decides it (bbr_update_ecn_alpha, on round starts): at each
 * round start, from the min_rtt before this ACK's update, until the flow is eligible, and then never
 * again. A min_rtt that later grows past ecn_max_rtt_us (a standing queue, a longer route, the
 * min_rtt window expiring) does not take the ECN response away, and a flow whose min_rtt falls
 * under the limit mid-round becomes eligible at the next round start, not on that ACK. It also
 * costs a check per round, and only until the flow is eligible. The `ecn` parameter stands for
 * v3's per-route shallow-ECN flag (TCP_ECN_LOW), part of this condition in v3; bbr3_ecn() reads it
 * again on each use, so that turning it off reaches running flows on their next ACK (v3's route
 * flag cannot change under a flow).
 */
BBR_INLINE void bbr3_check_ecn_eligible(const struct sock *sk, const struct bbr_core *b, struct bbr3 *s)
{
	u32 max_rtt;

	if (s->ecn_eligible || !BBRKIT_PARAM(params.ecn, BBR3_ECN) ||
		!(tcp_sk(sk)->ecn_flags & BBR3_TCP_ECN_OK))
		return;
	max_rtt = BBRKIT_PARAM(params.ecn_max_rtt_us, BBR3_ECN_MAX_RTT);
	if (!max_rtt || b->min_rtt_us <= max_rtt)
		s->ecn_eligible = 1;
}

/* ECN on for this flow: the eligibility kept since a round start, and the parameter. */
BBR_INLINE bool bbr3_ecn(const struct bbr3 *s)
{
	return s->ecn_eligible && BBRKIT_PARAM(params.ecn, BBR3_ECN);
}

/* Like BBRv1's budget (bbr_core.h), but v3 floors cwnd at 3 TSO skbs and 4 packets, not adds them. */
BBR_INLINE u32 bbr3_quantization_budget(struct sock *sk, const struct bbr_core *b, u32 cwnd)
{
	cwnd = bbr_max_u32(cwnd, 3 * bbr_tso_segs_goal(sk, b));
	cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET);
	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP)
		cwnd += 2; /* get inflight above BDP even for tiny BDPs */
	return cwnd;
}

BBR_INLINE u32 bbr3_inflight(struct sock *sk, const struct bbr_core *b, u32 bw, u32 gain)
{
	return bbr3_quantization_budget(sk, b, bbr_bdp(b, bw, gain));
}

/* The flight v3 aims for: one BDP, unless congestion has cut `cwnd` below it. */
BBR_INLINE u32 bbr3_target_inflight_at(struct sock *sk, const struct bbr_core *b, u32 cwnd)
{
	return bbr_min_u32(bbr3_inflight(sk, b, bbr_bw(b), BBR_UNIT), cwnd);
}

BBR_INLINE u32 bbr3_target_inflight(struct sock *sk, const struct bbr_core *b)
{
	return bbr3_target_inflight_at(sk, b, bbr_out_cwnd(sk, b));
}

BBR_INLINE u32 bbr3_probe_rtt_cwnd(const struct bbr_core *b)
{
	return bbr_max_u32(BBR_CWND_MIN_TARGET, bbr_bdp(b, bbr_bw(b), BBR3_PROBE_RTT_CWND_GAIN));
}

BBR_INLINE bool bbr3_is_probing_bandwidth(const struct bbr_core *b)
{
	return b->mode == BBRKIT_STARTUP ||
		(b->mode == BBRKIT_PROBE_BW &&
			(b->cycle_idx == BBRKIT_V3_REFILL || b->cycle_idx == BBRKIT_V3_UP));
}

/* An unsigned delta, as BBRv1's cycle clock: right for phases up to 2^32 us (71 min). */
BBR_INLINE bool bbr3_has_elapsed_in_phase(const struct sock *sk, const struct bbr_core *b, u32 us)
{
	return bbr_stamp_delta_us(tcp_sk(sk)->tcp_mstamp, b->cycle_stamp) > us;
}

BBR_INLINE void bbr3_reset_full_bw(struct bbr_core *b, struct bbr3 *s)
{
	b->full_bw = 0;
	b->full_bw_cnt = 0;
	s->full_bw_now = 0;
}

/* Losses since this loss round began: approximation B of rs->lost. */
BBR_INLINE u32 bbr3_lost_in_round(const struct tcp_sock *tp, const struct bbr3 *s)
{
	return tp->lost - s->round_lost;
}

BBR_INLINE bool bbr3_loss_too_high(u32 tx_in_flight, u32 lost)
{
	return lost && tx_in_flight && lost > bbr3_mul_unit(tx_in_flight, bbr3_loss_thresh());
}

/* Did the loss (or CE) rate of this flight go past its threshold? tx_in_flight and lost are
 * approximations A and B; delivered_ce is the kernel's own.
 */
BBR_INLINE bool bbr3_is_inflight_too_high(
	const struct bbr3 *s, u32 tx_in_flight, u32 lost, const struct rate_sample *rs)
{
	if (bbr3_loss_too_high(tx_in_flight, lost))
		return true;
	return rs->delivered_ce > 0 && rs->delivered > 0 && bbr3_ecn(s) &&
		(u32)rs->delivered_ce > bbr3_mul_unit((u32)rs->delivered, bbr3_ecn_thresh());
}

/* The flight at which the loss rate crossed the threshold, assuming the `pcount` packets lost on
 * this ACK were sent last: solve (lost_prev + x) / (inflight_prev + x) = loss_thresh for x.
 */
BBR_INLINE u32 bbr3_inflight_hi_from_lost(u32 tx_in_flight, u32 lost, u32 pcount)
{
	u32 inflight_prev, lost_prev, loss_thresh = bbr3_loss_thresh();
	u64 budget, prefix = 0;

	if (pcount > tx_in_flight || pcount > lost)
		return tx_in_flight;
	inflight_prev = tx_in_flight - pcount;
	lost_prev = lost - pcount;
	budget = ((u64)inflight_prev * loss_thresh + BBR_UNIT - 1) >> BBR_SCALE;
	if (lost_prev < budget) /* BBR_UNIT - loss_thresh >= 128: loss_thresh is at most 0.5 */
		prefix = ((budget - lost_prev) << BBR_SCALE) / (BBR_UNIT - loss_thresh);
	return inflight_prev + (u32)prefix;
}

/* b's estimate is bbr3_set_bw()'s function of bw_hi and bw_lo, republished at every change of
 * them: a sample that does not raise bw_hi[1] changes nothing.
 */
BBR_INLINE void bbr3_take_max_bw_sample(struct bbr_core *b, struct bbr3 *s, u32 bw)
{
	if (bw <= s->bw_hi[1])
		return;
	s->bw_hi[1] = bw;
	bbr3_set_bw(b, s);
}

/* Keep the max of the last 1-2 probe cycles: each cycle, forget the older one. */
BBR_INLINE void bbr3_advance_max_bw_filter(struct bbr_core *b, struct bbr3 *s)
{
	if (!s->bw_hi[1])
		return; /* no samples in this cycle: keep the old one */
	s->bw_hi[0] = s->bw_hi[1];
	s->bw_hi[1] = 0;
	bbr3_set_bw(b, s);
}

BBR_INLINE void bbr3_reset_lower_bounds(struct bbr_core *b, struct bbr3 *s)
{
	s->bw_lo = ~0U;
	s->inflight_lo = ~0U;
	bbr3_set_bw(b, s);
}

BBR_INLINE void bbr3_reset_congestion_signals(struct bbr3 *s)
{
	s->loss_in_round = 0;
	s->ecn_in_round = 0;
	s->loss_in_cycle = 0;
	s->ecn_in_cycle = 0;
	s->bw_latest = 0;
	s->inflight_latest = 0;
}

/* STARTUP saw too much loss or CE: the pipe is full, and its volume bounds inflight_hi. */
BBR_INLINE void bbr3_handle_queue_too_high_in_startup(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 bdp = bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT);

	b->full_bw_reached = 1;
	s->inflight_hi = BBR3_STARTUP_HI_KEEPS_LATEST ? bbr_max_u32(bdp, s->inflight_latest) : bdp;
	s->over_hi_snd_nxt = tcp_sk(sk)->snd_nxt;
}

/* ECN is on: the caller's check. */
BBR_INLINE void bbr3_check_ecn_too_high_in_startup(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 ce_ratio)
{
	if (b->full_bw_reached)
		return;
	if (ce_ratio >= bbr3_ecn_thresh())
		s->startup_ecn_rounds = bbr_min_u32(s->startup_ecn_rounds + 1, 3);
	else
		s->startup_ecn_rounds = 0;
	if (s->startup_ecn_rounds >= BBR3_FULL_ECN_CNT)
		bbr3_handle_queue_too_high_in_startup(sk, b, s);
}

/* Once per round: eligibility, then the EWMA of the CE fraction, while ECN is on. */
BBR_INLINE void bbr3_update_ecn_alpha(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 delivered = tp->delivered - s->alpha_last_delivered;
	u32 delivered_ce = tp->delivered_ce - s->alpha_last_delivered_ce;
	u32 ce_ratio, alpha;

	bbr3_check_ecn_eligible(sk, b, s);
	if (!delivered || (s32)delivered < 0 || (s32)delivered_ce < 0 || !bbr3_ecn(s))
		return;
	ce_ratio = (u32)(((u64)delivered_ce << BBR_SCALE) / delivered);
	alpha = bbr3_mul_unit(s->ecn_alpha, BBR_UNIT - BBR3_ECN_ALPHA_GAIN) +
		bbr3_mul_unit(ce_ratio, BBR3_ECN_ALPHA_GAIN);
	s->ecn_alpha = bbr_min_u32(alpha, BBR_UNIT);
	s->alpha_last_delivered = tp->delivered;
	s->alpha_last_delivered_ce = tp->delivered_ce;
	bbr3_check_ecn_too_high_in_startup(sk, b, s, ce_ratio);
}

/* Each round of UP doubles how fast inflight_hi grows. */
BBR_INLINE void bbr3_raise_inflight_hi_slope(struct sock *sk, const struct bbr_core *b, struct bbr3 *s)
{
	u32 growth_this_round = 1U << s->bw_probe_up_rounds;

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	growth_this_round = TWIN_MUTANT(up_step_doubling) ? 1 : growth_this_round;
#endif
	s->bw_probe_up_rounds = bbr_min_u32(s->bw_probe_up_rounds + 1, BBR3_UP_ROUNDS_MAX);
	s->bw_probe_up_cnt = bbr_max_u32(bbr_out_cwnd(sk, b) / growth_this_round, 1);
}

/* UP without too much loss or CE: grow inflight_hi while it limits cwnd. */
BBR_INLINE void bbr3_probe_inflight_hi_upward(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 delta;

	if (!tp->is_cwnd_limited || bbr_out_cwnd(sk, b) < s->inflight_hi) {
		if (BBR3_UP_FORGETS_UNUSED_ACKS)
			s->bw_probe_up_acks = 0;
		return;
	}
	s->bw_probe_up_acks += rs->acked_sacked;
	if (s->bw_probe_up_acks >= s->bw_probe_up_cnt) {
		/* Rare: a division only when an increment is due. */
		delta = s->bw_probe_up_acks / s->bw_probe_up_cnt;
		s->bw_probe_up_acks -= delta * s->bw_probe_up_cnt;
		s->inflight_hi += delta;
	}
	if (b->round_start)
		bbr3_raise_inflight_hi_slope(sk, b, s);
}

/* Only when a probe is due. */
BBR_INLINE void bbr3_pick_probe_wait(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 base_ms = BBRKIT_PARAM(params.probe_wait_base_ms, BBR3_PROBE_WAIT_BASE);
	u32 rand_us = BBRKIT_PARAM(params.probe_wait_rand_ms, BBR3_PROBE_WAIT_RAND) * USEC_PER_MSEC;

	s->rounds_since_probe = bbr_out_random(sk, b) % BBR3_BW_PROBE_RAND_ROUNDS;
	s->probe_wait_us = base_ms * USEC_PER_MSEC + (rand_us ? bbr_out_random(sk, b) % rand_us : 0);
}

BBR_INLINE void bbr3_start_bw_probe_refill(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 up_rounds)
{
	bbr3_reset_lower_bounds(b, s);
	s->bw_probe_up_rounds = up_rounds;
	s->bw_probe_up_acks = 0;
	s->stopped_risky_probe = 0;
	s->ack_phase = BBR3_ACKS_REFILLING;
	b->next_rtt_delivered = tcp_sk(sk)->delivered;
	b->cycle_idx = BBRKIT_V3_REFILL;
}

BBR_INLINE void bbr3_start_bw_probe_up(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 sample_bw)
{
	struct tcp_sock *tp = tcp_sk(sk);

	s->ack_phase = BBR3_ACKS_PROBE_STARTING;
	b->next_rtt_delivered = tp->delivered;
	b->cycle_stamp = (u32)tp->tcp_mstamp;
	bbr3_reset_full_bw(b, s);
	b->full_bw = sample_bw;
	b->cycle_idx = BBRKIT_V3_UP;
	bbr3_raise_inflight_hi_slope(sk, b, s);
}

/* A new probe cycle: drain, then wait a randomised time before the next probe. */
BBR_INLINE void bbr3_start_bw_probe_down(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);

	bbr3_reset_congestion_signals(s);
	s->bw_probe_up_cnt = ~0U; /* inflight_hi stops growing */
	bbr3_pick_probe_wait(sk, b, s);
	b->cycle_stamp = (u32)tp->tcp_mstamp;
	s->ack_phase = BBR3_ACKS_PROBE_STOPPING;
	b->next_rtt_delivered = tp->delivered;
	b->cycle_idx = BBRKIT_V3_DOWN;
}

BBR_INLINE void bbr3_start_bw_probe_cruise(struct bbr_core *b, struct bbr3 *s)
{
	if (s->inflight_lo != ~0U)
		s->inflight_lo = bbr_min_u32(s->inflight_lo, s->inflight_hi);
	b->cycle_idx = BBRKIT_V3_CRUISE;
}

/* The probe overfilled the path: cut inflight_hi (once per probe) and drain. `cwnd` is the one the
 * flight was sent under.
 */
BBR_INLINE void bbr3_handle_inflight_too_high(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 tx_in_flight, u32 cwnd, bool app_limited)
{
	s->prev_probe_too_high = 1;
	s->bw_probe_samples = 0;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	app_limited |= TWIN_MUTANT(loss_cut);
#endif
	/* An app-limited flight did not really probe the path's volume. */
	if (!app_limited) {
		s->inflight_hi = bbr_max_u32(
			tx_in_flight, bbr3_mul_unit(bbr3_target_inflight_at(sk, b, cwnd), bbr3_beta()));
		s->over_hi_snd_nxt = tcp_sk(sk)->snd_nxt;
	}
	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP)
		bbr3_start_bw_probe_down(sk, b, s);
}

BBR_INLINE void bbr3_note_loss(struct tcp_sock *tp, struct bbr3 *s)
{
	if (!s->loss_in_round) /* the loss round restarts at its first loss */
		s->loss_round_delivered = tp->delivered;
	s->loss_in_round = 1;
	s->loss_in_cycle = 1;
}

#endif /* BBR3_MODEL_H */
