/* SPDX-License-Identifier: GPL-2.0 */
/* bbr3's congestion-control callbacks (the struct_ops ABI bbr_ops.h registers) and its flow record
 * (the substrate's telemetry plus the v3 state and the per-packet path's counts). Included by
 * bbr3_core.h last.
 */
#ifndef BBR3_CC_H
#define BBR3_CC_H

/* The substrate's reset (v3 shares its fields), v3's own state, then the request to pace. */
BBR_INLINE void bbr3_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;

	bbr_core_reset(sk, b);
	b->prior_cwnd = tp->prior_cwnd;
	s = bbr3_state(sk, true);
	if (s) {
		bbr3_state_init(sk, b, s);
		bbr3_pp_init(sk, s);
	}
	bbr_out_request_pacing(sk, b);
}

/* cong_control: the per-ACK entry point, with its one storage lookup. */
BBR_INLINE void bbr3_main(struct sock *sk, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, true);
	struct bbr3_acked acked;
	struct bbr3_pp *pp = NULL;
	u32 sample_bw = 0;
	bool missed = true;

	if (!s)
		return; /* no memory for the model: keep cwnd and pacing as they are */
	if (!s->initialized)
		bbr3_state_init(sk, b, s);

	/* Approximations A and B; where the checks act on them (a loss round, or an ACKed skb sent before
	 * losses that may predate the round: v3's rs->lost counts from the skb's send), the per-packet
	 * path's record of the ACKed skb gives v3's own.
	 */
	acked.tx_in_flight = rs->prior_in_flight;
	acked.lost = bbr3_lost_in_round(tp, s);
	/* The flow's per-packet state, looked up once, only on the ACKs that need it. */
	if (s->pp_on &&
		(acked.lost || rs->losses > 0 || bbr3_pp_covers_loss(tp, s, rs) ||
			bbr3_pp_covers_over_hi(tp, s, rs)))
		pp = bbr3_pp_marks(sk, s);
	else if (s->pp_on) /* sent within inflight_hi: its flight cannot raise it, as A might */
		acked.tx_in_flight = bbr_min_u32(acked.tx_in_flight, s->inflight_hi);
	if (pp)
		bbr3_pp_acked(sk, pp, rs, &acked);
	/* The per-packet path's decision, on the ACKs that marked skbs lost. */
	if (rs->losses > 0 && !(s->pp_on && bbr3_pp_apply(sk, b, s, pp, (u32)rs->losses, &missed)))
		bbr3_on_losses(sk, b, s, rs, s->pp_on && !missed);

	b->round_start = 0;
	if (rs->interval_us > 0 && !bbr_after(b->next_rtt_delivered, rs->prior_delivered)) {
		b->next_rtt_delivered = tp->delivered;
		b->rtt_cnt++;
		b->round_start = 1;
		s->rounds_since_probe = bbr_min_u32(s->rounds_since_probe + 1, 0xFF);
		bbr3_update_ecn_alpha(sk, b, s);
	}
	if (tp->delivered_ce != s->ack_delivered_ce) { /* this ACK carried CE feedback */
		s->ack_delivered_ce = tp->delivered_ce;
		if (bbr3_ecn(s))
			s->ecn_in_round = 1;
	}
	/* Rounded up, so that slow flows can grow. */
	if (rs->interval_us > 0 && rs->delivered >= 0)
		sample_bw = (u32)(((u64)rs->delivered * BW_UNIT + (u64)rs->interval_us - 1) /
			(u64)rs->interval_us);
	bbr3_update_latest_delivery_signals(sk, s, rs, sample_bw);

	bbr3_update_congestion_signals(sk, b, s, rs, sample_bw);
	bbr_update_ack_aggregation_win(
		sk, b, rs, b->full_bw_reached ? BBR_EXTRA_ACKED_WIN_RTTS : BBR3_STARTUP_EXTRA_ACKED_WIN_RTTS);
	bbr3_check_loss_too_high_in_startup(sk, b, s, rs, &acked);
	bbr3_variant_check_full_bw(b, s, rs, sample_bw);
	bbr3_check_drain(sk, b, s);
	bbr3_update_cycle_phase(sk, b, s, rs, &acked, sample_bw);
	bbr3_update_min_rtt(sk, b, s, rs);
	bbr3_update_gains(b);

	bbr_set_pacing_rate(sk, b, bbr_bw(b), b->pacing_gain);
	bbr3_set_cwnd(sk, b, s, rs->acked_sacked, bbr_bw(b));
	bbr3_bound_cwnd_for_inflight_model(sk, b, s);

	bbr3_advance_latest_delivery_signals(sk, s, rs, sample_bw);
	s->sent_over_hi = bbr_out_cwnd(sk, b) > s->inflight_hi;
	b->prev_ca_state = inet_csk(sk)->icsk_ca_state;
	if (acked.lost) /* losses since the ACKed skb was sent */
		s->loss_in_cycle = 1;
	if (rs->delivered_ce > 0)
		s->ecn_in_cycle = 1;
}

/* Entering recovery: save cwnd, and the bounds in case the recovery turns out spurious. */
BBR_INLINE u32 bbr3_ssthresh(struct sock *sk)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, false);
	bool missed;

	bbr_save_cwnd(sk, b);
	if (s) {
		if (s->pp_on) /* v3 took it at the mark, before this */
			bbr3_pp_apply(sk, b, s, bbr3_pp_marks(sk, s), 0, &missed);
		s->undo_bw_lo = s->bw_lo;
		s->undo_inflight_lo = s->inflight_lo;
		s->undo_inflight_hi = s->inflight_hi;
	}
	return bbr_out_ssthresh(sk, b);
}

/* Spurious recovery: restore the bounds and cwnd saved on entry. */
BBR_INLINE u32 bbr3_undo_cwnd(struct sock *sk)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, false);

	if (!s)
		return bbr_out_cwnd(sk, b);
	bbr3_reset_full_bw(b, s);
	s->loss_in_round = 0;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(undo_restore))
		return b->prior_cwnd;
#endif
	s->bw_lo = bbr_max_u32(s->bw_lo, s->undo_bw_lo);
	s->inflight_lo = bbr_max_u32(s->inflight_lo, s->undo_inflight_lo);
	s->inflight_hi = bbr_max_u32(s->inflight_hi, s->undo_inflight_hi);
	s->sent_over_hi = 1; /* the restored cwnd is not yet bounded by it */
	bbr3_set_bw(b, s);
	return b->prior_cwnd;
}

BBR_INLINE void bbr3_set_state(struct sock *sk, u8 new_state)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;

	if (new_state == TCP_CA_Loss) {
		b->prev_ca_state = TCP_CA_Loss;
		s = bbr3_state(sk, false);
		if (!s)
			return;
		/* An RTO may mean a new path: learn its plateau again. */
		bbr3_reset_full_bw(b, s);
		/* v3 judged the marks before this callback, so a probe they ended is over here. */
		bbr3_on_rto(sk, b, s);
		/* The lower-bound cut needs the cwnd from before the RTO. */
		if (!bbr3_is_probing_bandwidth(b) && s->inflight_lo == ~0U)
			s->inflight_lo = bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd);
	} else if (b->prev_ca_state == TCP_CA_Loss) {
		bbr_out_set_cwnd(sk, b, bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd));
		s = bbr3_state(sk, false);
		if (s) /* the restored cwnd is not yet bounded by inflight_hi */
			s->sent_over_hi = 1;
	}
}

BBR_INLINE void bbr3_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;

	if (!bbr_restart_from_idle(sk, b, event) || b->mode != BBRKIT_PROBE_RTT)
		return;
	s = bbr3_state(sk, false);
	if (s)
		bbr3_check_probe_rtt_done(sk, b, s, bbr_now_ticks(tcp_sk(sk)));
}

#define bbr3_sndbuf_expand bbr_core_sndbuf_expand
#define bbr3_min_tso_segs bbr_core_min_tso_segs

/* The substrate's record plus the v3 state. */
BBR_INLINE void bbr3_fill_flow(struct bbrkit_flow *f, struct sock *sk, const struct bbr_core *b, u8 event)
{
	const struct bbr3 *s = bbr3_state(sk, false);
	const struct bbr3_pp *pp;
	u32 lost, delivered;

	bbr_fill_flow_common(f, sk, b, event);
	f->variant[BBRKIT_VAR_V3_PHASE] = b->mode == BBRKIT_PROBE_BW ? b->cycle_idx : BBRKIT_V3_NONE;
	if (!s)
		return;
	lost = s->last_round_lost;
	delivered = s->last_round_delivered;
	f->flags |= s->full_bw_now ? BBRKIT_F_FULL_BW_NOW : 0;
	f->max_bw = bbr3_max_bw(s);
	f->max_bw_cycle[0] = s->bw_hi[0];
	f->max_bw_cycle[1] = s->bw_hi[1];
	f->bw_shortterm = s->bw_lo;
	f->inflight_longterm = s->inflight_hi;
	f->inflight_shortterm = s->inflight_lo;
	f->undo_bw_shortterm = s->undo_bw_lo;
	f->undo_inflight_shortterm = s->undo_inflight_lo;
	f->undo_inflight_longterm = s->undo_inflight_hi;
	f->drain_start_round = s->drain_start_round;
	f->variant[BBRKIT_VAR_V3_LOSS_RATE] =
		lost + delivered ? (u16)((u64)lost * BBRKIT_PERMILLE / (lost + delivered)) : 0;
	f->variant[BBRKIT_VAR_V3_ECN_RATE] =
		delivered ? (u16)((u64)s->last_round_ce * BBRKIT_PERMILLE / delivered) : 0;
	f->variant[BBRKIT_VAR_V3_ECN_ALPHA] = s->ecn_alpha;
	f->variant[BBRKIT_VAR_V3_PROBE_RTT_MIN] = s->probe_rtt_min_us;
	pp = s->pp_on ? bbr3_pp_state(sk) : NULL;
	f->variant[BBRKIT_VAR_V3_PP_DECISIONS] = pp ? pp->decisions : BBRKIT_VAR_NONE;
	f->variant[BBRKIT_VAR_V3_PP_MISSES] = pp ? pp->misses : BBRKIT_VAR_NONE;
}

#endif /* BBR3_CC_H */
