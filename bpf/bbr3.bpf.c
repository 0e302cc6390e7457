// SPDX-License-Identifier: GPL-2.0
/* bbr3: BBRv3 (Google's v3 tcp_bbr.c, compared line by line) as a BPF struct_ops congestion control.
 *
 * The algorithm, its storage and the approximations a stock kernel forces are described at the top
 * of bbr3_core.h; this file supplies v3's two rules where bbr2 (the v2 alpha) differs: the plateau
 * estimator and the end of the UP probe. It registers as "bbr3"; parameters are live (`bbrctl set
 * bbr3 ...`, the pinned `params` map).
 */
#include "bbr3_core.h"

BBR_INLINE void bbr3_variant_check_full_bw(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	bbr3_v3_check_full_bw(b, s, rs, sample_bw);
}

BBR_INLINE bool bbr3_variant_probe_up_done(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	return bbr3_v3_probe_up_done(sk, b, s, sample_bw);
}

#define BBRKIT_ALGO "bbr3"
#include "bbr_ops.h"
