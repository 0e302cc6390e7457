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
 * State beyond the 104 bytes: struct bbr3 (120 bytes) lives in BPF_MAP_TYPE_SK_STORAGE, looked up
 * once per ACK (bbr3_main) and passed down. Packing does not work: the core fields v3 shares take
 * ~56 bytes, leaving 48 (the v1-only max filter, long-term sampling and ext) for a model of 96
 * (plus 16 bytes of telemetry), and narrowing bandwidths or inflights to 16 bits would
 * change the algorithm. The storage is created at init and, should that fail, on a later ACK;
 * until it exists the flow keeps its cwnd and pacing rate.
 *
 * Signals a stock kernel does not give a congestion control, and what stands in for them:
 * C. skb_marked_lost (a hook per lost skb, with that skb's tx.in_flight and tx.lost): the
 *    per-packet path (bbr3_pp.h) judges each lost skb as v3 does and leaves the decision for the
 *    next callback that sees losses. Its send records and marks come from programs on the kernel's
 *    tcp_rate_skb_sent() and tcp_mark_skb_lost() that bbrctl attaches as fentry or kprobes, or,
 *    where the kernel allows neither, from the net_dev_queue and tcp_retransmit_skb tracepoints
 *    and the callbacks' own walk of the retransmit queue (bbr3_pp_walk.h: the same decisions when
 *    the kernel marks in sequence order). Where no way loads (bbrctl warns once; records then carry
 *    no pp_decisions), or for an skb sent beyond its 1024 records, the ACK that reports new losses
 *    (rs->losses > 0) judges them as one, with A and B, the crossing solved with pcount =
 *    rs->losses: not v3's decisions (tests/unit/test_bbr3_pp.c).
  * A. rs->tx_in_flight (the flight when the ACKed packet was sent), read by the per-ACK checks
 *    (adapt_upper_bounds, STARTUP's loss exit) and C's fallback -> on the per-packet path the ACKed
 *    skb's record (bbr3_pp_acked) in a loss round, or when the skb was sent before the latest loss,
 *    before inflight_hi was last cut, or while cwnd was above inflight_hi (then its flight may
 *    raise inflight_hi); otherwise rs->prior_in_flight (the flight when the ACK arrived), which on
 *    the per-packet path is capped at inflight_hi (an skb sent within it cannot raise it). Larger
 *    while UP grows the flight, smaller in recovery (cwnd cut, lost packets leave it); outside loss
 *    rounds it only decides whether a larger flight raises inflight_hi.
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
 * Where the shared substrate deviates from v3: time stamps are 1024 us ticks, as in BBRv1.
 *
 * The algorithm file defines the two rule hooks (bbr3_model.h; bbr3 with v3's rules, bbr2 with
 * v2alpha's) and may override the BBR3_* constants before including this header, which includes the
 * rest in order: bbr3_model.h (state, parameters, primitives), bbr3_pp.h (the per-packet path's
 * records and rule), bbr3_pp_walk.h (the walk that finds lost skbs where no hook can),
 * bbr3_pp_progs.h (the path's programs), bbr3_steps.h (the per-ACK steps), bbr3_cc.h (callbacks
 * and flow record).
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
/* v3 (and v2's extra_acked_in_startup): in STARTUP the extra_acked window is a round, so that the
 * cwnd follows the fast-growing ACK stream (bbr_update_ack_aggregation).
 */
#define BBR3_STARTUP_EXTRA_ACKED_WIN_RTTS 1
#ifndef BBR3_UP_FORGETS_UNUSED_ACKS
#define BBR3_UP_FORGETS_UNUSED_ACKS 0 /* v2: ACKs while not cwnd-limited earn no inflight_hi growth */
#endif

#define BBRKIT_CC(fn) bbr3_##fn

#include "bbr_substrate.h"

#include "bbr3_model.h"
#include "bbr3_pp.h"
#include "bbr3_pp_walk.h"
#include "bbr3_pp_progs.h"
#include "bbr3_steps.h"
#include "bbr3_cc.h"

#endif /* BBR3_CORE_H */
