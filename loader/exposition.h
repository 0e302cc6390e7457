/* SPDX-License-Identifier: GPL-2.0 */
/* The Prometheus text exposition format (version 0.0.4) as bbrctl export writes it: family headers and
 * histograms of the live flows at a scrape.
 */
#ifndef BBRCTL_EXPOSITION_H
#define BBRCTL_EXPOSITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define USEC_PER_SEC 1e6
#define HIST_BUCKETS 12 /* finite upper bounds of each kind below; +Inf is the count */

/* Upper bounds: RTTs from a LAN's half millisecond to a bloated satellite path's 2 s; rates from
 * 80 kbit/s to 24 Gbit/s, two per decade.
 */
enum hist_kind { HIST_SECONDS, HIST_BYTES_PER_SECOND };

/* The flows seen at one scrape, not a running total: sum() combines hosts, rate() means nothing. */
struct hist {
	unsigned long count, at_most[HIST_BUCKETS]; /* at_most[i]: observations <= bound i */
	double sum;
};

void family(FILE *o, const char *name, const char *type, const char *help);
void hist_observe(struct hist *h, enum hist_kind kind, double v);
/* The _bucket, _sum and _count samples of name{labels} (labels without braces, may be empty). */
void hist_write(FILE *o, const char *name, const char *labels, enum hist_kind kind, const struct hist *h);

/* Every connected TCP socket as one scrape read it (struct bbrkit_sock records, socks.h); ok false
 * where the read failed.
 */
struct scrape_socks {
	char *buf;
	size_t used;
	bool ok;
};

/* export_policy.c: the policy's rules and its closed connections' per-arm counters, read before the
 * sockets (so that a connection closing in between is not counted twice); false without a policy.
 */
bool read_policy_counters(void);
/* Per policy arm and per flow, and the placed connections' totals per algorithm, from the counters
 * read_policy_counters() read and the live placed connections: from the policy's own iterator where
 * the kernel allows it, else from all (whose records this reorders).
 */
void write_policy(FILE *o, struct scrape_socks *all, unsigned long flow_limit, unsigned long stall_rtts);

#endif
