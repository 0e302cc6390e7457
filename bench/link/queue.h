/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bottleneck queue of bbrkit-link: tail drop, CoDel (RFC 8289), FQ-CoDel (RFC 8290), PIE (RFC
 * 8033 as Linux's sch_pie), a CAKE subset (sch_cake's DRR++ and COBALT), a step marker (CE above a
 * sojourn threshold, as L4S/DCTCP marking) and Gilbert-Elliott loss. Plain C
 * with the clock passed in, so the host unit tests drive it with synthetic packets and times.
 *
 * The queue never owns packet memory: packets are linked through lq_pkt.next, and every packet the
 * queue gives up (overlimit, AQM drop) goes to the owner's drop callback.
 */
#ifndef BBRKIT_LINK_QUEUE_H
#define BBRKIT_LINK_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "packet.h"
#include "queue_core.h"

/* Each kind's --aqm name, by enum lq_kind. */
extern const char *const lq_kind_names[LQ_KIND_COUNT];
/* The kind called @name: true and *kind set, or false. */
bool lq_kind_parse(const char *name, enum lq_kind *kind);

/* Fills defaults for @kind: RFC/Linux values, limit_pkts from the caller. */
void lq_defaults(struct lq_params *p, enum lq_kind kind, uint32_t mtu_bytes);
/* 0, or -1 with *err naming the bad parameter. */
int lq_init(struct lq *q, const struct lq_params *p, lq_drop_fn drop, void *ctx, const char **err);
void lq_free(struct lq *q);
/* The most packets @q can hold at once: what the owner's packet pool must have. */
uint64_t lq_capacity_pkts(const struct lq *q);
/* Queues @p stamped @now_ns, or hands it (or, in FQ-CoDel, older packets of the fattest queue) to
 * the drop callback. Returns false if @p itself was dropped. */
bool lq_enqueue(struct lq *q, struct lq_pkt *p, uint64_t now_ns);
/* The next packet to transmit at @now_ns, after the AQM's drops and marks, or NULL. */
struct lq_pkt *lq_dequeue(struct lq *q, uint64_t now_ns);

/* Gilbert-Elliott loss (the 4-parameter model netem's "loss gemodel p r 1-h 1-k" uses). */
struct lq_ge {
	double p;	  /* good -> bad per packet */
	double r;	  /* bad -> good per packet */
	double loss_good; /* 1 - k */
	double loss_bad;  /* 1 - h */
	bool bad;
	uint64_t rng;
};
void lq_ge_init(struct lq_ge *g, double p, double r, double loss_good, double loss_bad, uint64_t seed);
bool lq_ge_lose(struct lq_ge *g);

#endif
