/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel's own BBR (net/ipv4/tcp_bbr.c), which it exports to BPF congestion controls as kfuncs of
 * its callbacks' names (the pattern of the kernel's selftest tcp_ca_kfunc.c). The floor and the lockstep
 * check call them. BPF only: include after vmlinux.h and bpf/bpf_helpers.h.
 */
#ifndef KERNEL_BBR_KFUNCS_H
#define KERNEL_BBR_KFUNCS_H

extern void bbr_init(struct sock *sk) __ksym;
extern void bbr_main(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs) __ksym;
extern u32 bbr_sndbuf_expand(struct sock *sk) __ksym;
extern u32 bbr_undo_cwnd(struct sock *sk) __ksym;
extern void bbr_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern u32 bbr_ssthresh(struct sock *sk) __ksym;
extern u32 bbr_min_tso_segs(struct sock *sk) __ksym;
extern void bbr_set_state(struct sock *sk, u8 new_state) __ksym;

#endif /* KERNEL_BBR_KFUNCS_H */
