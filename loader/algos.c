// SPDX-License-Identifier: GPL-2.0
/* The algorithm table: one entry per bpf/<algo>.bpf.c (listed by the Makefile in bbrkit_algos.h), with
 * the parameter and variant-state descriptions of the algorithms that have them.
 */
#include <string.h>

#include "bbrctl.h"

/* bpftool's skeletons define static helpers we do not call (we only use the ELF bytes). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "bbrkit_algos.h"
#pragma GCC diagnostic pop

#define ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))

static const struct param_desc rttgain_params[] = {
	{ "alpha", "alpha_permille", offsetof(struct bbr_rttgain_params, alpha_permille),
	  PARAM_RATIO, "ratio", BBR_RTTGAIN_ALPHA_DEF, BBR_RTTGAIN_ALPHA_MIN,
	  BBR_RTTGAIN_ALPHA_MAX, "cruise pacing gain = alpha x min_rtt / rtt",
	  BBR_RTTGAIN_ALPHA_USUAL_MIN, BBR_RTTGAIN_ALPHA_USUAL_MAX },
	{ "probe_exit", "probe_exit_permille",
	  offsetof(struct bbr_rttgain_params, probe_exit_permille), PARAM_RATIO, "x min_rtt",
	  BBR_RTTGAIN_PROBE_EXIT_DEF, BBR_RTTGAIN_PROBE_EXIT_MIN, BBR_RTTGAIN_PROBE_EXIT_MAX,
	  "the 5/4 probe ends once rtt >= probe_exit x min_rtt",
	  BBR_RTTGAIN_PROBE_EXIT_USUAL_MIN, BBR_RTTGAIN_PROBE_EXIT_USUAL_MAX },
	{ "gain_floor", "gain_floor_permille",
	  offsetof(struct bbr_rttgain_params, gain_floor_permille), PARAM_RATIO, "ratio",
	  BBR_RTTGAIN_GAIN_FLOOR_DEF, BBR_RTTGAIN_GAIN_FLOOR_MIN, BBR_RTTGAIN_GAIN_FLOOR_MAX,
	  "lower bound of the cruise gain; 0 = none (the paper's)",
	  BBR_RTTGAIN_GAIN_FLOOR_USUAL_MIN, BBR_RTTGAIN_GAIN_FLOOR_USUAL_MAX },
};

static const struct param_desc acd_params[] = {
	{ "tolerance_us", "tolerance_us", offsetof(struct bbr_acd_params, tolerance_us),
	  PARAM_UINT, "us", BBR_ACD_TOLERANCE_DEF, BBR_ACD_TOLERANCE_MIN, BBR_ACD_TOLERANCE_MAX,
	  "|rtt - previous rtt| <= tolerance counts as steady",
	  BBR_ACD_TOLERANCE_USUAL_MIN, BBR_ACD_TOLERANCE_USUAL_MAX },
	{ "rtt_factor", "rtt_factor_permille", offsetof(struct bbr_acd_params, rtt_factor_permille),
	  PARAM_RATIO, "x min_rtt", BBR_ACD_RTT_FACTOR_DEF, BBR_ACD_RTT_FACTOR_MIN,
	  BBR_ACD_RTT_FACTOR_MAX, "rtt > rtt_factor x min_rtt declares congestion",
	  BBR_ACD_RTT_FACTOR_USUAL_MIN, BBR_ACD_RTT_FACTOR_USUAL_MAX },
	{ "steady_acks", "steady_acks", offsetof(struct bbr_acd_params, steady_acks), PARAM_UINT,
	  "ACKs", BBR_ACD_STEADY_ACKS_DEF, BBR_ACD_STEADY_ACKS_MIN, BBR_ACD_STEADY_ACKS_MAX,
	  "consecutive steady elevated ACKs that declare congestion",
	  BBR_ACD_STEADY_ACKS_USUAL_MIN, BBR_ACD_STEADY_ACKS_USUAL_MAX },
	{ "halve_once", "halve_once", offsetof(struct bbr_acd_params, halve_once), PARAM_BOOL,
	  "bool", BBR_ACD_HALVE_ONCE_DEF, BBR_ACD_HALVE_ONCE_MIN, BBR_ACD_HALVE_ONCE_MAX,
	  "1: halve once per recovery; 0: on every ACK of the round (paper listing)",
	  BBR_ACD_HALVE_ONCE_USUAL_MIN, BBR_ACD_HALVE_ONCE_USUAL_MAX },
};

static const struct variant_desc rttgain_variants[] = {
	{ "rtt_gain", BBRKIT_VAR_RTTGAIN_GAIN, true, "last RTT-based cruise gain" },
};

static const struct variant_desc acd_variants[] = {
	{ "acd_steady", BBRKIT_VAR_ACD_STEADY, false, "consecutive steady elevated RTT samples" },
	{ "acd_congested", BBRKIT_VAR_ACD_CONGESTED, false, "1 while the detector declares congestion" },
	{ "acd_halvings", BBRKIT_VAR_ACD_HALVINGS, false, "recoveries in which cwnd was halved" },
};

/* What an algorithm adds to the common BBR state; algorithms not listed have nothing. */
static const struct algo extras[] = {
	{ .name = "bbr_rttgain",
	  .params = rttgain_params,
	  .nparams = ARRAY_SIZE(rttgain_params),
	  .params_size = sizeof(struct bbr_rttgain_params),
	  .variants = rttgain_variants,
	  .nvariants = ARRAY_SIZE(rttgain_variants) },
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

void algos_init(void)
{
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *x = extras_of(table[i].name);

		if (!x)
			continue;
		table[i].params = x->params;
		table[i].nparams = x->nparams;
		table[i].params_size = x->params_size;
		table[i].variants = x->variants;
		table[i].nvariants = x->nvariants;
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
