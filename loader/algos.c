// SPDX-License-Identifier: GPL-2.0
/* The algorithm table: one entry per bpf/<algo>.bpf.c (listed by the Makefile in bbrkit_algos.h), with
 * the parameter and variant-state descriptions of the algorithms that have them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"

/* bpftool's skeletons define static helpers we do not call (we only use the ELF bytes). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "bbrkit_algos.h"
#pragma GCC diagnostic pop

#define ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))

static const struct param_desc rttgain_params[] = {
	{ "alpha", "alpha_permille", offsetof(struct bbr_rttgain_params, alpha_permille), PARAM_RATIO,
		"ratio", BBR_RTTGAIN_ALPHA_DEF, BBR_RTTGAIN_ALPHA_MIN, BBR_RTTGAIN_ALPHA_MAX,
		"cruise pacing gain = alpha x min_rtt / rtt", BBR_RTTGAIN_ALPHA_USUAL_MIN,
		BBR_RTTGAIN_ALPHA_USUAL_MAX },
	{ "probe_exit", "probe_exit_permille", offsetof(struct bbr_rttgain_params, probe_exit_permille),
		PARAM_RATIO, "x min_rtt", BBR_RTTGAIN_PROBE_EXIT_DEF, BBR_RTTGAIN_PROBE_EXIT_MIN,
		BBR_RTTGAIN_PROBE_EXIT_MAX, "the 5/4 probe ends once rtt >= probe_exit x min_rtt",
		BBR_RTTGAIN_PROBE_EXIT_USUAL_MIN, BBR_RTTGAIN_PROBE_EXIT_USUAL_MAX },
	{ "gain_floor", "gain_floor_permille", offsetof(struct bbr_rttgain_params, gain_floor_permille),
		PARAM_RATIO, "ratio", BBR_RTTGAIN_GAIN_FLOOR_DEF, BBR_RTTGAIN_GAIN_FLOOR_MIN,
		BBR_RTTGAIN_GAIN_FLOOR_MAX, "lower bound of the cruise gain; 0 = none (the paper's)",
		BBR_RTTGAIN_GAIN_FLOOR_USUAL_MIN, BBR_RTTGAIN_GAIN_FLOOR_USUAL_MAX },
};

static const struct param_desc acd_params[] = {
	{ "tolerance_us", "tolerance_us", offsetof(struct bbr_acd_params, tolerance_us), PARAM_UINT, "us",
		BBR_ACD_TOLERANCE_DEF, BBR_ACD_TOLERANCE_MIN, BBR_ACD_TOLERANCE_MAX,
		"|rtt - previous rtt| <= tolerance counts as steady", BBR_ACD_TOLERANCE_USUAL_MIN,
		BBR_ACD_TOLERANCE_USUAL_MAX },
	{ "rtt_factor", "rtt_factor_permille", offsetof(struct bbr_acd_params, rtt_factor_permille),
		PARAM_RATIO, "x min_rtt", BBR_ACD_RTT_FACTOR_DEF, BBR_ACD_RTT_FACTOR_MIN,
		BBR_ACD_RTT_FACTOR_MAX, "rtt > rtt_factor x min_rtt declares congestion",
		BBR_ACD_RTT_FACTOR_USUAL_MIN, BBR_ACD_RTT_FACTOR_USUAL_MAX },
	{ "steady_acks", "steady_acks", offsetof(struct bbr_acd_params, steady_acks), PARAM_UINT, "ACKs",
		BBR_ACD_STEADY_ACKS_DEF, BBR_ACD_STEADY_ACKS_MIN, BBR_ACD_STEADY_ACKS_MAX,
		"consecutive steady elevated ACKs that declare congestion", BBR_ACD_STEADY_ACKS_USUAL_MIN,
		BBR_ACD_STEADY_ACKS_USUAL_MAX },
	{ "halve_once", "halve_once", offsetof(struct bbr_acd_params, halve_once), PARAM_BOOL, "bool",
		BBR_ACD_HALVE_ONCE_DEF, BBR_ACD_HALVE_ONCE_MIN, BBR_ACD_HALVE_ONCE_MAX,
		"1: halve once per recovery; 0: on every ACK of the round (paper listing)",
		BBR_ACD_HALVE_ONCE_USUAL_MIN, BBR_ACD_HALVE_ONCE_USUAL_MAX },
};

/* bbr2 and bbr3 share one parameter struct and one set of state slots. */
static const struct param_desc v3_params[] = {
	{ "loss_thresh", "loss_thresh_permille", offsetof(struct bbr3_params, loss_thresh_permille),
		PARAM_RATIO, "ratio", BBR3_LOSS_THRESH_DEF, BBR3_LOSS_THRESH_MIN, BBR3_LOSS_THRESH_MAX,
		"a probe losing more than this share of its flight went too far", BBR3_LOSS_THRESH_USUAL_MIN,
		BBR3_LOSS_THRESH_USUAL_MAX },
	{ "beta", "beta_permille", offsetof(struct bbr3_params, beta_permille), PARAM_RATIO, "ratio",
		BBR3_BETA_DEF, BBR3_BETA_MIN, BBR3_BETA_MAX,
		"factor kept by a loss cut of bw_lo, inflight_lo and inflight_hi", BBR3_BETA_USUAL_MIN,
		BBR3_BETA_USUAL_MAX },
	{ "headroom", "headroom_permille", offsetof(struct bbr3_params, headroom_permille), PARAM_RATIO,
		"ratio", BBR3_HEADROOM_DEF, BBR3_HEADROOM_MIN, BBR3_HEADROOM_MAX,
		"share of inflight_hi left unused while cruising", BBR3_HEADROOM_USUAL_MIN,
		BBR3_HEADROOM_USUAL_MAX },
	{ "ecn", "ecn", offsetof(struct bbr3_params, ecn), PARAM_BOOL, "bool", BBR3_ECN_DEF, BBR3_ECN_MIN,
		BBR3_ECN_MAX, "react to CE marks (ECN-capable, shallow-threshold marking path)",
		BBR3_ECN_USUAL_MIN, BBR3_ECN_USUAL_MAX },
	{ "ecn_thresh", "ecn_thresh_permille", offsetof(struct bbr3_params, ecn_thresh_permille), PARAM_RATIO,
		"ratio", BBR3_ECN_THRESH_DEF, BBR3_ECN_THRESH_MIN, BBR3_ECN_THRESH_MAX,
		"a probe whose ACKs carry more CE than this went too far", BBR3_ECN_THRESH_USUAL_MIN,
		BBR3_ECN_THRESH_USUAL_MAX },
	{ "ecn_max_rtt_us", "ecn_max_rtt_us", offsetof(struct bbr3_params, ecn_max_rtt_us), PARAM_UINT, "us",
		BBR3_ECN_MAX_RTT_DEF, BBR3_ECN_MAX_RTT_MIN, BBR3_ECN_MAX_RTT_MAX,
		"ECN only while min_rtt <= this; 0 = at any RTT", BBR3_ECN_MAX_RTT_USUAL_MIN,
		BBR3_ECN_MAX_RTT_USUAL_MAX },
	{ "probe_rtt_interval_ms", "probe_rtt_interval_ms",
		offsetof(struct bbr3_params, probe_rtt_interval_ms), PARAM_UINT, "ms",
		BBR3_PROBE_RTT_INTERVAL_DEF, BBR3_PROBE_RTT_INTERVAL_MIN, BBR3_PROBE_RTT_INTERVAL_MAX,
		"PROBE_RTT when min_rtt was not refreshed for this long", BBR3_PROBE_RTT_INTERVAL_USUAL_MIN,
		BBR3_PROBE_RTT_INTERVAL_USUAL_MAX },
	{ "probe_wait_base_ms", "probe_wait_base_ms", offsetof(struct bbr3_params, probe_wait_base_ms),
		PARAM_UINT, "ms", BBR3_PROBE_WAIT_BASE_DEF, BBR3_PROBE_WAIT_BASE_MIN,
		BBR3_PROBE_WAIT_BASE_MAX, "bandwidth probes are this far apart, plus a random part",
		BBR3_PROBE_WAIT_BASE_USUAL_MIN, BBR3_PROBE_WAIT_BASE_USUAL_MAX },
	{ "probe_wait_rand_ms", "probe_wait_rand_ms", offsetof(struct bbr3_params, probe_wait_rand_ms),
		PARAM_UINT, "ms", BBR3_PROBE_WAIT_RAND_DEF, BBR3_PROBE_WAIT_RAND_MIN,
		BBR3_PROBE_WAIT_RAND_MAX, "the random part of the wait is uniform below this",
		BBR3_PROBE_WAIT_RAND_USUAL_MIN, BBR3_PROBE_WAIT_RAND_USUAL_MAX },
};

static const struct variant_desc v3_variants[] = {
	{ "bw_phase", BBRKIT_VAR_V3_PHASE, VAR_V3_PHASE, "PROBE_BW sub-phase: UP, DOWN, CRUISE, REFILL" },
	{ "loss_rate", BBRKIT_VAR_V3_LOSS_RATE, VAR_PERMILLE, "lost / sent in the last loss round" },
	{ "ecn_rate", BBRKIT_VAR_V3_ECN_RATE, VAR_PERMILLE, "CE-marked / delivered in the last round" },
	{ "ecn_alpha", BBRKIT_VAR_V3_ECN_ALPHA, VAR_GAIN, "smoothed CE fraction" },
	{ "probe_rtt_min_us", BBRKIT_VAR_V3_PROBE_RTT_MIN, VAR_USEC,
		"PROBE_RTT's min RTT filter: no new low for probe_rtt_interval_ms starts PROBE_RTT (null: no "
		"sample)" },
	{ "pp_decisions", BBRKIT_VAR_V3_PP_DECISIONS, VAR_UINT,
		"lost skbs judged per packet with their send-time flight (null: ACK-time path)" },
	{ "pp_misses", BBRKIT_VAR_V3_PP_MISSES, VAR_UINT,
		"lost skbs without a send record, judged at ACK time (null: ACK-time path)" },
};

static const struct variant_desc rttgain_variants[] = {
	{ "rtt_gain", BBRKIT_VAR_RTTGAIN_GAIN, VAR_GAIN, "last RTT-based cruise gain" },
};

static const struct variant_desc acd_variants[] = {
	{ "acd_steady", BBRKIT_VAR_ACD_STEADY, VAR_UINT, "consecutive steady elevated RTT samples" },
	{ "acd_congested", BBRKIT_VAR_ACD_CONGESTED, VAR_UINT, "1 while the detector declares congestion" },
	{ "acd_halvings", BBRKIT_VAR_ACD_HALVINGS, VAR_UINT, "recoveries in which cwnd was halved" },
};

_Static_assert(
	sizeof(struct bbr_rttgain_params) <= MAX_PARAMS_SIZE, "bbr_rttgain_params outgrew MAX_PARAMS_SIZE");
_Static_assert(sizeof(struct bbr3_params) <= MAX_PARAMS_SIZE, "bbr3_params outgrew MAX_PARAMS_SIZE");
_Static_assert(sizeof(struct bbr_acd_params) <= MAX_PARAMS_SIZE, "bbr_acd_params outgrew MAX_PARAMS_SIZE");

/* What an algorithm adds to the common BBR state; algorithms not listed have nothing. */
static const struct algo extras[] = {
	{ .name = "bbr_rttgain",
		.params = rttgain_params,
		.nparams = ARRAY_SIZE(rttgain_params),
		.params_size = sizeof(struct bbr_rttgain_params),
		.variants = rttgain_variants,
		.nvariants = ARRAY_SIZE(rttgain_variants) },
	{ .name = "bbr2",
		.params = v3_params,
		.nparams = ARRAY_SIZE(v3_params),
		.params_size = sizeof(struct bbr3_params),
		.variants = v3_variants,
		.nvariants = ARRAY_SIZE(v3_variants),
		.per_packet = true },
	{ .name = "bbr3",
		.params = v3_params,
		.nparams = ARRAY_SIZE(v3_params),
		.params_size = sizeof(struct bbr3_params),
		.variants = v3_variants,
		.nvariants = ARRAY_SIZE(v3_variants),
		.per_packet = true },
	{ .name = "bbr_acd",
		.params = acd_params,
		.nparams = ARRAY_SIZE(acd_params),
		.params_size = sizeof(struct bbr_acd_params),
		.variants = acd_variants,
		.nvariants = ARRAY_SIZE(acd_variants) },
};

static const struct algo *extras_of(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(extras); i++)
		if (!strcmp(extras[i].name, name))
			return &extras[i];
	return NULL;
}

#define ALGO_ENTRY(n) { .name = #n, .elf_bytes = n##__elf_bytes },
static struct algo table[] = { BBRKIT_ALGOS(ALGO_ENTRY) };

const size_t nalgos = ARRAY_SIZE(table);

/* extras join the table by name: an entry no algorithm claims (a typo) would silently drop that
 * algorithm's parameters, so it stops bbrctl at once, and every test with it.
 */
void algos_init(void)
{
	for (size_t e = 0; e < ARRAY_SIZE(extras); e++) {
		size_t i = 0;

		while (i < nalgos && strcmp(table[i].name, extras[e].name))
			i++;
		if (i == nalgos) {
			fprintf(stderr,
				"bbrctl: internal error: parameters for '%s', which is no built algorithm\n",
				extras[e].name);
			exit(EXIT_FAILURE);
		}
	}
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *x = extras_of(table[i].name);

		if (!x)
			continue;
		table[i].params = x->params;
		table[i].nparams = x->nparams;
		table[i].params_size = x->params_size;
		table[i].variants = x->variants;
		table[i].nvariants = x->nvariants;
		table[i].per_packet = x->per_packet;
	}
}

const struct algo *algo_at(size_t i)
{
	return &table[i];
}

const struct algo *algo_find(const char *name)
{
	for (size_t i = 0; i < nalgos; i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}
