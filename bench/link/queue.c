// SPDX-License-Identifier: GPL-2.0
/*
 * The bottleneck queue of bbrkit-link (see queue.h): the kinds' names and defaults, the checks of their
 * parameters, and enqueue and dequeue, which run the AQM of the configured kind (codel.c, fq_codel.c,
 * pie.c, cake.c), the step marker and the statistics; and Gilbert-Elliott loss.
 */
#include "queue.h"
#include "cake.h"
#include "codel.h"
#include "fq_codel.h"
#include "pie.h"
#include "stages.h"

#include <stdlib.h>
#include <string.h>

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
		lq_cake_init(q);
	return 0;
}

void lq_free(struct lq *q)
{
	free(q->flow);
	q->flow = NULL;
}

uint64_t lq_capacity_pkts(const struct lq *q)
{
	if (q->prm.kind == LQ_CAKE)
		return q->cake_buffer_bytes / lq_truesize(LQ_MIN_FRAME_BYTES) + 1;
	return q->prm.limit_pkts ? q->prm.limit_pkts : q->prm.limit_bytes / LQ_MIN_FRAME_BYTES + 1;
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

static uint32_t queue_for(struct lq *q, const struct lq_pkt *p)
{
	return q->prm.kind == LQ_CAKE ? lq_cake_queue_for(q, p->hash) : p->hash % q->prm.flows;
}

bool lq_enqueue(struct lq *q, struct lq_pkt *p, uint64_t now_ns)
{
	struct lq_flow *own = NULL;

	p->enq_ns = now_ns;
	if (q->prm.kind == LQ_PIE) {
		lq_pie_catch_up(q, now_ns);
		if (over_limit(q, 1, p->len)) {
			q->pie.accu_prob = 0; /* Linux: any drop restarts the derandomisation */
		} else if (lq_pie_drop_early(q)) {
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
		lq_fifo_push(&q->fifo, p);
	} else {
		uint32_t idx = queue_for(q, p);
		struct lq_flow *f = &q->flow[idx];

		lq_fifo_push(&f->q, p);
		/* sch_cake: a decaying queue that gets a packet is new again, with a fresh deficit. */
		if (f->list == LQ_LIST_DECAYING)
			lq_list_unlink(q, &q->decaying_list, idx);
		if (f->list == LQ_LIST_NONE) {
			lq_list_append(q, &q->new_list, idx, LQ_LIST_NEW);
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
		lq_fq_drop_fattest(q);
		return !(self_dropped && q->flow[p->hash % q->prm.flows].q.pkts == 0);
	}
	if (q->prm.kind == LQ_CAKE) {
		/* Drops come from queue heads: the arrival, last in its queue, went only if that emptied. */
		while (q->backlog_bytes + lq_truesize(0) * q->backlog_pkts > q->cake_buffer_bytes)
			lq_cake_drop_fattest(q, now_ns);
		return own->q.pkts > 0;
	}
	return true;
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

struct lq_pkt *lq_dequeue(struct lq *q, uint64_t now_ns)
{
	struct lq_pkt *p;
	uint64_t sojourn;

	switch (q->prm.kind) {
	case LQ_CODEL:
		p = lq_codel_dequeue(q, &q->cv, &q->fifo, now_ns);
		break;
	case LQ_FQ_CODEL:
		p = lq_fq_codel_dequeue(q, now_ns);
		break;
	case LQ_CAKE:
		p = lq_cake_dequeue(q, now_ns);
		break;
	case LQ_PIE:
		lq_pie_catch_up(q, now_ns);
		p = lq_sub_pop(q, &q->fifo);
		if (p)
			lq_pie_dequeued(q, p, now_ns);
		break;
	default:
		p = lq_sub_pop(q, &q->fifo);
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
