// SPDX-License-Identifier: GPL-2.0
/* One algorithm's twin: the Makefile compiles this file once per algorithm with TWIN_ALGO set to its
 * name (bbr1, bbr2, bbr3), so that each object holds that algorithm's host build, exactly the C of
 * bpf/<algo>.bpf.c, and exports twin_run_<algo>().
 */
#define TWIN_STR(x) #x
#define TWIN_SRC(algo) TWIN_STR(algo.bpf.c)
#define TWIN_PASTE(a, b) a##b
#define TWIN_NAME(prefix, algo) TWIN_PASTE(prefix, algo)
/* bbr2 and bbr3 each define the global `params` (the BPF object's parameter map): one per object. */
#define params TWIN_NAME(twin_params_, TWIN_ALGO)
#include TWIN_SRC(TWIN_ALGO)

#include "twin_path.h"

int TWIN_NAME(twin_run_, TWIN_ALGO)(const struct twin_cfg *cfg, twin_emit_fn emit)
{
	return tw_run(cfg, emit, twin_packet_cap(cfg));
}
