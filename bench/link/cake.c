// SPDX-License-Identifier: GPL-2.0
/* The CAKE subset (cake.h), after Linux's sch_cake: COBALT per queue, DRR++ over the flow queues. */
#include "cake.h"
#include "codel.h"
#include "packet.h"
#include "stages.h"

static uint32_t cobalt_inv_sqrt_cache[LQ_COBALT_INVSQRT_CACHE];

/* sch_cake's cake_set_rate and cake_reconfigure for one best-effort tin: at low rates target rises to
 * 1.5 MTU times and interval with it (at least twice target); the buffer holds 4 intervals at the rate,
 * at least 4 MiB, and at most the packet limit in MTU frames. The invsqrt table is sch_cake's
 * cobalt_cache_init: four Newton steps per count from the previous count's value. */
void lq_cake_init(struct lq *q)
{
	struct lq_params *p = &q->prm;
	uint64_t target = p->target_ns, interval = p->interval_ns;
	/* From the configured interval (sch_cake's rtt), in its units: bytes/s x us / (1e6 / 4). */
	uint64_t buffer =
		p->rate_bps / 8 * (p->interval_ns / LQ_NSEC_PER_USEC) / (1000000 / LQ_CAKE_BUFFER_INTERVALS);

	q->cake_mtu_ns = (uint64_t)p->mtu_bytes * 8 * 1000000000ULL / p->rate_bps;
	if (q->cake_mtu_ns * 3 / 2 > target)
		target = q->cake_mtu_ns * 3 / 2;
	interval += target - p->target_ns;
	if (interval < 2 * target)
		interval = 2 * target;
	p->target_ns = target;
	p->interval_ns = interval;
	q->cake_buffer_bytes = buffer > LQ_CAKE_MIN_BUFFER_BYTES ? buffer : LQ_CAKE_MIN_BUFFER_BYTES;
	if (p->limit_pkts && (uint64_t)p->limit_pkts * p->mtu_bytes < q->cake_buffer_bytes)
		q->cake_buffer_bytes = (uint64_t)p->limit_pkts * p->mtu_bytes;
	cobalt_inv_sqrt_cache[0] = UINT32_MAX;
	for (uint32_t c = 1, v = UINT32_MAX; c < LQ_COBALT_INVSQRT_CACHE; c++) {
		for (int k = 0; k < 4; k++)
			v = lq_newton_step(v, c);
		cobalt_inv_sqrt_cache[c] = v;
	}
}

/* CAKE's set-associative lookup (cake_hash), searching from the flow's own slot: the queue of its set
 * that holds its tag, else a free one (on no list: decaying queues are taken), else (a collision,
 * counted) its own slot. */
uint32_t lq_cake_queue_for(struct lq *q, uint32_t hash)
{
	uint32_t slot = hash % q->prm.flows, set = slot - slot % LQ_CAKE_WAYS;

	for (uint32_t k = 0; k < LQ_CAKE_WAYS; k++) {
		uint32_t i = set + (slot + k) % LQ_CAKE_WAYS;

		if (q->flow[i].tag == hash)
			return i;
	}
	for (uint32_t k = 0; k < LQ_CAKE_WAYS; k++) {
		uint32_t i = set + (slot + k) % LQ_CAKE_WAYS;

		if (q->flow[i].list == LQ_LIST_NONE) {
			q->flow[i].tag = hash;
			return i;
		}
	}
	q->st.way_collisions++;
	q->flow[slot].tag = hash;
	return slot;
}

static void cobalt_invsqrt(struct lq_cobalt *cb)
{
	cb->rec_inv_sqrt = cb->count < LQ_COBALT_INVSQRT_CACHE ? cobalt_inv_sqrt_cache[cb->count]
							       : lq_newton_step(cb->rec_inv_sqrt, cb->count);
}

/* t + interval x rec_inv_sqrt (sch_cake's cobalt_control). */
static uint64_t cobalt_control(const struct lq *q, uint64_t t, uint32_t rec_inv_sqrt)
{
	return t + (uint64_t)(((unsigned __int128)q->prm.interval_ns * rec_inv_sqrt) >> 32);
}

/* BLUE on overflow: the probability steps up at most once per target, and CoDel's side starts
 * dropping at once. */
static void cobalt_queue_full(struct lq *q, struct lq_cobalt *cb, uint64_t now)
{
	if (now - cb->blue_stamp_ns > q->prm.target_ns) {
		cb->p_drop = cb->p_drop + LQ_CAKE_BLUE_INC > 1 ? 1 : cb->p_drop + LQ_CAKE_BLUE_INC;
		cb->blue_stamp_ns = now;
	}
	cb->dropping = true;
	cb->drop_next_ns = now;
	if (!cb->count)
		cb->count = 1;
}

/* An emptied queue: BLUE steps down, CoDel's side stops and its count decays on schedule. */
static void cobalt_queue_empty(struct lq *q, struct lq_cobalt *cb, uint64_t now)
{
	if (cb->p_drop > 0 && now - cb->blue_stamp_ns > q->prm.target_ns) {
		cb->p_drop = cb->p_drop > LQ_CAKE_BLUE_DEC ? cb->p_drop - LQ_CAKE_BLUE_DEC : 0;
		cb->blue_stamp_ns = now;
	}
	cb->dropping = false;
	if (cb->count && now >= cb->drop_next_ns) {
		cb->count--;
		cobalt_invsqrt(cb);
		cb->drop_next_ns = cobalt_control(q, cb->drop_next_ns, cb->rec_inv_sqrt);
	}
}

/* sch_cake's cobalt_should_drop for a queue in egress mode, where the bulk queues do not raise the target
 * test. CoDel's square-root schedule is entered as soon as the sojourn passes target and 4 MTU times;
 * the count decays on schedule instead of resetting; BLUE drops on top, even a packet CoDel marked.
 * Returns true to drop @p; *marked says CoDel marked it (BLUE may still drop it), *blue that BLUE drops it. */
static bool cobalt_should_drop(
	struct lq *q, struct lq_cobalt *cb, struct lq_pkt *p, uint64_t now, bool *marked, bool *blue)
{
	uint64_t sojourn = now > p->enq_ns ? now - p->enq_ns : 0;
	bool over = sojourn > q->prm.target_ns && sojourn > q->cake_mtu_ns * 4;
	/* In its sign, whether now is past drop_next: kept from before drop_next moves below. */
	int64_t schedule = (int64_t)(now - cb->drop_next_ns);
	bool next_due = cb->count && schedule >= 0, drop = false;

	*marked = *blue = false;
	if (over) {
		if (!cb->dropping) {
			cb->dropping = true;
			cb->drop_next_ns = cobalt_control(q, now, cb->rec_inv_sqrt);
		}
		if (!cb->count)
			cb->count = 1;
	} else {
		cb->dropping = false;
	}
	if (next_due && cb->dropping) {
		*marked = q->prm.ecn && lq_set_ce(p);
		drop = !*marked;
		if (cb->count < UINT32_MAX)
			cb->count++;
		cobalt_invsqrt(cb);
		cb->drop_next_ns = cobalt_control(q, cb->drop_next_ns, cb->rec_inv_sqrt);
		schedule = (int64_t)(now - cb->drop_next_ns);
	} else {
		while (next_due) {
			cb->count--;
			cobalt_invsqrt(cb);
			cb->drop_next_ns = cobalt_control(q, cb->drop_next_ns, cb->rec_inv_sqrt);
			schedule = (int64_t)(now - cb->drop_next_ns);
			next_due = cb->count && schedule >= 0;
		}
	}
	*blue = cb->p_drop > 0 && ls_unit(&q->rng) < cb->p_drop && !drop;
	drop |= *blue;
	/* drop_next doubles as an activity timeout once the count is spent; a late packet that is not
	 * dropped pulls the schedule up to now. */
	if (!cb->count)
		cb->drop_next_ns = now + q->prm.interval_ns;
	else if (schedule > 0 && !drop)
		cb->drop_next_ns = now;
	return drop;
}

/* CAKE's overflow (cake_drop): one packet from the head of the queue holding the most bytes, and BLUE
 * told. */
void lq_cake_drop_fattest(struct lq *q, uint64_t now)
{
	uint32_t fat = 0;
	struct lq_pkt *p;

	for (uint32_t i = 1; i < q->prm.flows; i++)
		if (q->flow[i].q.bytes > q->flow[fat].q.bytes)
			fat = i;
	p = lq_sub_pop(q, &q->flow[fat].q);
	cobalt_queue_full(q, &q->flow[fat].cb, now);
	q->st.drop_overlimit++;
	q->drop(q->drop_ctx, p);
}

/* sch_cake's lq_cake_dequeue for one tin: each call first gives one decaying queue a turn (so their COBALT
 * state comes to rest), then new queues, then old ones. A queue out of deficit gets a quantum and goes to
 * the old list's end. COBALT judges the head; a dropped packet is followed by the next of the same queue,
 * and a queue's last packet is delivered whatever COBALT says. A queue found empty goes to the decaying
 * list while its COBALT state is active (BLUE's probability, a count, or drop_next still ahead), else
 * leaves the lists. */
struct lq_pkt *lq_cake_dequeue(struct lq *q, uint64_t now)
{
	bool first = true;

	while (q->backlog_pkts) {
		struct lq_flow_list *l = &q->decaying_list;
		uint32_t idx;
		struct lq_flow *f;
		struct lq_pkt *p;
		bool marked, blue;

		if (!first || l->head == LQ_NO_FLOW)
			l = q->new_list.head != LQ_NO_FLOW	 ? &q->new_list
				: q->old_list.head != LQ_NO_FLOW ? &q->old_list
								 : &q->decaying_list;
		first = false;
		idx = l->head;
		f = &q->flow[idx];
		if (f->deficit <= 0) {
			f->deficit += q->prm.quantum;
			lq_list_unlink(q, l, idx);
			lq_list_append(q, &q->old_list, idx, LQ_LIST_OLD);
			continue;
		}
		while ((p = lq_sub_pop(q, &f->q))) {
			if (!cobalt_should_drop(q, &f->cb, p, now, &marked, &blue) || !f->q.head) {
				q->st.mark_aqm += marked;
				f->deficit -= p->len;
				return p;
			}
			q->st.drop_blue += blue;
			q->st.drop_aqm += !blue;
			q->drop(q->drop_ctx, p);
		}
		cobalt_queue_empty(q, &f->cb, now);
		lq_list_unlink(q, l, idx);
		if (f->cb.p_drop > 0 || f->cb.count || now < f->cb.drop_next_ns)
			lq_list_append(q, &q->decaying_list, idx, LQ_LIST_DECAYING);
	}
	return NULL;
}
