// SPDX-License-Identifier: GPL-2.0
/* FQ-CoDel (fq_codel.h): RFC 8290's scheduler over CoDel queues (codel.c), Linux's overflow drop. */
#include "codel.h"
#include "fq_codel.h"

/* Linux fq_codel_drop: the queue holding the most bytes loses packets from its head, up to half of
 * its bytes or LQ_FQ_DROP_BATCH packets, so one overflow does not cost a drop per arrival. */
void lq_fq_drop_fattest(struct lq *q)
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
		struct lq_pkt *p = lq_fifo_pop(&f->q);

		dropped += p->len;
		q->backlog_pkts--;
		q->backlog_bytes -= p->len;
		q->st.drop_overlimit++;
		q->drop(q->drop_ctx, p);
	}
	/* Linux: the drops count towards the queue's CoDel signal, so its next drops come faster. */
	f->cv.count += n;
}

/* DRR's step shared by FQ-CoDel and CAKE: the list's head in *idx (LQ_NO_FLOW when the list is empty),
 * or false after moving a head out of deficit to the old list's end with a fresh quantum. */
static bool drr_head(struct lq *q, struct lq_flow_list *l, uint32_t *idx)
{
	*idx = l->head;
	if (*idx == LQ_NO_FLOW || q->flow[*idx].deficit > 0)
		return true;
	q->flow[*idx].deficit += q->prm.quantum;
	lq_list_pop(q, l);
	lq_list_append(q, &q->old_list, *idx, LQ_LIST_OLD);
	return false;
}

/* RFC 8290 section 4.2: new queues first; a queue out of deficit gets a quantum and goes to the end
 * of the old list; an emptied new queue goes to the old list (so it cannot re-enter as new at once)
 * unless the old list is empty. */
struct lq_pkt *lq_fq_codel_dequeue(struct lq *q, uint64_t now)
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
		p = lq_codel_dequeue(q, &f->cv, &f->q, now);
		if (!p) {
			lq_list_pop(q, l);
			if (l == &q->new_list && q->old_list.head != LQ_NO_FLOW)
				lq_list_append(q, &q->old_list, idx, LQ_LIST_OLD);
			continue;
		}
		f->deficit -= p->len;
		return p;
	}
}
