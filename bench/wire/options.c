// SPDX-License-Identifier: GPL-2.0
/* The command line both wire tools share (options.h). */
#define _GNU_SOURCE
#include "options.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process.h"

/* A kernel socket buffer below 64 KiB would not hold one GSO frame. */
#define MIN_SOCKBUF_BYTES 65536

uint64_t wire_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (*s < '0' || *s > '9')
		wire_die("%s: not a non-negative integer (see --help)", opt);
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		wire_die("%s: '%s' out of range %" PRIu64 "..%" PRIu64 " (see --help)", opt, s, min, max);
	return v;
}

/* The options both tools take; --help is the one without a place. */
#define N_SHARED 7
/* getopt_long returns an option's index in the table from here, past every character. */
#define OPT_INDEX_BASE 256

static void shared_options(struct wire_args *w, struct wire_opt *opts)
{
	const struct wire_opt shared[N_SHARED] = {
		{ .name = "left", .has_arg = required_argument, .text = &w->left },
		{ .name = "right", .has_arg = required_argument, .text = &w->right },
		{ .name = "tag", .has_arg = required_argument, .text = &w->tag },
		{ .name = "sockbuf-bytes",
			.has_arg = required_argument,
			.value = &w->sockbuf_bytes,
			.min = MIN_SOCKBUF_BYTES,
			.max = INT_MAX / 2 },
		{ .name = "rt-prio",
			.has_arg = required_argument,
			.value = &w->rt_prio,
			.min = 1,
			.max = 99 },
		{ .name = "cpu-latency-us",
			.has_arg = required_argument,
			.value = &w->cpu_latency_us,
			.max = WIRE_MAX_CPU_LATENCY_US },
		{ .name = "help", .has_arg = no_argument },
	};

	memcpy(opts, shared, sizeof(shared));
}

void wire_parse_args(int argc, char **argv, const struct wire_opt *tool_opts, size_t n_tool,
	wire_opt_fn tool_opt, void *ctx, void (*usage)(void), struct wire_args *w)
{
	size_t n = N_SHARED + n_tool;
	struct wire_opt *opts = calloc(n, sizeof(*opts));
	struct option *table = calloc(n + 1, sizeof(*table));
	int opt;

	if (!opts || !table)
		wire_die("out of memory for the option table");
	shared_options(w, opts);
	memcpy(opts + N_SHARED, tool_opts, n_tool * sizeof(*tool_opts));
	for (size_t i = 0; i < n; i++)
		table[i] = (struct option){ opts[i].name, opts[i].has_arg, NULL, OPT_INDEX_BASE + (int)i };
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", table, NULL)) != -1) {
		const struct wire_opt *o;
		char name[64];

		if (opt < OPT_INDEX_BASE) {
			if (optopt)
				wire_die("option '%s' needs a value (see --help)", argv[optind - 1]);
			wire_die("unknown option '%s' (see --help)", argv[optind - 1]);
		}
		o = &opts[opt - OPT_INDEX_BASE];
		snprintf(name, sizeof(name), "--%s", o->name);
		if (o->seen)
			*o->seen = true;
		if (o->value) {
			*o->value = wire_parse_u64(name, optarg, o->min, o->max);
		} else if (o->text) {
			*o->text = optarg;
		} else if (o->flag) {
			*o->flag = true;
		} else if (o < opts + N_SHARED) {
			usage();
			exit(0);
		} else {
			tool_opt(ctx, o->id, name, optarg);
		}
	}
	free(opts);
	free(table);
	if (optind < argc)
		wire_die("unexpected argument '%s' (see --help)", argv[optind]);
}

void wire_check_required(const struct wire_args *w)
{
	if (!w->left)
		wire_die("--left is required (see --help)");
	if (!w->right)
		wire_die("--right is required (see --help)");
	if (!w->tag)
		wire_die("--tag is required (see --help)");
	if (!wire_tag_ok(w->tag))
		wire_die("--tag '%s': use 1-64 characters from [A-Za-z0-9._-]", w->tag);
}

void wire_check_interfaces(struct wire_args *w)
{
	if (strcmp(w->left, w->right) == 0)
		wire_die("--left and --right are both '%s'", w->left);
	w->left_ifindex = if_nametoindex(w->left);
	if (!w->left_ifindex)
		wire_die("--left: no interface '%s' in this network namespace", w->left);
	w->right_ifindex = if_nametoindex(w->right);
	if (!w->right_ifindex)
		wire_die("--right: no interface '%s' in this network namespace", w->right);
}
