/* SPDX-License-Identifier: GPL-2.0 */
/* The struct_ops programs and the tcp_congestion_ops table of a BBR-shaped congestion control, written
 * once for bbrkit's algorithms (bbr_ops.h), the overhead floor (bench/kernelbbr/floor/bbr_floor.bpf.c)
 * and the lockstep check (bench/kernelbbr/lockstep/bbr_lockstep.bpf.c).
 *
 * CC_STRUCT_OPS(var, name, impl) defines eight programs, each calling impl(callback) with the kernel's
 * arguments, and the table `var` registering them as `name`. impl maps a callback name (init, main,
 * ssthresh, undo_cwnd, cwnd_event, set_state, sndbuf_expand, min_tso_segs) to a function with the
 * tcp_congestion_ops signature, e.g. `#define FLOOR(fn) bbr_##fn` for the kernel's BBR kfuncs.
 * Further members of the table (e.g. `.release = (void *)prog`) follow impl, as extra arguments.
 * The program names are the same for every user, so `bpftool prog` lists each program of one beside
 * its counterpart in another (the floor against bbr1).
 *
 * BPF only: include after vmlinux.h and bpf/bpf_tracing.h.
 */
#ifndef CC_STRUCT_OPS_H
#define CC_STRUCT_OPS_H

#define CC_NON_RESTRICTED 0x1 /* TCP_CONG_NON_RESTRICTED: any user may select it, like the kernel's bbr */

#define CC_STRUCT_OPS(var, cc_name, impl, ...) \
	SEC("struct_ops") \
	void BPF_PROG(bbrkit_init, struct sock *sk) \
	{ \
		impl(init)(sk); \
	} \
	SEC("struct_ops") \
	void BPF_PROG(bbrkit_main, struct sock *sk, u32 ack, int flag, const struct rate_sample *rs) \
	{ \
		impl(main)(sk, ack, flag, rs); \
	} \
	SEC("struct_ops") \
	u32 BPF_PROG(bbrkit_ssthresh, struct sock *sk) \
	{ \
		return impl(ssthresh)(sk); \
	} \
	SEC("struct_ops") \
	u32 BPF_PROG(bbrkit_undo_cwnd, struct sock *sk) \
	{ \
		return impl(undo_cwnd)(sk); \
	} \
	SEC("struct_ops") \
	void BPF_PROG(bbrkit_cwnd_event, struct sock *sk, enum tcp_ca_event event) \
	{ \
		impl(cwnd_event)(sk, event); \
	} \
	SEC("struct_ops") \
	void BPF_PROG(bbrkit_set_state, struct sock *sk, u8 new_state) \
	{ \
		impl(set_state)(sk, new_state); \
	} \
	SEC("struct_ops") \
	u32 BPF_PROG(bbrkit_sndbuf, struct sock *sk) \
	{ \
		return impl(sndbuf_expand)(sk); \
	} \
	SEC("struct_ops") \
	u32 BPF_PROG(bbrkit_tso_segs, struct sock *sk) \
	{ \
		return impl(min_tso_segs)(sk); \
	} \
	SEC(".struct_ops") \
	struct tcp_congestion_ops var = { .init = (void *)bbrkit_init, \
		.cong_control = (void *)bbrkit_main, \
		.ssthresh = (void *)bbrkit_ssthresh, \
		.undo_cwnd = (void *)bbrkit_undo_cwnd, \
		.cwnd_event = (void *)bbrkit_cwnd_event, \
		.set_state = (void *)bbrkit_set_state, \
		.sndbuf_expand = (void *)bbrkit_sndbuf, \
		.min_tso_segs = (void *)bbrkit_tso_segs, \
		.flags = CC_NON_RESTRICTED, \
		.name = cc_name, \
		__VA_ARGS__ }

#endif /* CC_STRUCT_OPS_H */
