/* SPDX-License-Identifier: GPL-2.0 */
/* CoDel (RFC 8289) as Linux's codel_impl.h runs it, for one queue or each of FQ-CoDel's (codel.c). */
#ifndef BBRKIT_LINK_CODEL_H
#define BBRKIT_LINK_CODEL_H

#include <stdint.h>

#include "queue_core.h"

/* One Newton step towards 1/sqrt(count) in Q0.32, as sch_cake's cobalt_newton_step and (on the Q0.16 value
 * shifted up) codel_impl.h's codel_Newton_step: invsqrt / 2 x (3 - count x invsqrt^2). */
static inline uint32_t lq_newton_step(uint32_t invsqrt, uint32_t count)
{
	uint32_t invsqrt2 = (uint32_t)(((uint64_t)invsqrt * invsqrt) >> 32);
	uint64_t val = (3ULL << 32) - (uint64_t)count * invsqrt2;

	val >>= 2; /* keeps the product below in 64 bits */
	return (uint32_t)((val * invsqrt) >> (32 - 2 + 1));
}

/* RFC 8289 section 5.5's dequeue from the FIFO @f with the CoDel state @cv: the next packet to send, after
 * the drops and marks the schedule calls for, or NULL. */
struct lq_pkt *lq_codel_dequeue(struct lq *q, struct lq_codel *cv, struct lq_fifo *f, uint64_t now);

#endif
