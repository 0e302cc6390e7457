/* SPDX-License-Identifier: GPL-2.0 */
/* FQ-CoDel (RFC 8290 as Linux's fq_codel): flow queues served by DRR, CoDel in each (fq_codel.c). */
#ifndef BBRKIT_LINK_FQ_CODEL_H
#define BBRKIT_LINK_FQ_CODEL_H

#include "queue_core.h"

/* An overflow: the fattest queue loses packets from its head. */
void lq_fq_drop_fattest(struct lq *q);
/* The next packet to send at @now, or NULL. */
struct lq_pkt *lq_fq_codel_dequeue(struct lq *q, uint64_t now);

#endif
