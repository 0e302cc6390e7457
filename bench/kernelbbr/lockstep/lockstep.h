/* SPDX-License-Identifier: GPL-2.0 */
/* Records and counters shared by the lockstep congestion control (bbr_lockstep.bpf.c) and its
 * loader (lockstep.c). Test-only: nothing here is part of an algorithm.
 */
#ifndef LOCKSTEP_H
#define LOCKSTEP_H

/* The callbacks compared, X(ID, name), by the congestion control op that ran. */
#define LS_CALLBACKS(X) \
	X(ACK, "ack") /* cong_control */ \
	X(INIT, "init") \
	X(CWND_EVENT, "cwnd_event") \
	X(SSTHRESH, "ssthresh") \
	X(UNDO, "undo_cwnd") \
	X(SET_STATE, "set_state") \
	X(MIN_TSO_SEGS, "min_tso_segs") /* returns only: these two change no state, so they never re-sync */ \
	X(SNDBUF_EXPAND, "sndbuf_expand")

/* The fields compared, X(ID, name); a mismatch record carries a bit mask of them. Which members of
 * struct ls_state each one covers is in LS_OUTPUTS and LS_MODEL below, or, for the stamps and the
 * returns, in ls_diff() (bbr_lockstep.bpf.c).
 */
#define LS_FIELDS(X) \
	X(MODE, "mode") \
	X(CYCLE_IDX, "cycle_idx") \
	X(CWND, "cwnd") /* snd_cwnd, or undo_cwnd's return */ \
	X(PACING_RATE, "pacing_rate") \
	X(BW, "bw") /* max filter, packets/us << 24 */ \
	X(MIN_RTT, "min_rtt") \
	X(ROUND, "round") /* packet-timed round count */ \
	X(FULL_BW, "full_bw") \
	X(GAINS, "gains") \
	X(LT, "lt_bw") \
	X(SSTHRESH, "ssthresh") /* snd_ssthresh, or ssthresh's return */ \
	X(PRIOR_CWND, "prior_cwnd") \
	X(ACK_AGG, "ack_aggregation") \
	X(CONSERVATION, "conservation") \
	X(APP_LIMITED, "app_limited")	  /* tp->app_limited (PROBE_RTT marks it) */ \
	X(PACING_STATUS, "pacing_status") /* sk_pacing_status (init asks for pacing) */ \
	/* Hidden state: what no decision shows at once but later ones follow from. The two stamps kept \
	 * in different clocks (kernel jiffies, core 1024 us ticks) are compared as times relative to the \
	 * comparison, within both clocks' rounding (ls_stamp_slack_us() in the BPF program). \
	 */ \
	X(MIN_RTT_STAMP, "min_rtt_stamp") \
	X(PROBE_RTT_STAMP, "probe_rtt_stamp") /* probe_rtt_done_stamp (armed, when), probe_rtt_round_done */ \
	X(NEXT_RTT_DELIVERED, "next_rtt_delivered") \
	X(IDLE_RESTART, "idle_restart") \
	X(ACK_EPOCH, "ack_epoch") /* epoch start (us, low 32 bits), packets in it, window age and half */ \
	X(BW_SLOTS, "bw_slots")	  /* max filter slots 1-2 (value, round) and slot 0's round */ \
	X(CYCLE_STAMP, "cycle_stamp") /* start of the gain cycle phase (us, low 32 bits) */ \
	X(LT_INTERVAL, "lt_interval") \
	X(PREV_CA_STATE, "prev_ca_state") \
	X(HAS_SEEN_RTT, "has_seen_rtt") \
	X(MIN_TSO_SEGS, "min_tso_segs")	  /* min_tso_segs' return; these two last: see LS_STATE_FIELDS */ \
	X(SNDBUF_EXPAND, "sndbuf_expand") /* sndbuf_expand's return */

/* What the compared ACKs exercised (the kernel's state after the ACK), X(ID, name), to show a run's
 * coverage; idle restarts are counted at the transmit start that begins them (the next ACK ends them),
 * RTOs at the switch to TCP_CA_Loss (an undo may end it before any ACK is compared in it).
 */
#define LS_COVERAGE(X) \
	X(RECOVERY, "recovery")		/* TCP in Recovery */ \
	X(LOSS, "loss")			/* TCP in Loss (after an RTO) */ \
	X(CONSERVATION, "conservation") /* packet conservation */ \
	X(LT_SAMPLING, "lt_sampling")	/* long-term sampling running */ \
	X(LT_USE_BW, "lt_use_bw")	/* pacing at the policed rate */ \
	X(APP_LIMITED, "app_limited")	/* an app-limited rate sample */ \
	X(IDLE_RESTART, "idle_restart") /* transmit starts after idle while app-limited */ \
	X(RTO, "rto")			/* set_state(TCP_CA_Loss): retransmission timeouts (events) */

/* The socket values the kernel's BBR writes, X(type, member, field, socket): the kernel's side reads
 * them from the socket after the callback, the shadow's from its own result (struct ls_out, which
 * starts from the same socket values saved before the callback).
 */
#define LS_OUTPUTS(X) \
	X(__u64, pacing_rate, PACING_RATE, sk->sk_pacing_rate) \
	X(__u32, cwnd, CWND, tp->snd_cwnd) \
	X(__u32, ssthresh, SSTHRESH, tp->snd_ssthresh) \
	X(__u32, app_limited, APP_LIMITED, tp->app_limited) \
	X(__u32, pacing_status, PACING_STATUS, sk->sk_pacing_status)

/* The model, X(type, member, field, kernel, core): every member of the kernel's struct bbr that a
 * re-sync copies (core = kernel), read as k->kernel and b->core on the two sides, and compared in
 * field. The two u64 us stamps are kept by the core as their low 32 bits (type truncates the kernel's).
 */
#define LS_MODEL(X) \
	X(__u32, bw, BW, bw.s[0].v, bw.s[0].v) \
	X(__u32, bw_t0, BW_SLOTS, bw.s[0].t, bw.s[0].t) \
	X(__u32, bw_v1, BW_SLOTS, bw.s[1].v, bw.s[1].v) \
	X(__u32, bw_t1, BW_SLOTS, bw.s[1].t, bw.s[1].t) \
	X(__u32, bw_v2, BW_SLOTS, bw.s[2].v, bw.s[2].v) \
	X(__u32, bw_t2, BW_SLOTS, bw.s[2].t, bw.s[2].t) \
	X(__u32, min_rtt_us, MIN_RTT, min_rtt_us, min_rtt_us) \
	X(__u32, rtt_cnt, ROUND, rtt_cnt, rtt_cnt) \
	X(__u32, full_bw, FULL_BW, full_bw, full_bw) \
	X(__u32, lt_bw, LT, lt_bw, lt_bw) \
	X(__u32, prior_cwnd, PRIOR_CWND, prior_cwnd, prior_cwnd) \
	X(__u32, next_rtt_delivered, NEXT_RTT_DELIVERED, next_rtt_delivered, next_rtt_delivered) \
	X(__u32, cycle_stamp, CYCLE_STAMP, cycle_mstamp, cycle_stamp) \
	X(__u32, ack_epoch_stamp, ACK_EPOCH, ack_epoch_mstamp, ack_epoch_stamp) \
	X(__u32, ack_epoch_acked, ACK_EPOCH, ack_epoch_acked, ack_epoch_acked) \
	X(__u32, lt_last_delivered, LT_INTERVAL, lt_last_delivered, lt_last_delivered) \
	X(__u32, lt_last_stamp, LT_INTERVAL, lt_last_stamp, lt_last_stamp) /* ms */ \
	X(__u32, lt_last_lost, LT_INTERVAL, lt_last_lost, lt_last_lost) \
	X(__u16, extra_acked0, ACK_AGG, extra_acked[0], extra_acked[0]) \
	X(__u16, extra_acked1, ACK_AGG, extra_acked[1], extra_acked[1]) \
	X(__u16, pacing_gain, GAINS, pacing_gain, pacing_gain) \
	X(__u16, cwnd_gain, GAINS, cwnd_gain, cwnd_gain) \
	X(__u8, mode, MODE, mode, mode) \
	X(__u8, cycle_idx, CYCLE_IDX, cycle_idx, cycle_idx) \
	X(__u8, full_bw_reached, FULL_BW, full_bw_reached, full_bw_reached) \
	X(__u8, full_bw_cnt, FULL_BW, full_bw_cnt, full_bw_cnt) \
	X(__u8, lt_use_bw, LT, lt_use_bw, lt_use_bw) \
	X(__u8, lt_is_sampling, LT, lt_is_sampling, lt_is_sampling) \
	X(__u8, packet_conservation, CONSERVATION, packet_conservation, packet_conservation) \
	X(__u8, probe_rtt_round_done, PROBE_RTT_STAMP, probe_rtt_round_done, probe_rtt_round_done) \
	X(__u8, round_start, NEXT_RTT_DELIVERED, round_start, round_start) \
	X(__u8, idle_restart, IDLE_RESTART, idle_restart, idle_restart) \
	X(__u8, extra_acked_win_rtts, ACK_EPOCH, extra_acked_win_rtts, extra_acked_win_rtts) \
	X(__u8, extra_acked_win_idx, ACK_EPOCH, extra_acked_win_idx, extra_acked_win_idx) \
	X(__u8, lt_rtt_cnt, LT_INTERVAL, lt_rtt_cnt, lt_rtt_cnt) \
	X(__u8, prev_ca_state, PREV_CA_STATE, prev_ca_state, prev_ca_state) \
	X(__u8, has_seen_rtt, HAS_SEEN_RTT, has_seen_rtt, has_seen_rtt)

#define LS_ENUM_CB(id, name) LS_CB_##id,
enum ls_callback { LS_CALLBACKS(LS_ENUM_CB) LS_CB_COUNT };
#undef LS_ENUM_CB

#define LS_ENUM_F(id, name) LS_F_##id,
enum ls_field { LS_FIELDS(LS_ENUM_F) LS_F_COUNT };
#undef LS_ENUM_F

/* Fields whose difference re-syncs the shadow: all but the two returns computed from the socket alone. */
#define LS_STATE_FIELDS ((1U << LS_F_MIN_TSO_SEGS) - 1)

#define LS_ENUM_COV(id, name) LS_COV_##id,
enum ls_coverage { LS_COVERAGE(LS_ENUM_COV) LS_COV_COUNT };
#undef LS_ENUM_COV

#define LS_MODES 4 /* STARTUP, DRAIN, PROBE_BW, PROBE_RTT: the same numbers in both */

/* One side's decision and model after a callback. */
struct ls_state {
	__s64 min_rtt_stamp_us;	 /* stamp minus the moment of comparison, us (so <= 0) */
	__s64 probe_rtt_done_us; /* end of PROBE_RTT minus the moment of comparison, us; 0 if not armed */
#define LS_MEMBER(type, member, ...) type member;
	LS_OUTPUTS(LS_MEMBER)
	LS_MODEL(LS_MEMBER)
#undef LS_MEMBER
	__u32 min_tso_segs;  /* the return, in min_tso_segs' records only */
	__u32 sndbuf_expand; /* the return, in sndbuf_expand's records only */
	__u8 probe_rtt_armed;
};

/* A callback after which the two sides differed (then the shadow is re-synced when any of
 * LS_STATE_FIELDS differed).
 */
struct ls_record {
	__u64 t_ns;
	__u64 seq;	 /* state-changing callbacks compared on this socket, this one included:
			     * consecutive numbers in two records mean the difference outlived a re-sync */
	__u32 fields;	 /* bit mask of enum ls_field */
	__u32 delivered; /* tp->delivered */
	__u32 srtt_us;	 /* the socket's smoothed RTT: how long a round takes */
	__u32 jiffy_us;	 /* the kernel's clock for the two stamps, 1e6 / CONFIG_HZ */
	__u16 sport;
	__u16 dport;
	__u8 callback; /* enum ls_callback */
	__u8 arg;      /* cwnd_event's event, set_state's state */
	__u8 ca_state;
	__u8 mode_before; /* both sides' mode before the callback (they were in sync) */
	struct ls_state kernel;
	struct ls_state shadow;
};

struct ls_counters {
	__u64 compared[LS_CB_COUNT];   /* callbacks compared, by kind */
	__u64 mismatched[LS_CB_COUNT]; /* of which with any difference */
	__u64 field[LS_F_COUNT];       /* callbacks in which the field differed */
	__u64 acks_by_mode[LS_MODES];  /* ACKs compared, by mode before the ACK */
	__u64 mismatched_acks_by_mode[LS_MODES];
	__u64 covered[LS_COV_COUNT]; /* ACKs (idle restarts: events) with each condition */
	__u64 resyncs;		     /* shadow re-synced from the kernel's state */
	__u64 stamp_gap_us; /* widest min_rtt stamp gap that passed as agreeing: the slack's margin */
	__u64 no_shadow;    /* callbacks without shadow state (storage full) */
	__u64 lost_records; /* mismatch records the ring buffer had no room for */
	/* The kernel's min_rtt window on the run's clock (bpf_ktime_get_ns), for the PROBE_RTT a run
	 * expects: entry comes 10 s after the last new low, not 10 s after the start.
	 */
	__u64 first_ack_ns;	    /* the first ACK of any flow after its init */
	__u64 min_rtt_lowered_ns;   /* the last new low of any flow's min_rtt before the first PROBE_RTT */
	__u64 probe_rtt_entered_ns; /* the first ACK that took a flow into PROBE_RTT */
};

#endif /* LOCKSTEP_H */
