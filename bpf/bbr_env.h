/* SPDX-License-Identifier: GPL-2.0 */
/* The few things the BBR core needs from its surroundings, for both builds:
 * - BPF (clang -target bpf): the running kernel's types from vmlinux.h and BPF helpers;
 * - host (unit tests): look-alike kernel structs from tests/unit/host_env.h.
 * The core itself is written once against the kernel's own field names.
 */
#ifndef BBR_ENV_H
#define BBR_ENV_H

#ifdef __bpf__
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#define BBR_INLINE static __always_inline

/* Kernel inline helpers are not callable from BPF; these are their one-line equivalents. */
BBR_INLINE struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

BBR_INLINE struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

BBR_INLINE u32 bbr_random_u32(void)
{
	return bpf_get_prandom_u32();
}

/* The current time on tcp_mstamp's clock (CLOCK_MONOTONIC), for callbacks where tcp_mstamp may
 * be stale (init); a helper call and a division, so never per ACK.
 */
BBR_INLINE u64 bbr_clock_us(void)
{
	return bpf_ktime_get_ns() / 1000;
}
#else
#include "host_env.h"
#endif

#endif /* BBR_ENV_H */
