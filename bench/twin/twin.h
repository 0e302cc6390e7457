/* SPDX-License-Identifier: GPL-2.0 */
/* bbrkit-twin: the host twin of a real transfer. The same core C as the BPF programs (bpf/), built
 * for the host as the unit tests build it, drives a simulated closed-loop TCP sender through a
 * scripted path and sender schedule, deterministically (seeded), and prints the trace records
 * `bbrctl trace --format jsonl` would (loader/record.c). twin.c reads the command line; twin_algo.c,
 * compiled once per algorithm, runs one transfer (twin_path.h).
 */
#ifndef TWIN_H
#define TWIN_H

#include <stdbool.h>
#include <stdint.h>

#include "bbrkit.h"

#define TWIN_MAX_ITEMS 32 /* entries per schedule option: more than any test case needs */

/* Mutations: each breaks the one step of the BBR draft's Appendix A that a conformance case tests, so
 * that a test can see the case's check fail without it (tests/bench/test_conformance_mutations.py).
 * Each lives where its step does: the parameters of bbr2, bbr3 and bbr_draft (twin_algo.c), or a
 * TWIN_MUTANT() hook in bpf/ that only the twin's build defines (the BPF programs and unit tests
 * compile it out).
 */
#define TWIN_MUTATIONS(X) \
	X(full_bw_count, "A.1: the plateau ends STARTUP after 2 rounds, not 3 (bbr3, bbr_draft)") \
	X(drain_time_exit, "A.4: DRAIN has no time exit, only the inflight one (bbr_draft)") \
	X(max_bw_window, "A.16: the max_bw filter never advances, so max_bw never falls (bbr_draft)") \
	X(shortterm_cut, "A.17: loss never lowers bw_shortterm or inflight_shortterm (bbr_draft)") \
	X(drain_exit, \
		"A.3: DRAIN lasts until inflight is a third of BBRInflight(1.0) (bbr2, bbr3, bbr_draft)") \
	X(probe_rtt_interval, "A.10: PROBE_RTT 10 s apart, not 5 s (bbr2, bbr3, bbr_draft)") \
	X(probe_wait, "A.9: bandwidth probes 6-7 s apart, not 2-3 s (bbr2, bbr3, bbr_draft)") \
	X(probe_rtt_exit, "A.20: PROBE_RTT always ends in PROBE_BW, STARTUP or not (bbr2, bbr3, bbr_draft)") \
	X(loss_thresh, "A.6, A.21: a probe ends on loss above 50%, not 2% (bbr2, bbr3, bbr_draft)") \
	X(loss_cut, "A.21: loss in UP leaves inflight_longterm uncut (bbr2, bbr3, bbr_draft)") \
	X(up_step_doubling, \
		"A.15: UP's inflight_longterm step stays one packet per cwnd, never doubles (bbr2, bbr3, " \
		"bbr_draft)") \
	X(undo_restore, \
		"A.18, A.19: undoing a spurious recovery restores no bound (bbr2, bbr3; bbr_draft: nor " \
		"the state)") \
	X(up_plateau, "A.5: UP ends at its first round's end, without a plateau (bbr3, bbr_draft)") \
	X(idle_restart, "A.11: a restart from idle does not spare PROBE_RTT (bbr2, bbr3, bbr_draft)") \
	X(app_limited_plateau, "A.7: app-limited rounds count towards STARTUP's plateau (bbr3, bbr_draft)") \
	X(app_limited_max_bw, \
		"A.22: app-limited samples below max_bw enter its filter too (bbr2, bbr3, bbr_draft)") \
	X(down_gain, "A.8: DOWN paces at 1.0, not 0.9 (bbr3, bbr_draft)") \
	X(min_cwnd, \
		"A.14: the cwnd floor is 1 packet, not 4 (bbr2, bbr3, bbr_draft; bbr1 keeps 4 by its " \
		"quantization budget)") \
	X(extra_acked, \
		"A.12, A.13: cwnd not raised by extra_acked (bbr2, bbr3, bbr_draft; bbr1 once the pipe " \
		"is full)")

#define TWIN_MUTATION_ENUM(name, help) TWIN_MUT_##name,
enum twin_mutation { TWIN_MUT_NONE, TWIN_MUTATIONS(TWIN_MUTATION_ENUM) };

/* A value from a time on (rate steps). */
struct twin_step {
	uint64_t at_us;
	uint64_t value;
};

/* A value over [from_us, to_us). */
struct twin_window {
	uint64_t from_us, to_us;
	uint64_t value;
};

struct twin_cfg {
	struct twin_step rate[TWIN_MAX_ITEMS]; /* bottleneck bit/s from each time on; rate[0].at_us == 0 */
	int nrate;
	uint32_t rtt_us;			/* base (propagation) round trip */
	uint64_t buffer_bytes;			/* bottleneck FIFO */
	struct twin_window app[TWIN_MAX_ITEMS]; /* the application writes value bit/s in the window */
	int napp;
	struct twin_window pause[TWIN_MAX_ITEMS]; /* the application writes nothing in the window */
	int npause;
	struct twin_window loss[TWIN_MAX_ITEMS]; /* random drops, value per million packets */
	int nloss;
	uint64_t spurious_us[TWIN_MAX_ITEMS]; /* the first packet sent from then on is reordered */
	int nspurious;
	uint32_t ack_aggregation_us; /* ACKs leave the path in bursts at multiples of this; 0: none */
	struct twin_window blackout[TWIN_MAX_ITEMS]; /* ACKs due in the window reach the sender at its end */
	int nblackout;
	uint64_t policer_bps;	      /* a token bucket ahead of the FIFO drops what exceeds it; 0: none */
	uint64_t policer_burst_bytes; /* the bucket's depth */
	uint64_t duration_us;
	uint64_t seed;
	enum twin_mutation mutation;
};

/* Receives each record, its t_ns already the time since the transfer began. */
typedef void (*twin_emit_fn)(const struct bbrkit_flow *f);

/* Bytes per packet on the simulated path (an Ethernet MSS with timestamps). */
#define TWIN_MSS 1448
/* The frame a policer meters: the MSS and 66 bytes of TCP (with timestamps), IP and Ethernet headers. */
#define TWIN_FRAME_BYTES (TWIN_MSS + 66)

/* Packets a transfer may send at most (about 500 MB of state); a longer or faster one is refused. */
#define TWIN_MAX_PACKETS 8000000ULL

/* The packets a run of cfg may send: what the bottleneck can carry at its top rate, twice over for
 * retransmits and drops.
 */
static inline uint64_t twin_packet_cap(const struct twin_cfg *cfg)
{
	uint64_t top = 0;

	for (int i = 0; i < cfg->nrate; i++)
		top = cfg->rate[i].value > top ? cfg->rate[i].value : top;
	return 2 * (top / 8 * (cfg->duration_us / 1000) / 1000 / TWIN_MSS) + 10000;
}

/* Each runs one transfer of cfg: 0, or -1 when memory ran out. */
int twin_run_bbr1(const struct twin_cfg *cfg, twin_emit_fn emit);
int twin_run_bbr2(const struct twin_cfg *cfg, twin_emit_fn emit);
int twin_run_bbr3(const struct twin_cfg *cfg, twin_emit_fn emit);
int twin_run_bbr_draft(const struct twin_cfg *cfg, twin_emit_fn emit);

#endif /* TWIN_H */
