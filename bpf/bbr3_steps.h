/* SPDX-License-Identifier: GPL-2.0 */
/* bbr3's per-ACK steps: the ACK-time stand-ins for the per-skb loss hook (C, F of bbr3_core.h),
 * the loss round and its lower bounds, probe feedback and the PROBE_BW sub-phases, STARTUP's exits,
 * DRAIN, PROBE_RTT, the gains and cwnd, in the order bbr3_main() calls them. Included by
 * bbr3_core.h after the model and the per-packet path.
 */
#ifndef BBR3_STEPS_H
#define BBR3_STEPS_H

/* Approximation C of v3's per-skb loss hook, where the per-packet path does not run or missed an
 * skb: the ACK that reports new losses checks the flight.
 */
BBR_INLINE void bbr3_on_losses(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, bool judged)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 lost, tx_in_flight;

	bbr3_note_loss(tp, s);
	if (!s->bw_probe_samples || judged)
		return; /* not a flight sent while probing, or judged per skb */
	lost = bbr3_lost_in_round(tp, s);
	tx_in_flight = rs->prior_in_flight;
	if (bbr3_loss_too_high(tx_in_flight, lost))
		bbr3_handle_inflight_too_high(sk, b, s,
			bbr3_inflight_hi_from_lost(tx_in_flight, lost, (u32)rs->losses), bbr_out_cwnd(sk, b),
			rs->is_app_limited);
}

/* An RTO: tcp_enter_loss() has marked the flight lost, then set cwnd to the flight (now ~0) + 1,
 * before set_state(TCP_CA_Loss). v3 judges each marked skb with the flight and cwnd of its sending
 * (skb_marked_lost); the ACK path's stand-ins would judge them on the next ACK against a flight of
 * ~1 and set inflight_hi to ~1. Judge them here with the flight outstanding at the RTO and the cwnd
 * saved by ssthresh, as the last marked skb, then rebase approximation B so that ACKs do not count
 * them again (the loss round's telemetry rate leaves them out too).
 */
BBR_INLINE void bbr3_on_rto(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 flight = tp->packets_out - tp->sacked_out, lost = bbr3_lost_in_round(tp, s);

	bool missed = true;

	if (!tp->lost_out)
		return; /* nothing was marked */
	if (s->pp_on)
		bbr3_pp_apply(sk, b, s, bbr3_pp_marks(sk, s), 1, &missed);
	if (s->bw_probe_samples && missed && bbr3_loss_too_high(flight, lost))
		bbr3_handle_inflight_too_high(sk, b, s, bbr3_inflight_hi_from_lost(flight, lost, 1),
			bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd), tp->app_limited);
	/* After the cut, whose new cycle starts clean: the marks are this round's and cycle's losses. */
	bbr3_note_loss(tp, s);
	s->round_lost = tp->lost;
}

/* Loss or CE while not probing: cut the short-term bounds, never below what the last round
 * delivered.
 */
BBR_INLINE void bbr3_adapt_lower_bounds(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 ecn_inflight_lo = ~0U, beta;

	/* Without a signal nothing changes: bw_lo is never below 1 once the model is initialised. */
	if (bbr3_is_probing_bandwidth(b) || !(s->loss_in_round || s->ecn_in_round))
		return;
	if (s->ecn_in_round && bbr3_ecn(s)) {
		if (s->inflight_lo == ~0U)
			s->inflight_lo = bbr_out_cwnd(sk, b);
		ecn_inflight_lo = bbr3_mul_unit(
			s->inflight_lo, BBR_UNIT - bbr3_mul_unit(s->ecn_alpha, BBR3_ECN_FACTOR));
	}
	if (s->loss_in_round) {
		if (s->bw_lo == ~0U)
			s->bw_lo = bbr3_max_bw(s);
		if (s->inflight_lo == ~0U)
			s->inflight_lo = bbr_out_cwnd(sk, b);
		beta = bbr3_beta();
		s->bw_lo = bbr_max_u32(s->bw_latest, bbr3_mul_unit(s->bw_lo, beta));
		s->inflight_lo = bbr_max_u32(s->inflight_latest, bbr3_mul_unit(s->inflight_lo, beta));
	}
	s->inflight_lo = bbr_min_u32(s->inflight_lo, ecn_inflight_lo);
	s->bw_lo = bbr_max_u32(1, s->bw_lo);
	bbr3_set_bw(b, s);
}

/* The max delivery rate and volume of this loss round, and the start of the next. */
BBR_INLINE void bbr3_update_latest_delivery_signals(
	struct sock *sk, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	s->loss_round_start = 0;
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	s->bw_latest = bbr_max_u32(s->bw_latest, sample_bw);
	s->inflight_latest = bbr_max_u32(s->inflight_latest, (u32)rs->delivered);
	if (!bbr_after(s->loss_round_delivered, rs->prior_delivered)) {
		s->loss_round_delivered = tcp_sk(sk)->delivered;
		s->loss_round_start = 1;
	}
}

/* At a loss round's end: restart the latest-delivery filter, the round's loss/CE counts (the
 * telemetry of the round that ended, and approximation B's base).
 */
BBR_INLINE void bbr3_advance_latest_delivery_signals(
	struct sock *sk, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!s->loss_round_start)
		return;
	s->bw_latest = sample_bw;
	s->inflight_latest = (u32)rs->delivered;
	s->last_round_lost = tp->lost - s->round_lost;
	s->last_round_delivered = tp->delivered - s->round_delivered;
	s->last_round_ce = tp->delivered_ce - s->round_ce;
	s->round_lost = tp->lost;
	s->round_delivered = tp->delivered;
	s->round_ce = tp->delivered_ce;
}

BBR_INLINE void bbr3_update_congestion_signals(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	bool network_limited = !rs->is_app_limited || sample_bw >= bbr3_max_bw(s);

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	network_limited |= TWIN_MUTANT(app_limited_max_bw);
#endif
	if (network_limited)
		bbr3_take_max_bw_sample(b, s, sample_bw);
	/* Again after the loss hook: a probe it ended reset the signals, and this loss is DOWN's. */
	if (rs->losses > 0)
		s->loss_in_round = 1;
	if (!s->loss_round_start)
		return;
	bbr3_adapt_lower_bounds(sk, b, s);
	s->loss_in_round = 0;
	s->ecn_in_round = 0;
}

/* The flight the PROBE_BW phases judge: approximation A, less what leaves before the next skb's
 * departure time. A division, so computed only by the phases that read it (DOWN and UP), on the
 * ACKs that get that far.
 */
BBR_INLINE u32 bbr3_probe_inflight(struct sock *sk, const struct bbr_core *b, const struct rate_sample *rs)
{
	return bbr_packets_in_net_at_edt(sk, b, rs->prior_in_flight);
}

/* n >= bbr3_target_inflight(), asked on every ACK of CRUISE. The target is min(cwnd, budget(BDP))
 * and the budget is at least the BDP and BBR_CWND_MIN_TARGET: those bounds settle most ACKs without
 * the budget's TSO goal, a division.
 */
BBR_INLINE bool bbr3_reaches_target_inflight(struct sock *sk, const struct bbr_core *b, u32 n)
{
	u32 bdp;

	if (n >= bbr_out_cwnd(sk, b))
		return true;
	bdp = bbr_bdp(b, bbr_bw(b), BBR_UNIT);
	if (n < bdp || n < BBR_CWND_MIN_TARGET)
		return false;
	return n >= bbr3_quantization_budget(sk, b, bdp);
}

/* Is it time for the next probe? Wall clock or Reno-scale round count, or CE gone. */
BBR_INLINE bool bbr3_check_time_to_probe_bw(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 v, n = 0;

	if (BBR3_ECN_REPROBE_GAIN && s->ecn_in_cycle && !s->loss_in_cycle && bbr3_ecn(s) &&
		inet_csk(sk)->icsk_ca_state == TCP_CA_Open) {
		/* UP's slope then starts at about reprobe_gain x inflight_hi per round: n = log2 of it. */
		v = bbr3_mul_unit(s->inflight_hi, BBR3_ECN_REPROBE_GAIN);
		while (v > 1 && n < BBR3_UP_ROUNDS_MAX) {
			v >>= 1;
			n++;
		}
		bbr3_start_bw_probe_refill(sk, b, s, n);
		return true;
	}
	/* rounds >= min(max rounds, target flight), the target last. */
	if (bbr3_has_elapsed_in_phase(sk, b, s->probe_wait_us) ||
		s->rounds_since_probe >= BBR3_BW_PROBE_MAX_ROUNDS ||
		bbr3_reaches_target_inflight(sk, b, s->rounds_since_probe)) {
		bbr3_start_bw_probe_refill(sk, b, s, 0);
		return true;
	}
	return false;
}

/* DOWN ends once inflight leaves headroom below inflight_hi and is at most one BDP. */
BBR_INLINE u32 bbr3_inflight_with_headroom(const struct bbr3 *s)
{
	u32 headroom;

	if (s->inflight_hi == ~0U)
		return ~0U;
	headroom = bbr_max_u32(bbr3_mul_unit(s->inflight_hi, bbr3_headroom()), 1);
	return s->inflight_hi > headroom + BBR_CWND_MIN_TARGET ? s->inflight_hi - headroom
							       : BBR_CWND_MIN_TARGET;
}

BBR_INLINE bool bbr3_check_time_to_cruise(
	struct sock *sk, const struct bbr_core *b, const struct bbr3 *s, u32 inflight, u32 bw)
{
	if (inflight > bbr3_inflight_with_headroom(s))
		return false;
	return inflight <= bbr3_inflight(sk, b, bw, BBR_UNIT);
}

/* Probe feedback: cut inflight_hi when the probe's flight lost (or CE-marked) too much, raise it
 * when a larger flight proved safe. True when it decided a transition.
 */
BBR_INLINE bool bbr3_adapt_upper_bounds(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked)
{
	u32 tx_in_flight = acked->tx_in_flight;

	if (s->ack_phase == BBR3_ACKS_PROBE_STARTING && b->round_start)
		s->ack_phase = BBR3_ACKS_PROBE_FEEDBACK;
	if (s->ack_phase == BBR3_ACKS_PROBE_STOPPING && b->round_start) {
		s->bw_probe_samples = 0;
		s->ack_phase = BBR3_ACKS_INIT;
		/* The best moment to forget the last cycle's bandwidth. */
		if (b->mode == BBRKIT_PROBE_BW && !rs->is_app_limited)
			bbr3_advance_max_bw_filter(b, s);
		/* UP reached the old inflight_hi without trouble: probe again, holding it a round. */
		if (b->mode == BBRKIT_PROBE_BW && s->stopped_risky_probe && !s->prev_probe_too_high) {
			bbr3_start_bw_probe_refill(sk, b, s, 0);
			return true;
		}
	}
	if (bbr3_is_inflight_too_high(s, tx_in_flight, acked->lost, rs)) {
		if (s->bw_probe_samples)
			bbr3_handle_inflight_too_high(
				sk, b, s, tx_in_flight, bbr_out_cwnd(sk, b), rs->is_app_limited);
		return false;
	}
	if (s->inflight_hi == ~0U)
		return false;		   /* no bound yet */
	if (tx_in_flight > s->inflight_hi) /* a larger flight was safe: robust to random loss */
		s->inflight_hi = tx_in_flight;
	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP)
		bbr3_probe_inflight_hi_upward(sk, b, s, rs);
	return false;
}

/* The PROBE_BW sub-phases. */
BBR_INLINE void bbr3_update_cycle_phase(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked, u32 sample_bw)
{
	if (!b->full_bw_reached)
		return;
	if (bbr3_adapt_upper_bounds(sk, b, s, rs, acked))
		return;
	if (b->mode != BBRKIT_PROBE_BW)
		return;

	switch (b->cycle_idx) {
	case BBRKIT_V3_CRUISE:
		bbr3_check_time_to_probe_bw(sk, b, s);
		break;
	case BBRKIT_V3_REFILL:
		/* One round at bw refilled the pipe: what follows reflects the probe. */
		if (b->round_start) {
			s->bw_probe_samples = 1;
			bbr3_start_bw_probe_up(sk, b, s, sample_bw);
		}
		break;
	case BBRKIT_V3_UP:
		if (s->prev_probe_too_high && bbr3_probe_inflight(sk, b, rs) >= s->inflight_hi) {
			s->stopped_risky_probe = 1; /* at the level that was too much last time */
		} else if (!bbr3_variant_probe_up_done(sk, b, s, rs, sample_bw)) {
			break;
		}
		s->prev_probe_too_high = 0;
		bbr3_start_bw_probe_down(sk, b, s);
		break;
	default: /* BBRKIT_V3_DOWN */
		if (bbr3_check_time_to_probe_bw(sk, b, s))
			break;
		if (bbr3_check_time_to_cruise(sk, b, s, bbr3_probe_inflight(sk, b, rs), bbr3_max_bw(s)))
			bbr3_start_bw_probe_cruise(b, s);
		break;
	}
}

/* STARTUP ends when a recovery round with many loss events lost too much of its flight. */
BBR_INLINE void bbr3_check_loss_too_high_in_startup(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked)
{
	if (b->full_bw_reached)
		return;
	if (rs->losses && s->loss_events_in_round < 0xF)
		s->loss_events_in_round++;
	if (s->loss_round_start && inet_csk(sk)->icsk_ca_state == TCP_CA_Recovery &&
		s->loss_events_in_round >= BBR3_FULL_LOSS_CNT &&
		bbr3_is_inflight_too_high(s, acked->tx_in_flight, acked->lost, rs)) {
		bbr3_handle_queue_too_high_in_startup(sk, b, s);
		return;
	}
	if (s->loss_round_start)
		s->loss_events_in_round = 0;
}

/* v3's plateau estimator: 25% growth of a sample restarts it; 3 rounds without end STARTUP and
 * mark the plateau that ends UP.
 */
BBR_INLINE void bbr3_v3_check_full_bw(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	bool app_limited = rs->is_app_limited;

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	app_limited &= !TWIN_MUTANT(app_limited_plateau);
#endif
	if (s->full_bw_now || app_limited)
		return;
	if (sample_bw >= (u32)(((u64)b->full_bw * BBR_FULL_BW_THRESH) >> BBR_SCALE)) {
		bbr3_reset_full_bw(b, s);
		b->full_bw = sample_bw;
		return;
	}
	if (!b->round_start)
		return;
	b->full_bw_cnt = bbr_min_u32(b->full_bw_cnt + 1, BBR_FULL_BW_CNT);
	s->full_bw_now = b->full_bw_cnt >= BBR_FULL_BW_CNT;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	s->full_bw_now |= TWIN_MUTANT(full_bw_count) && b->full_bw_cnt == BBR_FULL_BW_CNT - 1;
#endif
	b->full_bw_reached |= s->full_bw_now;
}

/* v3's end of UP: inflight_hi limiting growth restarts the plateau estimator; a plateau ends UP. */
BBR_INLINE bool bbr3_v3_probe_up_done(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 sample_bw)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (tp->is_cwnd_limited && bbr_out_cwnd(sk, b) >= s->inflight_hi) {
		bbr3_reset_full_bw(b, s);
		b->full_bw = sample_bw;
		return false;
	}
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(up_plateau))
		return b->round_start;
#endif
	return s->full_bw_now;
}

BBR_INLINE void bbr3_check_drain(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (b->mode == BBRKIT_STARTUP && b->full_bw_reached) {
		b->mode = BBRKIT_DRAIN;
		s->drain_start_round = b->rtt_cnt;
		bbr_out_set_ssthresh(sk, b, bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT));
		bbr3_reset_congestion_signals(s);
	}
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(drain_exit) &&
		bbr_packets_in_flight(tp) * 3 > bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT))
		return;
#endif
	if (b->mode == BBRKIT_DRAIN &&
		bbr_packets_in_net_at_edt(sk, b, bbr_packets_in_flight(tp)) <=
			bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT)) {
		b->mode = BBRKIT_PROBE_BW;
		bbr3_start_bw_probe_down(sk, b, s);
	}
}

BBR_INLINE void bbr3_exit_probe_rtt(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	bbr3_reset_lower_bounds(b, s);
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	b->full_bw_reached |= TWIN_MUTANT(probe_rtt_exit);
#endif
	if (b->full_bw_reached) {
		b->mode = BBRKIT_PROBE_BW;
		/* Schedule the next probe at a friendly random time; inflight is low, so cruise. */
		bbr3_start_bw_probe_down(sk, b, s);
		bbr3_start_bw_probe_cruise(b, s);
	} else {
		b->mode = BBRKIT_STARTUP;
	}
}

BBR_INLINE void bbr3_check_probe_rtt_done(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 now)
{

	if (!(b->probe_rtt_done_stamp && bbr_after(now, b->probe_rtt_done_stamp)))
		return;
	s->probe_rtt_min_stamp = now; /* the next PROBE_RTT is a whole interval away */
	bbr_out_set_cwnd(sk, b, bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd));
	bbr3_exit_probe_rtt(sk, b, s);
}

/* While in PROBE_RTT: hold the flight at the PROBE_RTT cwnd for BBR_PROBE_RTT_MODE_TICKS and a round,
 * then leave; any delivery ends an idle restart. Shared by bbr3 and bbr_draft (HandleProbeRTT()).
 */
BBR_INLINE void bbr3_handle_probe_rtt(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 now)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (b->mode == BBRKIT_PROBE_RTT) {
		u32 inflight = bbr_packets_in_flight(tp);

		/* Samples taken at half a BDP say nothing about the path's bandwidth. */
		bbr_out_set_app_limited(sk, b, (tp->delivered + inflight) ?: 1);
		if (!b->probe_rtt_done_stamp && inflight <= bbr3_probe_rtt_cwnd(b)) {
			b->probe_rtt_done_stamp = (now + BBR_PROBE_RTT_MODE_TICKS) ?: 1;
			b->probe_rtt_round_done = 0;
			b->next_rtt_delivered = tp->delivered;
		} else if (b->probe_rtt_done_stamp) {
			if (b->round_start)
				b->probe_rtt_round_done = 1;
			if (b->probe_rtt_round_done)
				bbr3_check_probe_rtt_done(sk, b, s, now);
		}
	}
	if (rs->delivered > 0)
		b->idle_restart = 0;
}

/* Two min filters: probe_rtt_min over the PROBE_RTT interval (5 s) times PROBE_RTT, min_rtt over
 * 10 s is the model's. PROBE_RTT holds cwnd at 0.5 x BDP for max(200 ms, one round).
 */
BBR_INLINE void bbr3_update_min_rtt(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 now = bbr_now_ticks(tp);
	bool probe_rtt_expired = bbr_after(now, s->probe_rtt_min_stamp + bbr3_probe_rtt_win_ticks());

	if (rs->rtt_us >= 0 &&
		((u64)rs->rtt_us < s->probe_rtt_min_us || (probe_rtt_expired && !rs->is_ack_delayed))) {
		s->probe_rtt_min_us = (u32)rs->rtt_us;
		s->probe_rtt_min_stamp = now;
	}
	if (s->probe_rtt_min_us <= b->min_rtt_us ||
		bbr_after(now, b->min_rtt_stamp + BBR_MIN_RTT_WIN_TICKS)) {
		b->min_rtt_us = s->probe_rtt_min_us;
		b->min_rtt_stamp = s->probe_rtt_min_stamp;
	}

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	b->idle_restart &= !TWIN_MUTANT(idle_restart);
#endif
	if (probe_rtt_expired && !b->idle_restart && b->mode != BBRKIT_PROBE_RTT) {
		b->mode = BBRKIT_PROBE_RTT;
		bbr_save_cwnd(sk, b);
		b->probe_rtt_done_stamp = 0;
		s->ack_phase = BBR3_ACKS_PROBE_STOPPING;
		b->next_rtt_delivered = tp->delivered;
	}

	bbr3_handle_probe_rtt(sk, b, s, rs, now);
}

BBR_INLINE void bbr3_update_gains(struct bbr_core *b)
{
	switch (b->mode) {
	case BBRKIT_STARTUP:
		b->pacing_gain = BBR3_STARTUP_PACING_GAIN;
		b->cwnd_gain = BBR3_STARTUP_CWND_GAIN;
		break;
	case BBRKIT_DRAIN:
		b->pacing_gain = BBR_DRAIN_GAIN;
		b->cwnd_gain = BBR3_STARTUP_CWND_GAIN; /* keep cwnd while draining */
		break;
	case BBRKIT_PROBE_BW:
		b->pacing_gain = b->cycle_idx == BBRKIT_V3_UP ? BBR3_UP_GAIN
			: b->cycle_idx == BBRKIT_V3_DOWN      ? BBR3_DOWN_GAIN
							      : BBR_UNIT;
		b->cwnd_gain = BBR_CWND_GAIN + (b->cycle_idx == BBRKIT_V3_UP ? BBR3_UP_CWND_EXTRA : 0);
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
		if (TWIN_MUTANT(down_gain) && b->cycle_idx == BBRKIT_V3_DOWN)
			b->pacing_gain = BBR_UNIT;
#endif
		break;
	default: /* BBRKIT_PROBE_RTT */
		b->pacing_gain = BBR_UNIT;
		b->cwnd_gain = BBR_UNIT;
		break;
	}
}

/* Slow-start towards the target in STARTUP, snap down to it once the pipe is full. Unlike BBRv1,
 * no packet conservation in recovery: the bounds do that job.
 */
BBR_INLINE void bbr3_set_cwnd(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 acked, u32 bw)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cwnd = bbr_out_cwnd(sk, b), target;

	if (acked) {
		target = bbr_bdp(b, bw, b->cwnd_gain) + bbr_aggregation_allowance(b);
		target = bbr3_quantization_budget(sk, b, target);
		if (b->full_bw_reached)
			cwnd = bbr_min_u32(cwnd + acked, target);
		else if (cwnd < target || cwnd < 2 * s->init_cwnd)
			cwnd += acked;
		cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET);
	}
	cwnd = bbr_min_u32(cwnd, tp->snd_cwnd_clamp);
	if (b->mode == BBRKIT_PROBE_RTT)
		cwnd = bbr_min_u32(cwnd, bbr3_probe_rtt_cwnd(b));
	bbr_out_set_cwnd(sk, b, cwnd);
}

/* Cap cwnd by the model: inflight_hi while probing or draining, inflight_hi less headroom while
 * cruising or in PROBE_RTT, and inflight_lo always.
 */
BBR_INLINE void bbr3_bound_cwnd_for_inflight_model(struct sock *sk, struct bbr_core *b, const struct bbr3 *s)
{
	u32 cap = ~0U;

	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx != BBRKIT_V3_CRUISE)
		cap = s->inflight_hi;
	else if (b->mode == BBRKIT_PROBE_RTT || b->mode == BBRKIT_PROBE_BW)
		cap = bbr3_inflight_with_headroom(s);
	cap = bbr_min_u32(cap, s->inflight_lo);
	cap = bbr_max_u32(cap, BBR_CWND_MIN_TARGET);
	if (cap < bbr_out_cwnd(sk, b)) /* most ACKs: no bound, nothing to write */
		bbr_out_set_cwnd(sk, b, cap);
}

BBR_INLINE void bbr3_state_init(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);

	__builtin_memset(s, 0, sizeof(*s));
	s->initialized = 1;
	s->init_cwnd = bbr_min_u32(0x7F, bbr_out_cwnd(sk, b));
	s->probe_rtt_min_us = tp->rtt_min.s[0].v;
	s->probe_rtt_min_stamp = b->min_rtt_stamp;   /* the reset's clock: tcp_mstamp may be stale */
	s->loss_round_delivered = tp->delivered + 1; /* the first loss round ends with the first flight */
	s->round_lost = tp->lost;
	s->round_delivered = tp->delivered;
	s->round_ce = tp->delivered_ce;
	s->ack_delivered_ce = tp->delivered_ce;
	s->loss_seen = tp->lost;
	s->loss_snd_nxt = tp->snd_nxt; /* no skb sent from here on has seen a loss yet */
	s->over_hi_snd_nxt = tp->snd_nxt;
	s->inflight_hi = ~0U;
	s->bw_probe_up_cnt = ~0U;
	s->ecn_alpha = BBR_UNIT; /* respond at once if the path is congested from the start */
	bbr3_reset_lower_bounds(b, s);
}

#endif /* BBR3_STEPS_H */
