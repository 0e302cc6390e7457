/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The core of bbrkit-link's queue (queue.h): its state (packets, FIFOs and flow queues, each AQM's
 * variables, the parameters and statistics) and the steps on it that every queue kind takes, a FIFO's push
 * and pop and the flow queues' lists. Each AQM's own steps are in its file (codel.c, fq_codel.c, pie.c,
 * cake.c); queue.c runs the kind the parameters name.
 */
#ifndef BBRKIT_LINK_QUEUE_CORE_H
#define BBRKIT_LINK_QUEUE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LQ_NSEC_PER_USEC 1000ULL
#define LQ_NSEC_PER_MSEC 1000000ULL
/* RFC 8289 section 4.4 / Linux codel defaults: 5 ms target, 100 ms interval. */
#define LQ_CODEL_TARGET_NS (5 * LQ_NSEC_PER_MSEC)
#define LQ_CODEL_INTERVAL_NS (100 * LQ_NSEC_PER_MSEC)
/* RFC 8290 section 5 / Linux fq_codel defaults: 1024 queues, 10240 packets. */
#define LQ_FQ_FLOWS 1024
#define LQ_FQ_LIMIT_PKTS 10240
#define LQ_MAX_FLOWS 65536
/* Linux fq_codel drops at most this many packets from the fattest queue per overflow. */
#define LQ_FQ_DROP_BATCH 64
/* RFC 8289 section 5.6: a drop state re-entered within 16 intervals resumes its drop rate. */
#define LQ_CODEL_REENTRY_INTERVALS 16

/* ECN codepoints (RFC 3168). */
#define LQ_ECN_NOT_ECT 0
#define LQ_ECN_ECT1 1
#define LQ_ECN_ECT0 2
#define LQ_ECN_CE 3

/* Every queue kind: its constant and its --aqm name. bench/bbrbench/testbed/aqm.py's AQMS names the same
 * kinds in the same order (tests/bench/test_aqm_registry.py holds them equal). */
#define LQ_KINDS(X) \
	X(LQ_FIFO, "fifo")	   /* tail drop at limit_pkts or limit_bytes */ \
	X(LQ_CODEL, "codel")	   /* one CoDel queue */ \
	X(LQ_FQ_CODEL, "fq_codel") /* flow queues, DRR, CoDel per queue */ \
	X(LQ_PIE, "pie")	   /* RFC 8033: early drop with a controller-driven probability */ \
	X(LQ_CAKE, "cake")	   /* CAKE subset: set-associative flow queues, DRR++, COBALT per queue */ \
	X(LQ_STEP, "step")	   /* tail drop, CE on ECT packets whose sojourn exceeds step_ns */

#define LQ_KIND_ENUM(id, name) id,
enum lq_kind { LQ_KINDS(LQ_KIND_ENUM) LQ_KIND_COUNT };
#undef LQ_KIND_ENUM

/* CAKE (Hoeiland-Joergensen et al., LANMAN 2018) as the Linux sch_cake defaults have it. */
#define LQ_CAKE_WAYS 8		      /* set-associative hashing: a flow may take any queue of its set */
#define LQ_CAKE_BLUE_INC (1.0 / 256)  /* BLUE: drop probability step on overflow */
#define LQ_CAKE_BLUE_DEC (1.0 / 4096) /* ...and back down when the queue empties */
#define LQ_CAKE_MIN_QUANTUM 300	      /* bytes: DRR quantum floor at low rates */
/* sch_cake's buffer: 4 intervals at the rate, at least 4 MiB, counted in skb truesize... */
#define LQ_CAKE_BUFFER_INTERVALS 4
#define LQ_CAKE_MIN_BUFFER_BYTES (4ULL << 20)
/* ...which we take as the frame plus sk_buff and skb_shared_info (SKB_TRUESIZE on x86-64): a lower
 * bound of the kernel's, which also rounds the data area up. */
#define LQ_SKB_OVERHEAD_BYTES 576
/* COBALT's 1/sqrt(count) is exact (from a table) below this count, one Newton step per change above. */
#define LQ_COBALT_INVSQRT_CACHE 16
/* The smallest frame the link admits (Ethernet minimum without FCS): sizes the packet pool. */
#define LQ_MIN_FRAME_BYTES 60

/* RFC 8033 section 4 defaults (Linux sch_pie uses the same target, update interval and gains). */
#define LQ_PIE_TARGET_NS (15 * LQ_NSEC_PER_MSEC)
#define LQ_PIE_TUPDATE_NS (15 * LQ_NSEC_PER_MSEC)
#define LQ_PIE_MAX_BURST_NS (150 * LQ_NSEC_PER_MSEC)
#define LQ_PIE_ALPHA 0.125 /* per second of delay error */
#define LQ_PIE_BETA 1.25   /* per second of delay change */
/* RFC 8033 section 5.1: ECT packets are marked instead of dropped up to this drop probability. */
#define LQ_PIE_MARK_MAX_PROB 0.1
/* Linux pie_calculate_probability: from 10% on, one update raises the probability by at most 2%... */
#define LQ_PIE_MAX_STEP 0.02
/* ...and a delay above 250 ms adds 2% on top, to catch up with a large burst quickly. */
#define LQ_PIE_HIGH_DELAY_NS (250 * LQ_NSEC_PER_MSEC)
/* Linux: two updates in a row with no delay take 1/64 of the probability off (RFC 8033: 2%). */
#define LQ_PIE_DECAY_DIV 64
/* Linux pie_drop_early (RFC 8033 section 5.1 derandomisation): no drop until the probabilities summed
 * since the last drop reach 0.85, a drop for certain from 8.5. */
#define LQ_PIE_ACCU_MIN 0.85
#define LQ_PIE_ACCU_MAX 8.5

struct lq_pie {
	double drop_prob, accu_prob;
	uint64_t qdelay_ns, qdelay_old_ns; /* last dequeued packet's sojourn (0 if it emptied the queue) */
	uint64_t burst_allowance_ns;
	uint64_t dq_stamp_ns; /* the last dequeue, 0 after a reset: the allowance runs down by dequeue time */
	uint64_t next_update_ns; /* 0: not started */
	uint64_t rng;
};

struct lq_pkt {
	struct lq_pkt *next;
	uint64_t enq_ns;
	uint32_t len;  /* frame bytes: what the rate, limits and quantum count */
	uint32_t hash; /* flow hash, set by the owner (lq_frame_info) */
	uint8_t *l3;   /* IP header inside the frame, NULL if not IP: where CE is set */
	uint8_t is_ipv6;
};

struct lq_fifo {
	struct lq_pkt *head, *tail;
	uint32_t pkts;
	uint64_t bytes;
};

struct lq_codel {
	uint64_t first_above_ns; /* 0: sojourn below target (or too few bytes) */
	uint64_t drop_next_ns;
	uint32_t count, lastcount;
	uint16_t rec_inv_sqrt; /* ~1/sqrt(count) in Q0.16, one Newton step per change (Linux codel_vars) */
	bool dropping;
};

/* COBALT's per-queue state (sch_cake's cobalt_vars): CoDel's schedule whose count decays instead of
 * resetting, plus BLUE. */
struct lq_cobalt {
	uint64_t drop_next_ns, blue_stamp_ns;
	uint32_t count;
	uint32_t rec_inv_sqrt; /* ~1/sqrt(count) in Q0.32; 0 in a fresh queue, as sch_cake's */
	bool dropping;
	double p_drop;
};

struct lq_flow {
	struct lq_fifo q;
	struct lq_codel cv;
	struct lq_cobalt cb; /* LQ_CAKE */
	uint32_t tag;	     /* LQ_CAKE: the flow hash that holds this queue */
	int64_t deficit;
	uint32_t next_flow, prev_flow; /* neighbours on the list it is on */
	uint8_t list;		       /* LQ_LIST_* */
};

/* LQ_LIST_DECAYING: CAKE's empty queues whose COBALT state has not come to rest. */
enum { LQ_LIST_NONE, LQ_LIST_NEW, LQ_LIST_OLD, LQ_LIST_DECAYING };
#define LQ_NO_FLOW UINT32_MAX

struct lq_flow_list {
	uint32_t head, tail;
};

struct lq_params {
	enum lq_kind kind;
	uint32_t limit_pkts;  /* 0: no packet limit */
	uint64_t limit_bytes; /* 0: no byte limit */
	uint64_t target_ns, interval_ns;
	uint32_t mtu_bytes;  /* CoDel's MAXPACKET: no drop while the queue holds at most this */
	uint32_t quantum;    /* FQ-CoDel DRR quantum in bytes */
	uint32_t flows;	     /* FQ-CoDel queues */
	bool ecn;	     /* CoDel/FQ-CoDel: mark ECT packets instead of dropping them */
	uint64_t step_ns;    /* LQ_STEP threshold; also a CE threshold for the others when set */
	uint64_t tupdate_ns; /* PIE: drop probability update interval (target_ns is its reference delay) */
	/* CAKE: the link rate, for the MTU time in COBALT's target test, the target and interval at low
	 * rates (lq_init raises them as sch_cake's cake_set_rate) and the buffer limit */
	uint64_t rate_bps;
	bool step_ect1_only; /* mark only ECT(1) (L4S) instead of any ECT */
};

struct lq_stats {
	uint64_t enq_pkts, deq_pkts, deq_bytes;
	uint64_t drop_overlimit; /* queue full */
	uint64_t drop_aqm;	 /* CoDel's, PIE's or COBALT's drop decision */
	uint64_t mark_aqm;	 /* that decision carried out as a CE mark */
	uint64_t mark_step;	 /* sojourn above the step threshold */
	uint64_t new_flows;	 /* FQ-CoDel, CAKE: queues that joined the new list */
	uint64_t drop_blue;	 /* CAKE: BLUE's drop decision */
	uint64_t way_collisions; /* CAKE: a flow found every queue of its set taken */
	uint64_t max_backlog_bytes;
	/* Sojourn of the packets dequeued, enqueue to dequeue (what the AQM judged): the sum, and the largest
	 * since the owner last zeroed it. */
	uint64_t sojourn_sum_ns, sojourn_max_ns;
};

typedef void (*lq_drop_fn)(void *ctx, struct lq_pkt *p);

struct lq {
	struct lq_params prm;
	struct lq_stats st;
	uint32_t backlog_pkts;
	uint64_t backlog_bytes;
	struct lq_fifo fifo;  /* LQ_FIFO, LQ_CODEL, LQ_STEP */
	struct lq_codel cv;   /* LQ_CODEL */
	struct lq_pie pie;    /* LQ_PIE */
	struct lq_flow *flow; /* LQ_FQ_CODEL: prm.flows entries */
	struct lq_flow_list new_list, old_list, decaying_list;
	uint64_t cake_mtu_ns;	    /* CAKE: one MTU frame's time at the rate */
	uint64_t cake_buffer_bytes; /* CAKE: the limit on backlog truesize (lq_truesize) */
	uint64_t rng;
	lq_drop_fn drop;
	void *drop_ctx;
};

static inline void lq_fifo_push(struct lq_fifo *f, struct lq_pkt *p)
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

static inline struct lq_pkt *lq_fifo_pop(struct lq_fifo *f)
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

static inline struct lq_pkt *lq_sub_pop(struct lq *q, struct lq_fifo *f)
{
	struct lq_pkt *p = lq_fifo_pop(f);

	if (p) {
		q->backlog_pkts--;
		q->backlog_bytes -= p->len;
	}
	return p;
}

static inline void lq_list_append(struct lq *q, struct lq_flow_list *l, uint32_t idx, uint8_t which)
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
static inline void lq_list_unlink(struct lq *q, struct lq_flow_list *l, uint32_t idx)
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

static inline uint32_t lq_list_pop(struct lq *q, struct lq_flow_list *l)
{
	uint32_t idx = l->head;

	lq_list_unlink(q, l, idx);
	return idx;
}

#endif
