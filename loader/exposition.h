/* SPDX-License-Identifier: GPL-2.0 */
/* The Prometheus text exposition format (version 0.0.4) as bbrctl export writes it: family headers and
 * histograms of the live flows at a scrape.
 */
#ifndef BBRCTL_EXPOSITION_H
#define BBRCTL_EXPOSITION_H

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

/* export_policy.c: per policy arm and per flow; the placed connections' totals per algorithm. */
void write_policy(FILE *o, unsigned long flow_limit, unsigned long stall_rtts);

#endif
