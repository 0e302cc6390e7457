// SPDX-License-Identifier: GPL-2.0
/* bbr_rttgain: BBR with an RTT-based pacing gain.
 *
 * Paper: X. Xiong, "An Analysis of the Queueing Delays and Throughput of the TCP BBR Congestion
 * Control in NS-3", KTH degree project, 2020, section 3.2 and Listing 3.1 (seed 000).
 *
 * What changes, in PROBE_BW only (STARTUP, DRAIN, PROBE_RTT and cwnd are BBRv1's):
 * - The probe phase (gain 5/4) ends as soon as an ACK's RTT sample reaches probe_exit x min_rtt
 *   (paper: 1.25); the cycle moves on to the 3/4 drain phase and its clock restarts.
 * - The cruise phases (gain 1) pace at alpha x min_rtt / rtt, rtt being this ACK's sample and
 *   min_rtt BBR's 10 s windowed minimum; a queue lowers the gain and so drains itself.
 *
 * Where the paper is silent:
 * - An ACK without an RTT sample keeps the last gain.
 * - The paper sets no floor; gain_floor (default 0, the paper's behaviour) offers one. Fixed point
 *   floors the gain at 1/256 in any case: a zero pacing rate would switch pacing off altogether.
 * - "Gain 1" is tested on the state machine's gain, as the listing does, so the RTT-based gain also
 *   applies while a policer is detected (BBRv1 then cruises at gain 1 in every phase).
 *
 * Deviation from the authors' code (ns-3, floating point): gains are computed in the kernel's
 * 1/256 fixed point; parameters are live (bbrctl set, or the pinned "params" map), and a raw value
 * outside a parameter's range acts as its default.
 */
#include "bbr_core.h"

struct bbr_rttgain_params params SEC(".data.params") = BBRKIT_PARAMS_DEFAULTS(BBR_RTTGAIN_PARAMS);

struct rttgain_state {
	u32 cruise_gain; /* BBR_UNIT, last RTT-based gain */
};

_Static_assert(sizeof(struct rttgain_state) <= sizeof(((struct bbr_core *)0)->ext), "fits in ext");

BBR_INLINE struct rttgain_state *rttgain_state(const struct bbr_core *b)
{
	return (struct rttgain_state *)b->ext;
}

BBR_INLINE u32 rttgain_alpha(void)
{
	return BBRKIT_PARAM(params.alpha_permille, BBR_RTTGAIN_ALPHA);
}

BBR_INLINE bool rttgain_cruising(const struct bbr_core *b)
{
	return b->mode == BBRKIT_PROBE_BW && b->pacing_gain == BBR_UNIT;
}

BBR_INLINE void bbr_variant_init(struct sock *sk, struct bbr_core *b)
{
	/* With no queue, rtt == min_rtt and the gain is alpha. */
	rttgain_state(b)->cruise_gain = rttgain_alpha() * BBR_UNIT / BBRKIT_PERMILLE;
}

BBR_INLINE void bbr_variant_on_ack(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
}

BBR_INLINE bool bbr_variant_end_probe(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	u32 probe_exit = BBRKIT_PARAM(params.probe_exit_permille, BBR_RTTGAIN_PROBE_EXIT);

	return rs->rtt_us > 0 && (u64)rs->rtt_us * BBRKIT_PERMILLE >= (u64)probe_exit * b->min_rtt_us;
}

BBR_INLINE u32 bbr_variant_pacing_gain(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	struct rttgain_state *st = rttgain_state(b);
	u32 floor, gain;

	if (!rttgain_cruising(b))
		return b->pacing_gain;
	if (rs->rtt_us > 0) {
		gain = (u32)((u64)rttgain_alpha() * BBR_UNIT * b->min_rtt_us /
			((u64)rs->rtt_us * BBRKIT_PERMILLE));
		floor = BBRKIT_PARAM(params.gain_floor_permille, BBR_RTTGAIN_GAIN_FLOOR) * BBR_UNIT /
			BBRKIT_PERMILLE;
		st->cruise_gain = bbr_max_u32(bbr_max_u32(gain, floor), 1);
	}
	return st->cruise_gain;
}

BBR_INLINE void bbr_variant_recovery_start(struct sock *sk, struct bbr_core *b, u32 acked, u32 *cwnd)
{
	bbr_v1_recovery_start(sk, b, acked, cwnd);
}

BBR_INLINE u32 bbr_variant_conservation_cwnd(struct sock *sk, struct bbr_core *b, u32 acked, u32 cwnd, u32 bw)
{
	return bbr_v1_conservation_cwnd(sk, acked, cwnd);
}

BBR_INLINE void bbr_variant_fill(struct bbrkit_flow *f, const struct bbr_core *b)
{
	u32 gain = rttgain_state(b)->cruise_gain;

	f->variant[BBRKIT_VAR_RTTGAIN_GAIN] = gain;
	if (rttgain_cruising(b))
		f->pacing_gain = gain; /* report the gain actually paced at */
}

#define BBRKIT_ALGO "bbr_rttgain"
#include "bbr_ops.h"
