/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One direction's options of bbrkit-link (--NAME for the data direction, --rev-NAME for the ACKs): their
 * names, their values as given, their checks and the direction's configuration they make (path_args.c).
 */
#ifndef BBRKIT_LINK_PATH_ARGS_H
#define BBRKIT_LINK_PATH_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

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
	const char *mm_log;
};

/* Options that set one direction; each exists as --NAME and --rev-NAME. */
#define PATH_OPTS(X) \
	X(P_RATE, "rate-bps", required_argument) \
	X(P_TRACE, "trace", required_argument) \
	X(P_AQM, "aqm", required_argument) \
	X(P_LPKTS, "limit-pkts", required_argument) \
	X(P_LBYTES, "limit-bytes", required_argument) \
	X(P_TARGET, "target-us", required_argument) \
	X(P_INTERVAL, "interval-us", required_argument) \
	X(P_TUPDATE, "tupdate-us", required_argument) \
	X(P_QUANTUM, "quantum", required_argument) \
	X(P_FLOWS, "flows", required_argument) \
	X(P_ECN, "ecn", required_argument) \
	X(P_STEP, "step-us", required_argument) \
	X(P_ECT1, "step-ect1-only", no_argument) \
	X(P_GE, "ge", required_argument) \
	X(P_LOSS, "loss", required_argument) \
	X(P_JITTER, "jitter-us", required_argument) \
	X(P_DELAY, "delay-us", required_argument) \
	X(P_POLICE, "police", required_argument) \
	X(P_REORDER, "reorder", required_argument) \
	X(P_DUP, "duplicate", required_argument) \
	X(P_AGG, "aggregate", required_argument) \
	X(P_MMLOG, "mm-log", required_argument)

#define PATH_OPT_ID(id, name, has_arg) id,
enum path_opt { PATH_OPTS(PATH_OPT_ID) P_COUNT };
#undef PATH_OPT_ID

/* Each option's name and whether it takes a value, by enum path_opt. */
extern const struct option path_opts[P_COUNT];

/* Every --aqm KIND, comma-separated. */
const char *aqm_names(void);
/* The option @id given as @opt ("--rev-aqm") with the value @arg, into *pa; a bad value exits 2. */
void parse_path_opt(struct path_args *pa, int id, const char *opt, const char *arg);
/* The queue kind of a direction's options, checked against each other; @x is their prefix ("" or "rev-"). */
enum lq_kind check_aqm(const struct path_args *pa, const char *x);
/* One direction's configuration from its checked options. */
void path_config(const struct path_args *pa, enum lq_kind kind, uint32_t frame_max, struct lp_config *c);

#endif
