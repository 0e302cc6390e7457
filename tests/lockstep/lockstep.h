/* SPDX-License-Identifier: GPL-2.0 */
/* Records and counters shared by the lockstep congestion control (bbr_lockstep.bpf.c) and its
 * loader (lockstep.c). Test-only: nothing here is part of an algorithm.
 */
#ifndef LOCKSTEP_H
#define LOCKSTEP_H

/* The callbacks compared, by the congestion control op that ran. */
enum ls_callback {
	LS_CB_ACK,       /* cong_control */
	LS_CB_INIT,
	LS_CB_CWND_EVENT,
	LS_CB_SSTHRESH,
	LS_CB_UNDO,
	LS_CB_SET_STATE,
	LS_CB_COUNT,
};

/* The fields compared; a mismatch record carries a bit mask of these. */
enum ls_field {
	LS_F_MODE,
	LS_F_CYCLE_IDX,
	LS_F_CWND,          /* snd_cwnd, or undo_cwnd's return */
	LS_F_PACING_RATE,
	LS_F_BW,            /* max filter, packets/us << 24 */
	LS_F_MIN_RTT,
	LS_F_ROUND,         /* packet-timed round count */
	LS_F_FULL_BW,       /* full_bw_reached, full_bw_cnt, full_bw */
	LS_F_GAINS,         /* pacing_gain, cwnd_gain */
	LS_F_LT,            /* lt_use_bw, lt_bw, lt_is_sampling */
	LS_F_SSTHRESH,      /* snd_ssthresh, or ssthresh's return */
	LS_F_PRIOR_CWND,
	LS_F_ACK_AGG,       /* extra_acked[2] */
	LS_F_CONSERVATION,  /* packet_conservation */
	LS_F_APP_LIMITED,   /* tp->app_limited (PROBE_RTT marks it) */
	LS_F_PACING_STATUS, /* sk_pacing_status (init asks for pacing) */
	LS_F_COUNT,
};

/* What the compared ACKs exercised (the kernel's state after the ACK), to show a run's coverage;
 * idle restarts are counted at the transmit start that begins them (the next ACK ends them).
 */
enum ls_coverage {
	LS_COV_RECOVERY,     /* TCP in Recovery */
	LS_COV_LOSS,         /* TCP in Loss (after an RTO) */
	LS_COV_CONSERVATION, /* packet conservation */
	LS_COV_LT_SAMPLING,  /* long-term sampling running */
	LS_COV_LT_USE_BW,    /* pacing at the policed rate */
	LS_COV_APP_LIMITED,  /* an app-limited rate sample */
	LS_COV_IDLE_RESTART, /* transmit starts after idle while app-limited */
	LS_COV_COUNT,
};

#define LS_MODES 4 /* STARTUP, DRAIN, PROBE_BW, PROBE_RTT: the same numbers in both */

/* One side's decision and model after a callback. */
struct ls_state {
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
};

/* A callback after which the two sides differed (then the shadow is re-synced). */
struct ls_record {
	__u64 t_ns;
	__u32 fields;       /* bit mask of enum ls_field */
	__u32 delivered;    /* tp->delivered */
	__u16 sport;
	__u16 dport;
	__u8 callback;      /* enum ls_callback */
	__u8 arg;           /* cwnd_event's event, set_state's state */
	__u8 ca_state;
	__u8 mode_before;   /* both sides' mode before the callback (they were in sync) */
	struct ls_state kernel;
	struct ls_state shadow;
};

struct ls_counters {
	__u64 compared[LS_CB_COUNT];    /* callbacks compared, by kind */
	__u64 mismatched[LS_CB_COUNT];  /* of which with any difference */
	__u64 field[LS_F_COUNT];        /* callbacks in which the field differed */
	__u64 acks_by_mode[LS_MODES];   /* ACKs compared, by mode before the ACK */
	__u64 mismatched_acks_by_mode[LS_MODES];
	__u64 covered[LS_COV_COUNT];    /* ACKs (idle restarts: events) with each condition */
	__u64 no_shadow;                /* callbacks without shadow state (storage full) */
	__u64 lost_records;             /* mismatch records the ring buffer had no room for */
};

#endif /* LOCKSTEP_H */
