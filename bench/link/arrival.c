// SPDX-License-Identifier: GPL-2.0
/*
 * Frames into one direction of bbrkit-link (arrival.h). Arrival times are the kernel's receive timestamps
 * (SO_TIMESTAMPNS), as in bbrkit-delay: waking a thread on a virtual CPU can take hundreds of microseconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/sock_diag.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "arrival.h"
#include "path.h"
#include "process.h"
#include "service.h"

/* A frame read this long after its kernel receive stamp waited in the socket, not just for a wake-up. */
#define RX_WAITED_NS 1000000

/* The frame's arrival on the monotonic clock, from its kernel receive stamp; without a plausible one, now,
 * counted: its queueing and sojourn then start late by however long it waited in the socket. */
static uint64_t arrival_ns(struct lpath *p, int64_t age, uint64_t now)
{
	if (age < 0) {
		LP_INC(p, rx_stamp_fallback);
		return now;
	}
	if ((uint64_t)age / LQ_NSEC_PER_USEC >
		atomic_load_explicit(&p->pub.rx_wait_max_us, memory_order_relaxed))
		LP_SET(p, rx_wait_max_us, (uint64_t)age / LQ_NSEC_PER_USEC);
	if (age > RX_WAITED_NS)
		LP_INC(p, rx_waited_pkts);
	return now - (uint64_t)age;
}

/* Bytes waiting unread in the data socket: with a ring, the filled slots ahead; else SO_MEMINFO's receive
 * allocation (truesize; SIOCINQ on a packet socket gives only the next frame's length). Sampled after a full
 * batch, the only time frames are left. */
void lp_sample_sockbuf(struct lpath *p)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);
	uint64_t held;

	if (p->ring.map) {
		/* The kernel fills slots in order and they are handed back in order, so the filled ones run on
		 * from the head: a binary search finds the first empty one. */
		uint32_t lo = 0, hi = p->ring.frames;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (wire_rx_ring_peek(&p->ring, mid))
				lo = mid + 1;
			else
				hi = mid;
		}
		held = (uint64_t)lo * p->ring.frame_bytes;
	} else {
		if (p->meminfo_failed)
			return;
		if (getsockopt(p->rx_fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0) {
			fprintf(stderr,
				"bbrkit-link: %s SO_MEMINFO: %s: the socket-buffer backlog is not counted\n",
				p->name, strerror(errno));
			p->meminfo_failed = true;
			return;
		}
		held = mem[SK_MEMINFO_RMEM_ALLOC];
	}
	if (held > atomic_load_explicit(&p->pub.sockbuf_max_bytes, memory_order_relaxed))
		LP_SET(p, sockbuf_max_bytes, held);
}

/* The policer in front of the queue, then the queue. */
static void enqueue(struct lpath *p, struct lp_slot *s, uint64_t at)
{
	if (p->cfg.police_bps && !ls_police_conform(&p->police, s->p.len, at)) {
		LP_INC(p, drop_police);
		lp_slot_put(p, s);
		return;
	}
	if (p->mm)
		fprintf(p->mm, "%" PRIu64 " + %u\n", lp_mm_ms(p, at), lp_mm_bytes(p, s));
	lq_frame_info(&s->p, s->buf + LP_VNET_HDR_BYTES, s->p.len, p->seed);
	lq_enqueue(&p->q, &s->p, at);
}

/* Takes one received frame into the queue (or drops it, counted). */
static void admit(struct lpath *p, struct lp_slot *s, size_t n, int64_t age, uint64_t now)
{
	struct virtio_net_hdr *vh = (struct virtio_net_hdr *)s->buf;
	int copies;
	uint64_t at;

	LP_INC(p, in_pkts);
	if (n > p->slot_size || vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		LP_INC(p, drop_gso);
		lp_slot_put(p, s);
		return;
	}
	if (n <= LP_VNET_HDR_BYTES) {
		LP_INC(p, drop_bad);
		lp_slot_put(p, s);
		return;
	}
	/* netem_enqueue's order: the duplicate draw, then the loss draw, which takes one of the copies. */
	copies = 1 + (p->cfg.dup_prob > 0 && ls_unit(&p->rng) < p->cfg.dup_prob);
	if (p->cfg.ge_on && lq_ge_lose(&p->ge)) {
		LP_INC(p, drop_ge);
		if (--copies == 0) {
			lp_slot_put(p, s);
			return;
		}
	}
	s->wire_len = (uint32_t)n;
	s->p.len = (uint32_t)n - LP_VNET_HDR_BYTES;
	at = arrival_ns(p, age, now);
	/* mm-link's rationalize up to the arrival before the frame (and its copy) joins the queue. */
	if (p->cfg.trace.ns)
		lp_service_trace(p, at, true);
	/* netem sends the copy through itself again (duplication off), so it faces the loss model alone. */
	if (copies == 2 && !(p->cfg.ge_on && lq_ge_lose(&p->ge))) {
		struct lp_slot *c = lp_slot_get(p);

		if (c) {
			memcpy(c->buf, s->buf, n);
			c->wire_len = s->wire_len;
			c->p.len = s->p.len;
			LP_INC(p, dup_pkts);
			enqueue(p, c, at);
		}
	}
	enqueue(p, s, at);
}

/* The monotonic clock now, and in *real the realtime clock read beside it: a batch's frames' kernel stamps
 * (realtime) become monotonic arrivals through this one pair. */
static uint64_t clock_pair(struct timespec *real)
{
	uint64_t now = wire_now_ns();

	clock_gettime(CLOCK_REALTIME, real);
	return now;
}

/* Takes up to LP_RX_BATCH filled slots of the receive ring; returns how many. The clocks are read only when
 * a frame is there (an empty poll reads none). */
static int ring_batch(struct lpath *p)
{
	struct tpacket2_hdr *h;
	struct timespec real;
	uint64_t now = 0;
	int got = 0;

	while (got < LP_RX_BATCH && (h = wire_rx_ring_peek(&p->ring, 0))) {
		struct lp_slot *s = lp_slot_get(p);
		size_t n = LP_VNET_HDR_BYTES + h->tp_snaplen;
		struct timespec ts = { .tv_sec = h->tp_sec, .tv_nsec = h->tp_nsec };

		if (!got++)
			now = clock_pair(&real);
		if (!s) { /* every slot is queued (a limit larger than the pool) */
			LP_INC(p, in_pkts);
			LP_INC(p, drop_bad);
		} else if (h->tp_len > h->tp_snaplen || n > p->slot_size) {
			/* larger than a ring slot or a queue slot: a GSO frame */
			LP_INC(p, in_pkts);
			LP_INC(p, drop_gso);
			lp_slot_put(p, s);
		} else {
			/* the kernel puts the vnet header just before the frame */
			memcpy(s->buf, (uint8_t *)h + h->tp_mac - LP_VNET_HDR_BYTES, n);
			admit(p, s, n, wire_stamp_age_at(&ts, &real), now);
		}
		wire_rx_ring_release(&p->ring, h);
	}
	return got;
}

/* Receives up to LP_RX_BATCH frames in one recvmmsg without blocking; returns how many were read. */
int lp_receive(struct lpath *p)
{
	static __thread union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct timespec))];
	} ctl[LP_RX_BATCH];
	static __thread struct mmsghdr msgs[LP_RX_BATCH];
	static __thread struct iovec iov[LP_RX_BATCH];
	struct lp_slot *slots[LP_RX_BATCH];
	struct timespec real;
	int want, got;
	uint64_t now;

	if (p->ring.map)
		return ring_batch(p);
	for (want = 0; want < LP_RX_BATCH; want++) {
		slots[want] = lp_slot_get(p);
		if (!slots[want])
			break;
		iov[want] = (struct iovec){ .iov_base = slots[want]->buf, .iov_len = p->slot_size };
		msgs[want].msg_hdr = (struct msghdr){ .msg_iov = &iov[want],
			.msg_iovlen = 1,
			.msg_control = &ctl[want],
			.msg_controllen = sizeof(ctl[want]) };
	}
	if (want == 0) {
		/* Every slot is queued (a limit larger than the pool): read one frame to drop it. */
		static __thread uint8_t sink[LP_VNET_HDR_BYTES + 65536 + 64];

		if (recv(p->rx_fd, sink, sizeof(sink), MSG_DONTWAIT) >= 0) {
			LP_INC(p, in_pkts);
			LP_INC(p, drop_bad);
			return 1;
		}
		return 0;
	}
	got = recvmmsg(p->rx_fd, msgs, (unsigned int)want, MSG_DONTWAIT | MSG_TRUNC, NULL);
	if (got < 0) {
		got = 0;
		if (errno == EINVAL) /* a GSO type with no vnet header form */
			LP_INC(p, drop_gso);
		else if (errno != EAGAIN && errno != EINTR && errno != ENETDOWN)
			wire_fail("recv", errno);
	}
	now = clock_pair(&real);
	for (int i = 0; i < got; i++)
		admit(p, slots[i], msgs[i].msg_len, wire_rx_age_at(&msgs[i].msg_hdr, &real), now);
	for (int i = got; i < want; i++)
		lp_slot_put(p, slots[i]);
	return got;
}
