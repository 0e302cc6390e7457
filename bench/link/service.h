/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The link itself in one direction of bbrkit-link and what follows it: a frame in service at the rate or on
 * the trace's delivery opportunities, then the delay line, netem's reorder and the aggregation stage, then
 * out in batches (service.c).
 */
#ifndef BBRKIT_LINK_SERVICE_H
#define BBRKIT_LINK_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "path.h"

/* Everything due by @now: departures from the link, the delay line and the aggregation stage, sent. */
void lp_service(struct lpath *p, uint64_t now);
/* A trace's opportunities up to @t (with @burn_idle, also an idle link's: see service.c); returns the time
 * after them (later than @t after an injected stall, which only the forwarding loop's call draws). */
uint64_t lp_service_trace(struct lpath *p, uint64_t t, bool burn_idle);
/* When something is next due (UINT64_MAX: nothing until a frame arrives). */
uint64_t lp_next_event(const struct lpath *p);

#endif
