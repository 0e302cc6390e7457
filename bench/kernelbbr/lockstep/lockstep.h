/* SPDX-License-Identifier: GPL-2.0 */
/* Records and counters shared by the lockstep congestion control (bbr_lockstep.bpf.c) and its
 * loader (lockstep.c). Test-only: nothing here is part of an algorithm.
 */
#ifndef LOCKSTEP_H
#define LOCKSTEP_H

/* The callbacks compared, by the congestion control op that ran. */
enum ls_callback {
	LS_CB_ACK, /* cong_control */
	LS_CB_INIT,
	LS_CB_CWND_EVENT,
	LS_CB_SSTHRESH,
	LS_CB_UNDO,
	LS_CB_SET_STATE,
	LS_CB_MIN_TSO_SEGS, /* returns only: these two change no state, so they never re-sync */
	LS_CB_SNDBUF_EXPAND,
	LS_CB_COUNT,
};

/* The fields compared; a mismatch record carries a bit mask of these. */
enum ls_field {
	LS_F_MODE,
	LS_F_CYCLE_IDX,
	LS_F_CWND, /* snd_cwnd, or undo_cwnd's return */
	LS_F_PACING_RATE,
	LS_F_BW, /* max filter, packets/us << 24 */
	LS_F_MIN_RTT,
	LS_F_ROUND,    /* packet-timed round count */
	LS_F_FULL_BW,  /* full_bw_reached, full_bw_cnt, full_bw */
	LS_F_GAINS,    /* pacing_gain, cwnd_gain */
	LS_F_LT,       /* lt_use_bw, lt_bw, lt_is_sampling */
	LS_F_SSTHRESH, /* snd_ssthresh, or ssthresh's return */
	LS_F_PRIOR_CWND,
	LS_F_ACK_AGG,	    /* extra_acked[2] */
	LS_F_CONSERVATION,  /* packet_conservation */
	LS_F_APP_LIMITED,   /* tp->app_limited (PROBE_RTT marks it) */
	LS_F_PACING_STATUS, /* sk_pacing_status (init asks for pacing) */
	/* Hidden state: what no decision shows at once but later ones follow from. The two stamps
	 * kept in different clocks (kernel jiffies, core 1024 us ticks) are compared as times relative
	 * to the comparison, within both clocks' rounding (ls_stamp_slack_us() in the BPF program).
	 */
	LS_F_MIN_RTT_STAMP,
	LS_F_PROBE_RTT_STAMP,	 /* probe_rtt_done_stamp (armed, when), probe_rtt_round_done */
	LS_F_NEXT_RTT_DELIVERED, /* next_rtt_delivered, round_start */
	LS_F_IDLE_RESTART,
	LS_F_ACK_EPOCH,	  /* epoch start (us, low 32 bits), packets in it, window age and half */
	LS_F_BW_SLOTS,	  /* max filter slots 1-2 (value, round) and slot 0's round */
	LS_F_CYCLE_STAMP, /* start of the gain cycle phase (us, low 32 bits) */
	LS_F_LT_INTERVAL, /* lt_rtt_cnt, lt_last_delivered, lt_last_stamp (ms), lt_last_lost */
	LS_F_PREV_CA_STATE,
	LS_F_HAS_SEEN_RTT,
	LS_F_MIN_TSO_SEGS,  /* min_tso_segs' return */
	LS_F_SNDBUF_EXPAND, /* sndbuf_expand's return */
	LS_F_COUNT,
};

/* Fields whose difference re-syncs the shadow: all but the two returns computed from the socket alone. */
#define LS_STATE_FIELDS ((1U << LS_F_MIN_TSO_SEGS) - 1)

/* What the compared ACKs exercised (the kernel's state after the ACK), to show a run's coverage;
 * idle restarts are counted at the transmit start that begins them (the next ACK ends them), RTOs
 * at the switch to TCP_CA_Loss (an undo may end it before any ACK is compared in it).
 */
enum ls_coverage {
	LS_COV_RECOVERY,     /* TCP in Recovery */
	LS_COV_LOSS,	     /* TCP in Loss (after an RTO) */
	LS_COV_CONSERVATION, /* packet conservation */
	LS_COV_LT_SAMPLING,  /* long-term sampling running */
	LS_COV_LT_USE_BW,    /* pacing at the policed rate */
	LS_COV_APP_LIMITED,  /* an app-limited rate sample */
	LS_COV_IDLE_RESTART, /* transmit starts after idle while app-limited */
	LS_COV_RTO,	     /* set_state(TCP_CA_Loss): retransmission timeouts (events) */
	LS_COV_COUNT,
};

#define LS_MODES 4 /* STARTUP, DRAIN, PROBE_BW, PROBE_RTT: the same numbers in both */

/* One side's decision and model after a callback. */
struct ls_state {
	__s64 min_rtt_stamp_us;	 /* stamp minus the moment of comparison, us (so <= 0) */
	__s64 probe_rtt_done_us; /* end of PROBE_RTT minus the moment of comparison, us; 0 if not armed */
	__u64 pacing_rate;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 app_limited;
	__u32 bw;
	__u32 lt_bw;
	__u32 min_rtt_us;
	__u32 rtt_cnt;
	__u32 full_bw;
	__u32 prior_cwnd;
	__u32 bw_v[3]; /* max filter slots: value (bw above is slot 0's) ... */
	__u32 bw_t[3]; /* ... and round */
	__u32 next_rtt_delivered;
	__u32 cycle_stamp;     /* us, low 32 bits */
	__u32 ack_epoch_stamp; /* us, low 32 bits */
	__u32 ack_epoch_acked;
	__u32 lt_last_delivered;
	__u32 lt_last_stamp; /* ms */
	__u32 lt_last_lost;
	__u32 min_tso_segs;  /* the return, in min_tso_segs' records only */
	__u32 sndbuf_expand; /* the return, in sndbuf_expand's records only */
	__u16 extra_acked[2];
	__u16 pacing_gain;
	__u16 cwnd_gain;
	__u8 mode;
	__u8 cycle_idx;
	__u8 full_bw_reached;
	__u8 full_bw_cnt;
	__u8 lt_use_bw;
	__u8 lt_is_sampling;
	__u8 packet_conservation;
	__u8 pacing_status;
	__u8 probe_rtt_armed;
	__u8 probe_rtt_round_done;
	__u8 round_start;
	__u8 idle_restart;
	__u8 extra_acked_win_rtts;
	__u8 extra_acked_win_idx;
	__u8 lt_rtt_cnt;
	__u8 prev_ca_state;
	__u8 has_seen_rtt;
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
};

#endif /* LOCKSTEP_H */
