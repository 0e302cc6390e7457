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
	BBRKIT_STARTUP,   /* ramp up sending rate rapidly to fill the pipe */
	BBRKIT_DRAIN,     /* drain the queue created during startup */
	BBRKIT_PROBE_BW,  /* discover and share bandwidth: pace around the estimate */
	BBRKIT_PROBE_RTT, /* cut inflight to the minimum to probe min_rtt */
};

/* Why a record was produced. */
enum bbrkit_event {
	BBRKIT_EV_SNAPSHOT, /* bbrctl flows: state read on demand by the iterator */
	BBRKIT_EV_INIT,     /* the connection started using the algorithm */
	BBRKIT_EV_ROUND,    /* a packet-timed round trip ended */
	BBRKIT_EV_MODE,     /* the state machine changed mode */
};

/* Record flag bits. */
#define BBRKIT_F_FULL_BW_REACHED (1U << 0)
#define BBRKIT_F_LT_USE_BW (1U << 1)       /* policer detected: pacing at the long-term rate */
#define BBRKIT_F_PACKET_CONSERVATION (1U << 2)
#define BBRKIT_F_IDLE_RESTART (1U << 3)
#define BBRKIT_F_IPV6 (1U << 4)

/* Slots of bbrkit_flow.variant for the variants' own state. */
#define BBRKIT_VAR_RTTGAIN_GAIN 0 /* last RTT-based cruise gain, BBR_UNIT */
#define BBRKIT_VAR_ACD_STEADY 0   /* consecutive steady elevated RTT samples */
#define BBRKIT_VAR_ACD_CONGESTED 1 /* 1 when the detector declares congestion */
#define BBRKIT_VAR_ACD_HALVINGS 2 /* cwnd halvings applied so far */
#define BBRKIT_VAR_SLOTS 4

/* One flow's state: the ring buffer's trace record and the flows iterator's output. */
struct bbrkit_flow {
	__u64 t_ns;          /* CLOCK_MONOTONIC, bpf_ktime_get_ns() */
	__u64 cookie;        /* identifies the flow across records: its start, CLOCK_MONOTONIC ns */
	__u64 pacing_rate;   /* bytes per second */
	__u64 bw;            /* bandwidth estimate, packets/us << BW_SCALE */
	__u8 saddr[16];      /* IPv4 in the first four bytes unless BBRKIT_F_IPV6 */
	__u8 daddr[16];
	__u16 sport;         /* host byte order */
	__u16 dport;
	__u8 event;          /* enum bbrkit_event */
	__u8 mode;           /* enum bbrkit_mode */
	__u8 ca_state;       /* TCP_CA_Open .. TCP_CA_Loss */
	__u8 cycle_idx;      /* PROBE_BW gain cycle phase */
	__u32 flags;         /* BBRKIT_F_* */
	__u32 netns;         /* network namespace inode number */
	__u32 pacing_gain;   /* BBR_UNIT */
	__u32 cwnd_gain;     /* BBR_UNIT */
	__u32 min_rtt_us;
	__u32 rtt_us;        /* latest RTT sample */
	__u32 srtt_us;       /* smoothed RTT */
	__u32 cwnd;          /* packets */
	__u32 inflight;      /* packets */
	__u32 round;         /* packet-timed round trips so far */
	__u32 mss;           /* bytes */
	__u32 lost;          /* packets lost, total */
	__u32 retrans;       /* segments retransmitted, total */
	__u32 delivered;     /* packets delivered, total */
	__u32 prior_cwnd;    /* cwnd saved on entering recovery or PROBE_RTT */
	__u32 variant[BBRKIT_VAR_SLOTS];
};

/* Tracing switch: the BPF side emits trace records only while tracers > 0. */
struct bbrkit_ctl {
	__u32 tracers;
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

/* Parameters. Each algorithm with parameters keeps one instance of its struct in a pinned,
 * BTF-described map named "params"; field names carry their unit. bpftool can write anything there,
 * so every read goes through bbrkit_param(): a value outside [MIN, MAX] acts as the default, never
 * as the nearest bound (a raw 0 for alpha would otherwise pace at 1/256 of the bandwidth).
 */

/* One unsigned compare: raw - min wraps to a huge value below min. `bbrctl show` applies the same
 * rule to report what a flow acts on.
 */
static inline __attribute__((always_inline)) __u32 bbrkit_param(__u32 raw, __u32 min, __u32 max, __u32 def)
{
	return raw - min <= max - min ? raw : def;
}

/* bbrkit_param() of a field with BBR_* bounds named by prefix, e.g. BBRKIT_PARAM(p.alpha_permille,
 * BBR_RTTGAIN_ALPHA).
 */
#define BBRKIT_PARAM(raw, prefix) bbrkit_param(raw, prefix##_MIN, prefix##_MAX, prefix##_DEF)

struct bbr_rttgain_params {
	__u32 alpha_permille;      /* cruise gain = alpha x min_rtt / rtt */
	__u32 probe_exit_permille; /* probe phase ends when rtt >= probe_exit x min_rtt */
	__u32 gain_floor_permille; /* lower bound of the cruise gain; 0 keeps the paper's (none) */
};

/* Bounds are what a researcher may set on purpose; USUAL_* is the band around the paper's value
 * outside which `bbrctl show` warns (a typo such as 75 for 750 stays in range but cripples flows).
 */

/* The paper's listing uses alpha 0.75; its experiments also run 1 and 0.5. Below 4/1000 the gain
 * is 0 in 1/256 fixed point, i.e. not representable.
 */
#define BBR_RTTGAIN_ALPHA_DEF 1000
#define BBR_RTTGAIN_ALPHA_MIN 4
#define BBR_RTTGAIN_ALPHA_MAX 1000
#define BBR_RTTGAIN_ALPHA_USUAL_MIN 100 /* under 0.1 cruise phases pace at a tenth of the bandwidth */
#define BBR_RTTGAIN_ALPHA_USUAL_MAX 1000
/* 1.25 x min_rtt in the paper; below 1.0 every probe would end on its first ACK. */
#define BBR_RTTGAIN_PROBE_EXIT_DEF 1250
#define BBR_RTTGAIN_PROBE_EXIT_MIN 1000
#define BBR_RTTGAIN_PROBE_EXIT_MAX 8000
#define BBR_RTTGAIN_PROBE_EXIT_USUAL_MIN 1100 /* under 1.1 a probe rarely outlives its first ACKs */
#define BBR_RTTGAIN_PROBE_EXIT_USUAL_MAX 2000 /* over 2 the probe's queue doubles the RTT */
/* The paper sets no floor; a floor above alpha would override the RTT signal entirely. */
#define BBR_RTTGAIN_GAIN_FLOOR_DEF 0
#define BBR_RTTGAIN_GAIN_FLOOR_MIN 0
#define BBR_RTTGAIN_GAIN_FLOOR_MAX 1000
#define BBR_RTTGAIN_GAIN_FLOOR_USUAL_MIN 0
#define BBR_RTTGAIN_GAIN_FLOOR_USUAL_MAX 900 /* near 1 the RTT-based gain no longer acts */

struct bbr_acd_params {
	__u32 tolerance_us;        /* |rtt - previous rtt| <= tolerance counts as steady */
	__u32 rtt_factor_permille; /* rtt > rtt_factor x min_rtt declares congestion */
	__u32 steady_acks;         /* consecutive steady elevated ACKs that declare congestion */
	__u32 halve_once;          /* 0: halve on every ACK of the round (listing); 1: once */
};

/* Paper alpha = 1000 us; its Table 3 also runs 500 and 1500 us. 0 counts only equal samples. */
#define BBR_ACD_TOLERANCE_DEF 1000
#define BBR_ACD_TOLERANCE_MIN 0
#define BBR_ACD_TOLERANCE_MAX 1000000
#define BBR_ACD_TOLERANCE_USUAL_MIN 100    /* under 0.1 ms jitter alone keeps the detector quiet */
#define BBR_ACD_TOLERANCE_USUAL_MAX 10000  /* over 10 ms most queues look steady */
/* Paper: twice min_rtt; 1.0 would call every queue congestion. */
#define BBR_ACD_RTT_FACTOR_DEF 2000
#define BBR_ACD_RTT_FACTOR_MIN 1000
#define BBR_ACD_RTT_FACTOR_MAX 100000
#define BBR_ACD_RTT_FACTOR_USUAL_MIN 1250  /* under 1.25 BBR's own probe queue declares congestion */
#define BBR_ACD_RTT_FACTOR_USUAL_MAX 10000 /* over 10 the RTT rule never fires */
/* Paper: three ACKs, i.e. the steady count reaches 2; one ACK has nothing to compare with. */
#define BBR_ACD_STEADY_ACKS_DEF 3
#define BBR_ACD_STEADY_ACKS_MIN 2
#define BBR_ACD_STEADY_ACKS_MAX 255
#define BBR_ACD_STEADY_ACKS_USUAL_MIN 2
#define BBR_ACD_STEADY_ACKS_USUAL_MAX 16   /* over 16 the steady rule hardly ever fires */
#define BBR_ACD_HALVE_ONCE_DEF 0
#define BBR_ACD_HALVE_ONCE_MIN 0
#define BBR_ACD_HALVE_ONCE_MAX 1
#define BBR_ACD_HALVE_ONCE_USUAL_MIN 0
#define BBR_ACD_HALVE_ONCE_USUAL_MAX 1

/* bpffs layout: BBRKIT_PIN_ROOT/<algo>/<one of the names below>. */
#define BBRKIT_PIN_ROOT "/sys/fs/bpf/bbrkit"
#define BBRKIT_PIN_LINK "link"     /* struct_ops link: the registration itself */
#define BBRKIT_PIN_PARAMS "params" /* parameter map, when the algorithm has parameters */
#define BBRKIT_PIN_CTL "ctl"       /* struct bbrkit_ctl */
#define BBRKIT_PIN_EVENTS "events" /* trace ring buffer */
#define BBRKIT_PIN_FLOWS "flows"   /* sk_storage map iterator link: one record per live flow */
/* iter/tcp link, where the kernel refuses map iterators: read it inside each network namespace. */
#define BBRKIT_PIN_FLOWS_TCP "flows-tcp"

#endif /* BBRKIT_H */
