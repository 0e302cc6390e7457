/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One direction of bbrkit-link: frames read on one interface, through the path conditions and the queue,
 * out on the other at the direction's rate or trace. The data direction always has one; the ACK direction
 * either has its own (then it runs the same code) or is passed straight through.
 *
 * This header holds the direction's state and what its files share; path.c sets it up, reports its counters
 * and closes it, arrival.c takes frames in, service.c runs the link and what follows it, and forward.c's
 * thread drives the three.
 */
#ifndef BBRKIT_LINK_PATH_H
#define BBRKIT_LINK_PATH_H

#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "afpacket.h"
#include "idle.h"
#include "lateness.h"
#include "queue.h"
#include "stages.h"
#include "trace.h"

#define LP_RX_BATCH 64

/* Counters the direction's thread publishes for the stats lines (relaxed: monotonic or gauges). */
#define LP_COUNTERS(X) \
	X(in_pkts) \
	X(out_pkts) \
	X(out_bytes) \
	X(drop_overlimit) \
	X(drop_aqm) \
	X(mark_aqm) \
	X(mark_step) \
	X(drop_blue) \
	X(way_collisions) \
	X(drop_ge) \
	X(drop_police) \
	X(forfeit_us) \
	X(dup_pkts) \
	X(reordered) \
	X(drop_gso) \
	X(drop_bad) \
	X(drop_tx) \
	X(backlog_pkts) \
	X(backlog_bytes) \
	X(max_backlog_bytes) \
	X(new_flows) \
	X(deq_pkts) \
	X(sojourn_sum_us) \
	X(sojourn_max_us) \
	X(rx_stamp_fallback) \
	X(sockbuf_max_bytes) \
	X(rx_wait_max_us) \
	X(rx_waited_pkts) \
	X(spin_us) \
	X(stalls_injected)

struct lp_pub {
#define LP_FIELD(name) atomic_uint_fast64_t name;
	LP_COUNTERS(LP_FIELD)
#undef LP_FIELD
};

/* What one direction is asked to do (the command line's options for it, checked). */
struct lp_config {
	uint64_t rate_bps; /* 0 with no trace: no rate limit */
	struct link_trace trace;
	struct lq_params queue;
	bool ge_on;
	double ge[4]; /* netem's order: P, R, 1-H, 1-K */
	uint64_t jitter_ns, delay_ns;
	struct ls_src_delay src;	   /* each listed source's delay, on top of delay_ns */
	uint64_t police_bps, police_burst; /* 0: no policer */
	double dup_prob, reorder_prob;
	uint32_t reorder_gap; /* 0: no reordering */
	enum ls_agg_kind agg;
	uint64_t agg_a_ns, agg_b_ns;
	uint32_t agg_pkts;
	double stall_prob;     /* --stall: the share of departures before which the thread stops */
	uint64_t stall_ns;     /* ...and for how long */
	const char *mm_log;    /* Mahimahi mm-link format packet log, or NULL */
	const char *mm_header; /* its "# command line:" and "# queue:" text */
};

struct lpath {
	const char *name; /* "forward" or "reverse", for messages */
	struct lp_config cfg;
	int rx_fd, tx_fd;
	struct wire_rx_ring ring; /* ring.map NULL: frames come by recvmmsg */
	uint64_t busy_poll_ns;	  /* poll again instead of sleeping this long after the last frame */
	atomic_bool stopping;	  /* set by the main thread with the stop pipe: a spinning thread sees it */
	uint64_t last_rx_ns, spin_cpu_ns; /* spin_cpu_ns: the thread's CPU time when it began spinning */
	bool spinning;
	/* The thread's real-time class (SCHED_FIFO from --rt-prio), if any: it polls as itself until it has
	 * run RT_POLL_SHARE_PCT of the current RT_WINDOW_NS, then as SCHED_OTHER for the rest of the window,
	 * so that a poll never runs into the kernel's real-time throttling (sched_rt_runtime_us: a FIFO thread
	 * busy for 950 ms of a second is stopped for the other 50 ms). demoted: polling as SCHED_OTHER now;
	 * rt_window_ns, rt_window_cpu_ns: the window's start and the thread's CPU time then. */
	struct sched_param rt_param;
	bool rt, demoted;
	uint64_t rt_window_ns, rt_window_cpu_ns;
	/* late departures and how late each frame left against its schedule (forward thread writes, stats
	 * lines read) */
	struct wire_lateness lateness;
	uint32_t frame_max, slot_size, seed;
	struct lq q;
	struct lq_ge ge;
	struct ls_police police;
	struct ls_reorder reorder;
	struct ls_agg agg;
	uint64_t rng; /* jitter, duplication and stall draws */
	uint8_t *pool;
	size_t pool_stride;
	uint32_t pool_slots, pool_used;
	struct lp_slot *free_list;
	struct lp_pub pub;
	/* the frame in service */
	struct lp_slot *cur;
	uint64_t cur_finish, free_at, period_base;
	uint64_t forfeit_ns; /* link time given up past the catch-up allowance (published as forfeit_us) */
	uint32_t cur_left;   /* trace mode: bytes of cur still to deliver (IP packet + TUN_PI_BYTES) */
	size_t next_opp;
	/* after the link: the delay lines (one per distinct source delay, cfg.src), then the aggregation stage */
	struct lp_slot *line_head[LS_MAX_SRC_LINES + 1], *line_tail[LS_MAX_SRC_LINES + 1];
	struct lp_slot *agg_head, *agg_tail;
	uint32_t agg_held;
	uint64_t agg_wake_ns;
	/* frames due to leave, sent together before the thread sleeps or reads again */
	struct lp_slot *tx_pending[LP_RX_BATCH];
	int tx_count;
	/* the queue's CSV time series (forward only) */
	FILE *log;
	uint64_t log_interval_ns, run_max_sojourn_us, log_last_deq, log_last_sum;
	uint64_t kernel_drops; /* main thread only */
	/* the mm-link log: ms since mm_start_ns; rate mode writes the capacity of each whole ms */
	FILE *mm;
	uint64_t mm_start_ns, mm_cap_ms, mm_cap_rem;
	struct lp_idle idle; /* the data direction's XDP idle path (idle.h), if attached */
	int stop_fd;
	bool meminfo_failed; /* SO_MEMINFO refused: the socket-buffer backlog is not counted */
};

/* Sets up @p from p->cfg (queue, stages, packet pool, logs): exits with status 2 on a problem the
 * command line caused. */
void lp_setup(
	struct lpath *p, uint64_t seed, uint32_t frame_max, const char *csv_log, uint64_t log_interval_ns);
/* The direction's counters as JSON members (",\"PREFIXkey\":N..."), on stdout. */
void lp_print_counters(struct lpath *p, const char *prefix);
void lp_close(struct lpath *p);

/* What the direction's own files (path.c, arrival.c, service.c, forward.c) share. */

#define LP_VNET_HDR_BYTES ((uint32_t)sizeof(struct virtio_net_hdr))

struct lp_slot {
	struct lq_pkt p;
	struct lp_slot *free_next; /* the free list, or the jitter line while the frame waits there */
	uint64_t due_ns;	   /* jitter: when the frame leaves */
	uint64_t sched_ns;	   /* when it was due to be sent (its added delay counts from here) */
	uint32_t wire_len;	   /* vnet header + frame */
	uint8_t buf[];		   /* vnet header, then the frame */
};

/* Each counter has one writer, the direction's own thread (the stats lines only read them): a relaxed load
 * and store publish it without the locked read-modify-write an atomic add costs, several times per frame. */
#define LP_BUMP(counter, n) \
	atomic_store_explicit(&(counter), atomic_load_explicit(&(counter), memory_order_relaxed) + (n), \
		memory_order_relaxed)
#define LP_ADD(p, field, n) LP_BUMP((p)->pub.field, n)
#define LP_INC(p, field) LP_ADD(p, field, 1)
#define LP_SET(p, field, v) atomic_store_explicit(&(p)->pub.field, (v), memory_order_relaxed)

/* Mahimahi's log (link_queue.cc): "+" an arrival, "#" a delivery opportunity of its size, "-" a departure
 * with its delay through the link, each stamped in whole ms since the log began. All three count in one
 * unit, the one the link's capacity is in (lp_mm_bytes): with a trace, Mahimahi's (the IP packet and its
 * 4-byte tun header, which an opportunity of 1504 carries); at a rate, Ethernet frames. */
static inline uint64_t lp_mm_ms(const struct lpath *p, uint64_t t)
{
	return t > p->mm_start_ns ? (t - p->mm_start_ns) / LQ_NSEC_PER_MSEC : 0;
}

/* The free list first, then a slot never used: pages are touched only as the queue and the line grow. */
static inline struct lp_slot *lp_slot_get(struct lpath *p)
{
	struct lp_slot *s = p->free_list;

	if (s)
		p->free_list = s->free_next;
	else if (p->pool_used < p->pool_slots)
		s = (struct lp_slot *)(p->pool + p->pool_stride * p->pool_used++);
	return s;
}

static inline void lp_slot_put(struct lpath *p, struct lp_slot *s)
{
	s->free_next = p->free_list;
	p->free_list = s;
}

/* What a frame costs of a trace's opportunities: what Mahimahi would have read for it from its TUN device
 * (the IP packet and a 4-byte header; the Ethernet header, a VLAN tag included, is not carried). */
static inline uint32_t lp_trace_cost(const struct lp_slot *s)
{
	const uint8_t *frame = s->buf + LP_VNET_HDR_BYTES;
	uint32_t l2 = s->p.l3 ? (uint32_t)(s->p.l3 - frame) : ETHER_HDR_LEN;

	return (s->p.len > l2 ? s->p.len - l2 : 0) + TUN_PI_BYTES;
}

/* A frame's bytes in the mm-link log's unit (see lp_mm_ms). */
static inline uint32_t lp_mm_bytes(const struct lpath *p, const struct lp_slot *s)
{
	return p->cfg.trace.ns ? lp_trace_cost(s) : s->p.len;
}

#endif
