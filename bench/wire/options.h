/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The command line bbrkit-delay and bbrkit-link share: the two interfaces, the run tag, the socket buffer
 * size, the real-time priority, the CPU latency request and --help, parsed in one loop that hands each of
 * the tool's own options to the tool. Bad input is one line on stderr and exit status 2 (wire_die), before
 * any socket or thread exists.
 */
#ifndef BBRKIT_WIRE_OPTIONS_H
#define BBRKIT_WIRE_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The options both tools take. */
struct wire_args {
	const char *left, *right, *tag;		  /* NULL: not given */
	uint64_t sockbuf_bytes;			  /* the tool's default until --sockbuf-bytes */
	uint64_t rt_prio;			  /* 0: the default scheduler */
	uint64_t cpu_latency_us;		  /* WIRE_NO_CPU_LATENCY (process.h): none */
	unsigned int left_ifindex, right_ifindex; /* set by wire_check_interfaces */
};

/* One option of a tool: where its value goes (a whole number in min..max, the text as given, or true for
 * a flag) or, with none of these, the id it is handed to the tool's callback by; seen, if set, becomes true
 * whenever the option is given. */
struct wire_opt {
	const char *name;
	int has_arg; /* getopt_long's required_argument or no_argument */
	uint64_t *value;
	uint64_t min, max;
	const char **text;
	bool *flag;
	int id;
	bool *seen;
};

/* The tool's option @id, given as @opt ("--rev-aqm") with the value @arg (NULL without one). */
typedef void (*wire_opt_fn)(void *ctx, int id, const char *opt, const char *arg);

/*
 * Parses @argv: the shared options into *w (whose sockbuf_bytes holds the tool's default), and the tool's
 * @n_tool options @tool_opts into their places or to @tool_opt. --help prints @usage and exits 0; an
 * unknown option, a missing or bad value or a stray argument exits 2.
 */
void wire_parse_args(int argc, char **argv, const struct wire_opt *tool_opts, size_t n_tool,
	wire_opt_fn tool_opt, void *ctx, void (*usage)(void), struct wire_args *w);
/* --left, --right and --tag given, and the tag's form. */
void wire_check_required(const struct wire_args *w);
/* Two different interfaces, both in this network namespace: their indexes into *w. */
void wire_check_interfaces(struct wire_args *w);
/* A whole number in min..max for the option @opt. */
uint64_t wire_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max);

#endif /* BBRKIT_WIRE_OPTIONS_H */
