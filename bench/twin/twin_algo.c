// SPDX-License-Identifier: GPL-2.0
/* One algorithm's twin: the Makefile compiles this file once per algorithm with TWIN_ALGO set to its
 * name (bbr1, bbr2, bbr3, bbr_draft), so that each object holds that algorithm's host build, exactly
 * the C of bpf/<algo>.bpf.c, and exports twin_run_<algo>().
 */
#define TWIN_STR(x) #x
#define TWIN_SRC(algo) TWIN_STR(algo.bpf.c)
#define TWIN_PASTE(a, b) a##b
#define TWIN_NAME(prefix, algo) TWIN_PASTE(prefix, algo)
/* bbr2, bbr3 and bbr_draft each define the global `params` (the BPF object's parameter map): one
 * per object.
 */
#define params TWIN_NAME(twin_params_, TWIN_ALGO)
#include "twin.h"
static enum twin_mutation tw_mutation;
#define TWIN_MUTANT(name) (tw_mutation == TWIN_MUT_##name)
#include TWIN_SRC(TWIN_ALGO)

#include "twin_path.h"

static twin_emit_fn tw_emit;

/* Each record as bbrctl would print it for the flow 10.0.0.1:40000 -> 10.0.0.2:5201, timed from the
 * transfer's start.
 */
static void host_trace_record(const struct bbrkit_flow *rec)
{
	struct bbrkit_flow f = *rec;
	static const u8 saddr[4] = { 10, 0, 0, 1 }, daddr[4] = { 10, 0, 0, 2 };

	f.t_ns -= TW_START_US * 1000;
	f.cookie = 1;
	memcpy(f.saddr, saddr, sizeof(saddr));
	memcpy(f.daddr, daddr, sizeof(daddr));
	f.sport = 40000;
	f.dport = 5201;
	tw_emit(&f);
}

int TWIN_NAME(twin_run_, TWIN_ALGO)(const struct twin_cfg *cfg, twin_emit_fn emit)
{
	tw_emit = emit;
	host_trace_enabled = true;
	tw_mutation = cfg->mutation;
#ifdef BBR3_CORE_H
	if (TWIN_MUTANT(probe_rtt_interval))
		params.probe_rtt_interval_ms = 10000;
	if (TWIN_MUTANT(loss_thresh))
		params.loss_thresh_permille = 500;
	if (TWIN_MUTANT(probe_wait))
		params.probe_wait_base_ms = 6000;
#endif
	return tw_run(cfg, twin_packet_cap(cfg), NULL);
}
