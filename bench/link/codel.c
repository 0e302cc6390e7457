// SPDX-License-Identifier: GPL-2.0
/*
 * CoDel (codel.h) follows RFC 8289's pseudocode with the Linux codel_impl.h choices where the RFC leaves
 * room: an ECT packet is marked instead of dropped and then leaves (the drop schedule advances as for a
 * drop), MAXPACKET is the interface MTU, and in FQ-CoDel the "bytes in queue" test uses the whole backlog,
 * not the flow's. The control law is Linux's: 1/sqrt(count) kept in Q0.16 and moved by one Newton step per
 * count change, which is far from exact at low counts (count 2 gives interval/2, not interval/1.41) and is
 * what the drop gaps of a Linux codel or fq_codel follow.
 */
#include "codel.h"
#include "packet.h"

/* RFC 8289 dodequeue's test: has the sojourn stayed above target for an interval? */
static bool codel_ok_to_drop(struct lq *q, struct lq_codel *cv, const struct lq_pkt *p, uint64_t now)
{
	if (!p) {
		cv->first_above_ns = 0;
		return false;
	}
	if (now - p->enq_ns < q->prm.target_ns || q->backlog_bytes <= q->prm.mtu_bytes) {
		cv->first_above_ns = 0;
		return false;
	}
	if (cv->first_above_ns == 0) {
		cv->first_above_ns = now + q->prm.interval_ns;
		return false;
	}
	return now >= cv->first_above_ns;
}

/* Linux codel_Newton_step, on the Q0.16 value widened to the Q0.32 step sch_cake uses. */
static void codel_newton_step(struct lq_codel *cv)
{
	cv->rec_inv_sqrt = (uint16_t)(lq_newton_step((uint32_t)cv->rec_inv_sqrt << 16, cv->count) >> 16);
}

/* t + interval x rec_inv_sqrt: Linux's reciprocal_scale, taken in nanoseconds where Linux counts 1024 ns
 * units (the gaps differ from its by under a microsecond). */
static uint64_t codel_control_law(const struct lq *q, uint64_t t, uint16_t rec_inv_sqrt)
{
	return t + ((q->prm.interval_ns * rec_inv_sqrt) >> 16);
}

/* Drops @p, or marks it when ECN is on and it is ECT; returns true if it was marked (and stays). */
static bool codel_drop_or_mark(struct lq *q, struct lq_pkt *p)
{
	if (q->prm.ecn && lq_set_ce(p)) {
		q->st.mark_aqm++;
		return true;
	}
	q->st.drop_aqm++;
	q->drop(q->drop_ctx, p);
	return false;
}

/* RFC 8289 section 5.5, dequeue(). */
struct lq_pkt *lq_codel_dequeue(struct lq *q, struct lq_codel *cv, struct lq_fifo *f, uint64_t now)
{
	struct lq_pkt *p = lq_sub_pop(q, f);
	bool ok = codel_ok_to_drop(q, cv, p, now);

	if (!p) {
		cv->dropping = false;
		return NULL;
	}
	if (cv->dropping) {
		if (!ok) {
			cv->dropping = false;
			return p;
		}
		while (cv->dropping && now >= cv->drop_next_ns) {
			cv->count++;
			codel_newton_step(cv);
			if (codel_drop_or_mark(q, p)) {
				cv->drop_next_ns = codel_control_law(q, cv->drop_next_ns, cv->rec_inv_sqrt);
				return p;
			}
			p = lq_sub_pop(q, f);
			if (!codel_ok_to_drop(q, cv, p, now))
				cv->dropping = false;
			else
				cv->drop_next_ns = codel_control_law(q, cv->drop_next_ns, cv->rec_inv_sqrt);
		}
	} else if (ok) {
		uint32_t delta;

		if (!codel_drop_or_mark(q, p)) {
			p = lq_sub_pop(q, f);
			codel_ok_to_drop(q, cv, p, now);
		}
		cv->dropping = true;
		delta = cv->count - cv->lastcount;
		if (delta > 1 && now - cv->drop_next_ns < LQ_CODEL_REENTRY_INTERVALS * q->prm.interval_ns) {
			cv->count = delta;
			codel_newton_step(cv); /* from the old value, as Linux: later steps converge */
		} else {
			cv->count = 1;
			cv->rec_inv_sqrt = UINT16_MAX;
		}
		cv->lastcount = cv->count;
		cv->drop_next_ns = codel_control_law(q, now, cv->rec_inv_sqrt);
	}
	return p;
}
