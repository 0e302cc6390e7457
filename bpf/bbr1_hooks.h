/* SPDX-License-Identifier: GPL-2.0 */
/* BBRv1's own behaviour at the bbr_variant_*() hooks of bbr_core.h: none of its own (the kernel's
 * tcp_bbr.c is the core). Included by bbr1.bpf.c and by the lockstep check
 * (bench/kernelbbr/lockstep/bbr_lockstep.bpf.c), which runs this core under its own glue.
 */
#ifndef BBR1_HOOKS_H
#define BBR1_HOOKS_H

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

#endif /* BBR1_HOOKS_H */
