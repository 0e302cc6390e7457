/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data direction's idle path (idle.c): bpf/xdp/link_idle.bpf.c forwards a frame that finds the link idle
 * from the softirq that received it, and the forward thread keeps the program's picture of "idle" true.
 */
#ifndef BBRKIT_LINK_IDLE_H
#define BBRKIT_LINK_IDLE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default --xdp-idle-us: the longest serialisation a frame may skip. A frame leaves that much early at
 * most, where the thread it no longer wakes was 64-92 us late at the median (docs/link-timing.md); 10 us
 * covers a ping or a pure ACK at 100 Mbit/s and full-size frames from 1.2 Gbit/s on. */
#define LP_IDLE_DEFAULT_US 10
/* The longest --xdp-idle-us: a tenth of a millisecond early is as far as the link may be wrong. */
#define LP_IDLE_MAX_US 100

/* The attached program (skel NULL: none) and its shared state, its .bss as the skeleton maps it. */
struct lp_idle {
	void *skel;
	int link_fd;
	__u64 *busy_until_ns, *passed, *settled, *pkts, *bytes; /* the skeleton's types */
	/* Frames passed to the thread that never reached it (lost on the way, or passed before its socket
	 * existed): found after IDLE_RESYNC_NS without a change, then left out of the count. */
	int64_t offset;
	uint64_t seen_passed, seen_ns;
	bool resync_due;
};

/* Loads the program (at @rate_bps, skipping at most @max_ser_ns) and attaches it to @in_ifindex in generic (skb)
 * mode, sending to @out_ifindex: true, or false with the reason in @why. */
bool lp_idle_open(struct lp_idle *d, uint64_t rate_bps, unsigned int in_ifindex, unsigned int out_ifindex,
	uint64_t max_ser_ns, char *why, size_t why_len);
void lp_idle_close(struct lp_idle *d);
/* The forward thread, each turn at @now with the program attached, having read @read_pkts frames in all: while
 * it holds none (!@holding), publishes how many of the program's frames it has settled. */
void lp_idle_settle(struct lp_idle *d, uint64_t read_pkts, bool holding, uint64_t now);
/* When the thread should look again for frames that never reached it (UINT64_MAX: no need). */
uint64_t lp_idle_next_check(const struct lp_idle *d);
/* The frames and bytes the program forwarded (0 without it). */
void lp_idle_counts(const struct lp_idle *d, uint64_t *pkts, uint64_t *bytes);

/* The earliest a frame the thread schedules may start: after the program's last frame has crossed (0 without
 * it). Read per frame the thread dequeues, so inline. */
static inline uint64_t lp_idle_busy_until(const struct lp_idle *d)
{
	return d->skel ? __atomic_load_n(d->busy_until_ns, __ATOMIC_ACQUIRE) : 0;
}

#endif
