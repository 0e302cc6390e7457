// SPDX-License-Identifier: GPL-2.0
/* bbr1: BBRv1, the kernel's net/ipv4/tcp_bbr.c, as a BPF struct_ops congestion control.
 *
 * The whole algorithm lives in bbr_core.h (on bbr_substrate.h); this file only supplies BBRv1's own
 * behaviour at the points where the variants differ. It registers as "bbr1" so that the kernel's
 * built-in "bbr" stays available as the reference it is measured against. Deviations from the kernel
 * are listed at the top of bbr_core.h (time stamps in 1024 us ticks instead of jiffies, 32-bit
 * microsecond stamps).
 */
#include "bbr_core.h"

BBR_INLINE void bbr_variant_init(struct sock *sk, struct bbr_core *b)
{
}

BBR_INLINE void bbr_variant_on_ack(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
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
	bbr_v1_recovery_start(sk, b, acked, cwnd);
}

BBR_INLINE u32 bbr_variant_conservation_cwnd(struct sock *sk, struct bbr_core *b, u32 acked, u32 cwnd, u32 bw)
{
	return bbr_v1_conservation_cwnd(sk, acked, cwnd);
}

BBR_INLINE void bbr_variant_fill(struct bbrkit_flow *f, const struct bbr_core *b)
{
}

/* The lockstep check (bench/kernelbbr/lockstep) runs these hooks under its own glue, without bbr1's. */
#ifndef BBRKIT_HOOKS_ONLY
#define BBRKIT_ALGO "bbr1"
#include "bbr_ops.h"
#endif
