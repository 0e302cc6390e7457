/* SPDX-License-Identifier: GPL-2.0 */
/* The per-packet path's programs, beside the congestion control in its object and loaded on their
 * own by bbrctl (loader/telemetry.c), one mechanism at a time: the hooks on tcp_rate_skb_sent() and
 * tcp_mark_skb_lost() as fentry or kprobe programs (bbr3_pp.h's rule at each transmit and mark), or
 * the tracepoint programs of the walk (bbr3_pp_walk.h); and the cleanup every mechanism shares.
 */
#ifndef BBR3_PP_PROGS_H
#define BBR3_PP_PROGS_H

#ifdef __bpf__
/* The flow's entry, with the skb's control block and the socket's counts; NULL for a socket that is
 * not ours. Every transmit of every TCP socket on the host comes here: such a socket costs one hash
 * lookup of its address.
 */
BBR_INLINE struct bbr3_pp *bbr3_pp_hook(
	struct sock *sk, struct sk_buff *skb, struct tcp_skb_cb *cb, struct bbr3_pp_sock *c)
{
	u64 key = (u64)sk;
	struct bbr3_pp *pp = bpf_map_lookup_elem(&bbr3_pp_flows, &key);

	if (!pp || bpf_probe_read_kernel(cb, sizeof(*cb), &skb->cb))
		return NULL;
	bbr3_pp_read_sock(c, (const struct tcp_sock *)sk);
	return pp;
}

BBR_INLINE int bbr3_pp_on_sent(struct sock *sk, struct sk_buff *skb)
{
	struct tcp_skb_cb cb;
	struct bbr3_pp_sock c;
	struct bbr3_pp *pp = bbr3_pp_hook(sk, skb, &cb, &c);

	if (pp)
		bbr3_pp_sent(pp, &c, cb.seq, cb.end_seq, cb.tcp_gso_segs);
	return 0;
}

/* Runs at the start of tcp_mark_skb_lost(): only a new loss event (not SACKed; not marked before,
 * unless its retransmit is the one lost) counts, as it does in tp->lost.
 */
BBR_INLINE int bbr3_pp_on_lost(struct sock *sk, struct sk_buff *skb)
{
	struct tcp_skb_cb cb;
	struct bbr3_pp_sock c;
	struct bbr3_pp *pp = bbr3_pp_hook(sk, skb, &cb, &c);

	if (!pp || (cb.sacked & BBR3_TCPCB_SACKED_ACKED) ||
		((cb.sacked & BBR3_TCPCB_LOST) && !(cb.sacked & BBR3_TCPCB_SACKED_RETRANS)))
		return 0;
	bbr3_pp_lost(pp, &c, cb.seq, cb.end_seq, cb.tcp_gso_segs, cb.tx.is_app_limited,
		cb.tx.delivered_mstamp != 0);
	return 0;
}

/* Each hook as an fentry program (cheapest) and as a kprobe, for kernels that refuse fentry (bbrctl
 * tries fentry first).
 */
#define BBR3_PP_HOOK(kernel_fn, hook) \
	SEC("fentry/" #kernel_fn) \
	int BPF_PROG(bbr3_pp_fentry_##hook, struct sock *sk, struct sk_buff *skb) \
	{ \
		return bbr3_pp_on_##hook(sk, skb); \
	} \
	SEC("kprobe/" #kernel_fn) \
	int BPF_KPROBE(bbr3_pp_kprobe_##hook, struct sock *sk, struct sk_buff *skb) \
	{ \
		return bbr3_pp_on_##hook(sk, skb); \
	}

BBR3_PP_HOOK(tcp_rate_skb_sent, sent)
BBR3_PP_HOOK(tcp_mark_skb_lost, lost)

/* The socket's entry goes with it. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(bbr3_pp_destroy, struct sock *sk)
{
	u64 key = (u64)sk;

	bpf_map_delete_elem(&bbr3_pp_flows, &key);
	return 0;
}

/* The sends, from the device queue's tracepoint: a TCP segment with data of one of our flows. */
SEC("tp_btf/net_dev_queue")
int BPF_PROG(bbr3_pp_walk_sent, struct sk_buff *skb)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);
	u64 key = (u64)sk, head, th_at;
	struct skb_shared_info *shinfo;
	struct bbr3_pp_sock c;
	struct bbr3_pp *pp;
	struct tcphdr th;
	u32 len, seq;
	u16 segs;

	pp = sk ? bpf_map_lookup_elem(&bbr3_pp_flows, &key) : NULL;
	if (!pp)
		return 0;
	head = (u64)BPF_CORE_READ(skb, head);
	th_at = head + BPF_CORE_READ(skb, transport_header);
	if (bpf_probe_read_kernel(&th, sizeof(th), (void *)th_at))
		return 0;
	len = BPF_CORE_READ(skb, len) - (u32)(th_at - (u64)BPF_CORE_READ(skb, data)) - th.doff * 4;
	if ((s32)len <= 0)
		return 0; /* no data: a pure ACK, SYN or FIN */
	shinfo = (struct skb_shared_info *)(head + BPF_CORE_READ(skb, end));
	segs = BPF_CORE_READ(shinfo, gso_segs);
	seq = bpf_ntohl(th.seq);
	bbr3_pp_read_sock(&c, (const struct tcp_sock *)sk);
	bbr3_pp_sent(pp, &c, seq, seq + len, segs ?: 1);
	return 0;
}
/* Marks made outside the congestion control's callbacks (RACK's reordering timer, a loss probe's
 * ACK in recovery) are retransmitted before its next callback: the walk runs at each retransmit
 * too, before the kernel counts it in retrans_out, while the marks are still unretransmitted.
 */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(bbr3_pp_walk_lost, const struct sock *sk, const struct sk_buff *skb, int err)
{
	u64 key = (u64)sk;
	struct bbr3_pp *pp = err ? NULL : bpf_map_lookup_elem(&bbr3_pp_flows, &key);

	if (pp)
		bbr3_pp_walk(sk, pp);
	return 0;
}
#endif

#endif /* BBR3_PP_PROGS_H */
