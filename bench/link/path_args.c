// SPDX-License-Identifier: GPL-2.0
/* One direction's options of bbrkit-link (path_args.h): parsed, checked, made its configuration. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "path_args.h"
#include "process.h"
#include "trace.h"

#define MAX_LIMIT_PKTS 1000000
#define MAX_LIMIT_BYTES (1ULL << 32)
#define MAX_PARAM_MS 10000ULL
/* The longest injected stall: well past any preemption worth emulating, short of stopping a run. */
#define MAX_STALL_US 1000000ULL

static double parse_prob(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.0 && v <= 1.0))
		wire_die("%s: '%s' is not a probability in 0..1 (see --help)", opt, s);
	return v;
}

/* A probability as tc's parse_percent reads netem's: a percentage, the '%' optional ("1%" and "1" are 1%). */
static double parse_percent(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || (*end && strcmp(end, "%")) || !(v >= 0.0 && v <= 100.0))
		wire_die("%s: '%s' is not a percentage in 0..100 (see --help)", opt, s);
	return v / 100;
}

/* Every --aqm KIND, comma-separated. */
const char *aqm_names(void)
{
	static char list[128];
	size_t n = 0;

	for (int k = 0; k < LQ_KIND_COUNT && n < sizeof(list); k++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", k ? ", " : "", lq_kind_names[k]);
	return list;
}

/* netem's "loss gemodel P [R [1-H [1-K]]]" (separated by spaces or commas), with tc's defaults for what
 * is left out: R = 1 - P, 1-H = 100% (the bad state loses everything), 1-K = 0. Fills pa->ge as P, R, loss
 * in the bad state, loss in the good state. */
static void parse_ge(struct path_args *pa, const char *opt, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok = strtok_r(copy, ", ", &save);
	int n;

	for (n = 0; tok && n < 4; n++, tok = strtok_r(NULL, ", ", &save))
		pa->ge[n] = parse_percent(opt, tok);
	if (n == 0 || tok)
		wire_die("%s '%s': expected netem's gemodel P [R [1-H [1-K]]], in percent", opt, arg);
	if (n < 2)
		pa->ge[1] = 1 - pa->ge[0];
	if (n < 3)
		pa->ge[2] = 1;
	if (n < 4)
		pa->ge[3] = 0;
	free(copy);
	pa->ge_on = true;
}

/* Splits @arg at commas into min..max fields (kept in a static copy); @what is the expected form. */
static void parse_fields(const char *opt, const char *arg, const char *what, int min, int max, char **out)
{
	static char copy[256];
	char *save = NULL, *tok;
	int n = 0;

	snprintf(copy, sizeof(copy), "%s", arg);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max)
			wire_die("%s '%s': expected %s", opt, arg, what);
		out[n++] = tok;
	}
	if (n < min)
		wire_die("%s '%s': expected %s", opt, arg, what);
	for (int i = n; i < max; i++)
		out[i] = NULL;
}

/* slot,MIN_US[,MAX_US[,PKTS]] | count,K,TIMEOUT_US | onoff,ON_US,OFF_US */
static void parse_agg(struct path_args *pa, const char *opt, const char *arg)
{
	const char *form = "slot,MIN_US[,MAX_US[,PKTS]], count,K,TIMEOUT_US or onoff,ON_US,OFF_US";
	char *f[4];

	parse_fields(opt, arg, form, 2, 4, f);
	if (strcmp(f[0], "slot") && strcmp(f[0], "count") && strcmp(f[0], "onoff"))
		wire_die("%s '%s': expected %s", opt, arg, form);
	if (!strcmp(f[0], "slot")) {
		pa->agg = LS_AGG_SLOT;
		pa->agg_a_us = wire_parse_u64(opt, f[1], 1, MAX_PARAM_MS * 1000);
		pa->agg_b_us =
			f[2] ? wire_parse_u64(opt, f[2], pa->agg_a_us, MAX_PARAM_MS * 1000) : pa->agg_a_us;
		pa->agg_pkts = f[3] ? wire_parse_u64(opt, f[3], 1, MAX_LIMIT_PKTS) : 0;
		return;
	}
	if (!f[2] || f[3])
		wire_die("%s '%s': expected %s", opt, arg, form);
	if (!strcmp(f[0], "count")) {
		pa->agg = LS_AGG_COUNT;
		pa->agg_pkts = wire_parse_u64(opt, f[1], 1, MAX_LIMIT_PKTS);
		pa->agg_a_us = wire_parse_u64(opt, f[2], 1, MAX_PARAM_MS * 1000);
	} else {
		pa->agg = LS_AGG_ONOFF;
		pa->agg_a_us = wire_parse_u64(opt, f[1], 1, MAX_PARAM_MS * 1000);
		pa->agg_b_us = wire_parse_u64(opt, f[2], 1, MAX_PARAM_MS * 1000);
	}
}

/* ADDR,US: frames from the IPv4 address ADDR wait US more after the link; given once per address. */
static void parse_src_delay(struct path_args *pa, const char *opt, const char *arg)
{
	const char *form = "ADDR,US (an IPv4 source address and its delay in us)";
	struct in_addr in;
	char *f[2];
	int err;

	parse_fields(opt, arg, form, 2, 2, f);
	if (inet_pton(AF_INET, f[0], &in) != 1)
		wire_die("%s '%s': expected %s", opt, arg, form);
	err = ls_src_add(&pa->src, ntohl(in.s_addr),
		wire_parse_u64(opt, f[1], 0, MAX_PARAM_MS * 1000) * LQ_NSEC_PER_USEC);
	if (err == -1)
		wire_die("%s: %s given twice", opt, f[0]);
	if (err)
		wire_die("%s: at most %d addresses and %d distinct delays", opt, LS_MAX_SRC_ADDRS,
			LS_MAX_SRC_LINES);
}

void path_options(struct path_args *pa, const char *prefix, int id_base, char (*names)[PATH_OPT_NAME_BYTES],
	struct wire_opt *opts)
{
	const struct wire_opt table[PATH_OPT_COUNT] = {
		{ .name = "rate-bps", .value = &pa->rate_bps, .min = MIN_RATE_BPS, .max = MAX_RATE_BPS },
		{ .name = "trace", .text = &pa->trace },
		{ .name = "aqm", .text = &pa->aqm },
		{ .name = "limit-pkts", .value = &pa->limit_pkts, .min = 1, .max = MAX_LIMIT_PKTS },
		{ .name = "limit-bytes", .value = &pa->limit_bytes, .min = 1, .max = MAX_LIMIT_BYTES },
		{ .name = "target-us", .value = &pa->target, .min = 1, .max = MAX_PARAM_MS * 1000 },
		{ .name = "interval-us", .value = &pa->interval, .min = 1, .max = MAX_PARAM_MS * 1000 },
		{ .name = "tupdate-us", .value = &pa->tupdate, .min = 1, .max = MAX_PARAM_MS * 1000 },
		{ .name = "quantum", .value = &pa->quantum, .min = 64, .max = 1 << 20 },
		{ .name = "flows", .value = &pa->flows, .min = 1, .max = LQ_MAX_FLOWS },
		{ .name = "ecn", .value = &pa->ecn, .min = 0, .max = 1 },
		{ .name = "step-us", .value = &pa->step, .min = 1, .max = MAX_PARAM_MS * 1000 },
		{ .name = "step-ect1-only", .has_arg = no_argument, .flag = &pa->ect1 },
		{ .name = "ge", .id = P_GE },
		{ .name = "loss", .id = P_LOSS },
		{ .name = "jitter-us", .value = &pa->jitter_us, .max = MAX_PARAM_MS * 1000 },
		{ .name = "delay-us", .value = &pa->delay_us, .max = MAX_PARAM_MS * 1000 },
		{ .name = "police", .id = P_POLICE },
		{ .name = "reorder", .id = P_REORDER },
		{ .name = "duplicate", .id = P_DUP },
		{ .name = "aggregate", .id = P_AGG },
		{ .name = "stall", .id = P_STALL },
		{ .name = "mm-log", .text = &pa->mm_log },
		{ .name = "src-delay", .id = P_SRC_DELAY },
	};

	for (int i = 0; i < PATH_OPT_COUNT; i++) {
		opts[i] = table[i];
		snprintf(names[i], PATH_OPT_NAME_BYTES, "%s%s", prefix, table[i].name);
		opts[i].name = names[i];
		/* every option but a flag takes a value */
		if (!opts[i].flag)
			opts[i].has_arg = required_argument;
		opts[i].id += id_base;
		opts[i].seen = &pa->given;
	}
}

void parse_path_opt(struct path_args *pa, int id, const char *opt, const char *arg)
{
	char *fields[2];

	switch (id) {
	case P_GE:
		parse_ge(pa, opt, arg);
		break;
	case P_LOSS:
		/* Independent loss: Gilbert-Elliott that never leaves its good state (1-K is its loss). */
		pa->ge[0] = 0.0;
		pa->ge[1] = 1.0;
		pa->ge[2] = 1.0;
		pa->ge[3] = parse_prob(opt, arg);
		pa->loss_on = true;
		break;
	case P_POLICE:
		parse_fields(opt, arg, "RATE_BPS,BURST_BYTES", 2, 2, fields);
		pa->police_bps = wire_parse_u64(opt, fields[0], MIN_RATE_BPS, MAX_RATE_BPS);
		pa->police_burst = wire_parse_u64(opt, fields[1], 64, MAX_LIMIT_BYTES);
		break;
	case P_REORDER:
		parse_fields(opt, arg, "P,GAP", 2, 2, fields);
		pa->reorder_prob = parse_prob(opt, fields[0]);
		pa->reorder_gap = wire_parse_u64(opt, fields[1], 1, MAX_LIMIT_PKTS);
		break;
	case P_DUP:
		pa->dup_prob = parse_prob(opt, arg);
		break;
	case P_AGG:
		parse_agg(pa, opt, arg);
		break;
	case P_STALL:
		parse_fields(opt, arg, "PCT,US", 2, 2, fields);
		pa->stall_prob = parse_percent(opt, fields[0]);
		pa->stall_us = wire_parse_u64(opt, fields[1], 1, MAX_STALL_US);
		break;
	case P_SRC_DELAY:
		parse_src_delay(pa, opt, arg);
		break;
	}
}

/* A direction's queue options; @x is its option prefix ("" or "rev-"). */
enum lq_kind check_aqm(const struct path_args *pa, const char *x)
{
	enum lq_kind kind;

	if (!lq_kind_parse(pa->aqm, &kind))
		wire_die("--%saqm '%s': not one of %s", x, pa->aqm, aqm_names());
	if (pa->limit_bytes && kind != LQ_FIFO && kind != LQ_STEP)
		wire_die("--%slimit-bytes: only for fifo and step (%s limits packets)", x, pa->aqm);
	if ((pa->target || pa->ecn != UINT64_MAX) && (kind == LQ_FIFO || kind == LQ_STEP))
		wire_die("--%starget-us and --%secn apply to codel, fq_codel, cake and pie, not %s", x, x,
			pa->aqm);
	if (pa->interval && kind != LQ_CODEL && kind != LQ_FQ_CODEL && kind != LQ_CAKE)
		wire_die("--%sinterval-us applies to codel, fq_codel and cake, not %s", x, pa->aqm);
	if (pa->tupdate && kind != LQ_PIE)
		wire_die("--%stupdate-us applies to pie, not %s", x, pa->aqm);
	if ((pa->quantum || pa->flows) && kind != LQ_FQ_CODEL && kind != LQ_CAKE)
		wire_die("--%squantum and --%sflows apply to fq_codel and cake, not %s", x, x, pa->aqm);
	if (pa->flows % LQ_CAKE_WAYS && kind == LQ_CAKE)
		wire_die(
			"--%sflows: cake's queues come in sets of 8, not a count that is not a multiple of 8",
			x);
	if (kind == LQ_STEP && !pa->step)
		wire_die("--%saqm step needs --%sstep-us", x, x);
	if (pa->ect1 && !pa->step)
		wire_die("--%sstep-ect1-only needs --%sstep-us", x, x);
	if (pa->ge_on && pa->loss_on)
		wire_die("--%sge and --%sloss: give one loss model", x, x);
	if (pa->reorder_gap && !pa->delay_us)
		wire_die("--%sreorder needs --%sdelay-us (as netem, a reordered packet is one that skips the "
			 "delay)",
			x, x);
	return kind;
}

/* One direction's configuration from its checked options. */
void path_config(const struct path_args *pa, enum lq_kind kind, uint32_t frame_max, struct lp_config *c)
{
	struct lq_params *prm = &c->queue;

	c->rate_bps = pa->rate_bps;
	c->jitter_ns = pa->jitter_us * LQ_NSEC_PER_USEC;
	c->delay_ns = pa->delay_us * LQ_NSEC_PER_USEC;
	c->ge_on = pa->ge_on || pa->loss_on;
	c->police_bps = pa->police_bps;
	c->police_burst = pa->police_burst;
	c->reorder_prob = pa->reorder_prob;
	c->reorder_gap = (uint32_t)pa->reorder_gap;
	c->dup_prob = pa->dup_prob;
	c->agg = pa->agg;
	c->agg_a_ns = pa->agg_a_us * LQ_NSEC_PER_USEC;
	c->agg_b_ns = pa->agg_b_us * LQ_NSEC_PER_USEC;
	c->agg_pkts = (uint32_t)pa->agg_pkts;
	c->stall_prob = pa->stall_prob;
	c->stall_ns = pa->stall_us * LQ_NSEC_PER_USEC;
	c->mm_log = pa->mm_log;
	c->src = pa->src;
	memcpy(c->ge, pa->ge, sizeof(c->ge));
	lq_defaults(prm, kind, frame_max - 4);
	if (pa->limit_pkts)
		prm->limit_pkts = (uint32_t)pa->limit_pkts;
	if (pa->limit_bytes) {
		prm->limit_bytes = pa->limit_bytes;
		prm->limit_pkts = pa->limit_pkts ? (uint32_t)pa->limit_pkts : 0;
	}
	if (pa->target)
		prm->target_ns = pa->target * LQ_NSEC_PER_USEC;
	if (pa->interval)
		prm->interval_ns = pa->interval * LQ_NSEC_PER_USEC;
	if (pa->tupdate)
		prm->tupdate_ns = pa->tupdate * LQ_NSEC_PER_USEC;
	if (pa->quantum)
		prm->quantum = (uint32_t)pa->quantum;
	if (pa->flows)
		prm->flows = (uint32_t)pa->flows;
	if (pa->ecn != UINT64_MAX)
		prm->ecn = pa->ecn;
	prm->step_ns = pa->step * LQ_NSEC_PER_USEC;
	prm->step_ect1_only = pa->ect1;
	/* CAKE sizes its MTU time and quantum from the link rate (a trace's mean rate; none: the fastest). */
	prm->rate_bps = c->rate_bps ? c->rate_bps : c->trace.ns ? trace_mean_bps(&c->trace) : MAX_RATE_BPS;
	if (kind == LQ_CAKE && !pa->quantum) {
		uint64_t q =
			prm->rate_bps / LS_BITS_PER_BYTE >> 12; /* sch_cake: rate/4096, within 300..MTU */

		prm->quantum = (uint32_t)(q < LQ_CAKE_MIN_QUANTUM ? LQ_CAKE_MIN_QUANTUM
				: q > prm->mtu_bytes		  ? prm->mtu_bytes
								  : q);
	}
}

const char *path_idle_unfit(const struct lp_config *c, uint32_t frame_max)
{
	if (!c->rate_bps)
		return "a trace, not a rate";
	if (c->queue.kind != LQ_FIFO || c->queue.step_ns)
		return "an AQM or step marking";
	if (c->queue.limit_bytes && c->queue.limit_bytes < frame_max)
		return "a byte limit below a frame";
	if (c->ge_on || c->dup_prob > 0 || c->police_bps || c->stall_ns)
		return "loss, duplication, a policer or stalls";
	if (c->delay_ns || c->jitter_ns || c->src.n_addrs || c->reorder_gap || c->agg != LS_AGG_NONE)
		return "a delay, jitter, reordering or aggregation after the link";
	if (c->mm_log)
		return "an mm-link log";
	return NULL;
}
