// SPDX-License-Identifier: GPL-2.0
/* Mahimahi trace loading for bbrkit-link (trace.h). */
#define _GNU_SOURCE
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

/* Read as mm-link reads it (LinkQueue's constructor, myatoi): one integer millisecond per line as strtol
 * takes it (leading blanks and a sign allowed, nothing after it), no empty lines (nor comments),
 * non-decreasing, the last one above 0: it is the period (the trace loops). Negative counts, which
 * Mahimahi would wrap around, are refused. */
void trace_load(struct link_trace *t, const char *opt, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t linecap = 0, cap = 0, lineno = 0;
	ssize_t n;
	uint64_t last = 0;

	if (!f)
		bad_trace(opt, path, strerror(errno));
	while ((n = getline(&line, &linecap, f)) >= 0) {
		char *end;
		long ms;

		lineno++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = 0;
		if (n == 0) {
			fprintf(stderr, PROG ": %s %s: line %zu: empty (Mahimahi refuses empty lines)\n", opt,
				path, lineno);
			exit(2);
		}
		errno = 0;
		ms = strtol(line, &end, 10);
		if (end == line || errno || *end || ms < 0 || (uint64_t)ms > MAX_TRACE_MS ||
			(uint64_t)ms < last) {
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
		t->ns[t->len++] = (uint64_t)ms * LQ_NSEC_PER_MSEC;
		last = (uint64_t)ms;
	}
	free(line);
	fclose(f);
	if (!t->len || last == 0)
		bad_trace(opt, path, "no delivery opportunity after 0 ms (an empty trace cannot loop)");
	t->period_ns = last * LQ_NSEC_PER_MSEC;
}

uint64_t trace_mean_bps(const struct link_trace *t)
{
	return (uint64_t)t->len * TRACE_OPPORTUNITY_BYTES * 8ULL * 1000000000ULL / t->period_ns;
}
