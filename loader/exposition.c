// SPDX-License-Identifier: GPL-2.0
/* exposition: the text format's pieces export writes with (exposition.h). */
#include "exposition.h"

static const double bounds[][HIST_BUCKETS] = {
	[HIST_SECONDS] = { 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2 },
	[HIST_BYTES_PER_SECOND] = { 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9, 3e9 },
};

void family(FILE *o, const char *name, const char *type, const char *help)
{
	fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void hist_observe(struct hist *h, enum hist_kind kind, double v)
{
	for (int i = 0; i < HIST_BUCKETS; i++)
		h->at_most[i] += v <= bounds[kind][i];
	h->count++;
	h->sum += v;
}

void hist_write(FILE *o, const char *name, const char *labels, enum hist_kind kind, const struct hist *h)
{
	const char *sep = *labels ? "," : "";

	for (int i = 0; i < HIST_BUCKETS; i++)
		fprintf(o, "%s_bucket{%s%sle=\"%g\"} %lu\n", name, labels, sep, bounds[kind][i],
			h->at_most[i]);
	fprintf(o, "%s_bucket{%s%sle=\"+Inf\"} %lu\n", name, labels, sep, h->count);
	fprintf(o, "%s_sum{%s} %.9g\n%s_count{%s} %lu\n", name, labels, h->sum, name, labels, h->count);
}
