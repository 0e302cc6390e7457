/* SPDX-License-Identifier: GPL-2.0 */
/* The per-packet path where the kernel allows no tracing of its functions (fentry refused, no
 * kprobes): the same send records and the same per-skb rule (bbr3_pp.h), fed from what does load.
 * - Sends: a tp_btf program on net_dev_queue, which __dev_queue_xmit() passes synchronously inside
 *   tcp_transmit_skb(), before tcp_event_new_data_sent() advances snd_nxt and packets_out: the moment
 *   tcp_rate_skb_sent() sees, with the TCP header already written (seq) and tcp_skb_pcount() in
 *   gso_segs. What the sender's own netfilter drops before the device goes unrecorded (a miss).
 * - Marks: no hook sees tcp_mark_skb_lost(), so the next callback of the congestion control (the
 *   ACK's cong_control, or ssthresh as recovery or an RTO starts), or the next retransmit (marks
 *   by RACK's timer are retransmitted before any callback), walks the retransmit queue in
 *   sequence order from tp->retransmit_skb_hint (the lowest lost skb not retransmitted) and judges
 *   as many packets as tp->lost rose since the last walk: the lowest lost skbs not retransmitted
 *   (LOST, not SACKed, not retransmitted since). Each is judged with tp->lost as it stood at its
 *   mark, rebuilt as the count before the marks plus the packets marked before it, so the
 *   decisions are the hook's whenever the kernel marked in sequence order and every earlier mark
 *   was retransmitted by then: RACK marks in send order, which differs for lost retransmits, and
 *   marks that pacing or cwnd kept from retransmission are taken again in place of newer ones
 *   above them (the kernel's lost_out - retrans_out was measured to overcount them, so they cannot
 *   be passed by count). Decisions are applied where the hooks' were: cong_control of the same
 *   ACK, or ssthresh.
 */
#ifndef BBR3_PP_WALK_H
#define BBR3_PP_WALK_H

#ifdef __bpf__
/* skbs one walk visits at most: the holes of a 5% loss flight are ~20 SACKed skbs apart, and a walk
 * usually starts at the first hole; past this the rest of the marks are misses (the ACK-time path).
 */
#define BBR3_PP_WALK_SKBS 512
/* Depth of the retransmit queue's rb-tree at most: 2 x log2 of 2^24 skbs. */
#define BBR3_RB_DEPTH 48

struct bbr3_pp_walk {
	struct bbr3_pp *pp;
	u64 skb;	       /* the skb at this step (its rbnode at offset 0); 0: the end */
	struct bbr3_pp_sock c; /* c.lost: tp->lost before the next mark */
	u32 left;	       /* packets of this walk's marks still to find */
};

BBR_INLINE u64 bbr3_rb_read(u64 node, int which)
{
	struct rb_node n = {};

	bpf_probe_read_kernel(&n, sizeof(n), (void *)node);
	return which < 0 ? (u64)n.rb_left : which > 0 ? (u64)n.rb_right : n.__rb_parent_color & ~3ULL;
}

/* rb_next() on the queue's skbs (their rbnode is the first member). */
BBR_INLINE u64 bbr3_rb_next(u64 node)
{
	u64 next = bbr3_rb_read(node, 1), parent;
	int i;

	if (next) {
		for (i = 0; i < BBR3_RB_DEPTH; i++) {
			u64 left = bbr3_rb_read(next, -1);

			if (!left)
				break;
			next = left;
		}
		return next;
	}
	for (i = 0; i < BBR3_RB_DEPTH; i++) {
		parent = bbr3_rb_read(node, 0);
		if (!parent || bbr3_rb_read(parent, 1) != node)
			return parent;
		node = parent;
	}
	return 0;
}

BBR_INLINE u64 bbr3_rb_first(u64 node)
{
	for (int i = 0; node && i < BBR3_RB_DEPTH; i++) {
		u64 left = bbr3_rb_read(node, -1);

		if (!left)
			break;
		node = left;
	}
	return node;
}

static long bbr3_pp_walk_step(u64 i, void *data)
{
	struct bbr3_pp_walk *w = data;
	struct sk_buff *skb = (struct sk_buff *)w->skb;
	struct tcp_skb_cb cb;
	u32 pcount;

	if (!skb || !w->left || bpf_probe_read_kernel(&cb, sizeof(cb), &skb->cb))
		return 1;
	w->skb = bbr3_rb_next(w->skb);
	if (!(cb.sacked & BBR3_TCPCB_LOST) ||
		(cb.sacked & (BBR3_TCPCB_SACKED_ACKED | BBR3_TCPCB_SACKED_RETRANS)))
		return 0;
	pcount = bbr_min_u32(cb.tcp_gso_segs ?: 1, w->left);
	bbr3_pp_lost(
		w->pp, &w->c, cb.seq, cb.end_seq, pcount, cb.tx.is_app_limited, cb.tx.delivered_mstamp != 0);
	w->c.lost += pcount;
	w->left -= pcount;
	return 0;
}

/* Judges the skbs marked lost since the last walk, as the loss hook would have at each mark. The
 * socket's fields are read as a tracing program must (the retransmit tracepoint walks too).
 */
BBR_INLINE void bbr3_pp_walk(const struct sock *sk, struct bbr3_pp *pp)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	u32 lost = BPF_CORE_READ(tp, lost);
	struct bbr3_pp_walk w = { .pp = pp };

	if (lost == pp->lost_walked)
		return;
	w.left = lost - pp->lost_walked;
	pp->lost_walked = lost;
	w.c.lost = lost - w.left;
	w.c.cwnd = BPF_CORE_READ(tp, snd_cwnd);
	w.c.mss = BPF_CORE_READ(tp, mss_cache);
	w.skb = (u64)BPF_CORE_READ(tp, retransmit_skb_hint);
	if (!w.skb)
		w.skb = bbr3_rb_first((u64)BPF_CORE_READ(sk, tcp_rtx_queue.rb_node));
	bpf_loop(BBR3_PP_WALK_SKBS, bbr3_pp_walk_step, &w, 0);
	if (w.left) { /* not found within the walk: the ACK-time path judges this ACK's losses */
		pp->misses += w.left;
		pp->missed = 1;
	}
}
#else
BBR_INLINE void bbr3_pp_walk(struct sock *sk, struct bbr3_pp *pp)
{
	/* The host's sender calls the loss hook at each mark. */
}
#endif

/* The flow's per-packet state for a callback that may see losses, with the marks since the last
 * walk judged when the ACK finds them.
 */
BBR_INLINE struct bbr3_pp *bbr3_pp_marks(struct sock *sk, const struct bbr3 *s)
{
	struct bbr3_pp *pp = bbr3_pp_state(sk);

	if (pp && s->pp_walk)
		bbr3_pp_walk(sk, pp);
	return pp;
}

#endif /* BBR3_PP_WALK_H */
