/* SPDX-License-Identifier: GPL-2.0 */
/* A frame as bbrkit-link's queue sees it: its flow hash and IP header, and its ECN field. */
#ifndef BBRKIT_LINK_PACKET_H
#define BBRKIT_LINK_PACKET_H

#include <stdbool.h>
#include <stdint.h>

#include "queue_core.h"

/* CE on an ECT packet: returns true if the packet now carries CE (it may have already). */
bool lq_set_ce(struct lq_pkt *p);
/* The ECN field of the packet, LQ_ECN_NOT_ECT for non-IP. */
uint8_t lq_ecn(const struct lq_pkt *p);
/* The IPv4 source address in host byte order, 0 for any other frame. */
uint32_t lq_ipv4_src(const struct lq_pkt *p);
/* Parses an Ethernet frame: sets p->l3, p->is_ipv6 and p->hash (5-tuple, salted by @seed). */
void lq_frame_info(struct lq_pkt *p, uint8_t *frame, uint32_t len, uint32_t seed);

#endif
