/* SPDX-License-Identifier: GPL-2.0 */
/* PIE (RFC 8033 as Linux's sch_pie): early drops on arrival with a controller-driven probability (pie.c). */
#ifndef BBRKIT_LINK_PIE_H
#define BBRKIT_LINK_PIE_H

#include <stdbool.h>
#include <stdint.h>

#include "queue_core.h"

/* Runs the probability updates that fell due by @now. */
void lq_pie_catch_up(struct lq *q, uint64_t now);
/* A packet @p left the queue at @now: the delay and the burst allowance move. */
void lq_pie_dequeued(struct lq *q, const struct lq_pkt *p, uint64_t now);
/* Whether an arrival is dropped (or marked) early. */
bool lq_pie_drop_early(struct lq *q);

#endif
