/* SPDX-License-Identifier: GPL-2.0 */
/* bbr2/bbr3's host build in a closed loop: the twin's path and sender (bench/twin/twin_path.h: FIFO
 * bottleneck, random and overflow drops, SACK, RACK's time rule, recovery, RTO, the kernel's callback
 * order and the per-packet hooks' places), with every mark judged by v3's per-skb rule as a reference.
 * Include after sim.h and sim_v3.h.
 *
 * The reference keeps, per packet, what v3 keeps in the skb (google/bbr v3 tcp_rate_skb_sent():
 * tx.in_flight at the first transmit, tx.lost at every transmit), from the sender's own counts and
 * independently of the ring bbr3 keeps.
 */
#ifndef SIM_LOOP_H
#define SIM_LOOP_H

#include "twin_path.h"

#define LOOP_MAX_PACKETS 400000ULL /* transmits of one run: 20 s at 5 packets/ms, with room */
#define LOOP_THRESH_UNIT 5	   /* v3's bbr_loss_thresh, 2% of BBR_UNIT */
#define LOOP_HOLE_PPM 1000000	   /* a black hole: the bottleneck drops every packet */

/* Bit/s of the twin's path for a rate in packets per millisecond. */
#define LOOP_RATE(pkts_per_ms) ((u64)(pkts_per_ms)*TWIN_MSS * 8 * 1000)

/* What the run counts: the reference's decisions against the path's under test. */
struct loop_stats {
	u32 ref_cuts;	   /* first crossings of loss_thresh while probing, by v3's rule */
	u32 agree, differ; /* the path's decisions at those marks/ACKs */
	u32 extra;	   /* the path cut where v3's rule did not */
	u32 sent, lost, delivered;
	u32 hi_after_rto; /* inflight_hi right after the first RTO of a black hole in UP */
};

static u32 loop_tx_in_flight[LOOP_MAX_PACKETS], loop_tx_lost[LOOP_MAX_PACKETS];
static struct twin_cfg loop_cfg;
static struct loop_stats loop_s;
static bool loop_ref; /* this ACK's or RTO's marks made v3 cut, at loop_ref_hi */
static u32 loop_ref_hi;
static u64 loop_hole_us; /* the black hole's length: it starts at the second ACK in UP */
static u32 loop_ups;
static bool loop_hole_rto; /* the first RTO after the black hole began has been seen */

/* A path of `pkts_per_ms`, a FIFO of `buffer` packets, base RTT `rtt_us`, `loss_ppm` random drops. */
static struct twin_cfg loop_path(u32 pkts_per_ms, u32 buffer, u32 rtt_us, u32 loss_ppm)
{
	struct twin_cfg c = { .rate = { { 0, LOOP_RATE(pkts_per_ms) } },
		.nrate = 1,
		.rtt_us = rtt_us,
		.buffer_bytes = (u64)buffer * TWIN_MSS,
		.seed = 1 };

	if (loss_ppm)
		c.loss[c.nloss++] = (struct twin_window){ 0, UINT64_MAX, loss_ppm };
	return c;
}

/* v3's rule on one lost skb, from the sender's own per-packet state: is it too high, and where did
 * the loss rate cross the threshold (bbr_inflight_hi_from_lost_skb, one packet)?
 */
static bool loop_ref_too_high(u32 i, u32 lost_now, u32 *hi)
{
	u32 in_flight = loop_tx_in_flight[i], lost = lost_now - loop_tx_lost[i], prev = in_flight - 1,
	    lost_prev = lost - 1;
	u64 budget = ((u64)prev * LOOP_THRESH_UNIT + 255) / 256;

	if (!(lost > 0 && in_flight && lost > (u32)(((u64)in_flight * LOOP_THRESH_UNIT) >> 8)))
		return false;
	*hi = prev +
		(lost_prev >= budget ? 0 : (u32)(((budget - lost_prev) << 8) / (256 - LOOP_THRESH_UNIT)));
	return true;
}

static void loop_sent(u32 i, bool rexmit)
{
	if (!rexmit)
		loop_tx_in_flight[i] = tw_in_flight() + 1;
	loop_tx_lost[i] = tw_tp.lost;
}

/* Runs after the per-packet hook, as fentry runs before the kernel's body. */
static void loop_lost(u32 i)
{
	u32 hi;

	if (!loop_ref && host_bbr3.bw_probe_samples && loop_ref_too_high(i, tw_tp.lost + 1, &hi)) {
		loop_ref = true;
		loop_ref_hi = hi;
	}
}

/* A decision of the path under test on one mark or ACK against the reference's: `got` says the path
 * cuts with inflight_hi candidate got_hi.
 */
static void loop_score(bool got, u32 got_hi)
{
	if (loop_ref) {
		loop_s.ref_cuts++;
		if (got && got_hi == loop_ref_hi)
			loop_s.agree++;
		else
			loop_s.differ++;
	} else if (got) {
		loop_s.extra++;
	}
}

/* The path's decision for this ACK's (or RTO's) marks, read before its callbacks apply it: the
 * per-packet path's pending decision, or what the ACK-time path computes (bbr3_on_losses, bbr3_on_rto).
 */
static void loop_marked(u32 losses, u32 prior_in_flight, bool rto)
{
	struct bbr3 *s = &host_bbr3;
	u32 lost = bbr3_lost_in_round(&tw_tp, s),
	    flight = rto ? tw_tp.packets_out - tw_tp.sacked_out : prior_in_flight;
	bool got;

	if (!losses || !s->bw_probe_samples)
		loop_score(false, 0);
	else if (s->pp_on)
		loop_score(host_bbr3_pp.pending, host_bbr3_pp.inflight_hi);
	else {
		got = bbr3_loss_too_high(flight, lost);
		loop_score(got, got ? bbr3_inflight_hi_from_lost(flight, lost, rto ? 1 : losses) : 0);
	}
	loop_ref = false;
}

/* The black hole: from the second ACK in UP, a window of drops ahead of any other (tw_window()
 * takes the first that holds); inflight_hi read after its first RTO.
 */
static void loop_done(bool rto)
{
	struct bbr_core *b = bbr_core_of(tw_sk);

	if (!loop_hole_us)
		return;
	if (rto && loop_ups > 1 && !loop_hole_rto) {
		loop_hole_rto = true;
		loop_s.hi_after_rto = host_bbr3.inflight_hi;
	}
	if (!rto && b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP && loop_ups < 2 &&
		++loop_ups > 1) {
		memmove(&loop_cfg.loss[1], &loop_cfg.loss[0], loop_cfg.nloss++ * sizeof(loop_cfg.loss[0]));
		loop_cfg.loss[0] =
			(struct twin_window){ tw_since(), tw_since() + loop_hole_us, LOOP_HOLE_PPM };
	}
}

/* Runs the flow for `us` over path p, on the per-packet path (pp) or the ACK-time one; hole_us: a
 * black hole of that length from the second ACK in UP (an RTO), 0 for none.
 */
static struct loop_stats loop_run(const struct twin_cfg *p, bool pp, u64 us, u64 hole_us)
{
	static struct tw_watch watch = {
		.sent = loop_sent, .lost = loop_lost, .marked = loop_marked, .done = loop_done
	};

	memset(&loop_s, 0, sizeof(loop_s));
	loop_cfg = *p;
	loop_cfg.duration_us = us;
	loop_ref = loop_hole_rto = false;
	loop_hole_us = hole_us;
	loop_ups = 0;
	watch.ack_time_loss = !pp;
	params = defaults;
	if (tw_run(&loop_cfg, LOOP_MAX_PACKETS, &watch)) {
		fprintf(stderr, "loop_run: out of memory\n");
		check_failed_now = 1;
	}
	bbr3_pp_live = 0;
	loop_s.sent = tw_nxt + tw_tp.total_retrans;
	loop_s.lost = tw_tp.lost;
	loop_s.delivered = tw_tp.delivered;
	return loop_s;
}

#endif /* SIM_LOOP_H */
