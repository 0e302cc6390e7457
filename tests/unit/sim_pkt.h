/* SPDX-License-Identifier: GPL-2.0 */
/* A closed-loop, packet-level TCP sender for bbr3_core.h's host build, calling the congestion
 * control in the kernel's order (net/ipv4/tcp_input.c tcp_ack(): SACK tagging and the rate sample,
 * loss marking, recovery entry with ssthresh and set_state, then cong_control; tcp_enter_loss() for
 * an RTO: marks, ssthresh, cwnd = flight + 1, set_state(TCP_CA_Loss)), and the per-packet path's
 * hooks where the kernel's functions they trace run (tcp_rate_skb_sent() inside the transmit, before
 * packets_out counts the skb; tcp_mark_skb_lost() before tp->lost counts it).
 *
 * One packet per skb. A FIFO bottleneck of `rate` packets per ms and `buffer` packets drops on
 * overflow and at random (`loss_ppm`); every delivered packet is SACKed one RTT after it leaves
 * the bottleneck. Loss detection is RACK's time rule (a packet sent a quarter RTT before one
 * delivered is lost); an RTO (200 ms without ACK) marks the whole flight. Include after sim.h.
 *
 * The sender keeps, per packet, what v3 keeps in the skb (flight and tp->lost at send): the test's
 * reference judges every mark with v3's rule from these, independently of the ring bbr3 keeps.
 */
#ifndef SIM_PKT_H
#define SIM_PKT_H

#define PKT_MAX 400000
#define PKT_RTO_US 200000 /* the kernel's minimum RTO */
#define PKT_THRESH_UNIT 5 /* v3's bbr_loss_thresh, 2% of BBR_UNIT */
#define PKT_BETA_CUT 76	  /* v3's bbr_beta, 30% of BBR_UNIT */

struct pkt {
	u64 sent_us, first_tx_us, delivered_us;
	u32 delivered; /* tp->delivered at send */
	u32 in_flight; /* v3's tx.in_flight: first transmit */
	u32 lost;      /* v3's tx.lost: every transmit */
	u8 sacked, marked, rexmit;
};

struct pkt_path {
	u32 rate_x1000; /* bottleneck packets per 1000 us */
	u32 buffer;	/* packets */
	u32 rtt_us;	/* propagation */
	u32 loss_ppm;	/* random drops per million */
	u64 step_at_us; /* then the rate becomes step_rate_x1000 (0: no step) */
	u32 step_rate_x1000;
	u64 blackhole_at_us; /* drop everything from then for blackhole_us (an RTO) */
	u64 blackhole_us;
	bool blackhole_in_up; /* start the black hole at the second UP instead */
	u64 seed;
};

/* What the run counts: the reference's decisions against the path's under test. */
struct pkt_stats {
	u32 ref_cuts;	   /* first crossings of loss_thresh while probing, by v3's rule */
	u32 agree, differ; /* the path's decisions at those marks/ACKs */
	u32 extra;	   /* the path cut where v3's rule did not */
	u32 sent, lost, delivered;
	u32 hi_after_rto; /* inflight_hi right after the RTO of a black hole in UP */
};

static struct pkt pk[PKT_MAX];
static u32 pkt_una, pkt_nxt; /* first not cumulatively ACKed, next new */
static u64 pkt_now, pkt_next_send, pkt_last_ack, pkt_link_free;
static u32 pkt_q[PKT_MAX], pkt_qhead, pkt_qtail; /* packets in delivery order */
static u64 pkt_q_at[PKT_MAX];			 /* their ACK arrival times */
static u64 pkt_rng;
static u32 pkt_ups;
static u64 pkt_hole_from;
static struct pkt_path pkt_p;
static struct pkt_stats pkt_s;

static u32 pkt_rand(void)
{
	pkt_rng = pkt_rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (u32)(pkt_rng >> 33);
}

static u32 pkt_in_flight(void)
{
	return bbr_packets_in_flight(&sim_tp);
}

/* What the kprobes copy from the socket. */
static struct bbr3_pp_sock pkt_sock(void)
{
	return (struct bbr3_pp_sock){ .snd_nxt = sim_tp.snd_nxt,
		.in_flight = pkt_in_flight(),
		.lost = sim_tp.lost,
		.cwnd = sim_tp.snd_cwnd,
		.mss = SIM_MSS };
}

/* v3's rule on one lost skb, from the sender's own per-packet state: is it too high, and where
 * did the loss rate cross the threshold (bbr_inflight_hi_from_lost_skb, one packet)?
 */
static bool ref_too_high(const struct pkt *p, u32 lost_now, u32 *hi)
{
	u32 lost = lost_now - p->lost, prev = p->in_flight - 1, lost_prev = lost - 1;
	u64 budget = ((u64)prev * PKT_THRESH_UNIT + 255) / 256;

	if (!(lost > 0 && p->in_flight && lost > (u32)(((u64)p->in_flight * PKT_THRESH_UNIT) >> 8)))
		return false;
	*hi = prev + (lost_prev >= budget ? 0 : (u32)(((budget - lost_prev) << 8) / (256 - PKT_THRESH_UNIT)));
	return true;
}

/* A decision of the path under test on one mark or ACK against the reference's. `ref` says v3
 * cuts with inflight_hi candidate ref_hi; `got` says the path does with got_hi.
 */
static void pkt_score(bool ref, u32 ref_hi, bool got, u32 got_hi)
{
	if (ref) {
		pkt_s.ref_cuts++;
		if (got && got_hi == ref_hi)
			pkt_s.agree++;
		else
			pkt_s.differ++;
	} else if (got) {
		pkt_s.extra++;
	}
}

/* Marks packet i lost; the per-packet hook first, as fentry runs before the kernel's body. */
static void pkt_mark(u32 i, bool *ref_done, u32 *ref_hi)
{
	struct pkt *p = &pk[i];
	struct bbr3 *s = &host_bbr3;
	u32 hi;

	struct bbr3_pp_sock c = pkt_sock();

	if (s->pp_on)
		bbr3_pp_lost(&host_bbr3_pp, &c, i * SIM_MSS, (i + 1) * SIM_MSS, 1, false, true);
	if (!*ref_done && s->bw_probe_samples && ref_too_high(p, sim_tp.lost + 1, &hi)) {
		*ref_done = true;
		*ref_hi = hi;
	}
	sim_tp.lost++;
	sim_tp.lost_out++;
	if (p->rexmit)
		sim_tp.retrans_out--;
	p->marked = 1;
	p->rexmit = 0;
	pkt_s.lost++;
}

/* The path's decision for this ACK's (or RTO's) marks, read before its callbacks apply it: the
 * per-packet path's pending decision, or what the ACK-time path computes (bbr3_on_losses, bbr3_on_rto).
 */
static void pkt_judge(bool ref, u32 ref_hi, u32 losses, u32 prior_in_flight, bool rto)
{
	struct bbr3 *s = &host_bbr3;
	u32 lost = bbr3_lost_in_round(&sim_tp, s),
	    flight = rto ? sim_tp.packets_out - sim_tp.sacked_out : prior_in_flight;
	bool got;

	if (!losses || !s->bw_probe_samples) {
		pkt_score(ref, ref_hi, false, 0);
		return;
	}
	if (s->pp_on) {
		pkt_score(ref, ref_hi, host_bbr3_pp.pending, host_bbr3_pp.inflight_hi);
		return;
	}
	got = bbr3_loss_too_high(flight, lost);
	pkt_score(ref, ref_hi, got, got ? bbr3_inflight_hi_from_lost(flight, lost, rto ? 1 : losses) : 0);
}

static void pkt_send(u32 i, bool rexmit)
{
	struct pkt *p = &pk[i];
	u32 rate = pkt_p.step_at_us && pkt_now >= pkt_p.step_at_us ? pkt_p.step_rate_x1000 : pkt_p.rate_x1000;
	u64 svc = 1000000 / rate, depart;

	struct bbr3_pp_sock c;

	sim_tp.snd_nxt = pkt_nxt * SIM_MSS;
	c = pkt_sock();
	if (host_bbr3.pp_on)
		bbr3_pp_sent(&host_bbr3_pp, &c, i * SIM_MSS, (i + 1) * SIM_MSS, 1);
	if (!rexmit)
		p->in_flight = pkt_in_flight() + 1;
	p->lost = sim_tp.lost;
	p->sent_us = pkt_now;
	p->first_tx_us = sim_tp.delivered_mstamp; /* the kernel's first_tx_mstamp stand-in */
	p->delivered = sim_tp.delivered;
	p->delivered_us = sim_tp.delivered_mstamp;
	if (rexmit) {
		p->rexmit = 1;
		sim_tp.retrans_out++;
		sim_tp.total_retrans++;
	} else {
		pkt_nxt++;
		sim_tp.packets_out++;
	}
	pkt_s.sent++;
	/* The bottleneck: drop on overflow, at random, or in the black hole. */
	if (pkt_link_free < pkt_now)
		pkt_link_free = pkt_now;
	if ((pkt_link_free - pkt_now) / svc >= pkt_p.buffer || pkt_rand() % 1000000 < pkt_p.loss_ppm ||
		(pkt_hole_from && pkt_now >= pkt_hole_from && pkt_now < pkt_hole_from + pkt_p.blackhole_us))
		return;
	depart = pkt_link_free + svc;
	pkt_link_free = depart;
	pkt_q[pkt_qtail] = i;
	pkt_q_at[pkt_qtail++] = depart + pkt_p.rtt_us;
}

static void pkt_try_send(void)
{
	while (pkt_now >= pkt_next_send && pkt_nxt < PKT_MAX) {
		u32 i = pkt_una;

		sim_tp.is_cwnd_limited = pkt_in_flight() >= sim_tp.snd_cwnd;
		if (sim_tp.is_cwnd_limited)
			return;
		while (i < pkt_nxt && !(pk[i].marked && !pk[i].rexmit && !pk[i].sacked))
			i++;
		pkt_send(i < pkt_nxt ? i : pkt_nxt, i < pkt_nxt);
		pkt_next_send =
			pkt_now + (u64)SIM_MSS * 1000000 / (sk->sk_pacing_rate ? sk->sk_pacing_rate : 1);
	}
}

static void pkt_set_state(u8 state)
{
	bbr3_set_state(sk, state);
	sim_tp.inet_conn.icsk_ca_state = state;
}

/* The RTO: tcp_enter_loss()'s order. */
static void pkt_rto(void)
{
	bool ref = false;
	u32 ref_hi = 0, losses = 0, i;

	for (i = pkt_una; i < pkt_nxt; i++)
		if (!pk[i].sacked && (!pk[i].marked || pk[i].rexmit)) {
			pkt_mark(i, &ref, &ref_hi);
			losses++;
		}
	pkt_judge(ref, ref_hi, losses, 0, true);
	bbr3_ssthresh(sk);
	sim_tp.snd_cwnd = pkt_in_flight() + 1;
	pkt_set_state(TCP_CA_Loss);
	if (pkt_p.blackhole_in_up)
		pkt_s.hi_after_rto = host_bbr3.inflight_hi;
	pkt_last_ack = pkt_now;
}

/* One ACK SACKing packet i, in tcp_ack()'s order. */
static void pkt_ack(u32 i)
{
	struct pkt *p = &pk[i];
	struct rate_sample rs = { 0 };
	u32 prior_in_flight = pkt_in_flight(), lost = sim_tp.lost, losses = 0, ref_hi = 0, j;
	bool ref = false;

	sim_tp.tcp_mstamp = pkt_now;
	host_clock_us = pkt_now;
	pkt_last_ack = pkt_now;
	if (p->sacked)
		return;
	p->sacked = 1;
	if (p->marked)
		sim_tp.lost_out--;
	if (p->rexmit)
		sim_tp.retrans_out--;
	p->marked = p->rexmit = 0;
	sim_tp.sacked_out++;
	sim_tp.delivered++;
	sim_tp.delivered_mstamp = pkt_now;
	pkt_s.delivered++;
	rs.prior_delivered = p->delivered;
	rs.prior_mstamp = p->delivered_us;
	rs.delivered = (s32)(sim_tp.delivered - p->delivered);
	rs.interval_us = (long)(p->sent_us - p->first_tx_us);
	if ((long)(pkt_now - p->delivered_us) > rs.interval_us)
		rs.interval_us = (long)(pkt_now - p->delivered_us);
	rs.rtt_us = (long)(pkt_now - p->sent_us);
	sim_tp.rtt_min.s[0].v = bbr_min_u32(sim_tp.rtt_min.s[0].v, (u32)rs.rtt_us);
	sim_tp.srtt_us = (u32)rs.rtt_us << 3;
	while (pkt_una < pkt_nxt && pk[pkt_una].sacked) {
		pkt_una++;
		sim_tp.packets_out--;
		sim_tp.sacked_out--;
	}
	/* RACK: sent a quarter RTT before the packet just delivered, and still not delivered. */
	for (j = pkt_una; j < pkt_nxt; j++)
		if (!pk[j].sacked && (!pk[j].marked || pk[j].rexmit) &&
			pk[j].sent_us + pkt_p.rtt_us / 4 < p->sent_us) {
			pkt_mark(j, &ref, &ref_hi);
			losses++;
		}
	pkt_judge(ref, ref_hi, losses, prior_in_flight, false);
	rs.losses = (int)(sim_tp.lost - lost);
	rs.acked_sacked = 1;
	rs.last_end_seq = (i + 1) * SIM_MSS;
	rs.prior_in_flight = prior_in_flight;
	if (sim_tp.inet_conn.icsk_ca_state >= TCP_CA_Recovery && pkt_una * SIM_MSS >= sim_tp.snd_nxt)
		pkt_set_state(TCP_CA_Open);
	if (sim_tp.inet_conn.icsk_ca_state == TCP_CA_Open && sim_tp.lost_out) {
		bbr3_ssthresh(sk);
		pkt_set_state(TCP_CA_Recovery);
	}
	bbrkit_on_ack(sk, &rs);
	if (core()->mode == BBRKIT_PROBE_BW && core()->cycle_idx == BBRKIT_V3_UP && !pkt_hole_from &&
		pkt_p.blackhole_in_up && ++pkt_ups > 1)
		pkt_hole_from = pkt_now;
}

/* Runs the flow for `us` over path p, on the per-packet path (pp) or the ACK-time one. */
static struct pkt_stats pkt_run(const struct pkt_path *p, bool pp, u64 us)
{
	u64 end;

	memset(pk, 0, sizeof(pk));
	memset(&pkt_s, 0, sizeof(pkt_s));
	pkt_p = *p;
	pkt_rng = p->seed;
	pkt_una = pkt_nxt = pkt_qhead = pkt_qtail = pkt_ups = 0;
	pkt_hole_from = p->blackhole_in_up ? 0 : p->blackhole_at_us;
	bbr3_pp_live = pp;
	params = defaults;
	check_setup();
	pkt_now = pkt_next_send = pkt_last_ack = pkt_link_free = sim_tp.tcp_mstamp;
	end = pkt_now + us;
	while (pkt_now < end) {
		pkt_try_send();
		if (pkt_qhead < pkt_qtail && pkt_q_at[pkt_qhead] <= pkt_now) {
			pkt_ack(pkt_q[pkt_qhead++]);
			continue;
		}
		if (pkt_una < pkt_nxt && pkt_now >= pkt_last_ack + PKT_RTO_US) {
			pkt_rto();
			continue;
		}
		pkt_now += 10; /* 10 us steps between events */
		sim_tp.tcp_mstamp = pkt_now;
		if (pkt_nxt >= PKT_MAX - 1)
			break;
	}
	bbr3_pp_live = 0;
	return pkt_s;
}

#endif /* SIM_PKT_H */
