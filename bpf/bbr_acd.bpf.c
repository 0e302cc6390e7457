// SPDX-License-Identifier: GPL-2.0
/* bbr_acd: BBR with Advanced Congestion Detection.
 *
 * Paper: I. Mahmud, G.-H. Kim, T. Lubna, Y.-Z. Cho, "BBR-ACD: BBR with Advanced Congestion
 * Detection", Electronics 9(1), 2020, section 4, Figures 6 and 7 (seed 002).
 *
 * What changes from BBRv1:
 * - A detector on every ACK: if it carries an RTT sample with rtt > min_rtt and |rtt - previous
 *   rtt| <= tolerance (paper: 1000 us) the steady count grows, otherwise (including an ACK without
 *   an RTT sample, rtt = -1 in Figure 6) it resets. Congestion is declared when steady_acks
 *   consecutive ACKs (paper: 3, i.e. the count reaches 2) show such an elevated, almost constant
 *   RTT, or when rtt > rtt_factor x min_rtt (paper: 2).
 * - Entering Recovery with congestion declared starts packet conservation for one round, during
 *   which cwnd = max(min(cwnd / 2, 1 x BDP), 4), where "1 x BDP" is the 4.14 kernel's
 *   bbr_target_cwnd(bw, 1): BDP plus the TSO budget (bbr_inflight() here). Leaving recovery
 *   restores max(cwnd, prior cwnd).
 * - A recovery without declared congestion gets neither the halving nor BBRv1's conservation; the
 *   lost packets still come off cwnd as in BBRv1.
 *
 * Choices and deviations:
 * - The paper's listing compares rtt >= last - 1000 in unsigned arithmetic, which wraps when the
 *   previous sample is under 1 ms; a true absolute difference is used here.
 * - The listing halves on every ACK of the conservation round (cwnd can reach 4 packets within the
 *   round); its text halves "the" cwnd once, as Reno does. halve_once = 0 (default) follows the
 *   listing, halve_once = 1 halves on the first ACK and then holds cwnd (less losses, never under
 *   4 packets) for the round.
 * - The authors' published code differs from the paper: their Linux module runs the detector on
 *   every ACK that (S)ACKs data and halves on every ACK while in Recovery, for the whole recovery
 *   rather than one round; their ns-3 model never uses the RTT detector (it halves in every
 *   recovery) and keeps cwnd gain 1 into PROBE_BW. This file follows the paper: the detector's
 *   verdict is consulted on recovery entry and the halving lasts the first round. Where it shows:
 *   a long recovery (several rounds) keeps halving in their module and slow-starts here.
 * - acd_halvings counts recoveries in which the halving was applied.
 */
#include "bbr_core.h"

struct bbr_acd_params params SEC(".data.params") = BBRKIT_PARAMS_DEFAULTS(BBR_ACD_PARAMS);

struct acd_state {
	u32 last_rtt_us; /* previous RTT sample */
	u32 halvings;	 /* recoveries in which cwnd was halved */
	u8 steady;	 /* consecutive steady, elevated RTT samples */
	u8 congested;	 /* the detector's verdict on the latest sample */
	u8 halved;	 /* this conservation round already halved (halve_once) */
	u8 unused;
};

_Static_assert(sizeof(struct acd_state) <= sizeof(((struct bbr_core *)0)->ext), "fits in ext");

BBR_INLINE struct acd_state *acd_state(const struct bbr_core *b)
{
	return (struct acd_state *)b->ext;
}

BBR_INLINE void bbr_variant_init(struct sock *sk, struct bbr_core *b)
{
}

BBR_INLINE void bbr_variant_on_ack(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	struct acd_state *st = acd_state(b);
	u32 rtt, tolerance, factor, steady_needed, diff;

	tolerance = BBRKIT_PARAM(params.tolerance_us, BBR_ACD_TOLERANCE);
	factor = BBRKIT_PARAM(params.rtt_factor_permille, BBR_ACD_RTT_FACTOR);
	steady_needed = BBRKIT_PARAM(params.steady_acks, BBR_ACD_STEADY_ACKS) - 1;

	if (rs->rtt_us < 0) { /* no sample: the run of steady samples is broken */
		st->steady = 0;
		st->congested = 0;
		return;
	}
	rtt = (u32)rs->rtt_us;

	/* The first sample has nothing to be steady with (last_rtt_us is 0 until then). */
	diff = rtt > st->last_rtt_us ? rtt - st->last_rtt_us : st->last_rtt_us - rtt;
	if (rtt > b->min_rtt_us && st->last_rtt_us && diff <= tolerance)
		st->steady = st->steady < 0xFF ? st->steady + 1 : 0xFF;
	else
		st->steady = 0;
	st->last_rtt_us = rtt;
	st->congested =
		st->steady >= steady_needed || (u64)rtt * BBRKIT_PERMILLE > (u64)factor * b->min_rtt_us;
}

BBR_INLINE bool bbr_variant_end_probe(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	return false;
}

BBR_INLINE u32 bbr_variant_pacing_gain(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	return b->pacing_gain;
}

BBR_INLINE void bbr_variant_recovery_start(struct sock *sk, struct bbr_core *b, u32 acked, u32 *cwnd)
{
	struct acd_state *st = acd_state(b);

	if (!st->congested)
		return; /* loss without congestion: keep sending as before */
	b->packet_conservation = 1;
	b->next_rtt_delivered = tcp_sk(sk)->delivered; /* the round starts now */
	st->halved = 0;
	st->halvings++;
}

BBR_INLINE u32 bbr_variant_conservation_cwnd(struct sock *sk, struct bbr_core *b, u32 acked, u32 cwnd, u32 bw)
{
	struct acd_state *st = acd_state(b);

	if (st->halved && BBRKIT_PARAM(params.halve_once, BBR_ACD_HALVE_ONCE))
		return bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET);
	st->halved = 1;
	return bbr_max_u32(bbr_min_u32(cwnd / 2, bbr_inflight(sk, b, bw, BBR_UNIT)), BBR_CWND_MIN_TARGET);
}

BBR_INLINE void bbr_variant_fill(struct bbrkit_flow *f, const struct bbr_core *b)
{
	const struct acd_state *st = acd_state(b);

	f->variant[BBRKIT_VAR_ACD_STEADY] = st->steady;
	f->variant[BBRKIT_VAR_ACD_CONGESTED] = st->congested;
	f->variant[BBRKIT_VAR_ACD_HALVINGS] = st->halvings;
}

#define BBRKIT_ALGO "bbr_acd"
#include "bbr_ops.h"
