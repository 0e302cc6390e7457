/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One direction's options of bbrkit-link (--NAME for the data direction, --rev-NAME for the ACKs): their
 * names, their values as given, their checks and the direction's configuration they make (path_args.c).
 */
#ifndef BBRKIT_LINK_PATH_ARGS_H
#define BBRKIT_LINK_PATH_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "options.h"
#include "path.h"
#include "queue.h"
#include "stages.h"

#define MIN_RATE_BPS 8000ULL
#define MAX_RATE_BPS 100000000000ULL

/* One direction's options as given (0: the queue's default). */
struct path_args {
	bool given; /* any option for this direction (the ACK direction is shaped only then) */
	uint64_t rate_bps;
	const char *trace, *aqm;
	uint64_t limit_pkts, limit_bytes, target, interval, tupdate, quantum, flows, step, ecn, jitter_us,
		delay_us;
	bool ect1, ge_on, loss_on;
	double ge[4]; /* netem's order: P, R, 1-H, 1-K */
	uint64_t police_bps, police_burst, reorder_gap;
	double reorder_prob, dup_prob;
	enum ls_agg_kind agg;
	uint64_t agg_a_us, agg_b_us, agg_pkts;
	double stall_prob;
	uint64_t stall_us;
	const char *mm_log;
	struct ls_src_delay src;
};

/* How many options a direction has; each exists as --NAME and --rev-NAME. */
#define PATH_OPT_COUNT 24
/* The longest option name with its prefix, and its terminator. */
#define PATH_OPT_NAME_BYTES 32
/* A direction's options that are no plain whole number, text or flag: parse_path_opt takes them by id. */
enum path_opt { P_GE, P_LOSS, P_POLICE, P_REORDER, P_DUP, P_AGG, P_STALL, P_SRC_DELAY, P_IDS };

/* A direction's PATH_OPT_COUNT options into @opts, their values into *pa, their names @prefix ("" or
 * "rev-") and the option's (kept in @names); those parse_path_opt takes carry @id_base plus their id. */
void path_options(struct path_args *pa, const char *prefix, int id_base, char (*names)[PATH_OPT_NAME_BYTES],
	struct wire_opt *opts);
/* Every --aqm KIND, comma-separated. */
const char *aqm_names(void);
/* The option @id (enum path_opt) given as @opt ("--rev-ge") with the value @arg, into *pa; a bad value exits
 * 2. */
void parse_path_opt(struct path_args *pa, int id, const char *opt, const char *arg);
/* The queue kind of a direction's options, checked against each other; @x is their prefix ("" or "rev-"). */
enum lq_kind check_aqm(const struct path_args *pa, const char *x);
/* One direction's configuration from its checked options. */
void path_config(const struct path_args *pa, enum lq_kind kind, uint32_t frame_max, struct lp_config *c);
/* NULL when the direction configured as @c may take the XDP idle path (idle.h), else why not: a frame there
 * meets more than the rate and an empty tail-drop queue. */
const char *path_idle_unfit(const struct lp_config *c, uint32_t frame_max);

#endif
