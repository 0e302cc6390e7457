/* SPDX-License-Identifier: GPL-2.0 */
/* BBRv3, and the BBRv2 alpha as a small delta on it, for a stock kernel.
 *
 * Compared line by line with Google's v3 net/ipv4/tcp_bbr.c (github.com/google/bbr, branch v3) and,
 * for bbr2, the v2alpha net/ipv4/tcp_bbr2.c (v2alpha-2019-07-28); draft-ietf-ccwg-bbr was not
 * compared and lends only names. What v3 does:
 * - STARTUP at pacing gain 2.77, cwnd gain 2; it ends when the delivery rate plateaus (less than 25%
 *   growth for 3 rounds) or, in a recovery round with at least 6 loss events, when the loss rate of
 *   the flight exceeds loss_thresh (2%), or after 2 rounds with a CE rate above ecn_thresh.
 *   Leaving on loss/ECN sets inflight_hi to max(BDP, the last round's delivered volume).
 * - DRAIN at 1/2.885 until the inflight is down to one BDP.
 * - PROBE_BW as four sub-phases: DOWN (pacing gain 0.91) until inflight is at most BDP and leaves
 *   headroom (15%) below inflight_hi; CRUISE (gain 1) until the randomised wait is over: 2-3 s of
 *   wall clock, or min(63, BDP in packets) rounds minus a random 0-1, whichever comes first; REFILL
 *   (gain 1, short-term bounds lifted) for one round; UP (gain 5/4, cwnd gain 2.25) raising
 *   inflight_hi by a slope that doubles every round, until the delivery rate plateaus, or the
 *   inflight reaches an inflight_hi that was too high last time, or the loss rate (or CE rate)
 *   exceeds its threshold, which cuts inflight_hi to max(flight at the loss, beta x target).
 * - Bounds: bw = min(bw_hi, bw_lo), bw_hi the max delivery rate of this and the last probe cycle;
 *   in DOWN/CRUISE/PROBE_RTT a round with loss cuts bw_lo and inflight_lo by beta (0.7), never
 *   below the last round's delivered rate and volume; CE marks cut inflight_lo by ecn_alpha/3.
 *   cwnd = min(gain x BDP + aggregation allowance (floored at 3 TSO skbs), inflight_lo, and
 *   inflight_hi in DOWN/REFILL/UP or inflight_hi less headroom in CRUISE/PROBE_RTT).
 * - PROBE_RTT when min_rtt was not refreshed for 5 s: cwnd 0.5 x BDP for max(200 ms, one round).
 * - Pacing at bw x gain less 1%, as BBRv1.
 *
 * The substrate (bbr_substrate.h), which BBRv1 shares, keeps its struct bbr_core in icsk_ca_priv
 * and lends v3 everything the two agree on: rounds, min_rtt, gains, mode, ACK aggregation, pacing,
 * BDP, the EDT inflight estimate, cwnd save/restore. core.bw.s[0].v holds v3's bw (min of bw_hi and
 * bw_lo, kept current by bbr3_set_bw()), so the substrate's helpers that read the estimate use v3's.
 * BBRv1's state machine (bbr_core.h) is not included.
 *
 * State beyond the 104 bytes: struct bbr3 (112 bytes) lives in BPF_MAP_TYPE_SK_STORAGE, looked up
 * once per ACK (bbr3_main) and passed down. Packing does not work: the core fields v3 shares take
 * ~56 bytes, leaving 48 (the v1-only max filter, long-term sampling and ext) for a model of 96
 * (plus 16 bytes of telemetry), and narrowing bandwidths or inflights to 16 bits would
 * change the algorithm. The storage is created at init and, should that fail, on a later ACK;
 * until it exists the flow keeps its cwnd and pacing rate.
 *
 * Signals a stock kernel does not give a congestion control, and what stands in for them:
 * C. skb_marked_lost (a hook per lost skb, with that skb's tx.in_flight and tx.lost): the
 *    per-packet path (bbr3_pp_*, below), programs on the kernel's tcp_rate_skb_sent() and
 *    tcp_mark_skb_lost() that bbrctl attaches as fentry or kprobes, judges each lost skb as v3 does
 *    and leaves the decision for the next callback that sees losses. Where the kernel refuses both
 *    (bbrctl warns once; records then carry no pp_decisions), or for an skb sent beyond its 512
 *    records, the ACK that reports new losses (rs->losses > 0) judges them as one, with A and B, the
 *    crossing solved with pcount = rs->losses: not v3's decisions (tests/unit/test_bbr3_pp.c).
  * A. rs->tx_in_flight (the flight when the ACKed packet was sent), read by the per-ACK checks
 *    (adapt_upper_bounds, STARTUP's loss exit) and C's fallback -> in a loss round on the per-packet
 *    path, the ACKed skb's record (bbr3_pp_acked); otherwise rs->prior_in_flight (the flight when
 *    the ACK arrived). Larger while UP grows the flight, smaller in recovery (cwnd cut, lost packets
 *    leave it); outside loss rounds it only decides whether a larger flight raises inflight_hi.
 * B. rs->lost (packets lost since the ACKed packet was sent), read by the same and by
 *    loss_in_cycle -> the per-packet path's record; otherwise tp->lost minus its value when the
 *    current loss round began (bbr3_lost_in_round()), which leaves out the previous round's tail.
 * D. rs->is_ece (this ACK's ECE) -> this ACK's rise of tp->delivered_ce, which the kernel raises by
 *    the ACK's delivered packets exactly when it carries ECE; the kernel's per-route
 *    "shallow-threshold ECN" flag (TCP_ECN_LOW), which does not exist here -> the `ecn` parameter.
 *    Eligibility is v3's otherwise: ECN negotiated (TCP_ECN_OK) and min_rtt <= ecn_max_rtt_us at
 *    a round start make the flow eligible for good (bbr3_check_ecn_eligible).
 * E. Not done: the TLP-repaired-loss event, rs->is_acking_tlp_retrans_seq, PLB, fast_ack_mode,
 *    v3's app-limited fast path (a CPU saving: the full model runs every ACK), and
 *    - the min_rtt-based TSO allowance: 64 KB halved per 512 us of min_rtt, so under one MSS from
 *      ~3 ms and zero from ~8.7 ms; it matters only on sub-3 ms paths;
 *    - TCP_ECN_ECT_PERMANENT (ECT on retransmits and pure ACKs): a stock kernel has no such flag, so
 *      retransmits leave Not-ECT and an ECN AQM drops rather than marks them;
 *    - precise (DCTCP-style) CE echo by the receiver: possible for a BPF congestion control on the
 *      receiving socket (the kernel's bpf_dctcp selftest does it from cwnd_event with
 *      bpf_tcp_send_ack), not implemented here; with classic RFC 3168 feedback the receiver sets ECE
 *      on every ACK from a CE mark until the sender's CWR, so delivered_ce, and the CE fraction that
 *      ecn_thresh and ecn_alpha read, is overstated.
 * F. RTO marks: on the per-packet path each marked skb is judged with its own record, the decision
 *    applied in ssthresh (tcp_enter_loss() marks, then calls it). Otherwise they are judged in
 *    set_state(TCP_CA_Loss), with the flight outstanding at the RTO (packets_out - sacked_out) and
 *    the cwnd saved by ssthresh, as the last marked skb. B's base is then moved past them.
 * Where the shared substrate deviates from v3: the ACK-aggregation window is 5-10 rounds also in
 * STARTUP (v3: 1-2 rounds); time stamps are 1024 us ticks, as in BBRv1.
 *
 * The algorithm file defines the two rule hooks below (bbr3 with v3's rules, bbr2 with v2alpha's)
 * and may override the BBR3_* constants before including this header.
 */
#ifndef BBR3_CORE_H
#define BBR3_CORE_H

/* v3 values; bbr2.bpf.c overrides them with v2alpha's. Every fixed-point value here and below is
 * the integer v3's (or v2alpha's) expression yields at BBR_UNIT = 256, checked one by one: STARTUP
 * pacing 710 (bbr2: 739), DRAIN 88, DOWN 232 (bbr2: 192), UP 320, cwnd gain 512 (UP 576), PROBE_RTT
 * cwnd 128, ECN alpha gain 16, ECN factor 85, re-probe 128, plateau growth 320; and from the
 * permille parameters: loss_thresh 5, headroom 38, ecn_thresh 128 (v3's 2%, 15%, 50% of 256, rounded
 * down), beta 180 (v3 rounds the 0.3 cut down to 76 and keeps 256 - 76; see bbr3_beta).
 */
#ifndef BBR3_STARTUP_PACING_GAIN
#define BBR3_STARTUP_PACING_GAIN (BBR_UNIT * 277 / 100 + 1) /* 4 ln 2: Reno's slow-start growth */
#endif
#ifndef BBR3_STARTUP_CWND_GAIN
#define BBR3_STARTUP_CWND_GAIN (BBR_UNIT * 2)
#endif
#ifndef BBR3_DOWN_GAIN
#define BBR3_DOWN_GAIN (BBR_UNIT * 91 / 100) /* drain the probe's queue within a few rounds */
#endif
#ifndef BBR3_UP_CWND_EXTRA
#define BBR3_UP_CWND_EXTRA (BBR_UNIT / 4) /* cwnd gain 2.25 in UP: room for the 5/4 probe */
#endif
#ifndef BBR3_FULL_LOSS_CNT
#define BBR3_FULL_LOSS_CNT 6 /* loss events in a recovery round that may end STARTUP */
#endif
#ifndef BBR3_ECN_REPROBE_GAIN
#define BBR3_ECN_REPROBE_GAIN (BBR_UNIT / 2) /* after CE-only cycles, re-probe from 0.5 x inflight_hi */
#endif
#ifndef BBR3_STARTUP_HI_KEEPS_LATEST
#define BBR3_STARTUP_HI_KEEPS_LATEST 1 /* loss/ECN exit: inflight_hi >= last round's volume */
#endif
#ifndef BBR3_UP_FORGETS_UNUSED_ACKS
#define BBR3_UP_FORGETS_UNUSED_ACKS 0 /* v2: ACKs while not cwnd-limited earn no inflight_hi growth */
#endif

#define BBRKIT_CC(fn) bbr3_##fn

#include "bbr_substrate.h"

BBR_INLINE u32 bbr_core_startup_pacing_gain(void)
{
	return BBR3_STARTUP_PACING_GAIN;
}

/* Gain of UP, in BBR_UNIT: probe for 25% more bandwidth. */
#define BBR3_UP_GAIN (BBR_UNIT * 5 / 4)
/* cwnd in PROBE_RTT, in BBR_UNIT of BDP: half a BDP drains the queue but keeps the pipe busy. */
#define BBR3_PROBE_RTT_CWND_GAIN (BBR_UNIT / 2)
/* EWMA gain of the CE fraction, in BBR_UNIT (1/16). */
#define BBR3_ECN_ALPHA_GAIN (BBR_UNIT / 16)
/* Share of ecn_alpha cut from inflight_lo per CE round, in BBR_UNIT (1/3). */
#define BBR3_ECN_FACTOR (BBR_UNIT / 3)
/* Rounds above ecn_thresh that end STARTUP. */
#define BBR3_FULL_ECN_CNT 2
/* Rounds between bandwidth probes at most, for Reno coexistence up to a 62-packet BDP. */
#define BBR3_BW_PROBE_MAX_ROUNDS 63
/* That round count starts at a random 0..this-1, for mixing among flows. */
#define BBR3_BW_PROBE_RAND_ROUNDS 2
/* Most rounds the UP slope may double (bits of bw_probe_up_rounds). */
#define BBR3_UP_ROUNDS_MAX 30
/* The kernel's TCP_ECN_OK bit of tp->ecn_flags (a #define, so not in BTF). */
#define BBR3_TCP_ECN_OK 1
/* permille x 256 / 1000 = permille x 32 / 125, as a multiply and a 24-bit shift (125 rounded up:
 * exact for 0..1000, whose results are 1/125 apart).
 */
#define BBR3_PERMILLE_TO_UNIT_MUL (32ULL * 134218)
#define BBR3_PERMILLE_TO_UNIT_SHIFT 24

/* How ACKs relate to bandwidth probing (v3's bbr_ack_phase). */
enum bbr3_ack_phase {
	BBR3_ACKS_INIT,		  /* not probing, no probe feedback */
	BBR3_ACKS_REFILLING,	  /* sending at bw to fill the pipe */
	BBR3_ACKS_PROBE_STARTING, /* inflight rising to probe */
	BBR3_ACKS_PROBE_FEEDBACK, /* ACKs of the probe */
	BBR3_ACKS_PROBE_STOPPING, /* probe over, its ACKs still arriving */
};

/* The v3 model beyond the core, in socket storage. */
struct bbr3 {
	u32 bw_hi[2];		  /* max delivery rate of the last and this probe cycle, BW_SCALE */
	u32 bw_lo;		  /* short-term bound, ~0U: none */
	u32 bw_latest;		  /* max delivery rate of the last loss round */
	u32 inflight_hi;	  /* long-term bound, packets, ~0U: none */
	u32 inflight_lo;	  /* short-term bound, packets, ~0U: none */
	u32 inflight_latest;	  /* max delivered volume of the last loss round */
	u32 bw_probe_up_cnt;	  /* packets ACKed per inflight_hi increment in UP */
	u32 bw_probe_up_acks;	  /* packets ACKed since the last increment */
	u32 probe_wait_us;	  /* wall-clock wait from DOWN to the next probe */
	u32 probe_rtt_min_us;	  /* min RTT in the probe_rtt_interval window */
	u32 probe_rtt_min_stamp;  /* ticks, when it was measured */
	u32 loss_round_delivered; /* tp->delivered that ends this loss round */
	u32 round_lost;		  /* tp->lost when this loss round began (approximation B) */
	u32 round_delivered;	  /* tp->delivered then */
	u32 round_ce;		  /* tp->delivered_ce then */
	u32 undo_bw_lo;		  /* the bounds before this recovery, for undo */
	u32 undo_inflight_lo;
	u32 undo_inflight_hi;
	u32 alpha_last_delivered; /* tp->delivered at the last ecn_alpha update */
	u32 alpha_last_delivered_ce;
	u32 last_round_lost;	  /* lost, delivered and CE-marked in the last loss round: the */
	u32 last_round_delivered; /* telemetry's rates, divided by the reader (bbr3_fill_flow) */
	u32 last_round_ce;
	u32 ack_delivered_ce;  /* tp->delivered_ce after the last ACK: a rise is this ACK's CE (v3: is_ece) */
	u32 drain_start_round; /* round at the last entry to DRAIN (telemetry: the draft's name) */
	u32 initialized : 1,   /* bbr3_state_init() ran */
		init_cwnd : 7, /* cwnd at init */
		full_bw_now : 1,	 /* the delivery rate plateaued recently */
		startup_ecn_rounds : 2,	 /* consecutive high-CE rounds in STARTUP */
		loss_in_cycle : 1,	 /* loss in this probe cycle */
		ecn_in_cycle : 1,	 /* CE in this probe cycle */
		bw_probe_up_rounds : 5,	 /* rounds in UP: the slope doubles each */
		bw_probe_samples : 1,	 /* rate samples reflect the probe */
		prev_probe_too_high : 1, /* the last UP hit too much loss/CE */
		stopped_risky_probe : 1, /* the last UP stopped at inflight_hi */
		loss_round_start : 1,	 /* this ACK starts a loss round */
		loss_in_round : 1,	 /* loss in this loss round */
		ecn_in_round : 1,	 /* CE in this loss round */
		ack_phase : 3,		 /* enum bbr3_ack_phase */
		ecn_eligible : 1,	 /* ECN-capable path, small min_rtt: kept once set */
		unused_a : 3;
	u32 ecn_alpha : 9,		  /* EWMA of the CE fraction, BBR_UNIT */
		rounds_since_probe : 8,	  /* rounds since the last probe */
		loss_events_in_round : 4, /* ACKs reporting losses in this loss round (STARTUP) */
		pp_on : 1,		  /* the per-packet path judges this flow's lost skbs */
		unused_b : 10;
};

/* An algorithm whose table extends v3's rows (bbr_draft) names its table and struct. */
#ifndef BBR3_PARAMS_TABLE
#define BBR3_PARAMS_TABLE BBR3_PARAMS
#define BBR3_PARAMS_STRUCT bbr3_params
#endif
struct BBR3_PARAMS_STRUCT params SEC(".data.params") = BBRKIT_PARAMS_DEFAULTS(BBR3_PARAMS_TABLE);

/* Rule hooks each algorithm file defines. */
/* The plateau estimator, every ACK: sets b->full_bw_reached in STARTUP, s->full_bw_now for UP. */
BBR_INLINE void bbr3_variant_check_full_bw(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw);
/* UP, after the inflight_hi check: true ends the probe (no loss or CE too high seen). */
BBR_INLINE bool bbr3_variant_probe_up_done(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw);

/* Send records of the per-packet loss path, per flow: a flight of up to this many skbs (a TSO skb
 * carries up to 64 KB), 6 KB per flow.
 */
#define BBR3_TX_RING_BITS 9
#define BBR3_TX_RING (1U << BBR3_TX_RING_BITS)
#define BBR3_TX_RING_MASK (BBR3_TX_RING - 1)

/* What v3 keeps in an skb's control block at transmit and a stock kernel does not. */
struct bbr3_tx {
	u32 seq;       /* first sequence number of the skb at its first transmit */
	u32 in_flight; /* packets in flight with it, at that transmit (v3's tx.in_flight) */
	u32 lost;      /* tp->lost at its latest transmit (v3's tx.lost) */
};

/* The per-packet path's state of one flow, written by the kprobes and read by the congestion
 * control on the ACKs that report losses: its existence marks the flow as ours to the kprobes.
 * Records of first transmits are in sequence order, the newest at head - 1.
 */
struct bbr3_pp {
	u32 head;	 /* records written */
	u32 end_seq;	 /* end of the newest record; a record ends where the next begins */
	u32 decisions;	 /* lost skbs judged with their own send record */
	u32 misses;	 /* lost skbs without one (evicted, or sent before the record began) */
	u32 inflight_hi; /* the first lost skb to cross loss_thresh: inflight_hi from it, */
	u32 cwnd;	 /* the cwnd when it was marked (v3's target is taken then), */
	u8 pending;	 /* set until the next callback applies it */
	u8 app_limited;	 /* that skb was sent app-limited */
	u8 marks_after;	 /* skbs were marked lost after it */
	u8 missed;	 /* a lost skb had no record: the ACK-time path judges this ACK's losses */
	u32 marked;	 /* packets the loss hook saw marked since the last ACK that reported losses */
	struct bbr3_tx ring[BBR3_TX_RING];
};

/* The socket's counts the per-packet path reads, copied by the kprobes (they may not dereference
 * kernel pointers) or, on the host, from the test's socket.
 */
/* The ACKed skb's send state as this ACK's checks read it: v3's rs->tx_in_flight and rs->lost. */
struct bbr3_acked {
	u32 tx_in_flight;
	u32 lost;
};

struct bbr3_pp_sock {
	u32 snd_nxt;
	u32 in_flight; /* tcp_packets_in_flight() */
	u32 lost;
	u32 cwnd;
	u32 mss;
};

#ifdef __bpf__
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3);
} bbr3_storage SEC(".maps");

/* Flows on the per-packet path (most at a time; a flow beyond falls back to the ACK-time path),
 * keyed by the socket's address: kprobes cannot reach socket storage. Entries go with the socket
 * (tcp_destroy_sock) or with a new init on the same address.
 */
#define BBR3_PP_FLOWS 4096

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BBR3_PP_FLOWS);
	__type(key, u64);
	__type(value, struct bbr3_pp);
} bbr3_pp_flows SEC(".maps");

/* A zeroed value to start a flow's entry from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr3_pp);
} bbr3_pp_zero SEC(".maps");

/* 1 once bbrctl has attached the kprobes: flows that start then use the per-packet path. */
__u32 bbr3_pp_live SEC(".data.pp") = 0;

BBR_INLINE struct bbr3 *bbr3_state(struct sock *sk, bool create)
{
	return bpf_sk_storage_get(&bbr3_storage, sk, 0, create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
}

BBR_INLINE struct bbr3_pp *bbr3_pp_state(struct sock *sk)
{
	u64 key = (u64)sk;

	return bpf_map_lookup_elem(&bbr3_pp_flows, &key);
}

/* A new entry for the flow, replacing a dead socket's at the same address. */
BBR_INLINE bool bbr3_pp_create(struct sock *sk)
{
	u64 key = (u64)sk;
	u32 zero = 0;
	struct bbr3_pp *z = bpf_map_lookup_elem(&bbr3_pp_zero, &zero);

	return z && !bpf_map_update_elem(&bbr3_pp_flows, &key, z, BPF_ANY);
}
#else
static struct bbr3 host_bbr3; /* the unit tests' one socket */
static struct bbr3_pp host_bbr3_pp;
static __u32 bbr3_pp_live;

BBR_INLINE struct bbr3 *bbr3_state(struct sock *sk, bool create)
{
	return &host_bbr3;
}

BBR_INLINE struct bbr3_pp *bbr3_pp_state(struct sock *sk)
{
	return &host_bbr3_pp;
}

BBR_INLINE bool bbr3_pp_create(struct sock *sk)
{
	memset(&host_bbr3_pp, 0, sizeof(host_bbr3_pp));
	return true;
}
#endif

BBR_INLINE u32 bbr3_permille_to_unit(u32 permille)
{
	return (u32)(((u64)permille * BBR3_PERMILLE_TO_UNIT_MUL) >> BBR3_PERMILLE_TO_UNIT_SHIFT);
}

BBR_INLINE u32 bbr3_max_bw(const struct bbr3 *s)
{
	return bbr_max_u32(s->bw_hi[0], s->bw_hi[1]);
}

/* v3's bw = min(bw_hi, bw_lo), published where the substrate's helpers read their estimate. */
BBR_INLINE void bbr3_set_bw(struct bbr_core *b, const struct bbr3 *s)
{
	b->bw.s[0].v = bbr_min_u32(bbr3_max_bw(s), s->bw_lo);
}

BBR_INLINE u32 bbr3_mul_unit(u32 v, u32 gain)
{
	return (u32)(((u64)v * gain) >> BBR_SCALE);
}

/* The parameters, each read (they are live), clamped and converted where a decision needs it:
 * most ACKs need one or two of them, so none is read up front.
 */
BBR_INLINE u32 bbr3_loss_thresh(void) /* BBR_UNIT */
{
	return bbr3_permille_to_unit(BBRKIT_PARAM(params.loss_thresh_permille, BBR3_LOSS_THRESH));
}

/* The factor kept by a cut, BBR_UNIT. v3 stores the cut (BBR_UNIT * 30 / 100 = 76) and keeps
 * BBR_UNIT less it (180/256): the kept factor is rounded up, as there, not down (179/256).
 */
BBR_INLINE u32 bbr3_beta(void)
{
	return BBR_UNIT -
		bbr3_permille_to_unit(BBRKIT_PERMILLE - BBRKIT_PARAM(params.beta_permille, BBR3_BETA));
}

BBR_INLINE u32 bbr3_headroom(void) /* BBR_UNIT */
{
	return bbr3_permille_to_unit(BBRKIT_PARAM(params.headroom_permille, BBR3_HEADROOM));
}

BBR_INLINE u32 bbr3_ecn_thresh(void) /* BBR_UNIT */
{
	return bbr3_permille_to_unit(BBRKIT_PARAM(params.ecn_thresh_permille, BBR3_ECN_THRESH));
}

BBR_INLINE u32 bbr3_probe_rtt_win_ticks(void)
{
	return BBR_US_TO_TICKS(
		BBRKIT_PARAM(params.probe_rtt_interval_ms, BBR3_PROBE_RTT_INTERVAL) * USEC_PER_MSEC);
}

/* ECN eligibility, decided where v3 decides it (bbr_update_ecn_alpha, on round starts): at each
 * round start, from the min_rtt before this ACK's update, until the flow is eligible, and then never
 * again. A min_rtt that later grows past ecn_max_rtt_us (a standing queue, a longer route, the
 * min_rtt window expiring) does not take the ECN response away, and a flow whose min_rtt falls
 * under the limit mid-round becomes eligible at the next round start, not on that ACK. It also
 * costs a check per round, and only until the flow is eligible. The `ecn` parameter stands for
 * v3's per-route shallow-ECN flag (TCP_ECN_LOW), part of this condition in v3; bbr3_ecn() reads it
 * again on each use, so that turning it off reaches running flows on their next ACK (v3's route
 * flag cannot change under a flow).
 */
BBR_INLINE void bbr3_check_ecn_eligible(const struct sock *sk, const struct bbr_core *b, struct bbr3 *s)
{
	u32 max_rtt;

	if (s->ecn_eligible || !BBRKIT_PARAM(params.ecn, BBR3_ECN) ||
		!(tcp_sk(sk)->ecn_flags & BBR3_TCP_ECN_OK))
		return;
	max_rtt = BBRKIT_PARAM(params.ecn_max_rtt_us, BBR3_ECN_MAX_RTT);
	if (!max_rtt || b->min_rtt_us <= max_rtt)
		s->ecn_eligible = 1;
}

/* ECN on for this flow: the eligibility kept since a round start, and the parameter. */
BBR_INLINE bool bbr3_ecn(const struct bbr3 *s)
{
	return s->ecn_eligible && BBRKIT_PARAM(params.ecn, BBR3_ECN);
}

/* Like BBRv1's budget (bbr_core.h), but v3 floors cwnd at 3 TSO skbs and 4 packets, not adds them. */
BBR_INLINE u32 bbr3_quantization_budget(struct sock *sk, const struct bbr_core *b, u32 cwnd)
{
	cwnd = bbr_max_u32(cwnd, 3 * bbr_tso_segs_goal(sk, b));
	cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET);
	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP)
		cwnd += 2; /* get inflight above BDP even for tiny BDPs */
	return cwnd;
}

BBR_INLINE u32 bbr3_inflight(struct sock *sk, const struct bbr_core *b, u32 bw, u32 gain)
{
	return bbr3_quantization_budget(sk, b, bbr_bdp(b, bw, gain));
}

/* The flight v3 aims for: one BDP, unless congestion has cut `cwnd` below it. */
BBR_INLINE u32 bbr3_target_inflight_at(struct sock *sk, const struct bbr_core *b, u32 cwnd)
{
	return bbr_min_u32(bbr3_inflight(sk, b, bbr_bw(b), BBR_UNIT), cwnd);
}

BBR_INLINE u32 bbr3_target_inflight(struct sock *sk, const struct bbr_core *b)
{
	return bbr3_target_inflight_at(sk, b, bbr_out_cwnd(sk, b));
}

BBR_INLINE u32 bbr3_probe_rtt_cwnd(const struct bbr_core *b)
{
	return bbr_max_u32(BBR_CWND_MIN_TARGET, bbr_bdp(b, bbr_bw(b), BBR3_PROBE_RTT_CWND_GAIN));
}

BBR_INLINE bool bbr3_is_probing_bandwidth(const struct bbr_core *b)
{
	return b->mode == BBRKIT_STARTUP ||
		(b->mode == BBRKIT_PROBE_BW &&
			(b->cycle_idx == BBRKIT_V3_REFILL || b->cycle_idx == BBRKIT_V3_UP));
}

/* An unsigned delta, as BBRv1's cycle clock: right for phases up to 2^32 us (71 min). */
BBR_INLINE bool bbr3_has_elapsed_in_phase(const struct sock *sk, const struct bbr_core *b, u32 us)
{
	return bbr_stamp_delta_us(tcp_sk(sk)->tcp_mstamp, b->cycle_stamp) > us;
}

BBR_INLINE void bbr3_reset_full_bw(struct bbr_core *b, struct bbr3 *s)
{
	b->full_bw = 0;
	b->full_bw_cnt = 0;
	s->full_bw_now = 0;
}

/* Losses since this loss round began: approximation B of rs->lost. */
BBR_INLINE u32 bbr3_lost_in_round(const struct tcp_sock *tp, const struct bbr3 *s)
{
	return tp->lost - s->round_lost;
}

BBR_INLINE bool bbr3_loss_too_high(u32 tx_in_flight, u32 lost)
{
	return lost && tx_in_flight && lost > bbr3_mul_unit(tx_in_flight, bbr3_loss_thresh());
}

/* Did the loss (or CE) rate of this flight go past its threshold? tx_in_flight and lost are
 * approximations A and B; delivered_ce is the kernel's own.
 */
BBR_INLINE bool bbr3_is_inflight_too_high(
	const struct bbr3 *s, u32 tx_in_flight, u32 lost, const struct rate_sample *rs)
{
	if (bbr3_loss_too_high(tx_in_flight, lost))
		return true;
	return rs->delivered_ce > 0 && rs->delivered > 0 && bbr3_ecn(s) &&
		(u32)rs->delivered_ce > bbr3_mul_unit((u32)rs->delivered, bbr3_ecn_thresh());
}

/* The flight at which the loss rate crossed the threshold, assuming the `pcount` packets lost on
 * this ACK were sent last: solve (lost_prev + x) / (inflight_prev + x) = loss_thresh for x.
 */
BBR_INLINE u32 bbr3_inflight_hi_from_lost(u32 tx_in_flight, u32 lost, u32 pcount)
{
	u32 inflight_prev, lost_prev, loss_thresh = bbr3_loss_thresh();
	u64 budget, prefix = 0;

	if (pcount > tx_in_flight || pcount > lost)
		return tx_in_flight;
	inflight_prev = tx_in_flight - pcount;
	lost_prev = lost - pcount;
	budget = ((u64)inflight_prev * loss_thresh + BBR_UNIT - 1) >> BBR_SCALE;
	if (lost_prev < budget) /* BBR_UNIT - loss_thresh >= 128: loss_thresh is at most 0.5 */
		prefix = ((budget - lost_prev) << BBR_SCALE) / (BBR_UNIT - loss_thresh);
	return inflight_prev + (u32)prefix;
}

/* b's estimate is bbr3_set_bw()'s function of bw_hi and bw_lo, republished at every change of
 * them: a sample that does not raise bw_hi[1] changes nothing.
 */
BBR_INLINE void bbr3_take_max_bw_sample(struct bbr_core *b, struct bbr3 *s, u32 bw)
{
	if (bw <= s->bw_hi[1])
		return;
	s->bw_hi[1] = bw;
	bbr3_set_bw(b, s);
}

/* Keep the max of the last 1-2 probe cycles: each cycle, forget the older one. */
BBR_INLINE void bbr3_advance_max_bw_filter(struct bbr_core *b, struct bbr3 *s)
{
	if (!s->bw_hi[1])
		return; /* no samples in this cycle: keep the old one */
	s->bw_hi[0] = s->bw_hi[1];
	s->bw_hi[1] = 0;
	bbr3_set_bw(b, s);
}

BBR_INLINE void bbr3_reset_lower_bounds(struct bbr_core *b, struct bbr3 *s)
{
	s->bw_lo = ~0U;
	s->inflight_lo = ~0U;
	bbr3_set_bw(b, s);
}

BBR_INLINE void bbr3_reset_congestion_signals(struct bbr3 *s)
{
	s->loss_in_round = 0;
	s->ecn_in_round = 0;
	s->loss_in_cycle = 0;
	s->ecn_in_cycle = 0;
	s->bw_latest = 0;
	s->inflight_latest = 0;
}

/* STARTUP saw too much loss or CE: the pipe is full, and its volume bounds inflight_hi. */
BBR_INLINE void bbr3_handle_queue_too_high_in_startup(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 bdp = bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT);

	b->full_bw_reached = 1;
	s->inflight_hi = BBR3_STARTUP_HI_KEEPS_LATEST ? bbr_max_u32(bdp, s->inflight_latest) : bdp;
}

/* ECN is on: the caller's check. */
BBR_INLINE void bbr3_check_ecn_too_high_in_startup(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 ce_ratio)
{
	if (b->full_bw_reached)
		return;
	if (ce_ratio >= bbr3_ecn_thresh())
		s->startup_ecn_rounds = bbr_min_u32(s->startup_ecn_rounds + 1, 3);
	else
		s->startup_ecn_rounds = 0;
	if (s->startup_ecn_rounds >= BBR3_FULL_ECN_CNT)
		bbr3_handle_queue_too_high_in_startup(sk, b, s);
}

/* Once per round: eligibility, then the EWMA of the CE fraction, while ECN is on. */
BBR_INLINE void bbr3_update_ecn_alpha(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 delivered = tp->delivered - s->alpha_last_delivered;
	u32 delivered_ce = tp->delivered_ce - s->alpha_last_delivered_ce;
	u32 ce_ratio, alpha;

	bbr3_check_ecn_eligible(sk, b, s);
	if (!delivered || (s32)delivered < 0 || (s32)delivered_ce < 0 || !bbr3_ecn(s))
		return;
	ce_ratio = (u32)(((u64)delivered_ce << BBR_SCALE) / delivered);
	alpha = bbr3_mul_unit(s->ecn_alpha, BBR_UNIT - BBR3_ECN_ALPHA_GAIN) +
		bbr3_mul_unit(ce_ratio, BBR3_ECN_ALPHA_GAIN);
	s->ecn_alpha = bbr_min_u32(alpha, BBR_UNIT);
	s->alpha_last_delivered = tp->delivered;
	s->alpha_last_delivered_ce = tp->delivered_ce;
	bbr3_check_ecn_too_high_in_startup(sk, b, s, ce_ratio);
}

/* Each round of UP doubles how fast inflight_hi grows. */
BBR_INLINE void bbr3_raise_inflight_hi_slope(struct sock *sk, const struct bbr_core *b, struct bbr3 *s)
{
	u32 growth_this_round = 1U << s->bw_probe_up_rounds;

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	growth_this_round = TWIN_MUTANT(up_step_doubling) ? 1 : growth_this_round;
#endif
	s->bw_probe_up_rounds = bbr_min_u32(s->bw_probe_up_rounds + 1, BBR3_UP_ROUNDS_MAX);
	s->bw_probe_up_cnt = bbr_max_u32(bbr_out_cwnd(sk, b) / growth_this_round, 1);
}

/* UP without too much loss or CE: grow inflight_hi while it limits cwnd. */
BBR_INLINE void bbr3_probe_inflight_hi_upward(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 delta;

	if (!tp->is_cwnd_limited || bbr_out_cwnd(sk, b) < s->inflight_hi) {
		if (BBR3_UP_FORGETS_UNUSED_ACKS)
			s->bw_probe_up_acks = 0;
		return;
	}
	s->bw_probe_up_acks += rs->acked_sacked;
	if (s->bw_probe_up_acks >= s->bw_probe_up_cnt) {
		/* Rare: a division only when an increment is due. */
		delta = s->bw_probe_up_acks / s->bw_probe_up_cnt;
		s->bw_probe_up_acks -= delta * s->bw_probe_up_cnt;
		s->inflight_hi += delta;
	}
	if (b->round_start)
		bbr3_raise_inflight_hi_slope(sk, b, s);
}

/* Only when a probe is due. */
BBR_INLINE void bbr3_pick_probe_wait(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 base_ms = BBRKIT_PARAM(params.probe_wait_base_ms, BBR3_PROBE_WAIT_BASE);
	u32 rand_us = BBRKIT_PARAM(params.probe_wait_rand_ms, BBR3_PROBE_WAIT_RAND) * USEC_PER_MSEC;

	s->rounds_since_probe = bbr_out_random(sk, b) % BBR3_BW_PROBE_RAND_ROUNDS;
	s->probe_wait_us = base_ms * USEC_PER_MSEC + (rand_us ? bbr_out_random(sk, b) % rand_us : 0);
}

BBR_INLINE void bbr3_start_bw_probe_refill(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 up_rounds)
{
	bbr3_reset_lower_bounds(b, s);
	s->bw_probe_up_rounds = up_rounds;
	s->bw_probe_up_acks = 0;
	s->stopped_risky_probe = 0;
	s->ack_phase = BBR3_ACKS_REFILLING;
	b->next_rtt_delivered = tcp_sk(sk)->delivered;
	b->cycle_idx = BBRKIT_V3_REFILL;
}

BBR_INLINE void bbr3_start_bw_probe_up(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 sample_bw)
{
	struct tcp_sock *tp = tcp_sk(sk);

	s->ack_phase = BBR3_ACKS_PROBE_STARTING;
	b->next_rtt_delivered = tp->delivered;
	b->cycle_stamp = (u32)tp->tcp_mstamp;
	bbr3_reset_full_bw(b, s);
	b->full_bw = sample_bw;
	b->cycle_idx = BBRKIT_V3_UP;
	bbr3_raise_inflight_hi_slope(sk, b, s);
}

/* A new probe cycle: drain, then wait a randomised time before the next probe. */
BBR_INLINE void bbr3_start_bw_probe_down(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);

	bbr3_reset_congestion_signals(s);
	s->bw_probe_up_cnt = ~0U; /* inflight_hi stops growing */
	bbr3_pick_probe_wait(sk, b, s);
	b->cycle_stamp = (u32)tp->tcp_mstamp;
	s->ack_phase = BBR3_ACKS_PROBE_STOPPING;
	b->next_rtt_delivered = tp->delivered;
	b->cycle_idx = BBRKIT_V3_DOWN;
}

BBR_INLINE void bbr3_start_bw_probe_cruise(struct bbr_core *b, struct bbr3 *s)
{
	if (s->inflight_lo != ~0U)
		s->inflight_lo = bbr_min_u32(s->inflight_lo, s->inflight_hi);
	b->cycle_idx = BBRKIT_V3_CRUISE;
}

/* The probe overfilled the path: cut inflight_hi (once per probe) and drain. `cwnd` is the one the
 * flight was sent under.
 */
BBR_INLINE void bbr3_handle_inflight_too_high(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 tx_in_flight, u32 cwnd, bool app_limited)
{
	s->prev_probe_too_high = 1;
	s->bw_probe_samples = 0;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	app_limited |= TWIN_MUTANT(loss_cut);
#endif
	/* An app-limited flight did not really probe the path's volume. */
	if (!app_limited)
		s->inflight_hi = bbr_max_u32(
			tx_in_flight, bbr3_mul_unit(bbr3_target_inflight_at(sk, b, cwnd), bbr3_beta()));
	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP)
		bbr3_start_bw_probe_down(sk, b, s);
}

BBR_INLINE void bbr3_note_loss(struct tcp_sock *tp, struct bbr3 *s)
{
	if (!s->loss_in_round) /* the loss round restarts at its first loss */
		s->loss_round_delivered = tp->delivered;
	s->loss_in_round = 1;
	s->loss_in_cycle = 1;
}

/* The per-packet path: v3's skb_marked_lost on a stock kernel. A kprobe on the kernel's
 * tcp_rate_skb_sent() records each skb's send state (bbr3_pp_sent), one on tcp_mark_skb_lost()
 * judges each lost skb with it (bbr3_pp_lost), and the next callback of the congestion control
 * that sees losses, the same ACK's cong_control or an RTO's ssthresh, applies the decision
 * (bbr3_pp_apply).
 */

/* The record whose range holds seq, found by bisection (records are in sequence order); *end is
 * where that range ends. NULL when seq is outside the records.
 */
BBR_INLINE struct bbr3_tx *bbr3_pp_find(struct bbr3_pp *pp, u32 seq, u32 *end)
{
	u32 n = bbr_min_u32(pp->head, BBR3_TX_RING), lo = pp->head - n, hi = pp->head, base, mid;
	int i;

	if (!n)
		return NULL;
	base = pp->ring[lo & BBR3_TX_RING_MASK].seq; /* offsets from the oldest survive wrap */
	if (seq - base >= pp->end_seq - base)
		return NULL;
	for (i = 0; i <= BBR3_TX_RING_BITS && hi - lo > 1; i++) {
		mid = lo + (hi - lo) / 2;
		if (pp->ring[mid & BBR3_TX_RING_MASK].seq - base <= seq - base)
			lo = mid;
		else
			hi = mid;
	}
	*end = lo + 1 == pp->head ? pp->end_seq : pp->ring[(lo + 1) & BBR3_TX_RING_MASK].seq;
	return &pp->ring[lo & BBR3_TX_RING_MASK];
}

/* A transmit, before the kernel counts it in packets_out: v3 stamps the flight with this skb at
 * its first transmit (new data: seq == snd_nxt) and the loss count at every transmit.
 */
BBR_INLINE void bbr3_pp_sent(
	struct bbr3_pp *pp, const struct bbr3_pp_sock *tp, u32 seq, u32 end_seq, u32 pcount)
{
	struct bbr3_tx *t;
	u32 end;

	if (seq == tp->snd_nxt) {
		t = &pp->ring[pp->head & BBR3_TX_RING_MASK];
		t->seq = seq;
		t->in_flight = tp->in_flight + pcount;
		t->lost = tp->lost;
		pp->head++;
		pp->end_seq = end_seq;
		return;
	}
	t = bbr3_pp_find(pp, seq, &end);
	if (t)
		t->lost = tp->lost;
}

/* A new loss mark, before the kernel counts it in tp->lost: v3's rule on this skb alone, with the
 * flight it was sent in and the losses since (this skb's own included). The first skb to cross
 * loss_thresh sets the decision, later ones only count as marks after it; whether the flow was
 * probing (v3 judges only then) is the congestion control's to check when it applies it, and
 * cannot change between the marks of one ACK. A part of a split skb was sent with fewer packets
 * after it: v3 lowers its in_flight by them.
 */
BBR_INLINE void bbr3_pp_lost(struct bbr3_pp *pp, const struct bbr3_pp_sock *tp, u32 seq, u32 end_seq,
	u32 pcount, bool app_limited, bool judged)
{
	u32 end, in_flight, lost;
	struct bbr3_tx *t;

	pp->marked += pcount;
	if (!judged)
		return; /* as v3: an skb whose rate sample state was cleared */
	t = bbr3_pp_find(pp, seq, &end);
	if (!t) {
		pp->misses++;
		pp->missed = 1;
		return;
	}
	pp->decisions++;
	if (pp->pending) {
		pp->marks_after = 1;
		return;
	}
	in_flight = t->in_flight;
	if (end != end_seq && tp->mss) /* rare: a division only for a split skb */
		in_flight -= bbr_min_u32(in_flight, (end - end_seq + tp->mss - 1) / tp->mss);
	lost = tp->lost + pcount - t->lost;
	if (!bbr3_loss_too_high(in_flight, lost))
		return;
	pp->inflight_hi = bbr3_inflight_hi_from_lost(in_flight, lost, pcount);
	pp->cwnd = tp->cwnd;
	pp->app_limited = app_limited;
	pp->pending = 1;
}

/* The pending decision, as v3 took it at the mark: the loss, the cut while probing, and the marks
 * after it. False when there was nothing to cut: the caller notes the loss as for any ACK.
 * *missed: some lost skb was not judged per packet (no record, or the hook saw fewer packets than
 * `losses`, the ACK's count: the hooks were detached), so the ACK-time path judges as well. With
 * losses 0 (ssthresh, amid the ACK's callbacks) the counts are left for the ACK.
 */
BBR_INLINE bool bbr3_pp_apply(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, struct bbr3_pp *pp, u32 losses, bool *missed)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool cut;

	*missed = !pp;
	if (!pp)
		return false;
	*missed = pp->missed || pp->marked < losses;
	if (losses) {
		pp->missed = 0;
		pp->marked = 0;
	}
	cut = pp->pending && s->bw_probe_samples;
	pp->pending = 0;
	if (cut) {
		bbr3_note_loss(tp, s);
		bbr3_handle_inflight_too_high(sk, b, s, pp->inflight_hi, pp->cwnd, pp->app_limited);
		if (pp->marks_after)
			bbr3_note_loss(tp, s);
	}
	pp->marks_after = 0;
	return cut;
}

/* The ACKed skb's record (the rate sample's skb ends at rs->last_end_seq): its flight at send, less
 * the packets after it for a split skb, and the losses since its last transmit.
 */
BBR_INLINE void bbr3_pp_acked(
	struct sock *sk, struct bbr3_pp *pp, const struct rate_sample *rs, struct bbr3_acked *acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3_tx *t;
	u32 end, in_flight;

	t = pp ? bbr3_pp_find(pp, rs->last_end_seq - 1, &end) : NULL;
	if (!t)
		return; /* A and B stand */
	in_flight = t->in_flight;
	if (end != rs->last_end_seq && tp->mss_cache) /* rare: a division only for a split skb */
		in_flight -=
			bbr_min_u32(in_flight, (end - rs->last_end_seq + tp->mss_cache - 1) / tp->mss_cache);
	acked->tx_in_flight = in_flight;
	acked->lost = tp->lost - t->lost;
}

/* Approximation C of v3's per-skb loss hook, where the per-packet path does not run or missed an
 * skb: the ACK that reports new losses checks the flight.
 */
BBR_INLINE void bbr3_on_losses(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, bool judged)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 lost, tx_in_flight;

	bbr3_note_loss(tp, s);
	if (!s->bw_probe_samples || judged)
		return; /* not a flight sent while probing, or judged per skb */
	lost = bbr3_lost_in_round(tp, s);
	tx_in_flight = rs->prior_in_flight;
	if (bbr3_loss_too_high(tx_in_flight, lost))
		bbr3_handle_inflight_too_high(sk, b, s,
			bbr3_inflight_hi_from_lost(tx_in_flight, lost, (u32)rs->losses), bbr_out_cwnd(sk, b),
			rs->is_app_limited);
}

/* An RTO: tcp_enter_loss() has marked the flight lost, then set cwnd to the flight (now ~0) + 1,
 * before set_state(TCP_CA_Loss). v3 judges each marked skb with the flight and cwnd of its sending
 * (skb_marked_lost); the ACK path's stand-ins would judge them on the next ACK against a flight of
 * ~1 and set inflight_hi to ~1. Judge them here with the flight outstanding at the RTO and the cwnd
 * saved by ssthresh, as the last marked skb, then rebase approximation B so that ACKs do not count
 * them again (the loss round's telemetry rate leaves them out too).
 */
BBR_INLINE void bbr3_on_rto(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 flight = tp->packets_out - tp->sacked_out, lost = bbr3_lost_in_round(tp, s);

	bool missed = true;

	if (!tp->lost_out)
		return; /* nothing was marked */
	if (s->pp_on)
		bbr3_pp_apply(sk, b, s, bbr3_pp_state(sk), 1, &missed);
	if (s->bw_probe_samples && missed && bbr3_loss_too_high(flight, lost))
		bbr3_handle_inflight_too_high(sk, b, s, bbr3_inflight_hi_from_lost(flight, lost, 1),
			bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd), tp->app_limited);
	/* After the cut, whose new cycle starts clean: the marks are this round's and cycle's losses. */
	bbr3_note_loss(tp, s);
	s->round_lost = tp->lost;
}

/* Loss or CE while not probing: cut the short-term bounds, never below what the last round
 * delivered.
 */
BBR_INLINE void bbr3_adapt_lower_bounds(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 ecn_inflight_lo = ~0U, beta;

	/* Without a signal nothing changes: bw_lo is never below 1 once the model is initialised. */
	if (bbr3_is_probing_bandwidth(b) || !(s->loss_in_round || s->ecn_in_round))
		return;
	if (s->ecn_in_round && bbr3_ecn(s)) {
		if (s->inflight_lo == ~0U)
			s->inflight_lo = bbr_out_cwnd(sk, b);
		ecn_inflight_lo = bbr3_mul_unit(
			s->inflight_lo, BBR_UNIT - bbr3_mul_unit(s->ecn_alpha, BBR3_ECN_FACTOR));
	}
	if (s->loss_in_round) {
		if (s->bw_lo == ~0U)
			s->bw_lo = bbr3_max_bw(s);
		if (s->inflight_lo == ~0U)
			s->inflight_lo = bbr_out_cwnd(sk, b);
		beta = bbr3_beta();
		s->bw_lo = bbr_max_u32(s->bw_latest, bbr3_mul_unit(s->bw_lo, beta));
		s->inflight_lo = bbr_max_u32(s->inflight_latest, bbr3_mul_unit(s->inflight_lo, beta));
	}
	s->inflight_lo = bbr_min_u32(s->inflight_lo, ecn_inflight_lo);
	s->bw_lo = bbr_max_u32(1, s->bw_lo);
	bbr3_set_bw(b, s);
}

/* The max delivery rate and volume of this loss round, and the start of the next. */
BBR_INLINE void bbr3_update_latest_delivery_signals(
	struct sock *sk, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	s->loss_round_start = 0;
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	s->bw_latest = bbr_max_u32(s->bw_latest, sample_bw);
	s->inflight_latest = bbr_max_u32(s->inflight_latest, (u32)rs->delivered);
	if (!bbr_after(s->loss_round_delivered, rs->prior_delivered)) {
		s->loss_round_delivered = tcp_sk(sk)->delivered;
		s->loss_round_start = 1;
	}
}

/* At a loss round's end: restart the latest-delivery filter, the round's loss/CE counts (the
 * telemetry of the round that ended, and approximation B's base).
 */
BBR_INLINE void bbr3_advance_latest_delivery_signals(
	struct sock *sk, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!s->loss_round_start)
		return;
	s->bw_latest = sample_bw;
	s->inflight_latest = (u32)rs->delivered;
	s->last_round_lost = tp->lost - s->round_lost;
	s->last_round_delivered = tp->delivered - s->round_delivered;
	s->last_round_ce = tp->delivered_ce - s->round_ce;
	s->round_lost = tp->lost;
	s->round_delivered = tp->delivered;
	s->round_ce = tp->delivered_ce;
}

BBR_INLINE void bbr3_update_congestion_signals(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	if (!rs->is_app_limited || sample_bw >= bbr3_max_bw(s))
		bbr3_take_max_bw_sample(b, s, sample_bw);
	/* Again after the loss hook: a probe it ended reset the signals, and this loss is DOWN's. */
	if (rs->losses > 0)
		s->loss_in_round = 1;
	if (!s->loss_round_start)
		return;
	bbr3_adapt_lower_bounds(sk, b, s);
	s->loss_in_round = 0;
	s->ecn_in_round = 0;
}

/* The flight the PROBE_BW phases judge: approximation A, less what leaves before the next skb's
 * departure time. A division, so computed only by the phases that read it (DOWN and UP), on the
 * ACKs that get that far.
 */
BBR_INLINE u32 bbr3_probe_inflight(struct sock *sk, const struct bbr_core *b, const struct rate_sample *rs)
{
	return bbr_packets_in_net_at_edt(sk, b, rs->prior_in_flight);
}

/* n >= bbr3_target_inflight(), asked on every ACK of CRUISE. The target is min(cwnd, budget(BDP))
 * and the budget is at least the BDP and BBR_CWND_MIN_TARGET: those bounds settle most ACKs without
 * the budget's TSO goal, a division.
 */
BBR_INLINE bool bbr3_reaches_target_inflight(struct sock *sk, const struct bbr_core *b, u32 n)
{
	u32 bdp;

	if (n >= bbr_out_cwnd(sk, b))
		return true;
	bdp = bbr_bdp(b, bbr_bw(b), BBR_UNIT);
	if (n < bdp || n < BBR_CWND_MIN_TARGET)
		return false;
	return n >= bbr3_quantization_budget(sk, b, bdp);
}

/* Is it time for the next probe? Wall clock or Reno-scale round count, or CE gone. */
BBR_INLINE bool bbr3_check_time_to_probe_bw(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	u32 v, n = 0;

	if (BBR3_ECN_REPROBE_GAIN && s->ecn_in_cycle && !s->loss_in_cycle && bbr3_ecn(s) &&
		inet_csk(sk)->icsk_ca_state == TCP_CA_Open) {
		/* UP's slope then starts at about reprobe_gain x inflight_hi per round: n = log2 of it. */
		v = bbr3_mul_unit(s->inflight_hi, BBR3_ECN_REPROBE_GAIN);
		while (v > 1 && n < BBR3_UP_ROUNDS_MAX) {
			v >>= 1;
			n++;
		}
		bbr3_start_bw_probe_refill(sk, b, s, n);
		return true;
	}
	/* rounds >= min(max rounds, target flight), the target last. */
	if (bbr3_has_elapsed_in_phase(sk, b, s->probe_wait_us) ||
		s->rounds_since_probe >= BBR3_BW_PROBE_MAX_ROUNDS ||
		bbr3_reaches_target_inflight(sk, b, s->rounds_since_probe)) {
		bbr3_start_bw_probe_refill(sk, b, s, 0);
		return true;
	}
	return false;
}

/* DOWN ends once inflight leaves headroom below inflight_hi and is at most one BDP. */
BBR_INLINE u32 bbr3_inflight_with_headroom(const struct bbr3 *s)
{
	u32 headroom;

	if (s->inflight_hi == ~0U)
		return ~0U;
	headroom = bbr_max_u32(bbr3_mul_unit(s->inflight_hi, bbr3_headroom()), 1);
	return s->inflight_hi > headroom + BBR_CWND_MIN_TARGET ? s->inflight_hi - headroom
							       : BBR_CWND_MIN_TARGET;
}

BBR_INLINE bool bbr3_check_time_to_cruise(
	struct sock *sk, const struct bbr_core *b, const struct bbr3 *s, u32 inflight, u32 bw)
{
	if (inflight > bbr3_inflight_with_headroom(s))
		return false;
	return inflight <= bbr3_inflight(sk, b, bw, BBR_UNIT);
}

/* Probe feedback: cut inflight_hi when the probe's flight lost (or CE-marked) too much, raise it
 * when a larger flight proved safe. True when it decided a transition.
 */
BBR_INLINE bool bbr3_adapt_upper_bounds(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked)
{
	u32 tx_in_flight = acked->tx_in_flight;

	if (s->ack_phase == BBR3_ACKS_PROBE_STARTING && b->round_start)
		s->ack_phase = BBR3_ACKS_PROBE_FEEDBACK;
	if (s->ack_phase == BBR3_ACKS_PROBE_STOPPING && b->round_start) {
		s->bw_probe_samples = 0;
		s->ack_phase = BBR3_ACKS_INIT;
		/* The best moment to forget the last cycle's bandwidth. */
		if (b->mode == BBRKIT_PROBE_BW && !rs->is_app_limited)
			bbr3_advance_max_bw_filter(b, s);
		/* UP reached the old inflight_hi without trouble: probe again, holding it a round. */
		if (b->mode == BBRKIT_PROBE_BW && s->stopped_risky_probe && !s->prev_probe_too_high) {
			bbr3_start_bw_probe_refill(sk, b, s, 0);
			return true;
		}
	}
	if (bbr3_is_inflight_too_high(s, tx_in_flight, acked->lost, rs)) {
		if (s->bw_probe_samples)
			bbr3_handle_inflight_too_high(
				sk, b, s, tx_in_flight, bbr_out_cwnd(sk, b), rs->is_app_limited);
		return false;
	}
	if (s->inflight_hi == ~0U)
		return false;		   /* no bound yet */
	if (tx_in_flight > s->inflight_hi) /* a larger flight was safe: robust to random loss */
		s->inflight_hi = tx_in_flight;
	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx == BBRKIT_V3_UP)
		bbr3_probe_inflight_hi_upward(sk, b, s, rs);
	return false;
}

/* The PROBE_BW sub-phases. */
BBR_INLINE void bbr3_update_cycle_phase(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked, u32 sample_bw)
{
	if (!b->full_bw_reached)
		return;
	if (bbr3_adapt_upper_bounds(sk, b, s, rs, acked))
		return;
	if (b->mode != BBRKIT_PROBE_BW)
		return;

	switch (b->cycle_idx) {
	case BBRKIT_V3_CRUISE:
		bbr3_check_time_to_probe_bw(sk, b, s);
		break;
	case BBRKIT_V3_REFILL:
		/* One round at bw refilled the pipe: what follows reflects the probe. */
		if (b->round_start) {
			s->bw_probe_samples = 1;
			bbr3_start_bw_probe_up(sk, b, s, sample_bw);
		}
		break;
	case BBRKIT_V3_UP:
		if (s->prev_probe_too_high && bbr3_probe_inflight(sk, b, rs) >= s->inflight_hi) {
			s->stopped_risky_probe = 1; /* at the level that was too much last time */
		} else if (!bbr3_variant_probe_up_done(sk, b, s, rs, sample_bw)) {
			break;
		}
		s->prev_probe_too_high = 0;
		bbr3_start_bw_probe_down(sk, b, s);
		break;
	default: /* BBRKIT_V3_DOWN */
		if (bbr3_check_time_to_probe_bw(sk, b, s))
			break;
		if (bbr3_check_time_to_cruise(sk, b, s, bbr3_probe_inflight(sk, b, rs), bbr3_max_bw(s)))
			bbr3_start_bw_probe_cruise(b, s);
		break;
	}
}

/* STARTUP ends when a recovery round with many loss events lost too much of its flight. */
BBR_INLINE void bbr3_check_loss_too_high_in_startup(struct sock *sk, struct bbr_core *b, struct bbr3 *s,
	const struct rate_sample *rs, const struct bbr3_acked *acked)
{
	if (b->full_bw_reached)
		return;
	if (rs->losses && s->loss_events_in_round < 0xF)
		s->loss_events_in_round++;
	if (s->loss_round_start && inet_csk(sk)->icsk_ca_state == TCP_CA_Recovery &&
		s->loss_events_in_round >= BBR3_FULL_LOSS_CNT &&
		bbr3_is_inflight_too_high(s, acked->tx_in_flight, acked->lost, rs)) {
		bbr3_handle_queue_too_high_in_startup(sk, b, s);
		return;
	}
	if (s->loss_round_start)
		s->loss_events_in_round = 0;
}

/* v3's plateau estimator: 25% growth of a sample restarts it; 3 rounds without end STARTUP and
 * mark the plateau that ends UP.
 */
BBR_INLINE void bbr3_v3_check_full_bw(
	struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs, u32 sample_bw)
{
	bool app_limited = rs->is_app_limited;

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	app_limited &= !TWIN_MUTANT(app_limited_plateau);
#endif
	if (s->full_bw_now || app_limited)
		return;
	if (sample_bw >= (u32)(((u64)b->full_bw * BBR_FULL_BW_THRESH) >> BBR_SCALE)) {
		bbr3_reset_full_bw(b, s);
		b->full_bw = sample_bw;
		return;
	}
	if (!b->round_start)
		return;
	b->full_bw_cnt = bbr_min_u32(b->full_bw_cnt + 1, BBR_FULL_BW_CNT);
	s->full_bw_now = b->full_bw_cnt >= BBR_FULL_BW_CNT;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	s->full_bw_now |= TWIN_MUTANT(full_bw_count) && b->full_bw_cnt == BBR_FULL_BW_CNT - 1;
#endif
	b->full_bw_reached |= s->full_bw_now;
}

/* v3's end of UP: inflight_hi limiting growth restarts the plateau estimator; a plateau ends UP. */
BBR_INLINE bool bbr3_v3_probe_up_done(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 sample_bw)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (tp->is_cwnd_limited && bbr_out_cwnd(sk, b) >= s->inflight_hi) {
		bbr3_reset_full_bw(b, s);
		b->full_bw = sample_bw;
		return false;
	}
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(up_plateau))
		return b->round_start;
#endif
	return s->full_bw_now;
}

BBR_INLINE void bbr3_check_drain(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (b->mode == BBRKIT_STARTUP && b->full_bw_reached) {
		b->mode = BBRKIT_DRAIN;
		s->drain_start_round = b->rtt_cnt;
		bbr_out_set_ssthresh(sk, b, bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT));
		bbr3_reset_congestion_signals(s);
	}
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(drain_exit) &&
		bbr_packets_in_flight(tp) * 3 > bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT))
		return;
#endif
	if (b->mode == BBRKIT_DRAIN &&
		bbr_packets_in_net_at_edt(sk, b, bbr_packets_in_flight(tp)) <=
			bbr3_inflight(sk, b, bbr3_max_bw(s), BBR_UNIT)) {
		b->mode = BBRKIT_PROBE_BW;
		bbr3_start_bw_probe_down(sk, b, s);
	}
}

BBR_INLINE void bbr3_exit_probe_rtt(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	bbr3_reset_lower_bounds(b, s);
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	b->full_bw_reached |= TWIN_MUTANT(probe_rtt_exit);
#endif
	if (b->full_bw_reached) {
		b->mode = BBRKIT_PROBE_BW;
		/* Schedule the next probe at a friendly random time; inflight is low, so cruise. */
		bbr3_start_bw_probe_down(sk, b, s);
		bbr3_start_bw_probe_cruise(b, s);
	} else {
		b->mode = BBRKIT_STARTUP;
	}
}

BBR_INLINE void bbr3_check_probe_rtt_done(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 now)
{

	if (!(b->probe_rtt_done_stamp && bbr_after(now, b->probe_rtt_done_stamp)))
		return;
	s->probe_rtt_min_stamp = now; /* the next PROBE_RTT is a whole interval away */
	bbr_out_set_cwnd(sk, b, bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd));
	bbr3_exit_probe_rtt(sk, b, s);
}

/* Two min filters: probe_rtt_min over the PROBE_RTT interval (5 s) times PROBE_RTT, min_rtt over
 * 10 s is the model's. PROBE_RTT holds cwnd at 0.5 x BDP for max(200 ms, one round).
 */
BBR_INLINE void bbr3_update_min_rtt(
	struct sock *sk, struct bbr_core *b, struct bbr3 *s, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 now = bbr_now_ticks(tp);
	bool probe_rtt_expired = bbr_after(now, s->probe_rtt_min_stamp + bbr3_probe_rtt_win_ticks());

	if (rs->rtt_us >= 0 &&
		((u64)rs->rtt_us < s->probe_rtt_min_us || (probe_rtt_expired && !rs->is_ack_delayed))) {
		s->probe_rtt_min_us = (u32)rs->rtt_us;
		s->probe_rtt_min_stamp = now;
	}
	if (s->probe_rtt_min_us <= b->min_rtt_us ||
		bbr_after(now, b->min_rtt_stamp + BBR_MIN_RTT_WIN_TICKS)) {
		b->min_rtt_us = s->probe_rtt_min_us;
		b->min_rtt_stamp = s->probe_rtt_min_stamp;
	}

#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	b->idle_restart &= !TWIN_MUTANT(idle_restart);
#endif
	if (probe_rtt_expired && !b->idle_restart && b->mode != BBRKIT_PROBE_RTT) {
		b->mode = BBRKIT_PROBE_RTT;
		bbr_save_cwnd(sk, b);
		b->probe_rtt_done_stamp = 0;
		s->ack_phase = BBR3_ACKS_PROBE_STOPPING;
		b->next_rtt_delivered = tp->delivered;
	}

	if (b->mode == BBRKIT_PROBE_RTT) {
		u32 inflight = bbr_packets_in_flight(tp);

		/* Samples taken at half a BDP say nothing about the path's bandwidth. */
		bbr_out_set_app_limited(sk, b, (tp->delivered + inflight) ?: 1);
		if (!b->probe_rtt_done_stamp && inflight <= bbr3_probe_rtt_cwnd(b)) {
			b->probe_rtt_done_stamp = (now + BBR_PROBE_RTT_MODE_TICKS) ?: 1;
			b->probe_rtt_round_done = 0;
			b->next_rtt_delivered = tp->delivered;
		} else if (b->probe_rtt_done_stamp) {
			if (b->round_start)
				b->probe_rtt_round_done = 1;
			if (b->probe_rtt_round_done)
				bbr3_check_probe_rtt_done(sk, b, s, now);
		}
	}
	if (rs->delivered > 0)
		b->idle_restart = 0;
}

BBR_INLINE void bbr3_update_gains(struct bbr_core *b)
{
	switch (b->mode) {
	case BBRKIT_STARTUP:
		b->pacing_gain = BBR3_STARTUP_PACING_GAIN;
		b->cwnd_gain = BBR3_STARTUP_CWND_GAIN;
		break;
	case BBRKIT_DRAIN:
		b->pacing_gain = BBR_DRAIN_GAIN;
		b->cwnd_gain = BBR3_STARTUP_CWND_GAIN; /* keep cwnd while draining */
		break;
	case BBRKIT_PROBE_BW:
		b->pacing_gain = b->cycle_idx == BBRKIT_V3_UP ? BBR3_UP_GAIN
			: b->cycle_idx == BBRKIT_V3_DOWN      ? BBR3_DOWN_GAIN
							      : BBR_UNIT;
		b->cwnd_gain = BBR_CWND_GAIN + (b->cycle_idx == BBRKIT_V3_UP ? BBR3_UP_CWND_EXTRA : 0);
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
		if (TWIN_MUTANT(down_gain) && b->cycle_idx == BBRKIT_V3_DOWN)
			b->pacing_gain = BBR_UNIT;
#endif
		break;
	default: /* BBRKIT_PROBE_RTT */
		b->pacing_gain = BBR_UNIT;
		b->cwnd_gain = BBR_UNIT;
		break;
	}
}

/* Slow-start towards the target in STARTUP, snap down to it once the pipe is full. Unlike BBRv1,
 * no packet conservation in recovery: the bounds do that job.
 */
BBR_INLINE void bbr3_set_cwnd(struct sock *sk, struct bbr_core *b, struct bbr3 *s, u32 acked, u32 bw)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cwnd = bbr_out_cwnd(sk, b), target;

	if (acked) {
		target = bbr_bdp(b, bw, b->cwnd_gain) + bbr_aggregation_allowance(b);
		target = bbr3_quantization_budget(sk, b, target);
		if (b->full_bw_reached)
			cwnd = bbr_min_u32(cwnd + acked, target);
		else if (cwnd < target || cwnd < 2 * s->init_cwnd)
			cwnd += acked;
		cwnd = bbr_max_u32(cwnd, BBR_CWND_MIN_TARGET);
	}
	cwnd = bbr_min_u32(cwnd, tp->snd_cwnd_clamp);
	if (b->mode == BBRKIT_PROBE_RTT)
		cwnd = bbr_min_u32(cwnd, bbr3_probe_rtt_cwnd(b));
	bbr_out_set_cwnd(sk, b, cwnd);
}

/* Cap cwnd by the model: inflight_hi while probing or draining, inflight_hi less headroom while
 * cruising or in PROBE_RTT, and inflight_lo always.
 */
BBR_INLINE void bbr3_bound_cwnd_for_inflight_model(struct sock *sk, struct bbr_core *b, const struct bbr3 *s)
{
	u32 cap = ~0U;

	if (b->mode == BBRKIT_PROBE_BW && b->cycle_idx != BBRKIT_V3_CRUISE)
		cap = s->inflight_hi;
	else if (b->mode == BBRKIT_PROBE_RTT || b->mode == BBRKIT_PROBE_BW)
		cap = bbr3_inflight_with_headroom(s);
	cap = bbr_min_u32(cap, s->inflight_lo);
	cap = bbr_max_u32(cap, BBR_CWND_MIN_TARGET);
	if (cap < bbr_out_cwnd(sk, b)) /* most ACKs: no bound, nothing to write */
		bbr_out_set_cwnd(sk, b, cap);
}

BBR_INLINE void bbr3_state_init(struct sock *sk, struct bbr_core *b, struct bbr3 *s)
{
	struct tcp_sock *tp = tcp_sk(sk);

	__builtin_memset(s, 0, sizeof(*s));
	s->initialized = 1;
	s->init_cwnd = bbr_min_u32(0x7F, bbr_out_cwnd(sk, b));
	s->probe_rtt_min_us = tp->rtt_min.s[0].v;
	s->probe_rtt_min_stamp = b->min_rtt_stamp;   /* the reset's clock: tcp_mstamp may be stale */
	s->loss_round_delivered = tp->delivered + 1; /* the first loss round ends with the first flight */
	s->round_lost = tp->lost;
	s->round_delivered = tp->delivered;
	s->round_ce = tp->delivered_ce;
	s->ack_delivered_ce = tp->delivered_ce;
	s->inflight_hi = ~0U;
	s->bw_probe_up_cnt = ~0U;
	s->ecn_alpha = BBR_UNIT; /* respond at once if the path is congested from the start */
	bbr3_reset_lower_bounds(b, s);
}

/* With the tracing programs attached, the flow's send records: their storage is what makes the
 * programs record this flow (a restarted flow's old records are dropped).
 */
BBR_INLINE void bbr3_pp_init(struct sock *sk, struct bbr3 *s)
{
	s->pp_on = bbr3_pp_live && bbr3_pp_create(sk); /* a full table: the ACK-time path */
}

/* The substrate's reset (v3 shares its fields), v3's own state, then the request to pace. */
BBR_INLINE void bbr3_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;

	bbr_core_reset(sk, b);
	b->prior_cwnd = tp->prior_cwnd;
	s = bbr3_state(sk, true);
	if (s) {
		bbr3_state_init(sk, b, s);
		bbr3_pp_init(sk, s);
	}
	bbr_out_request_pacing(sk, b);
}

/* cong_control: the per-ACK entry point, with its one storage lookup. */
BBR_INLINE void bbr3_main(struct sock *sk, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, true);
	struct bbr3_acked acked;
	struct bbr3_pp *pp = NULL;
	u32 sample_bw = 0;
	bool missed = true;

	if (!s)
		return; /* no memory for the model: keep cwnd and pacing as they are */
	if (!s->initialized)
		bbr3_state_init(sk, b, s);

	/* Approximations A and B; in a loss round, where the checks act on them, the per-packet path's
	 * record of the ACKed skb gives v3's own.
	 */
	acked.tx_in_flight = rs->prior_in_flight;
	acked.lost = bbr3_lost_in_round(tp, s);
	/* The flow's per-packet state, looked up once, only on the ACKs that need it. */
	if (s->pp_on && (acked.lost || rs->losses > 0))
		pp = bbr3_pp_state(sk);
	if (acked.lost && s->pp_on)
		bbr3_pp_acked(sk, pp, rs, &acked);
	/* The per-packet path's decision, on the ACKs that marked skbs lost. */
	if (rs->losses > 0 && !(s->pp_on && bbr3_pp_apply(sk, b, s, pp, (u32)rs->losses, &missed)))
		bbr3_on_losses(sk, b, s, rs, s->pp_on && !missed);

	b->round_start = 0;
	if (rs->interval_us > 0 && !bbr_after(b->next_rtt_delivered, rs->prior_delivered)) {
		b->next_rtt_delivered = tp->delivered;
		b->rtt_cnt++;
		b->round_start = 1;
		s->rounds_since_probe = bbr_min_u32(s->rounds_since_probe + 1, 0xFF);
		bbr3_update_ecn_alpha(sk, b, s);
	}
	if (tp->delivered_ce != s->ack_delivered_ce) { /* this ACK carried CE feedback */
		s->ack_delivered_ce = tp->delivered_ce;
		if (bbr3_ecn(s))
			s->ecn_in_round = 1;
	}
	/* Rounded up, so that slow flows can grow. */
	if (rs->interval_us > 0 && rs->delivered >= 0)
		sample_bw = (u32)(((u64)rs->delivered * BW_UNIT + (u64)rs->interval_us - 1) /
			(u64)rs->interval_us);
	bbr3_update_latest_delivery_signals(sk, s, rs, sample_bw);

	bbr3_update_congestion_signals(sk, b, s, rs, sample_bw);
	bbr_update_ack_aggregation(sk, b, rs);
	bbr3_check_loss_too_high_in_startup(sk, b, s, rs, &acked);
	bbr3_variant_check_full_bw(b, s, rs, sample_bw);
	bbr3_check_drain(sk, b, s);
	bbr3_update_cycle_phase(sk, b, s, rs, &acked, sample_bw);
	bbr3_update_min_rtt(sk, b, s, rs);
	bbr3_update_gains(b);

	bbr_set_pacing_rate(sk, b, bbr_bw(b), b->pacing_gain);
	bbr3_set_cwnd(sk, b, s, rs->acked_sacked, bbr_bw(b));
	bbr3_bound_cwnd_for_inflight_model(sk, b, s);

	bbr3_advance_latest_delivery_signals(sk, s, rs, sample_bw);
	b->prev_ca_state = inet_csk(sk)->icsk_ca_state;
	if (acked.lost) /* losses since the ACKed skb was sent */
		s->loss_in_cycle = 1;
	if (rs->delivered_ce > 0)
		s->ecn_in_cycle = 1;
}

/* Entering recovery: save cwnd, and the bounds in case the recovery turns out spurious. */
BBR_INLINE u32 bbr3_ssthresh(struct sock *sk)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, false);
	bool missed;

	bbr_save_cwnd(sk, b);
	if (s) {
		if (s->pp_on) /* v3 took it at the mark, before this */
			bbr3_pp_apply(sk, b, s, bbr3_pp_state(sk), 0, &missed);
		s->undo_bw_lo = s->bw_lo;
		s->undo_inflight_lo = s->inflight_lo;
		s->undo_inflight_hi = s->inflight_hi;
	}
	return bbr_out_ssthresh(sk, b);
}

/* Spurious recovery: restore the bounds and cwnd saved on entry. */
BBR_INLINE u32 bbr3_undo_cwnd(struct sock *sk)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s = bbr3_state(sk, false);

	if (!s)
		return bbr_out_cwnd(sk, b);
	bbr3_reset_full_bw(b, s);
	s->loss_in_round = 0;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	if (TWIN_MUTANT(undo_restore))
		return b->prior_cwnd;
#endif
	s->bw_lo = bbr_max_u32(s->bw_lo, s->undo_bw_lo);
	s->inflight_lo = bbr_max_u32(s->inflight_lo, s->undo_inflight_lo);
	s->inflight_hi = bbr_max_u32(s->inflight_hi, s->undo_inflight_hi);
	bbr3_set_bw(b, s);
	return b->prior_cwnd;
}

BBR_INLINE void bbr3_set_state(struct sock *sk, u8 new_state)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;

	if (new_state == TCP_CA_Loss) {
		b->prev_ca_state = TCP_CA_Loss;
		s = bbr3_state(sk, false);
		if (!s)
			return;
		/* An RTO may mean a new path: learn its plateau again. */
		bbr3_reset_full_bw(b, s);
		/* v3 judged the marks before this callback, so a probe they ended is over here. */
		bbr3_on_rto(sk, b, s);
		/* The lower-bound cut needs the cwnd from before the RTO. */
		if (!bbr3_is_probing_bandwidth(b) && s->inflight_lo == ~0U)
			s->inflight_lo = bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd);
	} else if (b->prev_ca_state == TCP_CA_Loss) {
		bbr_out_set_cwnd(sk, b, bbr_max_u32(bbr_out_cwnd(sk, b), b->prior_cwnd));
	}
}

BBR_INLINE void bbr3_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	struct bbr_core *b = bbr_core_of(sk);
	struct bbr3 *s;

	if (!bbr_restart_from_idle(sk, b, event) || b->mode != BBRKIT_PROBE_RTT)
		return;
	s = bbr3_state(sk, false);
	if (s)
		bbr3_check_probe_rtt_done(sk, b, s, bbr_now_ticks(tcp_sk(sk)));
}

#define bbr3_sndbuf_expand bbr_core_sndbuf_expand
#define bbr3_min_tso_segs bbr_core_min_tso_segs

/* The substrate's record plus the v3 state. */
BBR_INLINE void bbr3_fill_flow(struct bbrkit_flow *f, struct sock *sk, const struct bbr_core *b, u8 event)
{
	const struct bbr3 *s = bbr3_state(sk, false);
	const struct bbr3_pp *pp;
	u32 lost, delivered;

	bbr_fill_flow_common(f, sk, b, event);
	f->variant[BBRKIT_VAR_V3_PHASE] = b->mode == BBRKIT_PROBE_BW ? b->cycle_idx : BBRKIT_V3_NONE;
	if (!s)
		return;
	lost = s->last_round_lost;
	delivered = s->last_round_delivered;
	f->flags |= s->full_bw_now ? BBRKIT_F_FULL_BW_NOW : 0;
	f->max_bw = bbr3_max_bw(s);
	f->max_bw_cycle[0] = s->bw_hi[0];
	f->max_bw_cycle[1] = s->bw_hi[1];
	f->bw_shortterm = s->bw_lo;
	f->inflight_longterm = s->inflight_hi;
	f->inflight_shortterm = s->inflight_lo;
	f->undo_bw_shortterm = s->undo_bw_lo;
	f->undo_inflight_shortterm = s->undo_inflight_lo;
	f->undo_inflight_longterm = s->undo_inflight_hi;
	f->drain_start_round = s->drain_start_round;
	f->variant[BBRKIT_VAR_V3_LOSS_RATE] =
		lost + delivered ? (u16)((u64)lost * BBRKIT_PERMILLE / (lost + delivered)) : 0;
	f->variant[BBRKIT_VAR_V3_ECN_RATE] =
		delivered ? (u16)((u64)s->last_round_ce * BBRKIT_PERMILLE / delivered) : 0;
	f->variant[BBRKIT_VAR_V3_ECN_ALPHA] = s->ecn_alpha;
	f->variant[BBRKIT_VAR_V3_PROBE_RTT_MIN] = s->probe_rtt_min_us;
	pp = s->pp_on ? bbr3_pp_state(sk) : NULL;
	f->variant[BBRKIT_VAR_V3_PP_DECISIONS] = pp ? pp->decisions : BBRKIT_VAR_NONE;
	f->variant[BBRKIT_VAR_V3_PP_MISSES] = pp ? pp->misses : BBRKIT_VAR_NONE;
}

#ifdef __bpf__
/* The kernel's TCPCB_* bits of tcp_skb_cb.sacked (#defines, so not in BTF). */
#define BBR3_TCPCB_SACKED_ACKED 0x01
#define BBR3_TCPCB_SACKED_RETRANS 0x02
#define BBR3_TCPCB_LOST 0x04

/* The counts bbr3_pp_sent/lost read, with the kernel's tcp_packets_in_flight(). */
BBR_INLINE void bbr3_pp_read_sock(struct bbr3_pp_sock *c, const struct tcp_sock *tp)
{
	c->snd_nxt = BPF_CORE_READ(tp, snd_nxt);
	c->in_flight = BPF_CORE_READ(tp, packets_out) - BPF_CORE_READ(tp, sacked_out) -
		BPF_CORE_READ(tp, lost_out) + BPF_CORE_READ(tp, retrans_out);
	c->lost = BPF_CORE_READ(tp, lost);
	c->cwnd = BPF_CORE_READ(tp, snd_cwnd);
	c->mss = BPF_CORE_READ(tp, mss_cache);
}

/* The flow's entry, with the skb's control block and the socket's counts; NULL for a socket that is
 * not ours. Every transmit of every TCP socket on the host comes here: such a socket costs one hash
 * lookup of its address.
 */
BBR_INLINE struct bbr3_pp *bbr3_pp_hook(
	struct sock *sk, struct sk_buff *skb, struct tcp_skb_cb *cb, struct bbr3_pp_sock *c)
{
	u64 key = (u64)sk;
	struct bbr3_pp *pp = bpf_map_lookup_elem(&bbr3_pp_flows, &key);

	if (!pp || bpf_probe_read_kernel(cb, sizeof(*cb), &skb->cb))
		return NULL;
	bbr3_pp_read_sock(c, (const struct tcp_sock *)sk);
	return pp;
}

BBR_INLINE int bbr3_pp_on_sent(struct sock *sk, struct sk_buff *skb)
{
	struct tcp_skb_cb cb;
	struct bbr3_pp_sock c;
	struct bbr3_pp *pp = bbr3_pp_hook(sk, skb, &cb, &c);

	if (pp)
		bbr3_pp_sent(pp, &c, cb.seq, cb.end_seq, cb.tcp_gso_segs);
	return 0;
}

/* Runs at the start of tcp_mark_skb_lost(): only a new loss event (not SACKed; not marked before,
 * unless its retransmit is the one lost) counts, as it does in tp->lost.
 */
BBR_INLINE int bbr3_pp_on_lost(struct sock *sk, struct sk_buff *skb)
{
	struct tcp_skb_cb cb;
	struct bbr3_pp_sock c;
	struct bbr3_pp *pp = bbr3_pp_hook(sk, skb, &cb, &c);

	if (!pp || (cb.sacked & BBR3_TCPCB_SACKED_ACKED) ||
		((cb.sacked & BBR3_TCPCB_LOST) && !(cb.sacked & BBR3_TCPCB_SACKED_RETRANS)))
		return 0;
	bbr3_pp_lost(pp, &c, cb.seq, cb.end_seq, cb.tcp_gso_segs, cb.tx.is_app_limited,
		cb.tx.delivered_mstamp != 0);
	return 0;
}

/* Each hook as an fentry program (cheapest) and as a kprobe, for kernels that refuse fentry (bbrctl
 * tries fentry first).
 */
#define BBR3_PP_HOOK(kernel_fn, hook) \
	SEC("fentry/" #kernel_fn) \
	int BPF_PROG(bbr3_pp_fentry_##hook, struct sock *sk, struct sk_buff *skb) \
	{ \
		return bbr3_pp_on_##hook(sk, skb); \
	} \
	SEC("kprobe/" #kernel_fn) \
	int BPF_KPROBE(bbr3_pp_kprobe_##hook, struct sock *sk, struct sk_buff *skb) \
	{ \
		return bbr3_pp_on_##hook(sk, skb); \
	}

BBR3_PP_HOOK(tcp_rate_skb_sent, sent)
BBR3_PP_HOOK(tcp_mark_skb_lost, lost)

/* The socket's entry goes with it. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(bbr3_pp_destroy, struct sock *sk)
{
	u64 key = (u64)sk;

	bpf_map_delete_elem(&bbr3_pp_flows, &key);
	return 0;
}
#endif

#endif /* BBR3_CORE_H */
