// SPDX-License-Identifier: GPL-2.0
/* Mahimahi trace loading for bbrkit-link (trace.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"
#include "trace.h"

#define PROG "bbrkit-link"
#define MAX_TRACE_LINES 10000000
#define MAX_TRACE_MS (24ULL * 3600 * 1000)

static void __attribute__((noreturn)) bad_trace(const char *opt, const char *path, const char *what)
{
	fprintf(stderr, PROG ": %s %s: %s\n", opt, path, what);
	exit(2);
}

/* One non-negative integer millisecond per line, non-decreasing; the last one is the period (the trace
 * loops). */
void trace_load(struct link_trace *t, const char *opt, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[64];
	size_t cap = 0, lineno = 0;
	uint64_t last = 0;

	if (!f)
		bad_trace(opt, path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *end;
		unsigned long long ms;

		lineno++;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		errno = 0;
		ms = strtoull(line, &end, 10);
		if (line[0] < '0' || line[0] > '9' || errno || (*end != '\n' && *end) || ms > MAX_TRACE_MS ||
			ms < last) {
			fprintf(stderr,
				PROG ": %s %s: line %zu: expected a millisecond count not below the previous "
				     "line's\n",
				opt, path, lineno);
			exit(2);
		}
		if (t->len == MAX_TRACE_LINES)
			bad_trace(opt, path, "more than 10000000 lines");
		if (t->len == cap) {
			cap = cap ? cap * 2 : 4096;
			t->ns = realloc(t->ns, cap * sizeof(*t->ns));
			if (!t->ns)
				bad_trace(opt, path, "out of memory");
		}
		t->ns[t->len++] = ms * LQ_NSEC_PER_MSEC;
		last = ms;
	}
	fclose(f);
	if (!t->len || last == 0)
		bad_trace(opt, path, "no delivery opportunity after 0 ms (an empty trace cannot loop)");
	t->period_ns = last * LQ_NSEC_PER_MSEC;
}

uint64_t trace_mean_bps(const struct link_trace *t)
{
	return (uint64_t)t->len * TRACE_OPPORTUNITY_BYTES * 8ULL * 1000000000ULL / t->period_ns;
}
