/* SPDX-License-Identifier: GPL-2.0 */
/* The per-packet path: v3's skb_marked_lost on a stock kernel. A kprobe on the kernel's
 * tcp_rate_skb_sent() records each skb's send state (bbr3_pp_sent), one on tcp_mark_skb_lost()
 * judges each lost skb with it (bbr3_pp_lost), and the next callback of the congestion control
 * that sees losses, the same ACK's cong_control or an RTO's ssthresh, applies the decision
 * (bbr3_pp_apply).
 */
#ifndef BBR3_PP_H
#define BBR3_PP_H

/* Send records of the per-packet loss path, per flow: the retransmit queue (snd_una to snd_nxt) of up
 * to this many skbs (a TSO skb carries up to 64 KB), 12 KB per flow. A recovery holds a hole at
 * snd_una while SACKed skbs pile up above it: with one-packet skbs the v3 differential saw 730 skbs
 * between a hole and snd_nxt at a 334-packet flight, where 512 records had evicted the hole's
 * (docs/v3-differential.md).
 */
#define BBR3_TX_RING_BITS 10
#define BBR3_TX_RING (1U << BBR3_TX_RING_BITS)
#define BBR3_TX_RING_MASK (BBR3_TX_RING - 1)

/* What v3 keeps in an skb's control block at transmit and a stock kernel does not. */
struct bbr3_tx {
	u32 seq;       /* first sequence number of the skb at its first transmit */
	u32 in_flight; /* packets in flight with it, at that transmit (v3's tx.in_flight) */
	u32 lost;      /* tp->lost at its latest transmit (v3's tx.lost) */
};

/* The per-packet path's state of one flow, written by the kprobes and read by the congestion
 * control on the ACKs that report losses: its existence marks the flow as ours to the kprobes.
 * Records of first transmits are in sequence order, the newest at head - 1.
 */
struct bbr3_pp {
	u32 head;	 /* records written */
	u32 end_seq;	 /* end of the newest record; a record ends where the next begins */
	u32 decisions;	 /* lost packets judged with their skb's own send record (packets, as tp->lost) */
	u32 misses;	 /* lost packets without one (evicted, or sent before the record began) */
	u32 inflight_hi; /* the first lost skb to cross loss_thresh: inflight_hi from it, */
	u32 cwnd;	 /* the cwnd when it was marked (v3's target is taken then), */
	u8 pending;	 /* set until the next callback applies it */
	u8 app_limited;	 /* that skb was sent app-limited */
	u8 marks_after;	 /* skbs were marked lost after it */
	u8 missed;	 /* a lost skb had no record: the ACK-time path judges this ACK's losses */
	u32 marked;	 /* packets the loss hook saw marked since the last ACK that reported losses */
	u32 lost_walked; /* walk mode: tp->lost when the last walk for marks ended (bbr3_pp_walk.h) */
	struct bbr3_tx ring[BBR3_TX_RING];
};

/* The socket's counts the per-packet path reads, copied by the kprobes (they may not dereference
 * kernel pointers) or, on the host, from the test's socket.
 */
struct bbr3_pp_sock {
	u32 snd_nxt;
	u32 in_flight; /* tcp_packets_in_flight() */
	u32 lost;
	u32 cwnd;
	u32 mss;
};

#ifdef __bpf__
/* Flows on the per-packet path (most at a time; a flow beyond falls back to the ACK-time path),
 * keyed by the socket's address: kprobes cannot reach socket storage. Entries go with the socket
 * (tcp_destroy_sock) or with a new init on the same address.
 */
#define BBR3_PP_FLOWS 4096

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BBR3_PP_FLOWS);
	__type(key, u64);
	__type(value, struct bbr3_pp);
} bbr3_pp_flows SEC(".maps");

/* A zeroed value to start a flow's entry from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr3_pp);
} bbr3_pp_zero SEC(".maps");

/* How the per-packet path runs once bbrctl has attached its programs (BBRKIT_PP_HOOKS or
 * BBRKIT_PP_WALK; 0: not at all): flows that start then use it.
 */
__u32 bbr3_pp_live SEC(".data.pp") = 0;

BBR_INLINE struct bbr3_pp *bbr3_pp_state(struct sock *sk)
{
	u64 key = (u64)sk;

	return bpf_map_lookup_elem(&bbr3_pp_flows, &key);
}

/* A new entry for the flow, replacing a dead socket's at the same address. */
BBR_INLINE bool bbr3_pp_create(struct sock *sk)
{
	u64 key = (u64)sk;
	u32 zero = 0;
	struct bbr3_pp *z = bpf_map_lookup_elem(&bbr3_pp_zero, &zero);

	return z && !bpf_map_update_elem(&bbr3_pp_flows, &key, z, BPF_ANY);
}
#else
static struct bbr3_pp host_bbr3_pp;
static __u32 bbr3_pp_live;

BBR_INLINE struct bbr3_pp *bbr3_pp_state(struct sock *sk)
{
	return &host_bbr3_pp;
}

BBR_INLINE bool bbr3_pp_create(struct sock *sk)
{
	memset(&host_bbr3_pp, 0, sizeof(host_bbr3_pp));
	return true;
}
#endif

/* The record whose range holds seq, found by bisection (records are in sequence order); *end is
 * where that range ends. NULL when seq is outside the records.
 */
BBR_INLINE struct bbr3_tx *bbr3_pp_find(struct bbr3_pp *pp, u32 seq, u32 *end)
{
	u32 n = bbr_min_u32(pp->head, BBR3_TX_RING), lo = pp->head - n, hi = pp->head, base, mid;
	int i;

	if (!n)
		return NULL;
	base = pp->ring[lo & BBR3_TX_RING_MASK].seq; /* offsets from the oldest survive wrap */
	if (seq - base >= pp->end_seq - base)
		return NULL;
	for (i = 0; i <= BBR3_TX_RING_BITS && hi - lo > 1; i++) {
		mid = lo + (hi - lo) / 2;
		if (pp->ring[mid & BBR3_TX_RING_MASK].seq - base <= seq - base)
			lo = mid;
		else
			hi = mid;
	}
	*end = lo + 1 == pp->head ? pp->end_seq : pp->ring[(lo + 1) & BBR3_TX_RING_MASK].seq;
	return &pp->ring[lo & BBR3_TX_RING_MASK];
}

/* A transmit, before the kernel counts it in packets_out: v3 stamps the flight with this skb at
 * its first transmit (new data: seq == snd_nxt) and the loss count at every transmit.
 */
BBR_INLINE void bbr3_pp_sent(
	struct bbr3_pp *pp, const struct bbr3_pp_sock *tp, u32 seq, u32 end_seq, u32 pcount)
{
	struct bbr3_tx *t;
	u32 end;

	if (seq == tp->snd_nxt) {
		t = &pp->ring[pp->head & BBR3_TX_RING_MASK];
		t->seq = seq;
		t->in_flight = tp->in_flight + pcount;
		t->lost = tp->lost;
		pp->head++;
		pp->end_seq = end_seq;
		return;
	}
	t = bbr3_pp_find(pp, seq, &end);
	if (t)
		t->lost = tp->lost;
}

/* A new loss mark, before the kernel counts it in tp->lost: v3's rule on this skb alone, with the
 * flight it was sent in and the losses since (this skb's own included). The first skb to cross
 * loss_thresh sets the decision, later ones only count as marks after it; whether the flow was
 * probing (v3 judges only then) is the congestion control's to check when it applies it, and
 * cannot change between the marks of one ACK. A part of a split skb was sent with fewer packets
 * after it: v3 lowers its in_flight by them.
 */
BBR_INLINE void bbr3_pp_lost(struct bbr3_pp *pp, const struct bbr3_pp_sock *tp, u32 seq, u32 end_seq,
	u32 pcount, bool app_limited, bool judged)
{
	u32 end, in_flight, lost;
	struct bbr3_tx *t;

	pp->marked += pcount;
	if (!judged)
		return; /* as v3: an skb whose rate sample state was cleared */
	t = bbr3_pp_find(pp, seq, &end);
	if (!t) {
		pp->misses += pcount;
		pp->missed = 1;
		return;
	}
	pp->decisions += pcount;
	if (pp->pending) {
		pp->marks_after = 1;
		return;
	}
	in_flight = t->in_flight;
	if (end != end_seq && tp->mss) /* rare: a division only for a split skb */
		in_flight -= bbr_min_u32(in_flight, (end - end_seq + tp->mss - 1) / tp->mss);
	lost = tp->lost + pcount - t->lost;
	if (!bbr3_loss_too_high(in_flight, lost))
		return;
	pp->inflight_hi = bbr3_inflight_hi_from_lost(in_flight, lost, pcount);
	pp->cwnd = tp->cwnd;
	pp->app_limited = app_limited;
	pp->pending = 1;
}

/* The pending decision, as v3 took it at the mark: the loss, the cut while probing, and the marks
 * after it. False when there was nothing to cut: the caller notes the loss as for any ACK.
 * *missed: some lost skb was not judged per packet (no record, or the hook saw fewer packets than
 * `losses`, the ACK's count: the hooks were detached), so the ACK-time path judges as well. With
 * losses 0 (ssthresh, amid the ACK's callbacks) the counts are left for the ACK.
 */
BBR_INLINE bool bbr3_pp_apply(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, struct bbr3_pp *pp, u32 losses, bool *missed)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool cut;

	*missed = !pp;
	if (!pp)
		return false;
	*missed = pp->missed || pp->marked < losses;
	if (losses) {
		pp->missed = 0;
		pp->marked = 0;
	}
	cut = pp->pending && s->bw_probe_samples;
	pp->pending = 0;
	if (cut) {
		bbr3_note_loss(tp, s);
		bbr3_handle_inflight_too_high(sk, b, s, pp->inflight_hi, pp->cwnd, pp->app_limited);
		if (pp->marks_after)
			bbr3_note_loss(tp, s);
	}
	pp->marks_after = 0;
	return cut;
}

/* Might the ACKed skb (it ends at rs->last_end_seq) have lost packets since its send? Yes when it
 * was sent before the latest rise of tp->lost a callback saw (an skb that ends by snd_nxt then): an
 * ACK with no losses in this loss round still reads its record then, as v3 reads rs->lost.
 */
BBR_INLINE bool bbr3_pp_covers_loss(const struct tcp_sock *tp, struct bbr3 *s, const struct rate_sample *rs)
{
	if (tp->lost != s->loss_seen) {
		s->loss_seen = tp->lost;
		s->loss_snd_nxt = tp->snd_nxt;
	}
	return !bbr_after(rs->last_end_seq, s->loss_snd_nxt);
}

/* Might the ACKed skb have gone out with a flight above inflight_hi, so that v3 would raise
 * inflight_hi to it (bbr_adapt_upper_bounds: rs->tx_in_flight > inflight_hi)? Yes when it was sent
 * before inflight_hi was last cut, or while cwnd was above inflight_hi (STARTUP, DRAIN, a restored
 * cwnd): the flight at a send is within the cwnd then.
 */
BBR_INLINE bool bbr3_pp_covers_over_hi(
	const struct tcp_sock *tp, struct bbr3 *s, const struct rate_sample *rs)
{
	if (s->sent_over_hi)
		s->over_hi_snd_nxt = tp->snd_nxt;
	return s->inflight_hi != ~0U && !bbr_after(rs->last_end_seq, s->over_hi_snd_nxt);
}

/* The ACKed skb's record (the rate sample's skb ends at rs->last_end_seq): its flight at send, less
 * the packets after it for a split skb, and the losses since its last transmit.
 */
BBR_INLINE void bbr3_pp_acked(
	struct sock *sk, struct bbr3_pp *pp, const struct rate_sample *rs, struct bbr3_acked *acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3_tx *t;
	u32 end, in_flight;

	t = pp ? bbr3_pp_find(pp, rs->last_end_seq - 1, &end) : NULL;
	if (!t)
		return; /* A and B stand */
	in_flight = t->in_flight;
	if (end != rs->last_end_seq && tp->mss_cache) /* rare: a division only for a split skb */
		in_flight -=
			bbr_min_u32(in_flight, (end - rs->last_end_seq + tp->mss_cache - 1) / tp->mss_cache);
	acked->tx_in_flight = in_flight;
	acked->lost = tp->lost - t->lost;
}

/* With the tracing programs attached, the flow's send records: their storage is what makes the
 * programs record this flow (a restarted flow's old records are dropped).
 */
BBR_INLINE void bbr3_pp_init(struct sock *sk, struct bbr3 *s)
{
	struct bbr3_pp *pp;

	s->pp_on = bbr3_pp_live && bbr3_pp_create(sk); /* a full table: the ACK-time path */
	s->pp_walk = s->pp_on && bbr3_pp_live == BBRKIT_PP_WALK;
	pp = s->pp_walk ? bbr3_pp_state(sk) : NULL;
	if (pp) /* marks before the congestion control took over are not this flow's to judge */
		pp->lost_walked = tcp_sk(sk)->lost;
}

#ifdef __bpf__
/* The kernel's TCPCB_* bits of tcp_skb_cb.sacked (#defines, so not in BTF). */
#define BBR3_TCPCB_SACKED_ACKED 0x01
#define BBR3_TCPCB_SACKED_RETRANS 0x02
#define BBR3_TCPCB_LOST 0x04

/* The counts bbr3_pp_sent/lost read, with the kernel's tcp_packets_in_flight(). */
BBR_INLINE void bbr3_pp_read_sock(struct bbr3_pp_sock *c, const struct tcp_sock *tp)
{
	c->snd_nxt = BPF_CORE_READ(tp, snd_nxt);
	c->in_flight = BPF_CORE_READ(tp, packets_out) - BPF_CORE_READ(tp, sacked_out) -
		BPF_CORE_READ(tp, lost_out) + BPF_CORE_READ(tp, retrans_out);
	c->lost = BPF_CORE_READ(tp, lost);
	c->cwnd = BPF_CORE_READ(tp, snd_cwnd);
	c->mss = BPF_CORE_READ(tp, mss_cache);
}
#endif

#endif /* BBR3_PP_H */
