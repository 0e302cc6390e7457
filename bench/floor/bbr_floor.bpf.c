// SPDX-License-Identifier: GPL-2.0
/* bbr_floor: the kernel's own BBR behind BPF struct_ops, and nothing else.
 *
 * Every callback calls the kfunc of the same name (bbr_init, bbr_main, ... from
 * net/ipv4/tcp_bbr.c, which the kernel exports to BPF congestion controls; the pattern of the
 * kernel's selftest tcp_ca_kfunc.c). It behaves exactly like the built-in bbr and costs what bbr
 * costs plus what the struct_ops trampolines cost: the floor no BPF congestion control goes under.
 * `bbrbench overhead` splits bbr1's cost against it into trampoline (floor - bbr) and bbrkit's own
 * logic (bbr1 - floor).
 *
 * Benchmark-only: it lives outside bpf/ so that bbrctl's algorithm table never sees it, and only
 * bench/floor/floor.c registers it, through a link that dies with that process. The callback set
 * is bbr1's (bpf/bbr_ops.h), so that each of bbr1's programs has its counterpart here.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define TCP_CONG_NON_RESTRICTED 0x1 /* any user may select it, like the kernel's bbr */

char _license[] SEC("license") = "GPL";

extern void bbr_init(struct sock *sk) __ksym;
extern void bbr_main(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs) __ksym;
extern u32 bbr_sndbuf_expand(struct sock *sk) __ksym;
extern u32 bbr_undo_cwnd(struct sock *sk) __ksym;
extern void bbr_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern u32 bbr_ssthresh(struct sock *sk) __ksym;
extern u32 bbr_min_tso_segs(struct sock *sk) __ksym;
extern void bbr_set_state(struct sock *sk, u8 new_state) __ksym;

/* Program names as bbr1's (bpf/bbr_ops.h), so that `bpftool prog` lists the two alike. */
SEC("struct_ops")
void BPF_PROG(bbrkit_init, struct sock *sk)
{
	bbr_init(sk);
}

SEC("struct_ops")
void BPF_PROG(bbrkit_main, struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	bbr_main(sk, ack, flag, rs);
}

SEC("struct_ops")
u32 BPF_PROG(bbrkit_ssthresh, struct sock *sk)
{
	return bbr_ssthresh(sk);
}

SEC("struct_ops")
u32 BPF_PROG(bbrkit_undo_cwnd, struct sock *sk)
{
	return bbr_undo_cwnd(sk);
}

SEC("struct_ops")
void BPF_PROG(bbrkit_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	bbr_cwnd_event(sk, event);
}

SEC("struct_ops")
void BPF_PROG(bbrkit_set_state, struct sock *sk, u8 new_state)
{
	bbr_set_state(sk, new_state);
}

SEC("struct_ops")
u32 BPF_PROG(bbrkit_sndbuf, struct sock *sk)
{
	return bbr_sndbuf_expand(sk);
}

SEC("struct_ops")
u32 BPF_PROG(bbrkit_tso_segs, struct sock *sk)
{
	return bbr_min_tso_segs(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops floor_ops = {
	.init = (void *)bbrkit_init,
	.cong_control = (void *)bbrkit_main,
	.ssthresh = (void *)bbrkit_ssthresh,
	.undo_cwnd = (void *)bbrkit_undo_cwnd,
	.cwnd_event = (void *)bbrkit_cwnd_event,
	.set_state = (void *)bbrkit_set_state,
	.sndbuf_expand = (void *)bbrkit_sndbuf,
	.min_tso_segs = (void *)bbrkit_tso_segs,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "bbr_floor",
};
