// SPDX-License-Identifier: GPL-2.0
/*
 * One direction of bbrkit-link (path.h). Arrival times are the kernel's receive timestamps
 * (SO_TIMESTAMPNS), as in bbrkit-delay: waking a thread on a virtual CPU can take hundreds of
 * microseconds. A frame leaves when its last bit would have crossed the link.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <linux/sock_diag.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

#include "afpacket.h"
#include "path.h"
#include "process.h"

#define NSEC_PER_SEC 1000000000ULL
#define BITS_PER_BYTE 8ULL
#define VNET_HDR_BYTES ((uint32_t)sizeof(struct virtio_net_hdr))
#define MAX_POOL_SLOTS (1U << 20)
/* After a late wake-up the link may catch up at most this much lost time in one burst, as a
 * token bucket of about a millisecond would. */
#define CATCHUP_NS 1000000ULL
/* Wake this long before the next departure, then step (wire_departure_timeout): long sleeps
 * overshoot by milliseconds on a virtual CPU, short ones by microseconds (bbrkit-delay's measurements). */
#define GUARD_NS 1000000ULL
/* The rate a line after an unlimited link is sized for (the fastest a veth pair moves frames here). */
#define LINE_RATE_BPS 10000000000ULL
/* Smallest frame a byte limit or the line can hold, for sizing the packet pool. */
#define MIN_FRAME_BYTES 60
/* A frame read this long after its kernel receive stamp waited in the socket, not just for a wake-up. */
#define RX_WAITED_NS 1000000

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
#define BUMP(counter, n) \
	atomic_store_explicit(&(counter), atomic_load_explicit(&(counter), memory_order_relaxed) + (n), \
		memory_order_relaxed)
#define ADD(p, field, n) BUMP((p)->pub.field, n)
#define INC(p, field) ADD(p, field, 1)
#define SET(p, field, v) atomic_store_explicit(&(p)->pub.field, (v), memory_order_relaxed)

/* Mahimahi's log (link_queue.cc): "+" an arrival, "#" a delivery opportunity of its size, "-" a departure
 * with its delay through the link, each stamped in whole ms since the log began. All three count in one
 * unit, the one the link's capacity is in (mm_bytes): with a trace, Mahimahi's (the IP packet and its 4-byte
 * tun header, which an opportunity of 1504 carries); at a rate, Ethernet frames. */
static uint64_t mm_ms(const struct lpath *p, uint64_t t)
{
	return t > p->mm_start_ns ? (t - p->mm_start_ns) / LQ_NSEC_PER_MSEC : 0;
}

/* The free list first, then a slot never used: pages are touched only as the queue and the line grow. */
static struct lp_slot *slot_get(struct lpath *p)
{
	struct lp_slot *s = p->free_list;

	if (s)
		p->free_list = s->free_next;
	else if (p->pool_used < p->pool_slots)
		s = (struct lp_slot *)(p->pool + p->pool_stride * p->pool_used++);
	return s;
}

static void slot_put(struct lpath *p, struct lp_slot *s)
{
	s->free_next = p->free_list;
	p->free_list = s;
}

static void on_drop(void *ctx, struct lq_pkt *pkt)
{
	slot_put(ctx, (struct lp_slot *)pkt);
}

/* One frame left @ns after its schedule: the time the link adds beyond the configured path. */
static void added_delay(struct lpath *p, uint64_t ns)
{
	atomic_uint_fast64_t *bucket = &p->added_hist[ls_lat_bucket(ns / LQ_NSEC_PER_USEC)];

	BUMP(*bucket, 1);
}

/* The @pct percentile of the added delay in us, 0 before any frame. */
static uint64_t added_percentile_us(struct lpath *p, double pct)
{
	uint64_t counts[LS_LAT_BUCKETS];

	for (uint32_t b = 0; b < LS_LAT_BUCKETS; b++)
		counts[b] = atomic_load_explicit(&p->added_hist[b], memory_order_relaxed);
	return ls_lat_percentile_us(counts, pct);
}

static void tx_flush(struct lpath *p)
{
	static __thread struct mmsghdr msgs[LP_RX_BATCH];
	static __thread struct iovec iov[LP_RX_BATCH];
	int done = 0;
	uint64_t now;

	if (!p->tx_count)
		return;
	now = wire_now_ns();
	for (int i = 0; i < p->tx_count; i++) {
		uint64_t sched = p->tx_pending[i]->sched_ns;

		added_delay(p, now > sched ? now - sched : 0);
		iov[i] = (struct iovec){ .iov_base = p->tx_pending[i]->buf,
			.iov_len = p->tx_pending[i]->wire_len };
		msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	while (done < p->tx_count) {
		int n = sendmmsg(p->tx_fd, msgs + done, (unsigned int)(p->tx_count - done), 0);

		if (n > 0) {
			uint64_t bytes = 0;

			for (int i = done; i < done + n; i++)
				bytes += p->tx_pending[i]->p.len;
			ADD(p, out_pkts, (uint64_t)n);
			ADD(p, out_bytes, bytes);
			done += n;
			continue;
		}
		if (errno == ENXIO || errno == ENODEV) {
			wire_fail("output interface disappeared", errno);
			break;
		}
		INC(p, drop_tx); /* ENOBUFS, ENETDOWN: the first frame is lost on the wire, as send() would lose it */
		done++;
	}
	for (int i = 0; i < p->tx_count; i++)
		slot_put(p, p->tx_pending[i]);
	p->tx_count = 0;
}

static void send_now(struct lpath *p, struct lp_slot *s)
{
	p->tx_pending[p->tx_count++] = s;
	if (p->tx_count == LP_RX_BATCH)
		tx_flush(p);
}

static void fifo_push(struct lp_slot **head, struct lp_slot **tail, struct lp_slot *s)
{
	s->free_next = NULL;
	if (*tail)
		(*tail)->free_next = s;
	else
		*head = s;
	*tail = s;
}

static struct lp_slot *fifo_pop(struct lp_slot **head, struct lp_slot **tail)
{
	struct lp_slot *s = *head;

	*head = s->free_next;
	if (!*head)
		*tail = NULL;
	return s;
}

/* ACK aggregation (stages.h): frames past the delay line wait here for their burst. */
static void agg_release(struct lpath *p, uint64_t now)
{
	p->agg_wake_ns = UINT64_MAX;
	while (p->agg_head &&
		ls_agg_may_send(&p->agg, p->agg_head->due_ns, p->agg_held, now, &p->agg_wake_ns)) {
		struct lp_slot *s = fifo_pop(&p->agg_head, &p->agg_tail);

		s->sched_ns = now; /* held on purpose until now */
		send_now(p, s);
		p->agg_held--;
		ls_agg_sent(&p->agg, now);
	}
}

/* The frame is due to leave the delay line at @due. */
static void deliver(struct lpath *p, struct lp_slot *s, uint64_t due)
{
	if (p->cfg.agg == LS_AGG_NONE) {
		s->sched_ns = due;
		send_now(p, s);
		return;
	}
	s->due_ns = due; /* when it joined: the count's time-out and the slot's readiness run from here */
	fifo_push(&p->agg_head, &p->agg_tail, s);
	p->agg_held++;
}

/* What a frame costs of a trace's opportunities: what Mahimahi would have read for it from its TUN device
 * (the IP packet and a 4-byte header; the Ethernet header, a VLAN tag included, is not carried). */
static uint32_t trace_cost(const struct lp_slot *s)
{
	const uint8_t *frame = s->buf + VNET_HDR_BYTES;
	uint32_t l2 = s->p.l3 ? (uint32_t)(s->p.l3 - frame) : ETHER_HDR_LEN;

	return (s->p.len > l2 ? s->p.len - l2 : 0) + TUN_PI_BYTES;
}

/* A frame's bytes in the mm-link log's unit (see mm_ms). */
static uint32_t mm_bytes(const struct lpath *p, const struct lp_slot *s)
{
	return p->cfg.trace.ns ? trace_cost(s) : s->p.len;
}

/* After the link each frame waits the direction's delay plus a uniform 0..jitter_ns, never leaving before
 * the frame ahead of it (netem's jitter reorders; this line does not), except a frame netem's reorder picks:
 * that one skips the line, as netem puts it at the head of its queue. @now is when the frame was due to
 * cross the link: the delay counts from there, so a late wake-up is not added to it. */
static void transmit(struct lpath *p, struct lp_slot *s, uint64_t now)
{
	uint64_t due;

	if (p->mm)
		fprintf(p->mm, "%" PRIu64 " - %u %" PRIu64 "\n", mm_ms(p, now), mm_bytes(p, s),
			mm_ms(p, now) - mm_ms(p, s->p.enq_ns));
	if (p->cfg.reorder_gap && ls_reorder_jump(&p->reorder)) {
		INC(p, reordered);
		deliver(p, s, now);
		return;
	}
	if (!p->cfg.jitter_ns && !p->cfg.delay_ns) {
		deliver(p, s, now);
		return;
	}
	due = now + p->cfg.delay_ns + (p->cfg.jitter_ns ? ls_next(&p->rng) % (p->cfg.jitter_ns + 1) : 0);
	if (p->line_tail && due < p->line_tail->due_ns)
		due = p->line_tail->due_ns;
	s->due_ns = due;
	fifo_push(&p->line_head, &p->line_tail, s);
}

static void line_release(struct lpath *p, uint64_t now)
{
	while (p->line_head && p->line_head->due_ns <= now) {
		struct lp_slot *s = fifo_pop(&p->line_head, &p->line_tail);

		deliver(p, s, s->due_ns);
	}
	if (p->agg_head)
		agg_release(p, now);
}

static uint64_t opp_time(const struct lpath *p)
{
	return p->period_base + p->cfg.trace.ns[p->next_opp];
}

static void opp_advance(struct lpath *p)
{
	if (p->mm)
		fprintf(p->mm, "%" PRIu64 " # %d\n", mm_ms(p, opp_time(p)), TRACE_OPPORTUNITY_BYTES);
	if (++p->next_opp == p->cfg.trace.len) {
		p->next_opp = 0;
		p->period_base += p->cfg.trace.period_ns;
	}
}

/* Rate mode: the capacity of each whole ms up to @now, as mm-throughput-graph sums "#" bytes per bin. */
static void mm_capacity(struct lpath *p, uint64_t now)
{
	uint64_t ms = mm_ms(p, now);

	for (; p->mm_cap_ms < ms; p->mm_cap_ms++) {
		/* A ms carries rate_bps thousandths of a bit; the remainder carries to the next ms. */
		uint64_t mbits = p->cfg.rate_bps + p->mm_cap_rem;

		p->mm_cap_rem = mbits % (BITS_PER_BYTE * 1000);
		fprintf(p->mm, "%" PRIu64 " # %" PRIu64 "\n", p->mm_cap_ms,
			(uint64_t)(mbits / (BITS_PER_BYTE * 1000)));
	}
}

/* A departure this long after its time means the thread woke late (the trust check counts them). */
#define LATE_WAKEUP_NS (200 * LQ_NSEC_PER_USEC)

static void late(struct lpath *p, uint64_t by_ns)
{
	if (by_ns > LATE_WAKEUP_NS)
		INC(p, late_wakeups);
	if (by_ns / LQ_NSEC_PER_USEC > atomic_load_explicit(&p->pub.late_max_us, memory_order_relaxed))
		SET(p, late_max_us, by_ns / LQ_NSEC_PER_USEC);
}

static void service_rate(struct lpath *p, uint64_t now)
{
	for (;;) {
		uint64_t start;

		if (p->cur) {
			if (p->cur_finish > now)
				return;
			late(p, now - p->cur_finish);
			p->free_at = p->cur_finish;
			transmit(p, p->cur, p->cur_finish);
			p->cur = NULL;
		}
		p->cur = (struct lp_slot *)lq_dequeue(&p->q, now);
		if (!p->cur)
			return;
		start = p->free_at;
		if (start < p->cur->p.enq_ns)
			start = p->cur->p.enq_ns;
		if (start + CATCHUP_NS < now)
			start = now - CATCHUP_NS;
		/* No rate (an ACK direction with only delay or loss): the frame leaves at once. */
		if (p->cfg.rate_bps)
			start += (uint64_t)p->cur->p.len * BITS_PER_BYTE * NSEC_PER_SEC / p->cfg.rate_bps;
		p->cur_finish = start;
	}
}

/* Mahimahi's LinkQueue::rationalize: every opportunity at or before @t delivers up to 1504 bytes of the
 * queue's head at its own time (frames may span opportunities) or, with nothing queued, is lost. The
 * forwarding loop runs it with @burn_idle false, leaving an idle link's opportunities alone: frames may be
 * waiting unread in the socket with earlier arrival stamps. Admission runs it up to the frame's arrival
 * first (@burn_idle true), as Mahimahi before enqueueing, so an opportunity at the arrival time itself is
 * gone (Mahimahi's millisecond clock: a frame can use an opportunity only from a later millisecond). */
static void service_trace(struct lpath *p, uint64_t t, bool burn_idle)
{
	while (opp_time(p) <= t) {
		uint32_t budget = TRACE_OPPORTUNITY_BYTES;
		uint64_t at = opp_time(p);

		if (!p->cur && p->q.backlog_pkts == 0) {
			if (!burn_idle)
				return;
			/* Whole periods at once: every opportunity before the latest period start is past, so the
			 * count restarts there (keeping the index would land up to a period late). The mm-link log
			 * lists each, as Mahimahi burns them one by one. */
			if (!p->mm && t - p->period_base >= p->cfg.trace.period_ns) {
				p->period_base += (t - p->period_base) / p->cfg.trace.period_ns *
					p->cfg.trace.period_ns;
				p->next_opp = 0;
			} else {
				opp_advance(p);
			}
			continue;
		}
		if (!burn_idle)
			late(p, t - at);
		opp_advance(p);
		while (budget) {
			uint32_t take;

			if (!p->cur) {
				p->cur = (struct lp_slot *)lq_dequeue(&p->q, at);
				if (!p->cur)
					break;
				p->cur_left = trace_cost(p->cur);
			}
			take = p->cur_left < budget ? p->cur_left : budget;
			budget -= take;
			p->cur_left -= take;
			if (!p->cur_left) {
				transmit(p, p->cur, at);
				p->cur = NULL;
			}
		}
	}
}

static void service(struct lpath *p, uint64_t now)
{
	if (p->mm && !p->cfg.trace.ns && p->cfg.rate_bps)
		mm_capacity(p, now);
	if (p->cfg.trace.ns)
		service_trace(p, now, false);
	else
		service_rate(p, now);
	line_release(p, now);
	tx_flush(p);
}

static uint64_t next_event(const struct lpath *p)
{
	uint64_t t = p->cfg.trace.ns ? (p->cur || p->q.backlog_pkts ? opp_time(p) : UINT64_MAX)
				     : (p->cur ? p->cur_finish : UINT64_MAX);

	if (p->line_head && p->line_head->due_ns < t)
		t = p->line_head->due_ns;
	if (p->agg_head && p->agg_wake_ns < t)
		t = p->agg_wake_ns;
	return t;
}

/* The frame's arrival on the monotonic clock, from its kernel receive stamp; without a plausible one, now,
 * counted: its queueing and sojourn then start late by however long it waited in the socket. */
static uint64_t arrival_ns(struct lpath *p, int64_t age, uint64_t now)
{
	if (age < 0) {
		INC(p, rx_stamp_fallback);
		return now;
	}
	if ((uint64_t)age / LQ_NSEC_PER_USEC >
		atomic_load_explicit(&p->pub.rx_wait_max_us, memory_order_relaxed))
		SET(p, rx_wait_max_us, (uint64_t)age / LQ_NSEC_PER_USEC);
	if (age > RX_WAITED_NS)
		INC(p, rx_waited_pkts);
	return now - (uint64_t)age;
}

/* Bytes waiting unread in the data socket: with a ring, the filled slots ahead; else SO_MEMINFO's receive
 * allocation (truesize; SIOCINQ on a packet socket gives only the next frame's length). Sampled after a full
 * batch, the only time frames are left. */
static void sample_sockbuf(struct lpath *p)
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
		SET(p, sockbuf_max_bytes, held);
}

static void publish(struct lpath *p)
{
	SET(p, backlog_pkts, p->q.backlog_pkts);
	SET(p, backlog_bytes, p->q.backlog_bytes);
	SET(p, max_backlog_bytes, p->q.st.max_backlog_bytes);
	SET(p, drop_overlimit, p->q.st.drop_overlimit);
	SET(p, drop_aqm, p->q.st.drop_aqm);
	SET(p, mark_aqm, p->q.st.mark_aqm);
	SET(p, mark_step, p->q.st.mark_step);
	SET(p, new_flows, p->q.st.new_flows);
	SET(p, drop_blue, p->q.st.drop_blue);
	SET(p, way_collisions, p->q.st.way_collisions);
	SET(p, deq_pkts, p->q.st.deq_pkts);
	SET(p, sojourn_sum_us, p->q.st.sojourn_sum_ns / LQ_NSEC_PER_USEC);
	SET(p, sojourn_max_us, p->q.st.sojourn_max_ns / LQ_NSEC_PER_USEC);
}

/* The policer in front of the queue, then the queue. */
static void enqueue(struct lpath *p, struct lp_slot *s, uint64_t at)
{
	if (p->cfg.police_bps && !ls_police_conform(&p->police, s->p.len, at)) {
		INC(p, drop_police);
		slot_put(p, s);
		return;
	}
	if (p->mm)
		fprintf(p->mm, "%" PRIu64 " + %u\n", mm_ms(p, at), mm_bytes(p, s));
	lq_frame_info(&s->p, s->buf + VNET_HDR_BYTES, s->p.len, p->seed);
	lq_enqueue(&p->q, &s->p, at);
}

/* Takes one received frame into the queue (or drops it, counted). */
static void admit(struct lpath *p, struct lp_slot *s, size_t n, int64_t age, uint64_t now)
{
	struct virtio_net_hdr *vh = (struct virtio_net_hdr *)s->buf;
	int copies;
	uint64_t at;

	INC(p, in_pkts);
	if (n > p->slot_size || vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		INC(p, drop_gso);
		slot_put(p, s);
		return;
	}
	if (n <= VNET_HDR_BYTES) {
		INC(p, drop_bad);
		slot_put(p, s);
		return;
	}
	/* netem_enqueue's order: the duplicate draw, then the loss draw, which takes one of the copies. */
	copies = 1 + (p->cfg.dup_prob > 0 && ls_unit(&p->rng) < p->cfg.dup_prob);
	if (p->cfg.ge_on && lq_ge_lose(&p->ge)) {
		INC(p, drop_ge);
		if (--copies == 0) {
			slot_put(p, s);
			return;
		}
	}
	s->wire_len = (uint32_t)n;
	s->p.len = (uint32_t)n - VNET_HDR_BYTES;
	at = arrival_ns(p, age, now);
	/* mm-link's rationalize up to the arrival before the frame (and its copy) joins the queue. */
	if (p->cfg.trace.ns)
		service_trace(p, at, true);
	/* netem sends the copy through itself again (duplication off), so it faces the loss model alone. */
	if (copies == 2 && !(p->cfg.ge_on && lq_ge_lose(&p->ge))) {
		struct lp_slot *c = slot_get(p);

		if (c) {
			memcpy(c->buf, s->buf, n);
			c->wire_len = s->wire_len;
			c->p.len = s->p.len;
			INC(p, dup_pkts);
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
		struct lp_slot *s = slot_get(p);
		size_t n = VNET_HDR_BYTES + h->tp_snaplen;
		struct timespec ts = { .tv_sec = h->tp_sec, .tv_nsec = h->tp_nsec };

		if (!got++)
			now = clock_pair(&real);
		if (!s) { /* every slot is queued (a limit larger than the pool) */
			INC(p, in_pkts);
			INC(p, drop_bad);
		} else if (h->tp_len > h->tp_snaplen || n > p->slot_size) {
			/* larger than a ring slot or a queue slot: a GSO frame */
			INC(p, in_pkts);
			INC(p, drop_gso);
			slot_put(p, s);
		} else {
			/* the kernel puts the vnet header just before the frame */
			memcpy(s->buf, (uint8_t *)h + h->tp_mac - VNET_HDR_BYTES, n);
			admit(p, s, n, wire_stamp_age_at(&ts, &real), now);
		}
		wire_rx_ring_release(&p->ring, h);
	}
	return got;
}

/* Receives up to LP_RX_BATCH frames in one recvmmsg without blocking; returns how many were read. */
static int recv_batch(struct lpath *p)
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
		slots[want] = slot_get(p);
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
		static __thread uint8_t sink[VNET_HDR_BYTES + 65536 + 64];

		if (recv(p->rx_fd, sink, sizeof(sink), MSG_DONTWAIT) >= 0) {
			INC(p, in_pkts);
			INC(p, drop_bad);
			return 1;
		}
		return 0;
	}
	got = recvmmsg(p->rx_fd, msgs, (unsigned int)want, MSG_DONTWAIT | MSG_TRUNC, NULL);
	if (got < 0) {
		got = 0;
		if (errno == EINVAL) /* a GSO type with no vnet header form */
			INC(p, drop_gso);
		else if (errno != EAGAIN && errno != EINTR && errno != ENETDOWN)
			wire_fail("recv", errno);
	}
	now = clock_pair(&real);
	for (int i = 0; i < got; i++)
		admit(p, slots[i], msgs[i].msg_len, wire_rx_age_at(&msgs[i].msg_hdr, &real), now);
	for (int i = got; i < want; i++)
		slot_put(p, slots[i]);
	return got;
}

static void log_line(struct lpath *p, uint64_t t)
{
	uint64_t out = atomic_load(&p->pub.out_pkts), deq = p->q.st.deq_pkts,
		 sum = p->q.st.sojourn_sum_ns / LQ_NSEC_PER_USEC;
	uint64_t max = p->q.st.sojourn_max_ns / LQ_NSEC_PER_USEC;

	/* The interval's sojourn maximum restarts here; the stats line keeps its own running max. */
	p->q.st.sojourn_max_ns = 0;
	fprintf(p->log,
		"%.6f,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 "\n",
		(double)t / NSEC_PER_SEC, p->q.backlog_pkts, p->q.backlog_bytes,
		deq - p->log_last_deq ? (sum - p->log_last_sum) / (deq - p->log_last_deq) : 0, max, out,
		p->q.st.drop_overlimit, p->q.st.drop_aqm + p->q.st.drop_blue,
		p->q.st.mark_aqm + p->q.st.mark_step, (uint64_t)atomic_load(&p->pub.drop_ge),
		(uint64_t)atomic_load(&p->pub.out_bytes));
	p->log_last_deq = deq;
	p->log_last_sum = sum;
}

/* The thread's own CPU time: a busy-poll's cost is what it ran, not the wall time it was preempted in. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The CPU time spent polling without a frame (the busy-poll's cost) goes to spin_us. */
static void end_spin(struct lpath *p)
{
	if (!p->spinning)
		return;
	ADD(p, spin_us, (thread_cpu_ns() - p->spin_cpu_ns) / LQ_NSEC_PER_USEC);
	p->spinning = false;
}

/* A real-time thread's budget window: short against the kernel's 1 s period, so that the senders get CPU
 * time in every tenth of a second the link polls through. */
#define RT_WINDOW_NS (100 * LQ_NSEC_PER_MSEC)
/* Of each window, the share a real-time thread may run as itself; the kernel's limit is 95%. */
#define RT_POLL_SHARE_PCT 80

/* Whether the real-time thread has run its share of the current window (a new window starts afresh). The
 * thread cannot have run its share before that much wall time has passed, so until then no clock is read. */
static bool over_rt_budget(struct lpath *p, uint64_t now)
{
	uint64_t into = now - p->rt_window_ns;

	if (into >= RT_WINDOW_NS) {
		p->rt_window_ns = now;
		p->rt_window_cpu_ns = thread_cpu_ns();
		return false;
	}
	if (into * 100 <= RT_WINDOW_NS * RT_POLL_SHARE_PCT)
		return false;
	return (thread_cpu_ns() - p->rt_window_cpu_ns) * 100 > RT_WINDOW_NS * RT_POLL_SHARE_PCT;
}

/* A real-time thread polls as itself (a departure due during the poll preempts the senders) while within its
 * budget, as SCHED_OTHER past it, and always sleeps as itself (a frame's wake-up preempts). Polling as
 * SCHED_OTHER throughout put the thread behind the senders: 5-34% of an experiment's departures left over
 * 200 us late, against 1.7-2.4% as FIFO (docs/benchmarks.md). A refused switch leaves the class as it was. */
static void poll_class(struct lpath *p, bool demote)
{
	static const struct sched_param other = { .sched_priority = 0 };
	int policy = demote ? SCHED_OTHER : SCHED_FIFO;

	if (p->rt && p->demoted != demote &&
		!pthread_setschedparam(pthread_self(), policy, demote ? &other : &p->rt_param))
		p->demoted = demote;
}

void *lp_main(void *arg)
{
	struct lpath *p = arg;
	uint64_t start = wire_now_ns(), next_log = start;
	int policy;

	p->free_at = start;
	p->period_base = start;
	p->rt = !pthread_getschedparam(pthread_self(), &policy, &p->rt_param) && policy == SCHED_FIFO;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = p->rx_fd, .events = POLLIN },
			{ .fd = p->stop_fd, .events = POLLIN } };
		struct timespec ts, *tsp = NULL;
		uint64_t now = wire_now_ns(), due;
		int got;

		service(p, now);
		got = recv_batch(p);
		now = wire_now_ns();
		service(p, now);
		publish(p);
		if (p->log && now >= next_log) {
			uint64_t m = atomic_load(&p->pub.sojourn_max_us);

			if (m > p->run_max_sojourn_us)
				p->run_max_sojourn_us = m;
			log_line(p, now);
			next_log += p->log_interval_ns;
			if (next_log < now)
				next_log = now + p->log_interval_ns;
		}
		if (atomic_load_explicit(&p->stopping, memory_order_relaxed))
			return NULL;
		if (got) {
			end_spin(p);
			p->last_rx_ns = now;
		}
		if (got == LP_RX_BATCH) {
			sample_sockbuf(p);
			continue;
		}
		/* The bounded busy-poll: frames came within busy_poll_ns, so more are likely; a wake-up from ppoll
		 * costs tens to hundreds of us on a virtual CPU. Each empty poll yields the CPU to whatever else is
		 * runnable on it (on a small machine, often the senders themselves). */
		if (now - p->last_rx_ns < p->busy_poll_ns) {
			if (!p->spinning) {
				p->spinning = true;
				p->spin_cpu_ns = thread_cpu_ns();
			}
			poll_class(p, p->rt && over_rt_budget(p, now));
			sched_yield();
			continue;
		}
		end_spin(p);
		poll_class(p, false);
		due = next_event(p);
		if (p->log && due > next_log)
			due = next_log;
		if (due != UINT64_MAX)
			tsp = wire_departure_timeout(due > now ? due - now : 0, GUARD_NS, &ts);
		if (ppoll(pfd, 2, tsp, NULL) < 0 && errno != EINTR) {
			wire_fail("ppoll", errno);
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
	}
}

void *lp_passthrough_main(void *arg)
{
	static uint8_t buf[VNET_HDR_BYTES + 65536 + 64];
	struct lpath *p = arg;

	for (;;) {
		struct pollfd pfd[2] = { { .fd = p->rx_fd, .events = POLLIN },
			{ .fd = p->stop_fd, .events = POLLIN } };
		ssize_t n;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
			wire_fail("poll", errno);
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
		while ((n = recv(p->rx_fd, buf, sizeof(buf), MSG_DONTWAIT)) > (ssize_t)VNET_HDR_BYTES) {
			if (send(p->tx_fd, buf, (size_t)n, 0) >= 0)
				INC(p, out_pkts);
			else
				INC(p, drop_tx);
		}
	}
}

static void alloc_pool(struct lpath *p)
{
	uint64_t cap = lq_capacity_pkts(&p->q);
	uint32_t slots;
	uint64_t line_ns;

	/* One slot per packet the queue can hold... */
	slots = cap > MAX_POOL_SLOTS ? MAX_POOL_SLOTS : (uint32_t)cap;
	/* ...plus a receive batch, a send batch, the frame in service and what the line and the aggregation stage
	 * after the link hold (their delay, jitter and longest hold):
	 * its delay and jitter at the rate (none: LINE_RATE_BPS) in minimum-size frames. */
	slots += 2 * LP_RX_BATCH + 2;
	line_ns = p->cfg.delay_ns + p->cfg.jitter_ns + p->cfg.agg_a_ns + p->cfg.agg_b_ns;
	if (line_ns) {
		uint64_t rate = p->cfg.rate_bps ? p->cfg.rate_bps : LINE_RATE_BPS;
		uint64_t line =
			line_ns / LQ_NSEC_PER_USEC * (rate / BITS_PER_BYTE / MIN_FRAME_BYTES) / 1000000 + 1;

		slots += (uint32_t)(line < MAX_POOL_SLOTS ? line : MAX_POOL_SLOTS);
	}
	p->slot_size = VNET_HDR_BYTES + p->frame_max;
	p->pool_stride = (sizeof(struct lp_slot) + p->slot_size + 63) & ~(size_t)63;
	/* Reserved, not touched: slot_get() hands out fresh slots only when the free list (LIFO, so the
	 * same pages come back) is empty. */
	p->pool = mmap(NULL, p->pool_stride * slots, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p->pool == MAP_FAILED) {
		fprintf(stderr, "bbrkit-link: cannot map a packet pool of the %s queue's limit\n", p->name);
		exit(2);
	}
	p->pool_slots = slots;
}

static void mm_open(struct lpath *p)
{
	static const size_t buf_bytes = 1 << 20; /* one write per MiB: a line per packet */
	struct timespec real;

	p->mm = fopen(p->cfg.mm_log, "w");
	if (!p->mm) {
		fprintf(stderr, "bbrkit-link: %s packet log %s: %s\n", p->name, p->cfg.mm_log,
			strerror(errno));
		exit(2);
	}
	setvbuf(p->mm, NULL, _IOFBF, buf_bytes);
	clock_gettime(CLOCK_REALTIME, &real);
	p->mm_start_ns = wire_now_ns();
	/* The header lines mm-throughput-graph and mm-delay-graph read; the base timestamp is the log's zero. */
	fprintf(p->mm, "# mahimahi mm-link (bbrkit-link %s) [", p->name);
	if (p->cfg.trace.ns)
		fprintf(p->mm, "trace");
	else
		fprintf(p->mm, "%" PRIu64 " bit/s", p->cfg.rate_bps);
	fprintf(p->mm, "] > %s\n%s# init timestamp: %" PRIu64 "\n# base timestamp: 0\n", p->cfg.mm_log,
		p->cfg.mm_header ? p->cfg.mm_header : "",
		(uint64_t)((uint64_t)real.tv_sec * 1000 + (uint64_t)real.tv_nsec / LQ_NSEC_PER_MSEC));
}

void lp_setup(
	struct lpath *p, uint64_t seed, uint32_t frame_max, const char *csv_log, uint64_t log_interval_ns)
{
	const char *err = NULL;

	p->frame_max = frame_max;
	p->seed = (uint32_t)seed;
	if (lq_init(&p->q, &p->cfg.queue, on_drop, p, &err)) {
		fprintf(stderr, "bbrkit-link: %s queue: %s\n", p->name, err);
		exit(2);
	}
	if (p->cfg.ge_on)
		lq_ge_init(&p->ge, p->cfg.ge[0], p->cfg.ge[1], p->cfg.ge[3], p->cfg.ge[2], seed);
	p->rng = seed ^ 0x6a09e667f3bcc908ULL;
	if (p->cfg.police_bps)
		ls_police_init(&p->police, p->cfg.police_bps, p->cfg.police_burst, wire_now_ns());
	ls_reorder_init(&p->reorder, p->cfg.reorder_prob, p->cfg.reorder_gap, seed ^ 0xbb67ae8584caa73bULL);
	ls_agg_init(&p->agg, p->cfg.agg, p->cfg.agg_a_ns, p->cfg.agg_b_ns, p->cfg.agg_pkts,
		seed ^ 0x3c6ef372fe94f82bULL, wire_now_ns());
	alloc_pool(p);
	if (p->cfg.mm_log)
		mm_open(p);
	if (csv_log) {
		p->log = fopen(csv_log, "w");
		if (!p->log) {
			fprintf(stderr, "bbrkit-link: --log %s: %s\n", csv_log, strerror(errno));
			exit(2);
		}
		fputs("t_mono_s,backlog_pkts,backlog_bytes,sojourn_mean_us,sojourn_max_us,out_pkts,"
		      "drop_overlimit,drop_aqm,marks,drop_ge,out_bytes\n",
			p->log);
		p->log_interval_ns = log_interval_ns;
	}
}

void lp_print_counters(struct lpath *p, const char *prefix)
{
	uint64_t deq = atomic_load(&p->pub.deq_pkts), max = atomic_load(&p->pub.sojourn_max_us);

	wire_count_kernel_drops(p->rx_fd, &p->kernel_drops);
	if (max < p->run_max_sojourn_us)
		max = p->run_max_sojourn_us;
#define LP_PRINT(key) \
	if (strcmp(#key, "deq_pkts") && strcmp(#key, "sojourn_sum_us") && strcmp(#key, "sojourn_max_us")) \
		printf(",\"%s" #key "\":%" PRIu64, prefix, (uint64_t)atomic_load(&p->pub.key));
	LP_COUNTERS(LP_PRINT)
#undef LP_PRINT
	printf(",\"%sdrop_kernel\":%" PRIu64, prefix, p->kernel_drops);
	printf(",\"%sadded_p50_us\":%" PRIu64 ",\"%sadded_p99_us\":%" PRIu64, prefix,
		added_percentile_us(p, 50), prefix, added_percentile_us(p, 99));
	printf(",\"%ssojourn_mean_us\":%" PRIu64 ",\"%ssojourn_max_us\":%" PRIu64, prefix,
		deq ? (uint64_t)atomic_load(&p->pub.sojourn_sum_us) / deq : 0, prefix, max);
}

void lp_close(struct lpath *p)
{
	if (p->ring.map)
		munmap(p->ring.map, p->ring.map_bytes);
	p->ring.map = NULL;
	if (p->mm)
		fclose(p->mm);
	p->mm = NULL;
	if (p->log)
		fclose(p->log);
	p->log = NULL;
	lq_free(&p->q);
}
