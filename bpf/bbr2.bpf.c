// SPDX-License-Identifier: GPL-2.0
/* bbr2: the BBRv2 alpha that seed 001 evaluates (google/bbr v2alpha-2019-07-28, tcp_bbr2.c), as
 * a delta on bbr3 (bbr3_core.h, whose header lists the storage and the stock-kernel
 * approximations, which apply here too).
 *
 * Where v2alpha differs from v3:
 * - gains: STARTUP paces and sizes cwnd at 2/ln 2 = 2.885 (v3: 2.77 and 2); DOWN paces at 3/4
 *   (v3: 0.91); UP keeps cwnd gain 2 (v3: 2.25);
 * - STARTUP's plateau estimator is BBRv1's: the windowed max bandwidth, checked once per round
 *   (v3 restarts it on any 25% larger sample and also uses it to end UP);
 * - UP ends after at least one min_rtt once the flight reaches 1.25 x BDP (v3: on a bandwidth
 *   plateau), besides inflight_hi and too much loss/CE as in v3;
 * - STARTUP's loss exit needs 8 loss events in a recovery round (v3: 6) and sets inflight_hi to
 *   the BDP alone (v3: at least the last round's delivered volume);
 * - in UP, ACKs that arrive while cwnd is not limited by inflight_hi earn no later growth;
 * - no quick re-probe after CE-only cycles (v2alpha's ecn_reprobe_gain is 0).
 * Not modelled: v2alpha's ECN cut of bw_hi/bw_lo (its ECN is off by default, as here) and its
 * `<=` in the probe_rtt_min filter (v3's `<` is used). Parameters: the same set as bbr3, with the
 * same defaults (v2alpha's values equal v3's).
 */
#define BBR3_STARTUP_PACING_GAIN BBR_HIGH_GAIN
#define BBR3_STARTUP_CWND_GAIN BBR_HIGH_GAIN
#define BBR3_DOWN_GAIN (BBR_UNIT * 3 / 4)
#define BBR3_UP_CWND_EXTRA 0
#define BBR3_FULL_LOSS_CNT 8
#define BBR3_ECN_REPROBE_GAIN 0
#define BBR3_STARTUP_HI_KEEPS_LATEST 0
#define BBR3_UP_FORGETS_UNUSED_ACKS 1
#include "bbr3_core.h"

BBR_INLINE void bbr3_variant_check_full_bw(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	bbr_check_full_bw_reached(b, rs);
}

BBR_INLINE bool bbr3_variant_probe_up_done(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	return bbr3_has_elapsed_in_phase(sk, b, b->min_rtt_us) &&
		bbr3_probe_inflight(sk, b, rs) >= bbr3_inflight(sk, b, bbr3_max_bw(s), BBR3_UP_GAIN);
}

#define BBRKIT_ALGO "bbr2"
#include "bbr_ops.h"
