/* SPDX-License-Identifier: GPL-2.0 */
/* Frames into one direction of bbrkit-link: read in batches, through loss, duplication and the policer, into
 * the queue (arrival.c). */
#ifndef BBRKIT_LINK_ARRIVAL_H
#define BBRKIT_LINK_ARRIVAL_H

#include "path.h"

/* Reads up to LP_RX_BATCH frames without blocking and admits them; returns how many were read. */
int lp_receive(struct lpath *p);
/* Notes the bytes waiting unread in the receive socket (after a full batch: only then are frames left). */
void lp_sample_sockbuf(struct lpath *p);

#endif
