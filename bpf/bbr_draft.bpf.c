// SPDX-License-Identifier: GPL-2.0
/* bbr_draft: the BBR of the IETF draft as a BPF struct_ops congestion control.
 *
 * Paper: N. Cardwell, I. Swett, J. Beshay, "BBR Congestion Control", draft-ietf-ccwg-bbr-06
 * (2026), section 5 (state machine and pseudocode; section numbers below are the draft's).
 *
 * What changes from BBRv3 (bbr3.bpf.c, Google's v3 tcp_bbr.c): the draft and v3 share the model
 * (max_bw over two probe cycles, bw_shortterm/inflight_shortterm, inflight_longterm, min_rtt and
 * the ProbeRTT filter) and most steps, so this file is a delta on bbr3_core.h. It has its own:
 * - 5.3.1.2 the plateau estimator compares a sample with full_bw on round starts only (v3: on
 *   every ACK, counting on round starts);
 * - 5.3.1.3 a loss exit of STARTUP records undo_state = Startup;
 * - 5.3.2 DRAIN paces at DrainPacingGain 0.5 (v3: 1/2.885) and ends once the flight is at most
 *   one BDP or more than 3 rounds after it began (v3: the flight only, at its departure time);
 * - 5.3.3 DOWN paces at 0.90 (v3: 0.91); the Reno-scale wait is min(63, BDP without the TSO
 *   budget); no quick re-probe after CE-only cycles; CRUISE does not clamp inflight_shortterm;
 *   DOWN, UP's precautionary stop and DRAIN judge the flight now in the network (C.inflight), not
 *   v3's estimate at the next departure;
 * - 5.3.3.9 AdaptLongTermModel() cuts nothing on an ACK: a probe is cut only from a lost packet
 *   (HandleLostPacket), which also records undo_state = ProbeBW_UP when it ends UP;
 * - 5.5.11 the first loss of each loss round and each recovery saves the undo state
 *   (SaveStateUponLoss), and a spurious recovery restores STARTUP or restarts the probe (REFILL)
 *   when the loss had ended one (v3 restores only the bounds);
 * - 5.3.4.3 ProbeRTT's filter takes a sample on expiry also from a delayed ACK, and min_rtt takes
 *   it only when strictly lower; cwnd gain 0.5 in ProbeRTT;
 * - 5.6.4 cwnd grows in STARTUP while below max_inflight or while less than the initial cwnd
 *   was delivered (v3: while below twice the initial cwnd), and max_inflight adds extra_acked
 *   uncapped (v3: at most 100 ms of bw);
 * - 5.5.9 the ACK-aggregation window is 1-2 rounds in STARTUP (the substrate's: 5-10 rounds);
 * - 5.6.4.4 leaving fast recovery restores cwnd as leaving RTO recovery does (v3: RTO only); an
 *   RTO resets neither the plateau estimator nor sets inflight_shortterm (v3 does both).
 *
 * Choices and deviations:
 * - The draft's open questions are parameters (include/bbrkit_params.h): drain_gain (0.5 or
 *   0.35), probe_rtt_interval_ms (5 or 10 s), ack_phase (1: the draft's BBR.ack_phase; 0: probe
 *   losses are judged only while the probe lasts).
 * - HandleLostPacket() runs where bbr3 judges a lost packet: per packet with its send record
 *   (bbr3_core.h's per-packet path) or, without it, on the ACK that reports the loss.
 * - Not done, as for bbr3 (bbr3_core.h): non-SACK connections (the draft's one-loss exits), the
 *   min_rtt-based offload budget. The draft specifies no ECN response (3.7): v3's stays behind
 *   the `ecn` parameter, off by default. TargetInflight() in the inflight_longterm cut is v3's
 *   (with the TSO budget): the core's cut is shared.
 * - State: v3's struct bbr3 in socket storage, and undo_state in the core's ext words.
 */
#define BBR3_PARAMS_TABLE BBR_DRAFT_PARAMS
#define BBR3_PARAMS_STRUCT bbr_draft_params
#include "bbr3_core.h"

#undef BBRKIT_CC
#define BBRKIT_CC(fn) bbr_draft_##fn

/* 5.3.3.1: DOWN sends at 90% of bw, the lowest gain that converges with UP's 1.25. */
#define DRAFT_DOWN_GAIN (BBR_UNIT * 90 / 100)
/* 5.3.2: DRAIN gives up on the flight after this many rounds; the bw filter advances instead. */
#define DRAFT_DRAIN_MAX_ROUNDS 3

/* 2.15 BBR.undo_state: the state a loss ended, to return to if the recovery was spurious. */
enum draft_undo_state {
	DRAFT_UNDO_NONE,
	DRAFT_UNDO_STARTUP,
	DRAFT_UNDO_PROBE_UP,
};

struct draft_state {
	u8 undo_state; /* enum draft_undo_state */
	u8 unused[3];
};

_Static_assert(sizeof(struct draft_state) <= sizeof(((struct bbr_core *)0)->ext), "fits in ext");

BBR_INLINE struct draft_state *draft_state(const struct bbr_core *b)
{
	return (struct draft_state *)b->ext;
}

BBR_INLINE bool draft_in_up(const struct bbr_core *b)
{
	return b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP;
}

/* 5.3.1.2 CheckFullBWReached(): once per round, as the draft; the hook bbr3_core.h calls. */
BBR_INLINE void bbr3_variant_check_full_bw(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	bool app_limited = rs->is_app_limited;

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	app_limited &= !TWIN_MUTANT(app_limited_plateau);
#endif
	if (s->full_bw_now || !b->round_start || app_limited)
		return;
	if (sample_bw >= (u32)(((u64)b->full_bw * BBR_FULL_BW_THRESH) >> BBR_SCALE)) {
		bbr3_reset_full_bw(b, s);
		b->full_bw = sample_bw;
		return;
	}
	b->full_bw_cnt = bbr_min_u32(b->full_bw_cnt + 1, BBR_FULL_BW_CNT);
	s->full_bw_now = b->full_bw_cnt >= BBR_FULL_BW_CNT;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	s->full_bw_now |= TWIN_MUTANT(full_bw_count) && b->full_bw_cnt == BBR_FULL_BW_CNT - 1;
#endif
	b->full_bw_reached |= s->full_bw_now;
}

/* 5.3.3.9 IsTimeToGoDown() after its precautionary stop: the plateau, unless inflight_longterm
 * limits growth (v3's rule, which the draft shares).
 */
BBR_INLINE bool bbr3_variant_probe_up_done(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	return bbr3_v3_probe_up_done(sk, b, s, sample_bw);
}

/* 5.5.11.1 SaveStateUponLoss(). */
BBR_INLINE void draft_save_state_upon_loss(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	bbr_save_cwnd(sk, b);
	draft_state(b)->undo_state = DRAFT_UNDO_NONE;
	s->undo_bw_lo = s->bw_lo;
	s->undo_inflight_lo = s->inflight_lo;
	s->undo_inflight_hi = s->inflight_hi;
}

/* 5.5.10.2 HandleInflightTooHigh() ends UP with undo_state = ProbeBW_UP. The core's cut is the
 * only way from UP to DOWN inside the per-loss steps, so a DOWN after them is its work.
 */
BBR_INLINE void draft_note_probe_cut(struct bbr_core *b, bool was_up)
{
	if (was_up && !draft_in_up(b))
		draft_state(b)->undo_state = DRAFT_UNDO_PROBE_UP;
}

/* 5.2.4 Per-loss steps, 5.5.10.2, HandleLostPacket(): NoteLoss() saves the undo state at the round's first
 * loss, then the core judges the lost packets (per packet, or at ACK time without the records).
 */
BBR_INLINE void draft_handle_lost_packets(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, struct bbr3_pp *pp, bool *missed)
{
	bool was_up = draft_in_up(b);

	if (!s->loss_in_round)
		draft_save_state_upon_loss(sk, b, s);
	if (!(s->pp_on && bbr3_pp_apply(sk, b, s, pp, (u32)rs->losses, missed)))
		bbr3_on_losses(sk, b, s, rs, s->pp_on && !*missed);
	draft_note_probe_cut(b, was_up);
}

/* 5.3.1.3 CheckStartupHighLoss(): v3's criteria, and the exit can be undone. */
BBR_INLINE void draft_check_startup_high_loss(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked)
{
	if (b->full_bw_reached)
		return;
	bbr3_check_loss_too_high_in_startup(sk, b, s, rs, acked);
	if (b->full_bw_reached)
		draft_state(b)->undo_state = DRAFT_UNDO_STARTUP;
}

/* 5.3.1 CheckStartupDone() and 5.3.2 EnterDrain(). */
BBR_INLINE void draft_check_startup_done(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked)
{
	draft_check_startup_high_loss(sk, b, s, rs, acked);
	if (b->mode != BBRKIT_STARTUP || !b->full_bw_reached)
		return;
	b->mode = BBRKIT_DRAIN;
	s->drain_start_round = b->rtt_cnt;
	/* For monitoring only, as v3: an ssthresh below infinity says STARTUP is over. */
	bbr_out_set_ssthresh(sk, b, bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT));
}

/* 5.3.2 CheckDrainDone(), and 5.3.3.9 EnterProbeBW(). */
BBR_INLINE void draft_check_drain_done(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 inflight = bbr_packets_in_flight(tcp_sk(sk));

	if (b->mode != BBRKIT_DRAIN)
		return;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	inflight *= TWIN_MUTANT(drain_exit) ? 3 : 1;
#endif
	if (inflight > bbr3_inflight(sk, b, bbr_bw(b), BBR_UNIT) &&
		b->rtt_cnt - s->drain_start_round <= DRAFT_DRAIN_MAX_ROUNDS)
		return;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(drain_time_exit) && inflight > bbr3_inflight(sk, b, bbr_bw(b), BBR_UNIT))
		return;
#endif
	b->mode = BBRKIT_PROBE_BW;
	bbr3_start_bw_probe_down(sk, b, s);
}

/* 5.3.3.8.3 IsTimeToProbeBW(): the wall clock or the Reno-scale round count, min(63,
 * TargetInflight()) with TargetInflight() = min(BBR.bdp, cwnd).
 */
BBR_INLINE bool draft_is_time_to_probe_bw(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 reno_rounds = bbr_min_u32(bbr_bdp(b, bbr_bw(b), BBR_UNIT), bbr_out_cwnd(sk, b));

	if (!bbr3_has_elapsed_in_phase(sk, b, s->probe_wait_us) &&
		s->rounds_since_probe < bbr_min_u32(reno_rounds, BBR3_BW_PROBE_MAX_ROUNDS))
		return false;
	bbr3_start_bw_probe_refill(sk, b, s, 0);
	return true;
}

/* 5.3.3.9 IsTimeToCruise(). */
BBR_INLINE bool draft_is_time_to_cruise(struct sock *sk, const struct bbr_core *b, const struct bbr3 *s)
{
	u32 inflight = bbr_packets_in_flight(tcp_sk(sk));

	return inflight <= bbr3_inflight_with_headroom(s) &&
		inflight <= bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT);
}

/* 5.3.3.9 IsTimeToGoDown(), with 5.3.3.6's precautionary deceleration first. */
BBR_INLINE bool draft_is_time_to_go_down(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	if (s->prev_probe_too_high && bbr_packets_in_flight(tcp_sk(sk)) >= s->inflight_hi) {
		s->stopped_risky_probe = 1; /* BBR.prev_probe_precautionary */
		return true;
	}
	return bbr3_variant_probe_up_done(sk, b, s, rs, sample_bw);
}

/* 5.3.3.9 AdaptLongTermModel(): the ACK phases, then inflight_longterm upward only. True when it
 * decided a transition.
 */
BBR_INLINE bool draft_adapt_long_term_model(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked)
{
	bool advance_max_bw;

	if (s->ack_phase == BBR3_ACKS_PROBE_STARTING && b->round_start)
		s->ack_phase = BBR3_ACKS_PROBE_FEEDBACK;
	if (s->ack_phase == BBR3_ACKS_PROBE_STOPPING && b->round_start) {
		s->bw_probe_samples = 0;
		s->ack_phase = BBR3_ACKS_INIT;
		advance_max_bw = b->mode == BBRKIT_PROBE_BW && !rs->is_app_limited;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
		advance_max_bw &= !TWIN_MUTANT(max_bw_window);
#endif
		if (advance_max_bw)
			bbr3_advance_max_bw_filter(b, s);
		/* 5.3.3.6 precautionary acceleration: the careful probe lost too little. */
		if (b->mode == BBRKIT_PROBE_BW && s->stopped_risky_probe && !s->prev_probe_too_high) {
			bbr3_start_bw_probe_refill(sk, b, s, 0);
			return true;
		}
	}
	if (bbr3_is_inflight_too_high(s, acked->tx_in_flight, acked->lost, rs) || s->inflight_hi == ~0U)
		return false;
	if (acked->tx_in_flight > s->inflight_hi)
		s->inflight_hi = acked->tx_in_flight;
	if (draft_in_up(b))
		bbr3_probe_inflight_hi_upward(sk, b, s, rs);
	return false;
}

/* 5.3.3.9 UpdateProbeBWCyclePhase(). */
BBR_INLINE void draft_update_probe_bw_cycle_phase(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked, u32 sample_bw)
{
	if (!b->full_bw_reached || draft_adapt_long_term_model(sk, b, s, rs, acked) ||
		b->mode != BBRKIT_PROBE_BW)
		return;
	switch (b->cycle_idx) {
	case BBRKIT_V3_DOWN:
		if (!draft_is_time_to_probe_bw(sk, b, s) && draft_is_time_to_cruise(sk, b, s))
			b->cycle_idx = BBRKIT_V3_CRUISE; /* StartProbeBW_CRUISE() */
		break;
	case BBRKIT_V3_CRUISE:
		draft_is_time_to_probe_bw(sk, b, s);
		break;
	case BBRKIT_V3_REFILL:
		if (b->round_start) {
			s->bw_probe_samples = 1;
			bbr3_start_bw_probe_up(sk, b, s, sample_bw);
		}
		break;
	default: /* BBRKIT_V3_UP */
		if (draft_is_time_to_go_down(sk, b, s, rs, sample_bw)) {
			s->prev_probe_too_high = 0;
			bbr3_start_bw_probe_down(sk, b, s);
		}
		break;
	}
}

/* 5.3.4.3 UpdateMinRTT(); returns BBR.probe_rtt_expired. */
BBR_INLINE bool draft_update_min_rtt(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 now)
{
	bool probe_rtt_expired = bbr_after(now, s->probe_rtt_min_stamp + bbr3_probe_rtt_win_ticks());

	if (rs->rtt_us >= 0 && ((u64)rs->rtt_us < s->probe_rtt_min_us || probe_rtt_expired)) {
		s->probe_rtt_min_us = (u32)rs->rtt_us;
		s->probe_rtt_min_stamp = now;
	}
	if (s->probe_rtt_min_us < b->min_rtt_us || bbr_after(now, b->min_rtt_stamp + BBR_MIN_RTT_WIN_TICKS)) {
		b->min_rtt_us = s->probe_rtt_min_us;
		b->min_rtt_stamp = s->probe_rtt_min_stamp;
	}
	return probe_rtt_expired;
}

/* 5.3.4.3 CheckProbeRTT(), EnterProbeRTT() and HandleProbeRTT(). */
BBR_INLINE void draft_check_probe_rtt(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, bool expired, u32 now)
{
	struct tcp_sock *tp = tcp_sk(sk);

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	b->idle_restart &= !TWIN_MUTANT(idle_restart);
#endif
	if (b->mode != BBRKIT_PROBE_RTT && expired && !b->idle_restart) {
		b->mode = BBRKIT_PROBE_RTT;
		bbr_save_cwnd(sk, b);
		b->probe_rtt_done_stamp = 0;
		s->ack_phase = BBR3_ACKS_PROBE_STOPPING;
		b->next_rtt_delivered = tp->delivered;
	}
	bbr3_handle_probe_rtt(sk, b, s, rs, now);
}

/* 5.5.9 UpdateACKAggregation(): the substrate's filter, its window ending every round in STARTUP
 * (filter_len 1; the two-slot filter keeps 1-2 rounds).
 */
BBR_INLINE void draft_update_ack_aggregation(
	struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	if (!b->full_bw_reached && b->round_start)
		b->extra_acked_win_rtts = BBR_EXTRA_ACKED_WIN_RTTS - 1;
	bbr_update_ack_aggregation(sk, b, rs);
}

/* 5.6.1 the gains of each state. */
BBR_INLINE void bbr_draft_update_gains(struct bbr_core *b)
{
	b->cwnd_gain = BBR3_STARTUP_CWND_GAIN; /* BBR.DefaultCwndGain */
	switch (b->mode) {
	case BBRKIT_STARTUP:
		b->pacing_gain = BBR3_STARTUP_PACING_GAIN;
		break;
	case BBRKIT_DRAIN:
		b->pacing_gain =
			bbr3_permille_to_unit(BBRKIT_PARAM(params.drain_gain_permille, BBR_DRAFT_DRAIN_GAIN));
		break;
	case BBRKIT_PROBE_BW:
		b->pacing_gain = b->cycle_idx == BBRKIT_V3_UP ? BBR3_UP_GAIN
			: b->cycle_idx == BBRKIT_V3_DOWN      ? DRAFT_DOWN_GAIN
							      : BBR_UNIT;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
		if (TWIN_MUTANT(down_gain) && b->cycle_idx == BBRKIT_V3_DOWN)
			b->pacing_gain = BBR_UNIT;
#endif
		b->cwnd_gain += b->cycle_idx == BBRKIT_V3_UP ? BBR_UNIT / 4 : 0;
		break;
	default: /* BBRKIT_PROBE_RTT */
		b->pacing_gain = BBR_UNIT;
		b->cwnd_gain = BBR3_PROBE_RTT_CWND_GAIN;
		break;
	}
}

/* 5.6.4.6 SetCwnd() with 5.6.4.2 UpdateMaxInflight() and 5.6.4.5 BoundCwndForProbeRTT(). */
BBR_INLINE void draft_set_cwnd(struct sock *sk, struct bbr_core *b, const struct bbr3 *s, u32 acked, u32 bw)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cwnd = bbr_out_cwnd(sk, b), max_inflight, extra_acked;

	if (acked) {
		extra_acked = bbr_extra_acked(b);
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
		extra_acked = TWIN_MUTANT(extra_acked) ? 0 : extra_acked;
#endif
		max_inflight = bbr3_quantization_budget(sk, b, bbr_bdp(b, bw, b->cwnd_gain) + extra_acked);
		if (b->full_bw_reached)
			cwnd = bbr_min_u32(cwnd + acked, max_inflight);
		else if (cwnd < max_inflight || tp->delivered < s->init_cwnd)
			cwnd += acked;
		cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET);
	}
	cwnd = bbr_min_u32(cwnd, tp->snd_cwnd_clamp);
	if (b->mode == BBRKIT_PROBE_RTT)
		cwnd = bbr_min_u32(cwnd, bbr3_probe_rtt_cwnd(b));
	bbr_out_set_cwnd(sk, b, cwnd);
}

BBR_INLINE void bbr_draft_state_init(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	bbr3_state_init(sk, b, s);
	draft_state(b)->undo_state = DRAFT_UNDO_NONE;
}

/* 5.2.1 OnInit(). */
BBR_INLINE void bbr_draft_init(struct sock *sk)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;

	bbr_core_reset(sk, b);
	b->prior_cwnd = tcp_sk(sk)->prior_cwnd;
	s = bbr3_state(sk, true);
	if (s) {
		bbr_draft_state_init(sk, b, s);
		bbr3_pp_init(sk, s);
	}
	bbr_out_request_pacing(sk, b);
}

/* 5.2.3 UpdateOnACK(): UpdateModelAndState() then UpdateControlParameters(), in the draft's order. */
BBR_INLINE void bbr_draft_main(struct sock *sk, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, true);
	u32 now = bbr_now_ticks(tp), sample_bw = 0;
	struct bbr3_acked acked;
	struct bbr3_pp *pp = NULL;
	bool missed = true, probe_rtt_expired;

	if (!s)
		return; /* no memory for the model: keep cwnd and pacing as they are */
	if (!s->initialized)
		bbr_draft_state_init(sk, b, s);

	/* RS.tx_in_flight and RS.lost, as bbr3 reads them (bbr3_core.h, A and B). */
	acked.tx_in_flight = rs->prior_in_flight;
	acked.lost = bbr3_lost_in_round(tp, s);
	if (s->pp_on && (acked.lost || rs->losses > 0))
		pp = bbr3_pp_marks(sk, s);
	if (acked.lost && s->pp_on)
		bbr3_pp_acked(sk, pp, rs, &acked);
	if (rs->losses > 0)
		draft_handle_lost_packets(sk, b, s, rs, pp, &missed);

	/* 5.5.1 UpdateRound(). */
	b->round_start = 0;
	if (rs->interval_us > 0 && !bbr_after(b->next_rtt_delivered, rs->prior_delivered)) {
		b->next_rtt_delivered = tp->delivered;
		b->rtt_cnt++;
		b->round_start = 1;
		s->rounds_since_probe = bbr_min_u32(s->rounds_since_probe + 1, 0xFF);
		bbr3_update_ecn_alpha(sk, b, s);
	}
	if (tp->delivered_ce != s->ack_delivered_ce) {
		s->ack_delivered_ce = tp->delivered_ce;
		if (bbr3_ecn(s))
			s->ecn_in_round = 1;
	}
	if (rs->interval_us > 0 && rs->delivered >= 0)
		sample_bw = (u32)(((u64)rs->delivered * BW_UNIT + (u64)rs->interval_us - 1) /
			(u64)rs->interval_us);

	/* 5.2.3 UpdateModelAndState(). */
	bbr3_update_latest_delivery_signals(sk, s, rs, sample_bw);
	bbr3_update_congestion_signals(sk, b, s, rs, sample_bw);
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(shortterm_cut))
		bbr3_reset_lower_bounds(b, s);
#endif
	draft_update_ack_aggregation(sk, b, rs);
	bbr3_variant_check_full_bw(b, s, rs, sample_bw);
	draft_check_startup_done(sk, b, s, rs, &acked);
	draft_check_drain_done(sk, b, s);
	draft_update_probe_bw_cycle_phase(sk, b, s, rs, &acked, sample_bw);
	probe_rtt_expired = draft_update_min_rtt(b, s, rs, now);
	draft_check_probe_rtt(sk, b, s, rs, probe_rtt_expired, now);
	/* The ack_phase parameter's alternative: a probe's losses are not judged after it ends. */
	if (s->ack_phase == BBR3_ACKS_PROBE_STOPPING && !BBRKIT_PARAM(params.ack_phase, BBR_DRAFT_ACK_PHASE))
		s->bw_probe_samples = 0;
	bbr3_advance_latest_delivery_signals(sk, s, rs, sample_bw);

	/* 5.2.3 UpdateControlParameters(); BoundBWForModel() is bbr3_set_bw(), at every change. */
	bbr_draft_update_gains(b);
	bbr_set_pacing_rate(sk, b, bbr_bw(b), b->pacing_gain);
	draft_set_cwnd(sk, b, s, rs->acked_sacked, bbr_bw(b));
	bbr3_bound_cwnd_for_inflight_model(sk, b, s);

	b->prev_ca_state = inet_csk(sk)->icsk_ca_state;
	if (acked.lost)
		s->loss_in_cycle = 1;
	if (rs->delivered_ce > 0)
		s->ecn_in_cycle = 1;
}

/* 5.6.4.4 OnEnterFastRecovery() and OnEnterRTO(): SaveCwnd(), SaveStateUponLoss(). The kernel
 * marks the lost packets before it calls ssthresh, but their per-packet decisions wait here: the
 * episode's state is saved first, then its losses are handled (HandleLostPacket(), as NoteLoss()
 * saves before HandleInflightTooHigh() cuts), so that an undo restores the state before them.
 */
BBR_INLINE u32 bbr_draft_ssthresh(struct sock *sk)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, false);
	bool missed, was_up;

	if (!s) {
		bbr_save_cwnd(sk, b);
		return bbr_out_ssthresh(sk, b);
	}
	draft_save_state_upon_loss(sk, b, s);
	if (s->pp_on) {
		was_up = draft_in_up(b);
		bbr3_pp_apply(sk, b, s, bbr3_pp_marks(sk, s), 0, &missed);
		draft_note_probe_cut(b, was_up);
	}
	return bbr_out_ssthresh(sk, b);
}

/* 5.5.11.2 HandleSpuriousLossDetection(): the bounds at least as before the loss, and the state
 * the loss ended, unless in ProbeRTT. Returns RestoreCwnd()'s cwnd.
 */
BBR_INLINE u32 bbr_draft_undo_cwnd(struct sock *sk)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, false);
	struct draft_state *d = draft_state(b);
	u32 cwnd = bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd);

	if (!s)
		return cwnd;
	s->loss_in_round = 0;
	bbr3_reset_full_bw(b, s);
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(undo_restore))
		return cwnd;
#endif
	s->bw_lo = bbr_max_u32(s->bw_lo, s->undo_bw_lo);
	s->inflight_lo = bbr_max_u32(s->inflight_lo, s->undo_inflight_lo);
	s->inflight_hi = bbr_max_u32(s->inflight_hi, s->undo_inflight_hi);
	bbr3_set_bw(b, s);
	if (d->undo_state == DRAFT_UNDO_STARTUP && b->mode != BBRKIT_STARTUP) {
		b->full_bw_reached = 0;
		if (b->mode != BBRKIT_PROBE_RTT)
			b->mode = BBRKIT_STARTUP; /* EnterStartup(): the gains follow on the next ACK */
	} else if (d->undo_state == DRAFT_UNDO_PROBE_UP && !draft_in_up(b) && b->mode != BBRKIT_PROBE_RTT) {
		b->mode = BBRKIT_PROBE_BW;
		bbr3_start_bw_probe_refill(sk, b, s, 0);
	}
	d->undo_state = DRAFT_UNDO_NONE;
	return cwnd;
}

/* 5.6.4.4: an RTO runs the per-loss steps on the packets it marked (and saves the undo state if
 * ssthresh did not); leaving RTO or fast recovery restores cwnd (RestoreCwnd()).
 */
BBR_INLINE void bbr_draft_set_state(struct sock *sk, u8 new_state)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;
	bool was_up;

	if (new_state == TCP_CA_Loss) {
		b->prev_ca_state = TCP_CA_Loss; /* SaveCwnd() keeps the larger, pre-RTO cwnd */
		s = bbr3_state(sk, false);
		if (!s)
			return;
		was_up = draft_in_up(b);
		if (!s->loss_in_round)
			draft_save_state_upon_loss(sk, b, s);
		bbr3_on_rto(sk, b, s);
		draft_note_probe_cut(b, was_up);
	} else if (b->prev_ca_state >= TCP_CA_Recovery && new_state < TCP_CA_Recovery) {
		bbr_out_set_cwnd(sk, b, bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd));
	}
}

#define bbr_draft_cwnd_event bbr3_cwnd_event
#define bbr_draft_fill_flow bbr3_fill_flow
#define bbr_draft_sndbuf_expand bbr_core_sndbuf_expand
#define bbr_draft_min_tso_segs bbr_core_min_tso_segs

#define BBRKIT_ALGO "bbr_draft"
#include "bbr_ops.h"
