/* SPDX-License-Identifier: GPL-2.0 */
/* Types and constants shared by the BPF programs, bbrctl and the host unit tests.
 *
 * Everything here crosses the kernel/user boundary (ring buffer records, iterator output,
 * parameter maps), so it uses fixed-width types and explicit padding only.
 */
#ifndef BBRKIT_H
#define BBRKIT_H

#ifdef __bpf__
/* vmlinux.h already provides the __u* types. */
#else
#include <linux/types.h>
#endif

/* Fixed point as in the kernel's tcp_bbr.c. */
#define BBR_SCALE 8 /* gains are in units of 1/256 */
#define BBR_UNIT (1 << BBR_SCALE)
#define BW_SCALE 24 /* bandwidth is in packets per microsecond << 24 */
#define BW_UNIT (1ULL << BW_SCALE)

/* Human parameters are stored in thousandths ("permille") so that they stay integers. */
#define BBRKIT_PERMILLE 1000

enum bbrkit_mode {
	BBRKIT_STARTUP,	  /* ramp up sending rate rapidly to fill the pipe */
	BBRKIT_DRAIN,	  /* drain the queue created during startup */
	BBRKIT_PROBE_BW,  /* discover and share bandwidth: pace around the estimate */
	BBRKIT_PROBE_RTT, /* cut inflight to the minimum to probe min_rtt */
};

/* Why a record was produced. */
enum bbrkit_event {
	BBRKIT_EV_SNAPSHOT, /* bbrctl flows: state read on demand by the iterator */
	BBRKIT_EV_INIT,	    /* the connection started using the algorithm */
	BBRKIT_EV_ROUND,    /* a packet-timed round trip ended */
	BBRKIT_EV_MODE,	    /* the state machine changed mode */
	BBRKIT_EV_PHASE,    /* the PROBE_BW gain cycle changed phase (cycle_idx) in the same mode */
	BBRKIT_EV_IDLE,	    /* transmission restarted after idle while app-limited (idle_restart set) */
	BBRKIT_EV_UNDO,	    /* TCP found a recovery spurious and undid it (undo_cwnd) */
};

/* Record flag bits. */
#define BBRKIT_F_FULL_BW_REACHED (1U << 0)
#define BBRKIT_F_LT_USE_BW (1U << 1) /* policer detected: pacing at the long-term rate */
#define BBRKIT_F_PACKET_CONSERVATION (1U << 2)
#define BBRKIT_F_IDLE_RESTART (1U << 3)
#define BBRKIT_F_IPV6 (1U << 4)
#define BBRKIT_F_FULL_BW_NOW (1U << 5)	  /* bbr2/bbr3: the plateau estimator sees a plateau now */
#define BBRKIT_F_RS_APP_LIMITED (1U << 6) /* this ACK's rate sample was app-limited */
#define BBRKIT_F_APP_LIMITED (1U << 7)	  /* tp->app_limited set: the sender is app-limited */

/* Slots of bbrkit_flow.variant for the variants' own state. */
#define BBRKIT_VAR_RTTGAIN_GAIN 0     /* last RTT-based cruise gain, BBR_UNIT */
#define BBRKIT_VAR_ACD_STEADY 0	      /* consecutive steady elevated RTT samples */
#define BBRKIT_VAR_ACD_CONGESTED 1    /* 1 when the detector declares congestion */
#define BBRKIT_VAR_ACD_HALVINGS 2     /* cwnd halvings applied so far */
#define BBRKIT_VAR_V3_PHASE 0	      /* bbr2/bbr3 PROBE_BW sub-phase, enum bbrkit_v3_phase */
#define BBRKIT_VAR_V3_LOSS_RATE 1     /* lost / (lost + delivered) of the last loss round, permille */
#define BBRKIT_VAR_V3_ECN_RATE 2      /* CE-marked / delivered of the last loss round, permille */
#define BBRKIT_VAR_V3_ECN_ALPHA 3     /* EWMA of the CE fraction, BBR_UNIT */
#define BBRKIT_VAR_V3_PROBE_RTT_MIN 4 /* us, the min RTT filter that times PROBE_RTT */
#define BBRKIT_VAR_V3_PP_DECISIONS 5  /* lost packets judged per packet; BBRKIT_VAR_NONE: ACK-time path */
#define BBRKIT_VAR_V3_PP_MISSES 6     /* lost packets with no send record; BBRKIT_VAR_NONE: ACK-time path */
#define BBRKIT_VAR_SLOTS 7
/* A variant slot, or a bound of the record, with no value (a bound that is not set). */
#define BBRKIT_VAR_NONE 0xffffffffU

/* PROBE_BW sub-phases of bbr2/bbr3 (the kernel's cycle_idx); NONE outside PROBE_BW. */
enum bbrkit_v3_phase {
	BBRKIT_V3_UP,	  /* pace at 5/4 x bw to probe for more bandwidth */
	BBRKIT_V3_DOWN,	  /* pace below bw to drain the probe's queue */
	BBRKIT_V3_CRUISE, /* pace at bw, leaving headroom below inflight_hi */
	BBRKIT_V3_REFILL, /* one round at bw with the short-term bounds lifted, before UP */
	BBRKIT_V3_NONE,
};

/* One flow's state: the ring buffer's trace record and the flows iterator's output. */
struct bbrkit_flow {
	__u64 t_ns;	   /* CLOCK_MONOTONIC, bpf_ktime_get_ns() */
	__u64 cookie;	   /* identifies the flow across records: its start, CLOCK_MONOTONIC ns */
	__u64 pacing_rate; /* bytes per second */
	__u64 bw;	   /* bandwidth estimate, packets/us << BW_SCALE */
	__u8 saddr[16];	   /* IPv4 in the first four bytes unless BBRKIT_F_IPV6 */
	__u8 daddr[16];
	__u16 sport; /* host byte order */
	__u16 dport;
	__u8 event;	   /* enum bbrkit_event */
	__u8 mode;	   /* enum bbrkit_mode */
	__u8 ca_state;	   /* TCP_CA_Open .. TCP_CA_Loss */
	__u8 cycle_idx;	   /* PROBE_BW gain cycle phase */
	__u32 flags;	   /* BBRKIT_F_* */
	__u32 netns;	   /* network namespace inode number */
	__u32 pacing_gain; /* BBR_UNIT */
	__u32 cwnd_gain;   /* BBR_UNIT */
	__u32 min_rtt_us;
	__u32 rtt_us;	  /* latest RTT sample */
	__u32 srtt_us;	  /* smoothed RTT */
	__u32 cwnd;	  /* packets */
	__u32 inflight;	  /* packets */
	__u32 round;	  /* packet-timed round trips so far */
	__u32 mss;	  /* bytes */
	__u32 lost;	  /* packets lost, total */
	__u32 retrans;	  /* segments retransmitted, total */
	__u32 delivered;  /* packets delivered, total */
	__u32 prior_cwnd; /* cwnd saved on entering recovery or PROBE_RTT */
	/* The model as draft-ietf-ccwg-bbr names it. A field an algorithm lacks is 0; a bound it has
	 * but has not set is BBRKIT_VAR_NONE.
	 */
	__u32 max_bw;		  /* the max filter, packets/us << BW_SCALE (v3: max of bw_hi[]) */
	__u32 max_bw_cycle[2];	  /* bbr2/bbr3's bw_hi[]: max of the last and of this probe cycle */
	__u32 bw_shortterm;	  /* bbr2/bbr3's bw_lo, same unit */
	__u32 inflight_longterm;  /* bbr2/bbr3's inflight_hi, packets */
	__u32 inflight_shortterm; /* bbr2/bbr3's inflight_lo, packets */
	__u32 undo_bw_shortterm;  /* bbr2/bbr3: the bounds saved on entering recovery, for undo */
	__u32 undo_inflight_shortterm;
	__u32 undo_inflight_longterm;
	__u32 full_bw;		 /* the plateau estimator's baseline, packets/us << BW_SCALE */
	__u32 drain_start_round; /* bbr2/bbr3: round at the last entry to DRAIN */
	__u32 extra_acked;	 /* ACK aggregation estimate, packets */
	__u8 full_bw_cnt;	 /* rounds without 25% bandwidth growth (STARTUP's exit at 3) */
	__u8 pad[7];
	__u32 variant[BBRKIT_VAR_SLOTS]; /* ends the record 8-byte aligned: no hidden hole */
};
/* The ring buffer's record size is ABI between the BPF objects and the readers. */
_Static_assert(sizeof(struct bbrkit_flow) == 216, "struct bbrkit_flow changed size: readers must follow");

/* The version of everything bbrctl reads or shares with a BPF object: struct bbrkit_flow, struct
 * bbrkit_ctl, struct bbrkit_features, the params structs and the pin layout. Each object carries it in
 * its read-only data (bbr_ops.h) and attach pins it (BBRKIT_PIN_ABI): `upgrade --object` refuses an
 * object of another version and flows/trace an attachment of another, instead of misreading records.
 * Bump it with any change to those.
 */
#define BBRKIT_ABI_VERSION 4
/* The section, and so the libbpf map, that holds the object's __u32 ABI version. */
#define BBRKIT_ABI_SECTION ".rodata.abi"

/* Tracing switch: the BPF side emits trace records only while tracers > 0. */
struct bbrkit_ctl {
	__u32 tracers;
};

/* What the algorithm's closed connections did, summed by its release callback (once per connection,
 * nothing per ACK): bbrctl export adds the live connections' own counters to these.
 */
struct bbrkit_closed_totals {
	__u64 bytes_acked;   /* tp->bytes_acked, tcpi_bytes_acked */
	__u64 total_retrans; /* tp->total_retrans, segments */
};

/* Optional kernel features the congestion control can run without. The loader clears a flag where
 * the kernel lacks the feature; the object keeps them in frozen read-only data, so the verifier
 * treats each flag as a constant and drops the code behind a cleared one.
 */
struct bbrkit_features {
	__u8 trace;   /* BPF ring buffers: `bbrctl trace` */
	__u8 storage; /* sk_storage from struct_ops: flow ids, and the map iterator of `bbrctl flows` */
	__u8 pad[2];
};

#include "bbrkit_params.h"

/* bpffs layout: BBRKIT_PIN_ROOT/<algo>/<one of the names below>. */
#define BBRKIT_PIN_ROOT "/sys/fs/bpf/bbrkit"
#define BBRKIT_PIN_LINK "link"	   /* struct_ops link: the registration itself */
#define BBRKIT_PIN_ABI "abi"	   /* the attached object's BBRKIT_ABI_SECTION map */
#define BBRKIT_PIN_PARAMS "params" /* parameter map, when the algorithm has parameters */
#define BBRKIT_PIN_CTL "ctl"	   /* struct bbrkit_ctl */
#define BBRKIT_PIN_EVENTS "events" /* trace ring buffer */
#define BBRKIT_PIN_TOTALS "totals" /* struct bbrkit_closed_totals, one entry */
#define BBRKIT_PIN_FLOWS "flows"   /* sk_storage map iterator link: one record per live flow */
/* iter/tcp link, where the kernel refuses map iterators: read it inside each network namespace. */
#define BBRKIT_PIN_FLOWS_TCP "flows-tcp"
/* bbr2/bbr3's per-packet loss path: links on the kernel's transmit and loss marking (or their
 * tracepoint stand-ins), and a tracepoint link on socket destruction.
 */
#define BBRKIT_PIN_PP_SENT "pp-sent"
#define BBRKIT_PIN_PP_LOST "pp-lost"
#define BBRKIT_PIN_PP_DESTROY "pp-destroy"
/* How the path runs, the value bbrctl writes to the object's .data.pp: hooks on the kernel's
 * tcp_rate_skb_sent()/tcp_mark_skb_lost() (fentry or kprobe), or, where the kernel allows neither,
 * tracepoints (net_dev_queue, tcp_retransmit_skb) and the ACK's walk of the retransmit queue.
 */
#define BBRKIT_PP_HOOKS 1
#define BBRKIT_PP_WALK 2

#endif /* BBRKIT_H */
