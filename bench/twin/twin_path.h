/* SPDX-License-Identifier: GPL-2.0 */
/* One transfer through a scripted path, for the host build of an algorithm (include after its
 * bpf/<algo>.bpf.c). The sender calls the congestion control where the kernel does
 * (net/ipv4/tcp_input.c tcp_ack(): the rate sample, loss marking, recovery entry with ssthresh and
 * set_state, the undo of a spurious recovery, then cong_control; tcp_output.c: cwnd_event
 * TX_START when data leaves an empty pipe; tcp_rate.c: the rate sample, app-limited marks and their
 * clearing), and for bbr2/bbr3 the per-packet loss path's hooks where bbrctl attaches them
 * (tcp_rate_skb_sent(), tcp_mark_skb_lost()).
 *
 * The path: a token-bucket policer if asked, a FIFO bottleneck (rate schedule, buffer in bytes, random
 * drops in windows), then the base RTT; every delivered packet is SACKed when it arrives back, one
 * ACK per packet. Loss detection
 * is RACK's time rule (lost when sent a quarter RTT before a delivered packet); an RTO (200 ms plus
 * the smoothed RTT without ACK) marks the whole flight. A reordered packet (--spurious-loss) arrives
 * half an RTT late, is marked lost and retransmitted; when every packet marked lost in the recovery
 * has arrived after all, TCP's undo (tcp_try_undo_dsack) calls undo_cwnd and leaves recovery. An ACK
 * blackout (--ack-blackout) holds the ACKs due in its window until it ends, so an RTO may fire first;
 * the first held ACK then echoes a send time before the RTO's retransmit, and TCP's timestamp check
 * (tcp_try_undo_loss(), tcp_packet_delayed(): Eifel) undoes the loss: undo_cwnd, the lost marks
 * cleared, back to Open.
 *
 * The unit tests of bbr2/bbr3 (tests/unit/sim_loop.h) run on this path too: they watch the sender
 * through struct tw_watch and may run the ACK-time loss path instead of the per-packet one. The twin
 * passes no watch; its callers supply host_trace_record() (bbr_ops.h's record sink).
 */
#ifndef TWIN_PATH_H
#define TWIN_PATH_H

#include <stdlib.h>

#include "twin.h"

#define TW_START_US 1000000ULL /* the transfer starts at t = 1 s: no time stamp is 0 */
#define TW_STEP_US 10	       /* the clock's step between events */
#define TW_RTO_MIN_US 200000   /* the kernel's minimum RTO */
#define TW_NONE UINT64_MAX

struct tw_pkt {
	u64 sent_us;	   /* latest transmit */
	u64 first_sent_us; /* first transmit: packets are in this order */
	u64 first_tx_us;   /* the rate sample's send-phase start at that transmit */
	u64 delivered_us;  /* tp->delivered_mstamp then */
	u32 delivered;	   /* tp->delivered then */
	u8 app_limited;	   /* sent while tp->app_limited was set */
	u8 sacked, marked, rexmit;
	u8 reordered; /* held back on the path: its loss mark will turn out spurious */
};

/* What a caller sees of the sender besides the trace records; every member may be zero (the twin's
 * own runs). The hooks read tw_tp and tw_pk and must not change them; they may change the schedule
 * ahead in the twin_cfg their caller passed (tw_cfg points to it).
 */
struct tw_watch {
	bool ack_time_loss; /* bbr2/bbr3 without the per-packet hooks, as when bbrctl cannot attach them */
	void (*sent)(u32 i, bool rexmit); /* packet i leaves, tp's counts not yet updated for it */
	void (*lost)(u32 i);		  /* packet i is being marked lost, tp->lost not yet counting it */
	/* An ACK's or an RTO's marks are done (`losses` of them) and no callback has seen them yet. */
	void (*marked)(u32 losses, u32 prior_in_flight, bool rto);
	void (*done)(bool rto); /* an ACK's or an RTO's callbacks have run */
};

/* A packet on its way back as an ACK. */
struct tw_arrival {
	u64 at_us;
	u64 tx_us;     /* when this transmission left: the timestamp the ACK echoes */
	u64 depart_us; /* when it leaves the bottleneck */
	u32 pkt;
};

static struct tcp_sock tw_tp;
static struct sock *const tw_sk = (struct sock *)&tw_tp;
static const struct twin_cfg *tw_cfg;
static const struct tw_watch *tw_w;
static struct tw_pkt *tw_pk;
static u64 tw_cap;
static u32 tw_una, tw_nxt;
static struct tw_arrival *tw_q; /* in-order arrivals: the FIFO's output */
static u64 tw_qhead, tw_qtail;
static struct tw_arrival tw_late[TWIN_MAX_ITEMS]; /* reordered arrivals */
static int tw_nlate;
static u64 tw_now, tw_next_send, tw_rto_from, tw_link_free, tw_first_tx;
/* The policer's tokens in millionths of a byte (a microsecond at the token rate adds rate/8 of them),
 * and when they were last counted.
 */
static u64 tw_tokens, tw_tokens_at;
static u64 tw_rto_at; /* when the last RTO fired (tp->retrans_stamp: its retransmit left then) */
static u64 tw_rate;   /* the bottleneck's rate in force, bit/s */
/* tcp_cwnd_validate()'s window: cwnd-limited holds until snd_una passes the snd_nxt it was seen at. */
static u32 tw_cwnd_usage_seq, tw_max_packets_out;
static u64 tw_app_bits; /* what the application wrote and the sender has not sent, when limited */
static u64 tw_app_frac; /* bit x us written but not yet a whole bit */
static u64 tw_rng;
static u32 tw_recovery_end;	   /* snd_nxt (packets) when recovery began */
static u32 tw_marked, tw_spurious; /* packets marked lost in this recovery, and found delivered */
static int tw_spurious_next;

static u32 tw_rand(void)
{
	tw_rng = tw_rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (u32)(tw_rng >> 33);
}

/* The callbacks draw their random numbers from the seeded generator. */
static void tw_reseed_core(void)
{
	host_random_value = tw_rand();
}

static u32 tw_in_flight(void)
{
	return bbr_packets_in_flight(&tw_tp);
}

static u64 tw_since(void)
{
	return tw_now - TW_START_US;
}

static u64 tw_rate_bps(void)
{
	u64 rate = tw_cfg->rate[0].value;

	for (int i = 1; i < tw_cfg->nrate; i++)
		if (tw_since() >= tw_cfg->rate[i].at_us)
			rate = tw_cfg->rate[i].value;
	return rate;
}

static const struct twin_window *tw_window(const struct twin_window *w, int n)
{
	for (int i = 0; i < n; i++)
		if (tw_since() >= w[i].from_us && tw_since() < w[i].to_us)
			return &w[i];
	return NULL;
}

/* The application's writes over one clock step: none while paused, `value` bit/s in an app-limited
 * window; outside both it is never short of data.
 */
static void tw_app_tick(void)
{
	const struct twin_window *app = tw_window(tw_cfg->app, tw_cfg->napp);

	if (tw_window(tw_cfg->pause, tw_cfg->npause))
		return;
	if (!app) {
		tw_app_bits = tw_app_frac = 0;
		return;
	}
	tw_app_frac += app->value * TW_STEP_US;
	tw_app_bits += tw_app_frac / USEC_PER_SEC;
	tw_app_frac %= USEC_PER_SEC;
}

/* Bits the application has written and the sender not sent; TW_NONE: no limit. */
static u64 tw_app_backlog(void)
{
	if (!tw_window(tw_cfg->pause, tw_cfg->npause) && !tw_window(tw_cfg->app, tw_cfg->napp))
		return TW_NONE;
	return tw_app_bits;
}

#ifdef BBR3_CORE_H
static struct bbr3_pp_sock tw_pp_sock(void)
{
	return (struct bbr3_pp_sock){ .snd_nxt = tw_tp.snd_nxt,
		.in_flight = tw_in_flight(),
		.lost = tw_tp.lost,
		.cwnd = tw_tp.snd_cwnd,
		.mss = TWIN_MSS };
}
#endif

/* tcp_rate_skb_sent() and the bottleneck. */
/* A token bucket's verdict on a frame arriving now: conforming frames take their size in tokens. */
static bool tw_policer_passes(void)
{
	const u64 frame = (u64)TWIN_FRAME_BYTES * USEC_PER_SEC;
	const u64 depth = tw_cfg->policer_burst_bytes * USEC_PER_SEC;

	if (!tw_cfg->policer_bps)
		return true;
	tw_tokens = bbr_min_u64(depth, tw_tokens + (tw_now - tw_tokens_at) * (tw_cfg->policer_bps / 8));
	tw_tokens_at = tw_now;
	if (tw_tokens < frame)
		return false;
	tw_tokens -= frame;
	return true;
}

static void tw_send(u32 i, bool rexmit)
{
	struct tw_pkt *p = &tw_pk[i];
	const struct twin_window *loss = tw_window(tw_cfg->loss, tw_cfg->nloss);
	u64 svc_us = (u64)TWIN_MSS * 8 * USEC_PER_SEC / tw_rate, depart;

	if (!tw_tp.packets_out) { /* an empty pipe: a new send phase, and the RTO timer starts */
		tw_first_tx = tw_tp.delivered_mstamp = tw_now;
		tw_rto_from = tw_now;
	}
#ifdef BBR3_CORE_H
	struct bbr3_pp_sock c = tw_pp_sock();

	if (host_bbr3.pp_on)
		bbr3_pp_sent(&host_bbr3_pp, &c, i * TWIN_MSS, (i + 1) * TWIN_MSS, 1);
#endif
	if (tw_w->sent)
		tw_w->sent(i, rexmit);
	p->sent_us = tw_now;
	p->first_tx_us = tw_first_tx;
	p->delivered_us = tw_tp.delivered_mstamp;
	p->delivered = tw_tp.delivered;
	p->app_limited = tw_tp.app_limited != 0;
	if (rexmit) {
		p->rexmit = 1;
		tw_tp.retrans_out++;
		tw_tp.total_retrans++;
	} else {
		p->first_sent_us = tw_now;
		tw_nxt++;
		tw_tp.snd_nxt = tw_nxt * TWIN_MSS;
		tw_tp.packets_out++;
		if (tw_spurious_next < tw_cfg->nspurious &&
			tw_since() >= tw_cfg->spurious_us[tw_spurious_next]) {
			p->reordered = 1;
			tw_spurious_next++;
		}
	}
	if (tw_link_free < tw_now)
		tw_link_free = tw_now;
	if (!tw_policer_passes())
		return; /* dropped by the policer */
	if ((tw_link_free - tw_now) / svc_us >= bbr_max_u32((u32)(tw_cfg->buffer_bytes / TWIN_MSS), 1) ||
		(loss && tw_rand() % 1000000 < loss->value))
		return; /* dropped */
	depart = tw_link_free + svc_us;
	tw_link_free = depart;
	if (p->reordered && !rexmit && tw_nlate < TWIN_MAX_ITEMS) {
		tw_late[tw_nlate++] =
			(struct tw_arrival){ depart + tw_cfg->rtt_us * 3 / 2, tw_now, depart, i };
		return;
	}
	tw_q[tw_qtail++] = (struct tw_arrival){ depart + tw_cfg->rtt_us, tw_now, depart, i };
}

/* A rate step reaches the packets already queued: each leaves at the rate in force when it is served,
 * the one in service finishing as it began. The FIFO holds the in-order and the reordered arrivals not
 * yet departed, in the order of their departures.
 */
static void tw_set_rate(u64 rate)
{
	u64 svc_us = (u64)TWIN_MSS * 8 * USEC_PER_SEC / rate, k = tw_qhead;
	int late[TWIN_MAX_ITEMS], nlate = 0, l = 0;
	bool in_service = true;

	tw_rate = rate;
	while (k < tw_qtail && tw_q[k].depart_us <= tw_now)
		k++;
	for (int j = 0; j < tw_nlate; j++) { /* the queued reordered ones, by departure */
		int m = nlate++;

		if (tw_late[j].depart_us <= tw_now) {
			nlate--;
			continue;
		}
		for (; m && tw_late[late[m - 1]].depart_us > tw_late[j].depart_us; m--)
			late[m] = late[m - 1];
		late[m] = j;
	}
	for (;;) {
		struct tw_arrival *next;
		u64 depart;

		if (l < nlate && (k >= tw_qtail || tw_late[late[l]].depart_us < tw_q[k].depart_us))
			next = &tw_late[late[l++]];
		else if (k < tw_qtail)
			next = &tw_q[k++];
		else
			break;
		depart = in_service ? next->depart_us : tw_link_free + svc_us;
		next->at_us = next->at_us - next->depart_us + depart;
		next->depart_us = tw_link_free = depart;
		in_service = false;
	}
}

/* When an ACK due at `at` reaches the sender: at the next multiple of the aggregation interval, and
 * not before the end of a blackout it falls in.
 */
static u64 tw_ack_time(u64 at)
{
	u64 a = tw_cfg->ack_aggregation_us;

	at = a ? (at + a - 1) / a * a : at;
	for (int i = 0; i < tw_cfg->nblackout; i++)
		if (at >= TW_START_US + tw_cfg->blackout[i].from_us &&
			at < TW_START_US + tw_cfg->blackout[i].to_us)
			at = TW_START_US + tw_cfg->blackout[i].to_us;
	return at;
}

/* tcp_write_xmit() under pacing and cwnd, with tcp_rate_check_app_limited() when the application
 * has nothing to send.
 */
static void tw_cwnd_validate(bool cwnd_limited)
{
	if (tw_una >= tw_cwnd_usage_seq || cwnd_limited ||
		(!tw_tp.is_cwnd_limited && tw_tp.packets_out > tw_max_packets_out)) {
		tw_tp.is_cwnd_limited = cwnd_limited;
		tw_max_packets_out = tw_tp.packets_out;
		tw_cwnd_usage_seq = tw_nxt;
	}
}

static void tw_try_send(void)
{
	bool sent = false, cwnd_limited = false;

	while (tw_now >= tw_next_send && tw_nxt < tw_cap - 1) {
		u64 backlog = tw_app_backlog();
		u32 i = tw_una, inflight = tw_in_flight();

		while (i < tw_nxt && !(tw_pk[i].marked && !tw_pk[i].rexmit && !tw_pk[i].sacked))
			i++;
		if (i == tw_nxt && backlog < (u64)TWIN_MSS * 8) {
			/* tcp_rate_check_app_limited(): not cwnd-limited now, every lost packet retransmitted */
			if (inflight < tw_tp.snd_cwnd && tw_tp.lost_out <= tw_tp.retrans_out)
				tw_tp.app_limited = (tw_tp.delivered + inflight) ?: 1;
			break;
		}
		if (inflight >= tw_tp.snd_cwnd) {
			cwnd_limited = true;
			break;
		}
		if (!inflight) { /* tcp_event_data_sent() */
			tw_reseed_core();
			bbrkit_on_cwnd_event(tw_sk, CA_EVENT_TX_START);
		}
		if (i == tw_nxt && backlog != TW_NONE)
			tw_app_bits -= (u64)TWIN_MSS * 8;
		tw_send(i, i < tw_nxt);
		sent = true;
		tw_next_send = tw_now + (u64)TWIN_MSS * USEC_PER_SEC / (tw_sk->sk_pacing_rate ?: 1);
	}
	/* tcp_write_xmit() -> tcp_cwnd_validate(): what BBR reads as tp->is_cwnd_limited */
	if (sent || cwnd_limited)
		tw_cwnd_validate(cwnd_limited);
}

static void tw_set_state(u8 state)
{
	BBRKIT_CC(set_state)(tw_sk, state);
	tw_tp.inet_conn.icsk_ca_state = state;
}

/* tcp_mark_skb_lost(), the per-packet hook first. */
static void tw_mark(u32 i)
{
	struct tw_pkt *p = &tw_pk[i];
#ifdef BBR3_CORE_H
	struct bbr3_pp_sock c = tw_pp_sock();

	if (host_bbr3.pp_on)
		bbr3_pp_lost(&host_bbr3_pp, &c, i * TWIN_MSS, (i + 1) * TWIN_MSS, 1, p->app_limited, true);
#endif
	if (tw_w->lost)
		tw_w->lost(i);
	tw_tp.lost++;
	if (!p->marked) /* a lost retransmit stays counted once */
		tw_tp.lost_out++;
	if (p->rexmit)
		tw_tp.retrans_out--;
	p->marked = 1;
	p->rexmit = 0;
	tw_marked++;
}

/* tcp_enter_loss(): the flight marked, ssthresh, cwnd = flight + 1, set_state(TCP_CA_Loss). */
static void tw_rto(void)
{
	u32 lost = tw_tp.lost;

	for (u32 i = tw_una; i < tw_nxt; i++)
		if (!tw_pk[i].sacked && (!tw_pk[i].marked || tw_pk[i].rexmit))
			tw_mark(i);
	if (tw_w->marked)
		tw_w->marked(tw_tp.lost - lost, 0, true);
	tw_reseed_core();
	BBRKIT_CC(ssthresh)(tw_sk);
	tw_tp.snd_cwnd = tw_in_flight() + 1;
	tw_set_state(TCP_CA_Loss);
	tw_recovery_end = tw_nxt;
	tw_rto_from = tw_rto_at = tw_now;
	if (tw_w->done)
		tw_w->done(true);
}

/* tcp_undo_cwnd_reduction(): every mark of this recovery was spurious (tcp_try_undo_dsack()), or an
 * ACK echoed a send time before the RTO's retransmit (tcp_try_undo_loss(), which also clears the lost
 * marks: those packets are still in flight).
 */
static void tw_undo(bool unmark_loss)
{
	u32 cwnd = bbrkit_on_undo_cwnd(tw_sk);

	for (u32 i = tw_una; unmark_loss && i < tw_nxt; i++)
		if (tw_pk[i].marked && !tw_pk[i].sacked) {
			tw_pk[i].marked = 0;
			tw_tp.lost_out--;
		}

	tw_tp.snd_cwnd = bbr_max_u32(tw_tp.snd_cwnd, cwnd);
	tw_set_state(TCP_CA_Open);
	tw_marked = tw_spurious = 0;
}

/* One ACK (a SACK of packet i, echoing tx_us), in tcp_ack()'s order. */
static void tw_ack(u32 i, u64 tx_us)
{
	struct tw_pkt *p = &tw_pk[i];
	struct rate_sample rs = { 0 };
	u32 prior_in_flight = tw_in_flight(), lost = tw_tp.lost, min_rtt;
	u64 reo_before;
	/* tcp_rack_advance(): an ACK of a retransmit sooner than min_rtt is the original's, which says
	 * nothing of when later packets should have arrived.
	 */
	bool rexmit = p->rexmit, rack_advances = !(rexmit && tw_now - p->sent_us < tw_tp.rtt_min.s[0].v);

	tw_tp.tcp_mstamp = tw_now;
	host_clock_us = tw_now;
	tw_rto_from = tw_now;
	if (p->sacked)
		return; /* a retransmit's duplicate */
	if (p->marked && p->reordered)
		tw_spurious++;
	p->sacked = 1;
	if (p->marked)
		tw_tp.lost_out--;
	if (p->rexmit)
		tw_tp.retrans_out--;
	p->marked = p->rexmit = 0;
	tw_tp.sacked_out++;
	tw_tp.delivered++;
	tw_tp.delivered_mstamp = tw_now;
	if (p->sent_us > tw_first_tx)
		tw_first_tx = p->sent_us; /* tcp_rate_skb_delivered(): the next send phase starts here */
	/* tcp_rate_gen() */
	rs.prior_delivered = p->delivered;
	rs.prior_mstamp = p->delivered_us;
	rs.delivered = (s32)(tw_tp.delivered - p->delivered);
	rs.is_app_limited = p->app_limited;
	rs.interval_us = (long)(p->sent_us - p->first_tx_us);
	if ((long)(tw_now - p->delivered_us) > rs.interval_us)
		rs.interval_us = (long)(tw_now - p->delivered_us);
	rs.rtt_us = rexmit ? -1 : (long)(tw_now - p->sent_us); /* Karn: no RTT from a retransmit */
	if (rs.rtt_us >= 0) {
		tw_tp.rtt_min.s[0].v = bbr_min_u32(tw_tp.rtt_min.s[0].v, (u32)rs.rtt_us);
		tw_tp.srtt_us = tw_tp.srtt_us ? tw_tp.srtt_us - (tw_tp.srtt_us >> 3) + (u32)rs.rtt_us
					      : (u32)rs.rtt_us << 3;
		tw_tp.rack.rtt_us = (u32)rs.rtt_us;
	}
	min_rtt = tw_tp.rtt_min.s[0].v;
	if (rs.interval_us < (long)min_rtt)
		rs.interval_us = -1; /* shorter than min_rtt: ACK compression, no sample */
	if (tw_tp.app_limited && bbr_after(tw_tp.delivered, tw_tp.app_limited))
		tw_tp.app_limited = 0;
	while (tw_una < tw_nxt && tw_pk[tw_una].sacked) {
		tw_una++;
		tw_tp.packets_out--;
		tw_tp.sacked_out--;
	}
	/* RACK: sent a quarter RTT before the packet just delivered, still not delivered. */
	reo_before = rack_advances && p->sent_us > tw_cfg->rtt_us / 4 ? p->sent_us - tw_cfg->rtt_us / 4 : 0;
	for (u32 j = tw_una; j < tw_nxt && tw_pk[j].first_sent_us < reo_before; j++)
		if (!tw_pk[j].sacked && (!tw_pk[j].marked || tw_pk[j].rexmit) &&
			tw_pk[j].sent_us < reo_before)
			tw_mark(j);
	if (tw_w->marked)
		tw_w->marked(tw_tp.lost - lost, prior_in_flight, false);
	rs.losses = (int)(tw_tp.lost - lost);
	rs.acked_sacked = 1;
	rs.last_end_seq = (i + 1) * TWIN_MSS;
	rs.prior_in_flight = prior_in_flight;
	tw_reseed_core();
	if (tw_tp.inet_conn.icsk_ca_state == TCP_CA_Loss && tx_us < tw_rto_at)
		tw_undo(true);
	else if (tw_tp.inet_conn.icsk_ca_state == TCP_CA_Recovery && tw_marked && tw_spurious >= tw_marked)
		tw_undo(false);
	else if (tw_tp.inet_conn.icsk_ca_state >= TCP_CA_Recovery && tw_una >= tw_recovery_end)
		tw_set_state(TCP_CA_Open);
	if (tw_tp.inet_conn.icsk_ca_state == TCP_CA_Open)
		tw_marked = tw_spurious = 0;
	if (tw_tp.inet_conn.icsk_ca_state == TCP_CA_Open && tw_tp.lost_out) {
		tw_marked = tw_tp.lost_out;
		BBRKIT_CC(ssthresh)(tw_sk);
		tw_set_state(TCP_CA_Recovery);
		tw_recovery_end = tw_nxt;
	}
	bbrkit_on_ack(tw_sk, &rs);
	if (tw_w->done)
		tw_w->done(false);
}

/* The next arrival, in-order or reordered, due by now; false when none is. */
static bool tw_next_arrival(struct tw_arrival *next)
{
	int late = -1;

	for (int k = 0; k < tw_nlate; k++)
		if (tw_ack_time(tw_late[k].at_us) <= tw_now &&
			(late < 0 || tw_late[k].at_us < tw_late[late].at_us))
			late = k;
	if (late >= 0 && (tw_qhead == tw_qtail || tw_late[late].at_us <= tw_q[tw_qhead].at_us)) {
		*next = tw_late[late];
		tw_late[late] = tw_late[--tw_nlate];
		return true;
	}
	if (tw_qhead < tw_qtail && tw_ack_time(tw_q[tw_qhead].at_us) <= tw_now) {
		*next = tw_q[tw_qhead++];
		return true;
	}
	return false;
}

/* A connection right after the handshake (one RTT sample), then the algorithm's init. */
static void tw_setup(void)
{
	memset(&tw_tp, 0, sizeof(tw_tp));
	tw_tp.mss_cache = TWIN_MSS;
	tw_tp.snd_cwnd = TCP_INIT_CWND;
	tw_tp.snd_cwnd_clamp = ~0U;
	tw_tp.inet_conn.icsk_sk.sk_max_pacing_rate = ~0UL;
	tw_tp.inet_conn.icsk_sk.sk_pacing_shift = 10;
	tw_tp.tcp_mstamp = tw_tp.delivered_mstamp = host_clock_us = TW_START_US;
	tw_tp.srtt_us = tw_cfg->rtt_us << 3;
	tw_tp.rtt_min.s[0].v = tw_cfg->rtt_us;
#ifdef BBR3_CORE_H
	bbr3_pp_live = !tw_w->ack_time_loss; /* the per-packet hooks attached, as bbrctl attaches them */
#endif
	tw_reseed_core();
	BBRKIT_CC(init)(tw_sk);
	bbrkit_emit(tw_sk, bbr_core_of(tw_sk), BBRKIT_EV_INIT, NULL);
}

/* One transfer of cfg sending at most cap packets, watched by `watch` (NULL: not at all); 0, or -1 when
 * memory ran out.
 */
static int tw_run(const struct twin_cfg *cfg, u64 cap, const struct tw_watch *watch)
{
	static const struct tw_watch unwatched;
	struct tw_arrival next;
	u64 end;

	tw_cfg = cfg;
	tw_w = watch ? watch : &unwatched;
	tw_cap = cap;
	tw_pk = calloc(cap, sizeof(*tw_pk));
	tw_q = calloc(cap, sizeof(*tw_q));
	if (!tw_pk || !tw_q) {
		free(tw_pk);
		free(tw_q);
		return -1;
	}
	tw_una = tw_nxt = 0;
	tw_qhead = tw_qtail = 0;
	tw_nlate = tw_spurious_next = 0;
	tw_app_bits = tw_app_frac = 0;
	tw_marked = tw_spurious = 0;
	tw_rng = cfg->seed;
	tw_setup();
	tw_now = tw_next_send = tw_rto_from = tw_link_free = tw_first_tx = tw_tokens_at = TW_START_US;
	tw_tokens = cfg->policer_burst_bytes * USEC_PER_SEC; /* a full bucket */
	tw_rto_at = 0;
	tw_rate = tw_rate_bps();
	tw_cwnd_usage_seq = tw_max_packets_out = 0;
	end = TW_START_US + cfg->duration_us;
	while (tw_now < end) {
		if (tw_rate_bps() != tw_rate)
			tw_set_rate(tw_rate_bps());
		tw_try_send();
		if (tw_next_arrival(&next)) {
			tw_ack(next.pkt, next.tx_us);
			continue;
		}
		if (tw_una < tw_nxt && tw_now >= tw_rto_from + TW_RTO_MIN_US + (tw_tp.srtt_us >> 3)) {
			tw_rto();
			continue;
		}
		tw_now += TW_STEP_US;
		tw_tp.tcp_mstamp = host_clock_us = tw_now;
		tw_app_tick();
	}
	free(tw_pk);
	free(tw_q);
	return 0;
}

#endif /* TWIN_PATH_H */
