// SPDX-License-Identifier: GPL-2.0
/* PIE (pie.h): the drop probability's controller and the early drop decision, as Linux's sch_pie. */
#include "pie.h"
#include "stages.h"

/* The drop probability update every tupdate, as Linux's pie_calculate_probability (without its rate
 * estimator) has it: RFC 8033 section 4.2's alpha/beta controller with section 5.2's scaling of small
 * steps, Linux's 2% cap from 10% on and 2% extra above 250 ms of delay, and a decay of 1/64 (RFC: 2%)
 * after two updates without delay, skipped while a backlog shows no delay yet. */
static void pie_update(struct lq *q)
{
	struct lq_pie *v = &q->pie;
	double qd = (double)v->qdelay_ns / 1e9, old = (double)v->qdelay_old_ns / 1e9;
	double ref = (double)q->prm.target_ns / 1e9;
	double p = LQ_PIE_ALPHA * (qd - ref) + LQ_PIE_BETA * (qd - old);
	bool decay = !(v->qdelay_ns == 0 && q->backlog_bytes != 0);

	if (v->drop_prob < 0.000001)
		p /= 2048;
	else if (v->drop_prob < 0.00001)
		p /= 512;
	else if (v->drop_prob < 0.0001)
		p /= 128;
	else if (v->drop_prob < 0.001)
		p /= 32;
	else if (v->drop_prob < 0.01)
		p /= 8;
	else if (v->drop_prob < 0.1)
		p /= 2;
	else if (p > LQ_PIE_MAX_STEP)
		p = LQ_PIE_MAX_STEP;
	if (v->qdelay_ns > LQ_PIE_HIGH_DELAY_NS)
		p += LQ_PIE_MAX_STEP;
	v->drop_prob += p;
	if (v->drop_prob < 0)
		v->drop_prob = 0;
	if (v->drop_prob > 1) {
		v->drop_prob = 1;
		decay = false;
	}
	if (v->qdelay_ns == 0 && v->qdelay_old_ns == 0 && decay)
		v->drop_prob -= v->drop_prob / LQ_PIE_DECAY_DIV;
	/* Section 4.4: the burst allowance comes back once the queue has been calm. */
	if (v->drop_prob == 0 && v->qdelay_ns < q->prm.target_ns / 2 &&
		v->qdelay_old_ns < q->prm.target_ns / 2) {
		v->burst_allowance_ns = LQ_PIE_MAX_BURST_NS;
		v->dq_stamp_ns = 0;
		v->accu_prob = 0;
	}
	v->qdelay_old_ns = v->qdelay_ns;
}

/* The updates that fell due by @now (Linux runs them on a timer; nothing they read changes between
 * enqueues and dequeues, so running them late gives the same values). */
void lq_pie_catch_up(struct lq *q, uint64_t now)
{
	struct lq_pie *v = &q->pie;

	if (!v->next_update_ns)
		v->next_update_ns = now + q->prm.tupdate_ns;
	for (int n = 0; now >= v->next_update_ns && n < 1000; n++) {
		pie_update(q);
		v->next_update_ns += q->prm.tupdate_ns;
	}
	if (now >= v->next_update_ns)
		v->next_update_ns = now + q->prm.tupdate_ns;
}

/* Linux pie_process_dequeue: the delay is the packet's sojourn, or 0 if it leaves the queue empty; the
 * burst allowance runs down by the time since the previous dequeue. */
void lq_pie_dequeued(struct lq *q, const struct lq_pkt *p, uint64_t now)
{
	struct lq_pie *v = &q->pie;
	uint64_t dtime = v->dq_stamp_ns ? now - v->dq_stamp_ns : 0;

	v->qdelay_ns = q->backlog_pkts ? now - p->enq_ns : 0;
	v->dq_stamp_ns = now;
	v->burst_allowance_ns -= dtime < v->burst_allowance_ns ? dtime : v->burst_allowance_ns;
}

/* Linux lq_pie_drop_early (RFC 8033 section 4.1, with 5.1's derandomisation): no early drop during the burst
 * allowance, while the delay is low and the probability moderate, or with under two MTUs queued. */
bool lq_pie_drop_early(struct lq *q)
{
	struct lq_pie *v = &q->pie;

	if (v->burst_allowance_ns > 0)
		return false;
	if (v->qdelay_ns < q->prm.target_ns / 2 && v->drop_prob < 0.2)
		return false;
	if (q->backlog_bytes < 2ULL * q->prm.mtu_bytes)
		return false;
	v->accu_prob = v->drop_prob == 0 ? 0 : v->accu_prob + v->drop_prob;
	if (v->accu_prob < LQ_PIE_ACCU_MIN)
		return false;
	if (v->accu_prob >= LQ_PIE_ACCU_MAX)
		return true;
	if (ls_unit(&v->rng) < v->drop_prob) {
		v->accu_prob = 0;
		return true;
	}
	return false;
}
