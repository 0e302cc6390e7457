/* SPDX-License-Identifier: GPL-2.0 */
/* The CAKE subset: sch_cake's set-associative flow queues, DRR++ and COBALT for one tin (cake.c). */
#ifndef BBRKIT_LINK_CAKE_H
#define BBRKIT_LINK_CAKE_H

#include <stdint.h>

#include "queue_core.h"

/* What the kernel charges CAKE's buffer for a packet of @len bytes. */
static inline uint64_t lq_truesize(uint64_t len)
{
	return len + LQ_SKB_OVERHEAD_BYTES;
}

/* Sizes the target, interval and buffer from the rate, as sch_cake's cake_set_rate. */
void lq_cake_init(struct lq *q);
/* The queue a packet of flow @hash goes to. */
uint32_t lq_cake_queue_for(struct lq *q, uint32_t hash);
/* An overflow at @now: a packet from the fattest queue's head, and BLUE told. */
void lq_cake_drop_fattest(struct lq *q, uint64_t now);
/* The next packet to send at @now, or NULL. */
struct lq_pkt *lq_cake_dequeue(struct lq *q, uint64_t now);

#endif
