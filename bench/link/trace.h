/* SPDX-License-Identifier: GPL-2.0 */
/* Mahimahi delivery traces for bbrkit-link: one delivery opportunity per line, in milliseconds. */
#ifndef BBRKIT_LINK_TRACE_H
#define BBRKIT_LINK_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* Mahimahi (link_queue.hh PACKET_SIZE): each trace line is one delivery opportunity of this many bytes of
 * what it reads from its TUN device, the IP packet behind a 4-byte packet-information header. */
#define TRACE_OPPORTUNITY_BYTES 1504
#define TUN_PI_BYTES 4

struct link_trace {
	uint64_t *ns; /* opportunity offsets within one period; NULL: no trace */
	size_t len;
	uint64_t period_ns;
};

/* Loads @path for the option @opt; a bad trace is one line on stderr and exit status 2. */
void trace_load(struct link_trace *t, const char *opt, const char *path);
/* The trace's mean rate in bit/s of opportunities. */
uint64_t trace_mean_bps(const struct link_trace *t);

#endif
