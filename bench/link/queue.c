// SPDX-License-Identifier: GPL-2.0
/*
 * The bottleneck queue of bbrkit-link (see queue.h). CoDel follows RFC 8289's pseudocode with the
 * Linux codel_impl.h choices where the RFC leaves room: an ECT packet is marked instead of dropped
 * and then leaves (the drop schedule advances as for a drop), MAXPACKET is the interface MTU, and in
 * FQ-CoDel the "bytes in queue" test uses the whole backlog, not the flow's. The control law is
 * Linux's: 1/sqrt(count) kept in Q0.16 and moved by one Newton step per count change, which is far
 * from exact at low counts (count 2 gives interval/2, not interval/1.41) and is what the drop gaps of a
 * Linux codel or fq_codel follow.
 */
#include "queue.h"
#include "stages.h"

#include <stdlib.h>
#include <string.h>

#define ETH_HLEN_BYTES 14
#define VLAN_HLEN_BYTES 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define IPPROTO_TCP_NUM 6
#define IPPROTO_UDP_NUM 17

static void fifo_push(struct lq_fifo *f, struct lq_pkt *p)
{
	p->next = NULL;
	if (f->tail)
		f->tail->next = p;
	else
		f->head = p;
	f->tail = p;
	f->pkts++;
	f->bytes += p->len;
}

static struct lq_pkt *fifo_pop(struct lq_fifo *f)
{
	struct lq_pkt *p = f->head;

	if (!p)
		return NULL;
	f->head = p->next;
	if (!f->head)
		f->tail = NULL;
	f->pkts--;
	f->bytes -= p->len;
	p->next = NULL;
	return p;
}

#define LQ_KIND_NAME(id, name) [id] = name,
const char *const lq_kind_names[LQ_KIND_COUNT] = { LQ_KINDS(LQ_KIND_NAME) };
#undef LQ_KIND_NAME

bool lq_kind_parse(const char *name, enum lq_kind *kind)
{
	for (int k = 0; k < LQ_KIND_COUNT; k++) {
		if (!strcmp(name, lq_kind_names[k])) {
			*kind = (enum lq_kind)k;
			return true;
		}
	}
	return false;
}

void lq_defaults(struct lq_params *p, enum lq_kind kind, uint32_t mtu_bytes)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->mtu_bytes = mtu_bytes;
	p->target_ns = LQ_CODEL_TARGET_NS;
	p->interval_ns = LQ_CODEL_INTERVAL_NS;
	p->quantum = mtu_bytes;
	p->tupdate_ns = LQ_PIE_TUPDATE_NS;
	if (kind == LQ_PIE)
		p->target_ns = LQ_PIE_TARGET_NS;
	p->flows = LQ_FQ_FLOWS;
	/* Linux: fq_codel and cake mark by default, plain codel and pie do not. */
	p->ecn = kind == LQ_FQ_CODEL || kind == LQ_CAKE;
	p->limit_pkts = kind == LQ_FQ_CODEL || kind == LQ_CAKE ? LQ_FQ_LIMIT_PKTS : 1000;
}

static uint32_t cobalt_inv_sqrt_cache[LQ_COBALT_INVSQRT_CACHE];

/* One Newton step towards 1/sqrt(count) in Q0.32, as sch_cake's cobalt_newton_step and (on the Q0.16 value
 * shifted up) codel_impl.h's codel_Newton_step: invsqrt / 2 x (3 - count x invsqrt^2). */
static uint32_t newton_step(uint32_t invsqrt, uint32_t count)
{
	uint32_t invsqrt2 = (uint32_t)(((uint64_t)invsqrt * invsqrt) >> 32);
	uint64_t val = (3ULL << 32) - (uint64_t)count * invsqrt2;

	val >>= 2; /* keeps the product below in 64 bits */
	return (uint32_t)((val * invsqrt) >> (32 - 2 + 1));
}

/* sch_cake's cake_set_rate and cake_reconfigure for one best-effort tin: at low rates target rises to
 * 1.5 MTU times and interval with it (at least twice target); the buffer holds 4 intervals at the rate,
 * at least 4 MiB, and at most the packet limit in MTU frames. The invsqrt table is sch_cake's
 * cobalt_cache_init: four Newton steps per count from the previous count's value. */
static void cake_init(struct lq *q)
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
			v = newton_step(v, c);
		cobalt_inv_sqrt_cache[c] = v;
	}
}

int lq_init(struct lq *q, const struct lq_params *p, lq_drop_fn drop, void *ctx, const char **err)
{
	memset(q, 0, sizeof(*q));
	q->prm = *p;
	q->drop = drop;
	q->drop_ctx = ctx;
	q->new_list.head = q->new_list.tail = LQ_NO_FLOW;
	q->old_list.head = q->old_list.tail = LQ_NO_FLOW;
	q->decaying_list.head = q->decaying_list.tail = LQ_NO_FLOW;
	if (!p->limit_pkts && !p->limit_bytes) {
		*err = "limit: a packet or byte limit is required";
		return -1;
	}
	if (p->kind == LQ_PIE && (!p->target_ns || !p->tupdate_ns)) {
		*err = "target and tupdate must be positive";
		return -1;
	}
	q->pie.burst_allowance_ns = LQ_PIE_MAX_BURST_NS;
	q->pie.rng = 0x9e3779b97f4a7c15ULL;
	q->rng = 0x2545f4914f6cdd1dULL;
	if (p->kind == LQ_CAKE && !p->rate_bps) {
		*err = "cake needs the link rate";
		return -1;
	}
	if ((p->kind == LQ_CODEL || p->kind == LQ_FQ_CODEL || p->kind == LQ_CAKE) &&
		(!p->target_ns || !p->interval_ns)) {
		*err = "target and interval must be positive";
		return -1;
	}
	if ((p->kind == LQ_CODEL || p->kind == LQ_FQ_CODEL || p->kind == LQ_CAKE) &&
		p->target_ns > p->interval_ns) {
		*err = "target must not exceed interval";
		return -1;
	}
	if (p->kind == LQ_STEP && !p->step_ns) {
		*err = "step threshold must be positive";
		return -1;
	}
	if (p->kind == LQ_FQ_CODEL || p->kind == LQ_CAKE) {
		if (p->kind == LQ_CAKE && (p->flows % LQ_CAKE_WAYS)) {
			*err = "cake flows must be a multiple of 8";
			return -1;
		}
		if (!p->quantum) {
			*err = "quantum must be positive";
			return -1;
		}
		if (!p->flows || p->flows > LQ_MAX_FLOWS) {
			*err = "flows must be 1..65536";
			return -1;
		}
		q->flow = calloc(p->flows, sizeof(*q->flow));
		if (!q->flow) {
			*err = "out of memory for the flow table";
			return -1;
		}
		for (uint32_t i = 0; i < p->flows; i++)
			q->flow[i].next_flow = q->flow[i].prev_flow = LQ_NO_FLOW;
	}
	if (p->kind == LQ_CAKE)
		cake_init(q);
	return 0;
}

void lq_free(struct lq *q)
{
	free(q->flow);
	q->flow = NULL;
}

/* What the kernel charges CAKE's buffer for a packet of @len bytes. */
static uint64_t lq_truesize(uint64_t len)
{
	return len + LQ_SKB_OVERHEAD_BYTES;
}

uint64_t lq_capacity_pkts(const struct lq *q)
{
	if (q->prm.kind == LQ_CAKE)
		return q->cake_buffer_bytes / lq_truesize(LQ_MIN_FRAME_BYTES) + 1;
	return q->prm.limit_pkts ? q->prm.limit_pkts : q->prm.limit_bytes / LQ_MIN_FRAME_BYTES + 1;
}

static struct lq_pkt *sub_pop(struct lq *q, struct lq_fifo *f)
{
	struct lq_pkt *p = fifo_pop(f);

	if (p) {
		q->backlog_pkts--;
		q->backlog_bytes -= p->len;
	}
	return p;
}

static void note_backlog(struct lq *q)
{
	if (q->backlog_bytes > q->st.max_backlog_bytes)
		q->st.max_backlog_bytes = q->backlog_bytes;
}

/* Would the backlog exceed a limit with @extra_pkts more packets of @extra_bytes? */
static bool over_limit(const struct lq *q, uint32_t extra_pkts, uint32_t extra_bytes)
{
	return (q->prm.limit_pkts && q->backlog_pkts + extra_pkts > q->prm.limit_pkts) ||
		(q->prm.limit_bytes && q->backlog_bytes + extra_bytes > q->prm.limit_bytes);
}

static void list_append(struct lq *q, struct lq_flow_list *l, uint32_t idx, uint8_t which)
{
	q->flow[idx].next_flow = LQ_NO_FLOW;
	q->flow[idx].prev_flow = l->tail;
	q->flow[idx].list = which;
	if (l->tail == LQ_NO_FLOW)
		l->head = idx;
	else
		q->flow[l->tail].next_flow = idx;
	l->tail = idx;
}

/* Takes queue @idx off list @l, wherever it is on it. */
static void list_unlink(struct lq *q, struct lq_flow_list *l, uint32_t idx)
{
	struct lq_flow *f = &q->flow[idx];

	if (f->prev_flow == LQ_NO_FLOW)
		l->head = f->next_flow;
	else
		q->flow[f->prev_flow].next_flow = f->next_flow;
	if (f->next_flow == LQ_NO_FLOW)
		l->tail = f->prev_flow;
	else
		q->flow[f->next_flow].prev_flow = f->prev_flow;
	f->next_flow = f->prev_flow = LQ_NO_FLOW;
	f->list = LQ_LIST_NONE;
}

static uint32_t list_pop(struct lq *q, struct lq_flow_list *l)
{
	uint32_t idx = l->head;

	list_unlink(q, l, idx);
	return idx;
}

/* Linux fq_codel_drop: the queue holding the most bytes loses packets from its head, up to half of
 * its bytes or LQ_FQ_DROP_BATCH packets, so one overflow does not cost a drop per arrival. */
static void fq_drop_fattest(struct lq *q)
{
	uint32_t fat = 0, n;
	uint64_t dropped = 0, threshold;
	struct lq_flow *f;

	for (uint32_t i = 1; i < q->prm.flows; i++)
		if (q->flow[i].q.bytes > q->flow[fat].q.bytes)
			fat = i;
	f = &q->flow[fat];
	threshold = f->q.bytes / 2;
	for (n = 0; n < LQ_FQ_DROP_BATCH && f->q.head && (n == 0 || dropped < threshold); n++) {
		struct lq_pkt *p = fifo_pop(&f->q);

		dropped += p->len;
		q->backlog_pkts--;
		q->backlog_bytes -= p->len;
		q->st.drop_overlimit++;
		q->drop(q->drop_ctx, p);
	}
	/* Linux: the drops count towards the queue's CoDel signal, so its next drops come faster. */
	f->cv.count += n;
}

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
static void pie_catch_up(struct lq *q, uint64_t now)
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
static void pie_dequeued(struct lq *q, const struct lq_pkt *p, uint64_t now)
{
	struct lq_pie *v = &q->pie;
	uint64_t dtime = v->dq_stamp_ns ? now - v->dq_stamp_ns : 0;

	v->qdelay_ns = q->backlog_pkts ? now - p->enq_ns : 0;
	v->dq_stamp_ns = now;
	v->burst_allowance_ns -= dtime < v->burst_allowance_ns ? dtime : v->burst_allowance_ns;
}

/* Linux pie_drop_early (RFC 8033 section 4.1, with 5.1's derandomisation): no early drop during the burst
 * allowance, while the delay is low and the probability moderate, or with under two MTUs queued. */
static bool pie_drop_early(struct lq *q)
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

/* CAKE's set-associative lookup (cake_hash), searching from the flow's own slot: the queue of its set
 * that holds its tag, else a free one (on no list: decaying queues are taken), else (a collision,
 * counted) its own slot. */
static uint32_t cake_queue_for(struct lq *q, uint32_t hash)
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

static uint32_t queue_for(struct lq *q, const struct lq_pkt *p)
{
	return q->prm.kind == LQ_CAKE ? cake_queue_for(q, p->hash) : p->hash % q->prm.flows;
}

static void cobalt_invsqrt(struct lq_cobalt *cb)
{
	cb->rec_inv_sqrt = cb->count < LQ_COBALT_INVSQRT_CACHE ? cobalt_inv_sqrt_cache[cb->count]
							       : newton_step(cb->rec_inv_sqrt, cb->count);
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
static void cake_drop_fattest(struct lq *q, uint64_t now)
{
	uint32_t fat = 0;
	struct lq_pkt *p;

	for (uint32_t i = 1; i < q->prm.flows; i++)
		if (q->flow[i].q.bytes > q->flow[fat].q.bytes)
			fat = i;
	p = sub_pop(q, &q->flow[fat].q);
	cobalt_queue_full(q, &q->flow[fat].cb, now);
	q->st.drop_overlimit++;
	q->drop(q->drop_ctx, p);
}

bool lq_enqueue(struct lq *q, struct lq_pkt *p, uint64_t now_ns)
{
	struct lq_flow *own = NULL;

	p->enq_ns = now_ns;
	if (q->prm.kind == LQ_PIE) {
		pie_catch_up(q, now_ns);
		if (over_limit(q, 1, p->len)) {
			q->pie.accu_prob = 0; /* Linux: any drop restarts the derandomisation */
		} else if (pie_drop_early(q)) {
			if (q->prm.ecn && q->pie.drop_prob <= LQ_PIE_MARK_MAX_PROB && lq_set_ce(p)) {
				q->st.mark_aqm++;
			} else {
				q->pie.accu_prob = 0;
				q->st.drop_aqm++;
				q->drop(q->drop_ctx, p);
				return false;
			}
		}
	}
	if (q->prm.kind != LQ_FQ_CODEL && q->prm.kind != LQ_CAKE) {
		if (over_limit(q, 1, p->len)) {
			q->st.drop_overlimit++;
			q->drop(q->drop_ctx, p);
			return false;
		}
		fifo_push(&q->fifo, p);
	} else {
		uint32_t idx = queue_for(q, p);
		struct lq_flow *f = &q->flow[idx];

		fifo_push(&f->q, p);
		/* sch_cake: a decaying queue that gets a packet is new again, with a fresh deficit. */
		if (f->list == LQ_LIST_DECAYING)
			list_unlink(q, &q->decaying_list, idx);
		if (f->list == LQ_LIST_NONE) {
			list_append(q, &q->new_list, idx, LQ_LIST_NEW);
			f->deficit = q->prm.quantum;
			q->st.new_flows++;
		}
		own = f;
	}
	q->backlog_pkts++;
	q->backlog_bytes += p->len;
	q->st.enq_pkts++;
	note_backlog(q);
	if (q->prm.kind == LQ_FQ_CODEL) {
		bool self_dropped;

		if (!over_limit(q, 0, 0))
			return true;
		/* The arrival may be the fattest queue's head only if it was empty before. */
		self_dropped = q->flow[p->hash % q->prm.flows].q.pkts == 1;
		fq_drop_fattest(q);
		return !(self_dropped && q->flow[p->hash % q->prm.flows].q.pkts == 0);
	}
	if (q->prm.kind == LQ_CAKE) {
		/* Drops come from queue heads: the arrival, last in its queue, went only if that emptied. */
		while (q->backlog_bytes + lq_truesize(0) * q->backlog_pkts > q->cake_buffer_bytes)
			cake_drop_fattest(q, now_ns);
		return own->q.pkts > 0;
	}
	return true;
}

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
	cv->rec_inv_sqrt = (uint16_t)(newton_step((uint32_t)cv->rec_inv_sqrt << 16, cv->count) >> 16);
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
static struct lq_pkt *codel_dequeue(struct lq *q, struct lq_codel *cv, struct lq_fifo *f, uint64_t now)
{
	struct lq_pkt *p = sub_pop(q, f);
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
			p = sub_pop(q, f);
			if (!codel_ok_to_drop(q, cv, p, now))
				cv->dropping = false;
			else
				cv->drop_next_ns = codel_control_law(q, cv->drop_next_ns, cv->rec_inv_sqrt);
		}
	} else if (ok) {
		uint32_t delta;

		if (!codel_drop_or_mark(q, p)) {
			p = sub_pop(q, f);
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

static bool is_ect_for_step(const struct lq *q, const struct lq_pkt *p)
{
	uint8_t ecn = lq_ecn(p);

	return q->prm.step_ect1_only ? ecn == LQ_ECN_ECT1 : ecn != LQ_ECN_NOT_ECT;
}

/* Sojourn above the step threshold: CE on ECT packets (fq_codel's ce_threshold, DCTCP's K). */
static void step_mark(struct lq *q, struct lq_pkt *p, uint64_t now)
{
	if (p && q->prm.step_ns && now - p->enq_ns > q->prm.step_ns && is_ect_for_step(q, p) &&
		lq_ecn(p) != LQ_ECN_CE && lq_set_ce(p))
		q->st.mark_step++;
}

/* DRR's step shared by FQ-CoDel and CAKE: the list's head in *idx (LQ_NO_FLOW when the list is empty),
 * or false after moving a head out of deficit to the old list's end with a fresh quantum. */
static bool drr_head(struct lq *q, struct lq_flow_list *l, uint32_t *idx)
{
	*idx = l->head;
	if (*idx == LQ_NO_FLOW || q->flow[*idx].deficit > 0)
		return true;
	q->flow[*idx].deficit += q->prm.quantum;
	list_pop(q, l);
	list_append(q, &q->old_list, *idx, LQ_LIST_OLD);
	return false;
}

/* RFC 8290 section 4.2: new queues first; a queue out of deficit gets a quantum and goes to the end
 * of the old list; an emptied new queue goes to the old list (so it cannot re-enter as new at once)
 * unless the old list is empty. */
static struct lq_pkt *fq_codel_dequeue(struct lq *q, uint64_t now)
{
	for (;;) {
		struct lq_flow_list *l = q->new_list.head != LQ_NO_FLOW ? &q->new_list : &q->old_list;
		struct lq_flow *f;
		struct lq_pkt *p;
		uint32_t idx;

		if (!drr_head(q, l, &idx))
			continue;
		if (idx == LQ_NO_FLOW)
			return NULL;
		f = &q->flow[idx];
		p = codel_dequeue(q, &f->cv, &f->q, now);
		if (!p) {
			list_pop(q, l);
			if (l == &q->new_list && q->old_list.head != LQ_NO_FLOW)
				list_append(q, &q->old_list, idx, LQ_LIST_OLD);
			continue;
		}
		f->deficit -= p->len;
		return p;
	}
}

/* sch_cake's cake_dequeue for one tin: each call first gives one decaying queue a turn (so their COBALT
 * state comes to rest), then new queues, then old ones. A queue out of deficit gets a quantum and goes to
 * the old list's end. COBALT judges the head; a dropped packet is followed by the next of the same queue,
 * and a queue's last packet is delivered whatever COBALT says. A queue found empty goes to the decaying
 * list while its COBALT state is active (BLUE's probability, a count, or drop_next still ahead), else
 * leaves the lists. */
static struct lq_pkt *cake_dequeue(struct lq *q, uint64_t now)
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
			list_unlink(q, l, idx);
			list_append(q, &q->old_list, idx, LQ_LIST_OLD);
			continue;
		}
		while ((p = sub_pop(q, &f->q))) {
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
		list_unlink(q, l, idx);
		if (f->cb.p_drop > 0 || f->cb.count || now < f->cb.drop_next_ns)
			list_append(q, &q->decaying_list, idx, LQ_LIST_DECAYING);
	}
	return NULL;
}

struct lq_pkt *lq_dequeue(struct lq *q, uint64_t now_ns)
{
	struct lq_pkt *p;
	uint64_t sojourn;

	switch (q->prm.kind) {
	case LQ_CODEL:
		p = codel_dequeue(q, &q->cv, &q->fifo, now_ns);
		break;
	case LQ_FQ_CODEL:
		p = fq_codel_dequeue(q, now_ns);
		break;
	case LQ_CAKE:
		p = cake_dequeue(q, now_ns);
		break;
	case LQ_PIE:
		pie_catch_up(q, now_ns);
		p = sub_pop(q, &q->fifo);
		if (p)
			pie_dequeued(q, p, now_ns);
		break;
	default:
		p = sub_pop(q, &q->fifo);
		break;
	}
	if (!p)
		return NULL;
	step_mark(q, p, now_ns);
	q->st.deq_pkts++;
	q->st.deq_bytes += p->len;
	sojourn = now_ns > p->enq_ns ? now_ns - p->enq_ns : 0;
	q->st.sojourn_sum_ns += sojourn;
	if (sojourn > q->st.sojourn_max_ns)
		q->st.sojourn_max_ns = sojourn;
	return p;
}

uint8_t lq_ecn(const struct lq_pkt *p)
{
	if (!p->l3)
		return LQ_ECN_NOT_ECT;
	if (p->is_ipv6)
		return (p->l3[1] >> 4) & 3;
	return p->l3[1] & 3;
}

bool lq_set_ce(struct lq_pkt *p)
{
	uint8_t ecn = lq_ecn(p);

	if (ecn == LQ_ECN_NOT_ECT)
		return false;
	if (ecn == LQ_ECN_CE)
		return true;
	if (p->is_ipv6) {
		p->l3[1] |= LQ_ECN_CE << 4;
	} else {
		/* RFC 1624 incremental update of the header checksum for the changed TOS byte. */
		uint16_t old_word = (uint16_t)(p->l3[0] << 8 | p->l3[1]);
		uint16_t new_word = (uint16_t)(old_word | LQ_ECN_CE);
		uint32_t sum = (uint16_t) ~(p->l3[10] << 8 | p->l3[11]);

		sum += (uint16_t)~old_word;
		sum += new_word;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		p->l3[1] |= LQ_ECN_CE;
		p->l3[10] = (uint8_t)(~sum >> 8);
		p->l3[11] = (uint8_t)~sum;
	}
	return true;
}

static uint32_t mix32(uint32_t h, uint32_t v)
{
	/* One round of a Murmur3-style mix per word: cheap and spreads 5-tuples over the buckets. */
	v *= 0xcc9e2d51u;
	v = (v << 15) | (v >> 17);
	v *= 0x1b873593u;
	h ^= v;
	h = (h << 13) | (h >> 19);
	return h * 5 + 0xe6546b64u;
}

static uint32_t load32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

void lq_frame_info(struct lq_pkt *p, uint8_t *frame, uint32_t len, uint32_t seed)
{
	uint32_t off = ETH_HLEN_BYTES, h = seed, l4 = 0;
	uint16_t type;
	uint8_t proto = 0;

	p->l3 = NULL;
	p->is_ipv6 = 0;
	p->hash = 0;
	if (len < ETH_HLEN_BYTES)
		return;
	type = (uint16_t)(frame[12] << 8 | frame[13]);
	if (type == ETHERTYPE_VLAN && len >= ETH_HLEN_BYTES + VLAN_HLEN_BYTES) {
		type = (uint16_t)(frame[16] << 8 | frame[17]);
		off += VLAN_HLEN_BYTES;
	}
	if (type == ETHERTYPE_IPV4 && len >= off + 20 && (frame[off] >> 4) == 4) {
		p->l3 = frame + off;
		proto = frame[off + 9];
		h = mix32(mix32(h, load32(frame + off + 12)), load32(frame + off + 16));
		l4 = off + (uint32_t)(frame[off] & 0xf) * 4;
	} else if (type == ETHERTYPE_IPV6 && len >= off + 40 && (frame[off] >> 4) == 6) {
		p->l3 = frame + off;
		p->is_ipv6 = 1;
		proto = frame[off + 6];
		for (uint32_t i = 8; i < 40; i += 4)
			h = mix32(h, load32(frame + off + i));
		l4 = off + 40;
	} else {
		p->hash = mix32(h, type);
		return;
	}
	h = mix32(h, proto);
	if ((proto == IPPROTO_TCP_NUM || proto == IPPROTO_UDP_NUM) && len >= l4 + 4)
		h = mix32(h, load32(frame + l4));
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	p->hash = h;
}

void lq_ge_init(struct lq_ge *g, double p, double r, double loss_good, double loss_bad, uint64_t seed)
{
	g->p = p;
	g->r = r;
	g->loss_good = loss_good;
	g->loss_bad = loss_bad;
	g->bad = false;
	g->rng = seed;
}

/* As netem's loss_gilb_ell: the packet is lost with the probability of the state it arrives in,
 * and the state moves on each packet. */
bool lq_ge_lose(struct lq_ge *g)
{
	bool lost = ls_unit(&g->rng) < (g->bad ? g->loss_bad : g->loss_good);

	if (ls_unit(&g->rng) < (g->bad ? g->r : g->p))
		g->bad = !g->bad;
	return lost;
}
