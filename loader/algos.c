// SPDX-License-Identifier: GPL-2.0
/* The algorithm table: one entry per bpf/<algo>.bpf.c (listed by the Makefile in bbrkit_algos.h), with
 * the parameter and variant-state descriptions of the algorithms that have them, and lookup by name.
 * No libbpf calls: the host twin links it for the record printer (select.c resolves command lines).
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

/* A row of a table in include/bbrkit_params.h as bbrctl's descriptor of a field of struct type. */
#define PARAM_DESC( \
	type, key_, field_, prefix, kind_, unit_, def_, min_, max_, usual_min_, usual_max_, help_) \
	{ .name = #key_, \
		.field = #field_, \
		.offset = offsetof(type, field_), \
		.kind = PARAM_##kind_, \
		.unit = unit_, \
		.def = def_, \
		.min = min_, \
		.max = max_, \
		.help = help_, \
		.usual_min = usual_min_, \
		.usual_max = usual_max_ },
#define RTTGAIN_DESC(...) PARAM_DESC(struct bbr_rttgain_params, __VA_ARGS__)
#define ACD_DESC(...) PARAM_DESC(struct bbr_acd_params, __VA_ARGS__)
#define V3_DESC(...) PARAM_DESC(struct bbr3_params, __VA_ARGS__)
#define DRAFT_DESC(...) PARAM_DESC(struct bbr_draft_params, __VA_ARGS__)

static const struct param_desc rttgain_params[] = { BBR_RTTGAIN_PARAMS(RTTGAIN_DESC) };
static const struct param_desc acd_params[] = { BBR_ACD_PARAMS(ACD_DESC) };
/* bbr2 and bbr3 share one parameter struct and one set of state slots. */
static const struct param_desc v3_params[] = { BBR3_PARAMS(V3_DESC) };
/* bbr_draft: v3's rows, then the draft's; v3's state slots. */
static const struct param_desc draft_params[] = { BBR_DRAFT_PARAMS(DRAFT_DESC) };

static const struct variant_desc v3_variants[] = {
	{ .key = "bw_phase",
		.slot = BBRKIT_VAR_V3_PHASE,
		.kind = VAR_V3_PHASE,
		.help = "PROBE_BW sub-phase: UP, DOWN, CRUISE, REFILL" },
	{ .key = "loss_rate",
		.slot = BBRKIT_VAR_V3_LOSS_RATE,
		.kind = VAR_PERMILLE,
		.help = "lost / sent in the last loss round" },
	{ .key = "ecn_rate",
		.slot = BBRKIT_VAR_V3_ECN_RATE,
		.kind = VAR_PERMILLE,
		.help = "CE-marked / delivered in the last round" },
	{ .key = "ecn_alpha",
		.slot = BBRKIT_VAR_V3_ECN_ALPHA,
		.kind = VAR_GAIN,
		.help = "smoothed CE fraction" },
	{ .key = "probe_rtt_min_us",
		.slot = BBRKIT_VAR_V3_PROBE_RTT_MIN,
		.kind = VAR_USEC,
		.help = "PROBE_RTT's min RTT filter: no new low for probe_rtt_interval_ms starts PROBE_RTT "
			"(null: no sample)" },
	{ .key = "pp_decisions",
		.slot = BBRKIT_VAR_V3_PP_DECISIONS,
		.kind = VAR_UINT,
		.help = "lost packets judged per packet with their send-time flight (null: ACK-time path)" },
	{ .key = "pp_misses",
		.slot = BBRKIT_VAR_V3_PP_MISSES,
		.kind = VAR_UINT,
		.help = "lost packets without a send record, judged at ACK time (null: ACK-time path)" },
};

static const struct variant_desc rttgain_variants[] = {
	{ .key = "rtt_gain",
		.slot = BBRKIT_VAR_RTTGAIN_GAIN,
		.kind = VAR_GAIN,
		.help = "last RTT-based cruise gain" },
};

static const struct variant_desc acd_variants[] = {
	{ .key = "acd_steady",
		.slot = BBRKIT_VAR_ACD_STEADY,
		.kind = VAR_UINT,
		.help = "consecutive steady elevated RTT samples" },
	{ .key = "acd_congested",
		.slot = BBRKIT_VAR_ACD_CONGESTED,
		.kind = VAR_UINT,
		.help = "1 while the detector declares congestion" },
	{ .key = "acd_halvings",
		.slot = BBRKIT_VAR_ACD_HALVINGS,
		.kind = VAR_UINT,
		.help = "recoveries in which cwnd was halved" },
};

_Static_assert(
	sizeof(struct bbr_rttgain_params) <= MAX_PARAMS_SIZE, "bbr_rttgain_params outgrew MAX_PARAMS_SIZE");
_Static_assert(sizeof(struct bbr3_params) <= MAX_PARAMS_SIZE, "bbr3_params outgrew MAX_PARAMS_SIZE");
_Static_assert(
	sizeof(struct bbr_draft_params) <= MAX_PARAMS_SIZE, "bbr_draft_params outgrew MAX_PARAMS_SIZE");
_Static_assert(sizeof(struct bbr_acd_params) <= MAX_PARAMS_SIZE, "bbr_acd_params outgrew MAX_PARAMS_SIZE");

#define WITH_PARAMS(descs, type) .params = descs, .nparams = ARRAY_SIZE(descs), .params_size = sizeof(type)
#define WITH_VARIANTS(descs) .variants = descs, .nvariants = ARRAY_SIZE(descs)

/* What an algorithm adds to the common BBR state; algorithms not listed have nothing. */
static const struct algo rttgain_extras = { WITH_PARAMS(rttgain_params, struct bbr_rttgain_params),
	WITH_VARIANTS(rttgain_variants) };
static const struct algo acd_extras = { WITH_PARAMS(acd_params, struct bbr_acd_params),
	WITH_VARIANTS(acd_variants) };
static const struct algo v3_extras = { WITH_PARAMS(v3_params, struct bbr3_params), WITH_VARIANTS(v3_variants),
	.per_packet = true };
static const struct algo draft_extras = { WITH_PARAMS(draft_params, struct bbr_draft_params),
	WITH_VARIANTS(v3_variants), .per_packet = true };

static const struct {
	const char *algo;
	const struct algo *extras;
} extras[] = {
	{ .algo = "bbr_rttgain", .extras = &rttgain_extras },
	{ .algo = "bbr2", .extras = &v3_extras },
	{ .algo = "bbr3", .extras = &v3_extras },
	{ .algo = "bbr_acd", .extras = &acd_extras },
	{ .algo = "bbr_draft", .extras = &draft_extras },
};

static const struct algo *extras_of(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(extras); i++)
		if (!strcmp(extras[i].algo, name))
			return extras[i].extras;
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

		while (i < nalgos && strcmp(table[i].name, extras[e].algo))
			i++;
		if (i == nalgos) {
			fprintf(stderr,
				"bbrctl: internal error: parameters for '%s', which is no built algorithm\n",
				extras[e].algo);
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
