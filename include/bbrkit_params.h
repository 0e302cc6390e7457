/* SPDX-License-Identifier: GPL-2.0 */
/* Parameters: one table per algorithm, the one place a parameter is defined. From each table come
 * the params struct (the BPF map's value, BTF-described), the PREFIX_DEF/_MIN/_MAX/_USUAL_* constants,
 * the BPF object's initial values (BBRKIT_PARAMS_DEFAULTS), bbrctl's descriptors (loader/algos.c)
 * and the table in docs/reference.md (bbrctl-gen params-table; tests/loader/test_params_table.py).
 * Adding a parameter is one row here and its use in the algorithm.
 *
 * Each algorithm with parameters keeps one instance of its struct in a pinned map named "params";
 * every field is a __u32 named with its unit, in the order of the rows (bpftool writes them by
 * position: reordering rows is an ABI change, BBRKIT_ABI_VERSION). bpftool can write anything
 * there, so every read goes through bbrkit_param(): a value outside [MIN, MAX] acts as the default,
 * never as the nearest bound (a raw 0 for alpha would otherwise pace at 1/256 of the bandwidth).
 * MIN and MAX are what a researcher may set on purpose; USUAL_MIN and USUAL_MAX the band around the
 * paper's value outside which `bbrctl show` warns (a typo such as 75 for 750 stays in range but
 * cripples flows).
 *
 * A row: X(key, field, PREFIX, kind, unit, default, min, max, usual_min, usual_max, help)
 *   key      `bbrctl set` key; field: the struct field; PREFIX: of the constants
 *   kind     RATIO (stored in thousandths, BBRKIT_PERMILLE), UINT or BOOL
 *   unit     as bbrctl shows it; values are stored values (ratios in permille)
 *   help     one line for `bbrctl show`, --help, the man page and the docs table
 * Include through bbrkit.h.
 */
#ifndef BBRKIT_PARAMS_H
#define BBRKIT_PARAMS_H

/* One unsigned compare: raw - min wraps to a huge value below min. `bbrctl show` applies the same
 * rule to report what a flow acts on.
 */
static inline __attribute__((always_inline)) __u32 bbrkit_param(__u32 raw, __u32 min, __u32 max, __u32 def)
{
	return raw - min <= max - min ? raw : def;
}

/* bbrkit_param() of a field with bounds named by prefix, e.g. BBRKIT_PARAM(p.alpha_permille,
 * BBR_RTTGAIN_ALPHA).
 */
#define BBRKIT_PARAM(raw, prefix) bbrkit_param(raw, prefix##_MIN, prefix##_MAX, prefix##_DEF)

/* bbr_rttgain (Xiong 2020). */
#define BBR_RTTGAIN_PARAMS(X) \
	/* The paper's listing uses alpha 0.75; its experiments also run 1 and 0.5. Below 4/1000 the \
	 * gain is 0 in 1/256 fixed point, i.e. not representable. Under 0.1 cruise phases pace at a \
	 * tenth of the bandwidth. \
	 */ \
	X(alpha, alpha_permille, BBR_RTTGAIN_ALPHA, RATIO, "ratio", 1000, 4, 1000, 100, 1000, \
		"cruise pacing gain = alpha x min_rtt / rtt") \
	/* 1.25 x min_rtt in the paper; below 1.0 every probe would end on its first ACK. Under 1.1 a \
	 * probe rarely outlives its first ACKs; over 2 the probe's queue doubles the RTT. \
	 */ \
	X(probe_exit, probe_exit_permille, BBR_RTTGAIN_PROBE_EXIT, RATIO, "x min_rtt", 1250, 1000, 8000, \
		1100, 2000, "the 5/4 probe ends once rtt >= probe_exit x min_rtt") \
	/* The paper sets no floor; a floor above alpha would override the RTT signal entirely, and \
	 * near 1 the RTT-based gain no longer acts. \
	 */ \
	X(gain_floor, gain_floor_permille, BBR_RTTGAIN_GAIN_FLOOR, RATIO, "ratio", 0, 0, 1000, 0, 900, \
		"lower bound of the cruise gain; 0 = none (the paper's)")

/* bbr_acd (Mahmud et al. 2020). */
#define BBR_ACD_PARAMS(X) \
	/* Paper alpha = 1000 us; its Table 3 also runs 500 and 1500 us. 0 counts only equal samples. \
	 * Under 0.1 ms jitter alone keeps the detector quiet; over 10 ms most queues look steady. \
	 */ \
	X(tolerance_us, tolerance_us, BBR_ACD_TOLERANCE, UINT, "us", 1000, 0, 1000000, 100, 10000, \
		"|rtt - previous rtt| <= tolerance counts as steady") \
	/* Paper: twice min_rtt; 1.0 would call every queue congestion. Under 1.25 BBR's own probe \
	 * queue declares congestion; over 10 the RTT rule never fires. \
	 */ \
	X(rtt_factor, rtt_factor_permille, BBR_ACD_RTT_FACTOR, RATIO, "x min_rtt", 2000, 1000, 100000, 1250, \
		10000, "rtt > rtt_factor x min_rtt declares congestion") \
	/* Paper: three ACKs, i.e. the steady count reaches 2; one ACK has nothing to compare with. \
	 * Over 16 the steady rule hardly ever fires. \
	 */ \
	X(steady_acks, steady_acks, BBR_ACD_STEADY_ACKS, UINT, "ACKs", 3, 2, 255, 2, 16, \
		"consecutive steady elevated ACKs that declare congestion") \
	/* The paper's listing halves on every ACK of the round. */ \
	X(halve_once, halve_once, BBR_ACD_HALVE_ONCE, BOOL, "bool", 0, 0, 1, 0, 1, \
		"1: halve once per recovery; 0: on every ACK of the round (paper listing)")

/* bbr3 (BBRv3) and bbr2 (BBRv2 alpha) share one parameter set with the same defaults: the values
 * of Google's v3 tcp_bbr.c, which are also v2alpha's.
 */
#define BBR3_PARAMS(X) \
	/* 2%: v3's bbr_loss_thresh. The kernel's fixed point (1/256) has nothing finer than 0.004; \
	 * above half the flight lost, the cut would come too late to matter. Under 1% random loss \
	 * alone ends every probe; over 10% a probe fills the buffer before it stops. \
	 */ \
	X(loss_thresh, loss_thresh_permille, BBR3_LOSS_THRESH, RATIO, "ratio", 20, 4, 500, 10, 100, \
		"a probe losing more than this share of its flight went too far") \
	/* 0.7: draft-ietf-ccwg-bbr BBRBeta (the kernel stores the cut, 0.3). 1.0 disables the \
	 * response; under 0.5 one loss round halves the flow or more. \
	 */ \
	X(beta, beta_permille, BBR3_BETA, RATIO, "ratio", 700, 100, 1000, 500, 1000, \
		"factor kept by a loss cut of bw_lo, inflight_lo and inflight_hi") \
	/* 15%: v3's bbr_inflight_headroom; over 30% cruising leaves much of the path unused. */ \
	X(headroom, headroom_permille, BBR3_HEADROOM, RATIO, "ratio", 150, 0, 500, 0, 300, \
		"share of inflight_hi left unused while cruising") \
	/* Off: v3 uses ECN only on routes marked as shallow-threshold ECN, which a stock kernel \
	 * cannot flag. \
	 */ \
	X(ecn, ecn, BBR3_ECN, BOOL, "bool", 0, 0, 1, 0, 1, \
		"react to CE marks (ECN-capable, shallow-threshold marking path)") \
	/* 50%: v3's bbr_ecn_thresh; at least 1/256, as for loss_thresh. Under 10% a few marks end \
	 * every probe. \
	 */ \
	X(ecn_thresh, ecn_thresh_permille, BBR3_ECN_THRESH, RATIO, "ratio", 500, 4, 1000, 100, 1000, \
		"a probe whose ACKs carry more CE than this went too far") \
	/* 5 ms: v3's bbr_ecn_max_rtt_us (datacenter paths). As in v3 it decides eligibility only: a \
	 * flow is eligible from the first round start at which min_rtt is within it, and stays so. \
	 */ \
	X(ecn_max_rtt_us, ecn_max_rtt_us, BBR3_ECN_MAX_RTT, UINT, "us", 5000, 0, 10000000, 0, 10000000, \
		"ECN once min_rtt <= this at a round start, then for good; 0 = at any RTT") \
	/* 5 s: v3's bbr_probe_rtt_win_ms; at most the 10 s min_rtt window, at least one PROBE_RTT \
	 * stay. Under 1 s PROBE_RTT costs over 10% of the time. \
	 */ \
	X(probe_rtt_interval_ms, probe_rtt_interval_ms, BBR3_PROBE_RTT_INTERVAL, UINT, "ms", 5000, 200, \
		10000, 1000, 10000, "PROBE_RTT when min_rtt was not refreshed for this long") \
	/* 2 s + [0, 1 s): v3's bbr_bw_probe_base_us and bbr_bw_probe_rand_us. Under 0.5 s probes \
	 * come every few rounds; over 10 s new bandwidth goes unnoticed long. \
	 */ \
	X(probe_wait_base_ms, probe_wait_base_ms, BBR3_PROBE_WAIT_BASE, UINT, "ms", 2000, 0, 60000, 500, \
		10000, "bandwidth probes are this far apart, plus a random part") \
	X(probe_wait_rand_ms, probe_wait_rand_ms, BBR3_PROBE_WAIT_RAND, UINT, "ms", 1000, 0, 60000, 0, \
		10000, "the random part of the wait is uniform below this")

/* bbr_draft (draft-ietf-ccwg-bbr-06): v3's rows (its core reads them; the draft gives the same
 * LossThresh, Beta, Headroom and ProbeRTTInterval, the last one of its open questions), then the
 * draft's own open questions.
 */
#define BBR_DRAFT_PARAMS(X) BBR3_PARAMS(X) BBR_DRAFT_OWN_PARAMS(X)
#define BBR_DRAFT_OWN_PARAMS(X) \
	/* 0.5: the draft's DrainPacingGain; any value up to 1 / cwnd gain 2 drains STARTUP's queue \
	 * within a round (its derivation), 0.35 (~1/2.885, v3's) is the alternative it weighs. Under \
	 * 0.2 DRAIN leaves the pipe empty for most of its round. \
	 */ \
	X(drain_gain, drain_gain_permille, BBR_DRAFT_DRAIN_GAIN, RATIO, "ratio", 500, 100, 1000, 300, 600, \
		"DRAIN's pacing gain (draft: 0.5; v3: 0.35)") \
	/* 1: the draft's BBR.ack_phase, which keeps judging the probe's losses for the round after the \
	 * probe ends; 0 stops judging them when the probe ends. \
	 */ \
	X(ack_phase, ack_phase, BBR_DRAFT_ACK_PHASE, BOOL, "bool", 1, 0, 1, 0, 1, \
		"1: probe losses judged until a round after the probe (BBR.ack_phase); 0: until it ends")

/* What each table makes. Enumerators, not #defines, so that the table can name them; every value
 * fits an int.
 */
#define BBRKIT_PARAM_FIELD(key, field, ...) __u32 field;
#define BBRKIT_PARAM_CONSTANTS(key, field, prefix, kind, unit, def, min, max, usual_min, usual_max, help) \
	prefix##_DEF = def, prefix##_MIN = min, prefix##_MAX = max, prefix##_USUAL_MIN = usual_min, \
	prefix##_USUAL_MAX = usual_max,
#define BBRKIT_PARAM_DEFAULT(key, field, prefix, ...) .field = prefix##_DEF,
/* The initializer of a params struct holding every default: { BBR3_PARAMS(...) } in one word. */
#define BBRKIT_PARAMS_DEFAULTS(table) \
	{ \
		table(BBRKIT_PARAM_DEFAULT) \
	}

struct bbr_rttgain_params {
	BBR_RTTGAIN_PARAMS(BBRKIT_PARAM_FIELD)
};
enum { BBR_RTTGAIN_PARAMS(BBRKIT_PARAM_CONSTANTS) };

struct bbr_acd_params {
	BBR_ACD_PARAMS(BBRKIT_PARAM_FIELD)
};
enum { BBR_ACD_PARAMS(BBRKIT_PARAM_CONSTANTS) };

struct bbr3_params {
	BBR3_PARAMS(BBRKIT_PARAM_FIELD)
};
enum { BBR3_PARAMS(BBRKIT_PARAM_CONSTANTS) };

struct bbr_draft_params {
	BBR_DRAFT_PARAMS(BBRKIT_PARAM_FIELD)
};
enum { BBR_DRAFT_OWN_PARAMS(BBRKIT_PARAM_CONSTANTS) }; /* v3's rows have theirs above */

#endif /* BBRKIT_PARAMS_H */
