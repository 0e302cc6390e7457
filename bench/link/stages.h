/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The path conditions bbrkit-link adds around its queue, as plain C with the clock passed in (unit-tested
 * on the host, tests/unit/test_stages.c), each after an outside reference:
 * - a token-bucket policer: RFC 2697's single-rate marker with no excess bucket, red dropped (tc's police
 *   action with conform pass / exceed drop);
 * - netem's duplicate and reorder decisions (sch_netem.c's netem_enqueue);
 * - ACK aggregation: netem's slot (sch_netem.c's get_slot_next and netem_dequeue), a count of packets
 *   with a time-out, or an on/off pattern;
 * - a delay per IPv4 source after the link, as a netem delay on each sender's own path would give.
 */
#ifndef BBRKIT_LINK_STAGES_H
#define BBRKIT_LINK_STAGES_H

#include <stdbool.h>
#include <stdint.h>

#define LS_NSEC_PER_SEC 1000000000ULL
#define LS_BITS_PER_BYTE 8ULL

/* splitmix64: small and seeded, so a run's random decisions can be replayed. */
static inline uint64_t ls_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double ls_unit(uint64_t *s)
{
	return (double)(ls_next(s) >> 11) / (double)(1ULL << 53);
}

/* RFC 2697 with EBS = 0: the bucket holds up to burst bytes (CBS) and fills at rate (CIR); a packet
 * the bucket covers is green and takes its bytes, any other is red and dropped. Tokens are kept in
 * nanoseconds of the rate, as the kernel's police action keeps them, so no bytes are lost to rounding. */
struct ls_police {
	uint64_t rate_bps;
	uint64_t burst_ns; /* the bucket's depth: burst bytes at the rate */
	uint64_t toks_ns;
	uint64_t last_ns;
};
void ls_police_init(struct ls_police *p, uint64_t rate_bps, uint64_t burst_bytes, uint64_t now_ns);
/* true: the packet conforms (green) and passes; false: red, drop it. */
bool ls_police_conform(struct ls_police *p, uint32_t bytes, uint64_t now_ns);

/* netem's reorder: with gap G, after G - 1 packets in order each packet skips the delay with probability
 * P, which restarts the count; gap 1 makes every packet a candidate. */
struct ls_reorder {
	double prob;
	uint32_t gap;
	uint32_t counter;
	uint64_t rng;
};
void ls_reorder_init(struct ls_reorder *r, double prob, uint32_t gap, uint64_t seed);
/* true: send this packet now, ahead of the delayed ones. */
bool ls_reorder_jump(struct ls_reorder *r);

/* ACK aggregation: packets past the link wait here and leave in bursts. */
enum ls_agg_kind {
	LS_AGG_NONE,
	LS_AGG_SLOT,  /* netem slot: a slot opens every interval (uniform in min..max) for up to N packets */
	LS_AGG_COUNT, /* leave K at a time, or all held once the oldest has waited the time-out */
	LS_AGG_ONOFF, /* pass while on, hold while off, release the held at the next on */
};

struct ls_agg {
	enum ls_agg_kind kind;
	uint64_t a_ns, b_ns; /* slot: min, max interval; count: time-out; onoff: on, off */
	uint32_t pkts;	     /* slot: packets per slot (0: any number); count: K */
	uint64_t slot_next_ns;
	uint32_t packets_left;
	uint64_t start_ns; /* onoff: when the pattern began, on */
	uint64_t rng;
};
void ls_agg_init(struct ls_agg *a, enum ls_agg_kind kind, uint64_t a_ns, uint64_t b_ns, uint32_t pkts,
	uint64_t seed, uint64_t now_ns);
/*
 * May the head of the held packets leave at @now_ns? @head_ns is when it joined (it is due then),
 * @held how many wait. Call ls_agg_sent() for each one that leaves. When false, *wake_ns is when to ask
 * again (UINT64_MAX: only when more arrive).
 */
bool ls_agg_may_send(struct ls_agg *a, uint64_t head_ns, uint32_t held, uint64_t now_ns, uint64_t *wake_ns);
void ls_agg_sent(struct ls_agg *a, uint64_t now_ns);

/* A receive ring holds what a stalled forwarding thread lets arrive: LS_RING_GAP_NS at @rate_bps in frames
 * of @frame_bytes, each taking a @slot_bytes slot, at least @floor_bytes (--sockbuf-bytes) and at most
 * LS_RING_MAX_BYTES of memory. So the hidden FIFO covers the same time at any rate: 4 MiB of 2 KiB slots
 * was 10 ms of full-size frames at 2.4 Gbit/s, and linkbench's tail drop overflowed it. */
#define LS_RING_GAP_NS (20 * 1000000ULL)
#define LS_RING_MAX_BYTES (64ULL << 20)
uint64_t ls_ring_bytes(uint64_t floor_bytes, uint64_t rate_bps, uint32_t frame_bytes, uint32_t slot_bytes);

/* A delay per IPv4 source (--src-delay): each sender's path delay, served after the link by its thread instead
 * of a delay line per sender. Frames of one delay share a line, in order; each distinct delay has a line of its
 * own, so that a near sender's frames never wait behind a far one's. Line 0 takes every other frame. */
#define LS_MAX_SRC_ADDRS 256 /* a sender each: bbrbench runs at most 250 */
#define LS_MAX_SRC_LINES 16  /* distinct delays: a sweep's RTT grid holds a handful */
struct ls_src_delay {
	uint32_t n_addrs, n_lines;
	uint32_t addr[LS_MAX_SRC_ADDRS]; /* host byte order, ascending */
	uint8_t line[LS_MAX_SRC_ADDRS];	 /* each address's line, 1..n_lines */
	uint64_t line_ns[LS_MAX_SRC_LINES + 1];
};
/* Adds @addr (host byte order) with @delay_ns: 0, or -1 when @addr is there already, -2 when the table is full
 * (addresses or distinct delays). */
int ls_src_add(struct ls_src_delay *s, uint32_t addr, uint64_t delay_ns);
/* The line of a frame from @addr: 0 for an address not in the table. */
uint32_t ls_src_line(const struct ls_src_delay *s, uint32_t addr);

#endif
