// SPDX-License-Identifier: GPL-2.0
/*
 * bbrkit-link: a bottleneck link between two interfaces of one network namespace, because this
 * kernel has no netem, codel, fq_codel, cake or pie. Frames from --left leave on --right at a
 * constant rate or on a Mahimahi delivery trace, through a tail-drop, CoDel, FQ-CoDel or step-marking
 * queue (queue.c), with optional Gilbert-Elliott loss. Frames from --right go back to --left at once:
 * the ACK path is not shaped.
 *
 * Queueing, marking and dropping are per packet, so the link needs wire-size frames: the wrapper turns
 * segmentation offloads off upstream, and a GSO frame that still arrives is dropped and counted
 * (drop_gso). Arrival times are the kernel's receive timestamps (SO_TIMESTAMPNS), as in bbrkit-delay:
 * waking a thread on a virtual CPU can take hundreds of microseconds. A frame leaves when its last bit
 * would have crossed the link.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <linux/sock_diag.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "afpacket.h"
#include "process.h"
#include "queue.h"

#define PROG "bbrkit-link"
#define NSEC_PER_SEC 1000000000ULL
#define BITS_PER_BYTE 8ULL
#define VNET_HDR_BYTES ((uint32_t)sizeof(struct virtio_net_hdr))
/* Ethernet header plus one VLAN tag on top of the MTU. */
#define L2_OVERHEAD_BYTES 18
#define DEFAULT_MTU 1500
#define MAX_MTU 9000
#define MIN_RATE_BPS 8000ULL
#define MAX_RATE_BPS 100000000000ULL
/* Mahimahi (link_queue.hh PACKET_SIZE): each trace line is one delivery opportunity of this many bytes of
 * what it reads from its TUN device, the IP packet behind a 4-byte packet-information header. */
#define TRACE_OPPORTUNITY_BYTES 1504
#define TUN_PI_BYTES 4
#define MAX_TRACE_LINES 10000000
#define MAX_TRACE_MS (24ULL * 3600 * 1000)
#define MAX_LIMIT_PKTS 1000000
#define MAX_LIMIT_BYTES (1ULL << 32)
#define MAX_POOL_SLOTS (1U << 20)
/* After a late wake-up the link may catch up at most this much lost time in one burst, as a
 * token bucket of about a millisecond would. */
#define CATCHUP_NS 1000000ULL
#define RX_BATCH 64
/* The receive socket is a FIFO the AQM cannot see: big enough for a burst over a wake-up gap (about 1800
 * full-size frames at ~2.3 KB of truesize each, 15 ms at the link's top speed here), small enough that a
 * forwarder falling behind shows as kernel drops instead of seconds of hidden delay (32 MiB held ~2 s at
 * 100 Mbit/s). What waits there is counted (sockbuf_max_bytes, rx_wait_max_us, rx_waited_pkts). */
#define DEFAULT_SOCKBUF_BYTES (4 << 20)
/* A frame read this long after its kernel receive stamp waited in the socket, not just for a wake-up. */
#define RX_WAITED_NS 1000000
/* Wake this long before the next departure, then step (wire_departure_timeout): long sleeps
 * overshoot by milliseconds on a virtual CPU, short ones by microseconds (bbrkit-delay's measurements). */
#define GUARD_NS 1000000ULL
#define DEFAULT_LOG_INTERVAL_US 10000ULL
#define MAX_PARAM_MS 10000ULL

struct slot {
	struct lq_pkt p;
	struct slot *free_next; /* the free list, or the jitter line while the frame waits there */
	uint64_t due_ns;	/* jitter: when the frame leaves */
	uint32_t wire_len;	/* vnet header + frame */
	uint8_t buf[];		/* vnet header, then the frame */
};

/* Counters the forwarding thread publishes for the stats lines (relaxed: monotonic or gauges). */
struct pub {
	atomic_uint_fast64_t in_pkts, out_pkts, out_bytes, drop_overlimit, drop_aqm, mark_aqm, mark_step,
		drop_blue, way_collisions, drop_ge, drop_gso, drop_bad, drop_tx, backlog_pkts, backlog_bytes,
		max_backlog_bytes, new_flows, deq_pkts, sojourn_sum_us, sojourn_max_us, rx_stamp_fallback,
		rev_pkts, rev_drop_tx, sockbuf_max_bytes, rx_wait_max_us, rx_waited_pkts;
};

static struct pub pub;
static const char *tag = "";
static int stop_pipe[2] = { -1, -1 };
static atomic_int fatal_error;

static struct {
	int rx_fd, tx_fd, rev_rx_fd, rev_tx_fd;
	const char *left;
	uint64_t rate_bps;
	uint64_t *trace_ns; /* opportunity offsets within one period */
	size_t trace_len;
	uint64_t trace_period_ns;
	struct lq q;
	struct lq_ge ge;
	bool ge_on;
	uint32_t frame_max, slot_size, seed;
	uint8_t *pool;
	struct slot *free_list;
	FILE *log;
	uint64_t log_interval_ns;
	uint64_t jitter_ns;
} L;

static void fail_runtime(const char *what, int err)
{
	fprintf(stderr, PROG ": %s: %s\n", what, strerror(err));
	atomic_store(&fatal_error, 1);
	kill(getpid(), SIGTERM);
}

static void __attribute__((noreturn)) die(const char *fmt, const char *arg)
{
	fputs(PROG ": ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

#define INC(field) atomic_fetch_add_explicit(&pub.field, 1, memory_order_relaxed)
#define SET(field, v) atomic_store_explicit(&pub.field, (v), memory_order_relaxed)

static struct slot *slot_get(void)
{
	struct slot *s = L.free_list;

	if (s)
		L.free_list = s->free_next;
	return s;
}

static void slot_put(struct slot *s)
{
	s->free_next = L.free_list;
	L.free_list = s;
}

static void on_drop(void *ctx, struct lq_pkt *p)
{
	(void)ctx;
	slot_put((struct slot *)p);
}

/* Frames due to leave, sent together by tx_flush() before the thread sleeps or reads again. */
static struct slot *tx_pending[RX_BATCH];
static int tx_count;

static void tx_flush(void)
{
	static struct mmsghdr msgs[RX_BATCH];
	static struct iovec iov[RX_BATCH];
	int done = 0;

	for (int i = 0; i < tx_count; i++) {
		iov[i] = (struct iovec){ .iov_base = tx_pending[i]->buf, .iov_len = tx_pending[i]->wire_len };
		msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	while (done < tx_count) {
		int n = sendmmsg(L.tx_fd, msgs + done, (unsigned int)(tx_count - done), 0);

		if (n > 0) {
			for (int i = done; i < done + n; i++) {
				INC(out_pkts);
				atomic_fetch_add_explicit(
					&pub.out_bytes, tx_pending[i]->p.len, memory_order_relaxed);
			}
			done += n;
			continue;
		}
		if (errno == ENXIO || errno == ENODEV) {
			fail_runtime("output interface disappeared", errno);
			break;
		}
		INC(drop_tx); /* ENOBUFS, ENETDOWN: the first frame is lost on the wire, as send() would lose it */
		done++;
	}
	for (int i = 0; i < tx_count; i++)
		slot_put(tx_pending[i]);
	tx_count = 0;
}

static void send_now(struct slot *s)
{
	tx_pending[tx_count++] = s;
	if (tx_count == RX_BATCH)
		tx_flush();
}

/* Jitter: after the link each frame is due a uniform 0..jitter_ns later, never before the frame ahead of it
 * (netem's rule when its delay comes with a rate); under load the waits are a running maximum, about
 * jitter_ns rather than half of it (README). */
static struct slot *jitter_head, *jitter_tail;
static uint64_t jitter_rng;

static uint64_t jitter_draw(void)
{
	uint64_t z = (jitter_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31)) % (L.jitter_ns + 1);
}

static void transmit(struct slot *s, uint64_t now)
{
	uint64_t due;

	if (!L.jitter_ns) {
		send_now(s);
		return;
	}
	due = now + jitter_draw();
	if (jitter_tail && due < jitter_tail->due_ns)
		due = jitter_tail->due_ns;
	s->due_ns = due;
	s->free_next = NULL;
	if (jitter_tail)
		jitter_tail->free_next = s;
	else
		jitter_head = s;
	jitter_tail = s;
}

static void jitter_release(uint64_t now)
{
	while (jitter_head && jitter_head->due_ns <= now) {
		struct slot *s = jitter_head;

		jitter_head = s->free_next;
		if (!jitter_head)
			jitter_tail = NULL;
		send_now(s);
	}
}

/* The link: one frame in service at a time, leaving at cur_finish. */
static struct slot *cur;
static uint64_t cur_finish, free_at;
static uint32_t cur_left;    /* trace mode: bytes of cur still to deliver (IP packet + TUN_PI_BYTES) */
static size_t next_opp;	     /* trace mode: index into trace_ns */
static uint64_t period_base; /* trace mode: start of the current period */

static uint64_t opp_time(void)
{
	return period_base + L.trace_ns[next_opp];
}

static void opp_advance(void)
{
	if (++next_opp == L.trace_len) {
		next_opp = 0;
		period_base += L.trace_period_ns;
	}
}

static void service_rate(uint64_t now)
{
	for (;;) {
		uint64_t start;

		if (cur) {
			if (cur_finish > now)
				return;
			free_at = cur_finish;
			transmit(cur, now);
			cur = NULL;
		}
		cur = (struct slot *)lq_dequeue(&L.q, now);
		if (!cur)
			return;
		start = free_at;
		if (start < cur->p.enq_ns)
			start = cur->p.enq_ns;
		if (start + CATCHUP_NS < now)
			start = now - CATCHUP_NS;
		cur_finish = start + (uint64_t)cur->p.len * BITS_PER_BYTE * NSEC_PER_SEC / L.rate_bps;
	}
}

/* What a frame costs of a trace's opportunities: what Mahimahi would have read for it from its TUN device
 * (the IP packet and a 4-byte header; the Ethernet header, a VLAN tag included, is not carried). */
static uint32_t trace_cost(const struct slot *s)
{
	const uint8_t *frame = s->buf + VNET_HDR_BYTES;
	uint32_t l2 = s->p.l3 ? (uint32_t)(s->p.l3 - frame) : ETHER_HDR_LEN;

	return (s->p.len > l2 ? s->p.len - l2 : 0) + TUN_PI_BYTES;
}

/* Mahimahi's LinkQueue::rationalize: every opportunity at or before @t delivers up to 1504 bytes of the
 * queue's head at its own time (frames may span opportunities) or, with nothing queued, is lost. The
 * forwarding loop runs it with @burn_idle false, leaving an idle link's opportunities alone: frames may be
 * waiting unread in the socket with earlier arrival stamps. Admission runs it up to the frame's arrival
 * first (@burn_idle true), as Mahimahi before enqueueing, so an opportunity at the arrival time itself is
 * gone (Mahimahi's millisecond clock: a frame can use an opportunity only from a later millisecond). */
static void service_trace(uint64_t t, bool burn_idle)
{
	while (opp_time() <= t) {
		uint32_t budget = TRACE_OPPORTUNITY_BYTES;
		uint64_t at = opp_time();

		if (!cur && L.q.backlog_pkts == 0) {
			if (!burn_idle)
				return;
			if (next_opp == 0 && period_base + L.trace_period_ns <= t)
				period_base += L.trace_period_ns; /* a whole period lost at once */
			else
				opp_advance();
			continue;
		}
		opp_advance();
		while (budget) {
			uint32_t take;

			if (!cur) {
				cur = (struct slot *)lq_dequeue(&L.q, at);
				if (!cur)
					break;
				cur_left = trace_cost(cur);
			}
			take = cur_left < budget ? cur_left : budget;
			budget -= take;
			cur_left -= take;
			if (!cur_left) {
				transmit(cur, at);
				cur = NULL;
			}
		}
	}
}

static uint64_t next_event(void)
{
	uint64_t link = L.trace_ns ? (cur || L.q.backlog_pkts ? opp_time() : UINT64_MAX)
				   : (cur ? cur_finish : UINT64_MAX);

	return jitter_head && jitter_head->due_ns < link ? jitter_head->due_ns : link;
}

/* The frame's arrival on the monotonic clock, from its kernel receive stamp; without a plausible one, now,
 * counted: its queueing and sojourn then start late by however long it waited in the socket. */
static uint64_t arrival_ns(struct msghdr *msg, uint64_t now)
{
	int64_t age = wire_rx_age_ns(msg);

	if (age < 0) {
		INC(rx_stamp_fallback);
		return now;
	}
	if ((uint64_t)age / LQ_NSEC_PER_USEC >
		atomic_load_explicit(&pub.rx_wait_max_us, memory_order_relaxed))
		SET(rx_wait_max_us, (uint64_t)age / LQ_NSEC_PER_USEC);
	if (age > RX_WAITED_NS)
		INC(rx_waited_pkts);
	return now - (uint64_t)age;
}

static bool meminfo_ok = true;

/* Bytes (truesize) waiting unread in the data socket: SO_MEMINFO's receive allocation (SIOCINQ on a packet
 * socket gives only the next frame's length). Sampled after a full batch, the only time frames are left. */
static void sample_sockbuf(void)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	if (!meminfo_ok)
		return;
	if (getsockopt(L.rx_fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0) {
		fprintf(stderr, PROG ": SO_MEMINFO: %s: the socket-buffer backlog is not counted\n",
			strerror(errno));
		meminfo_ok = false;
		return;
	}
	if (mem[SK_MEMINFO_RMEM_ALLOC] > atomic_load_explicit(&pub.sockbuf_max_bytes, memory_order_relaxed))
		SET(sockbuf_max_bytes, mem[SK_MEMINFO_RMEM_ALLOC]);
}

static void publish(void)
{
	SET(backlog_pkts, L.q.backlog_pkts);
	SET(backlog_bytes, L.q.backlog_bytes);
	SET(max_backlog_bytes, L.q.st.max_backlog_bytes);
	SET(drop_overlimit, L.q.st.drop_overlimit);
	SET(drop_aqm, L.q.st.drop_aqm);
	SET(mark_aqm, L.q.st.mark_aqm);
	SET(mark_step, L.q.st.mark_step);
	SET(new_flows, L.q.st.new_flows);
	SET(drop_blue, L.q.st.drop_blue);
	SET(way_collisions, L.q.st.way_collisions);
	SET(deq_pkts, L.q.st.deq_pkts);
	SET(sojourn_sum_us, L.q.st.sojourn_sum_ns / LQ_NSEC_PER_USEC);
	SET(sojourn_max_us, L.q.st.sojourn_max_ns / LQ_NSEC_PER_USEC);
}

/* Takes one received frame into the queue (or drops it, counted). */
static void admit(struct slot *s, size_t n, struct msghdr *msg, uint64_t now)
{
	struct virtio_net_hdr *vh = (struct virtio_net_hdr *)s->buf;
	uint64_t at;

	INC(in_pkts);
	if (n > L.slot_size || vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		INC(drop_gso);
		slot_put(s);
		return;
	}
	if (n <= VNET_HDR_BYTES) {
		INC(drop_bad);
		slot_put(s);
		return;
	}
	if (L.ge_on && lq_ge_lose(&L.ge)) {
		INC(drop_ge);
		slot_put(s);
		return;
	}
	s->wire_len = (uint32_t)n;
	s->p.len = (uint32_t)n - VNET_HDR_BYTES;
	lq_frame_info(&s->p, s->buf + VNET_HDR_BYTES, s->p.len, L.seed);
	at = arrival_ns(msg, now);
	if (L.trace_ns)
		service_trace(at, true);
	lq_enqueue(&L.q, &s->p, at);
}

/* Receives up to RX_BATCH frames in one recvmmsg without blocking; returns how many were read. */
static int recv_batch(void)
{
	static union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct timespec))];
	} ctl[RX_BATCH];
	static struct mmsghdr msgs[RX_BATCH];
	static struct iovec iov[RX_BATCH];
	struct slot *slots[RX_BATCH];
	int want, got;
	uint64_t now;

	for (want = 0; want < RX_BATCH; want++) {
		slots[want] = slot_get();
		if (!slots[want])
			break;
		iov[want] = (struct iovec){ .iov_base = slots[want]->buf, .iov_len = L.slot_size };
		msgs[want].msg_hdr = (struct msghdr){ .msg_iov = &iov[want],
			.msg_iovlen = 1,
			.msg_control = &ctl[want],
			.msg_controllen = sizeof(ctl[want]) };
	}
	if (want == 0) {
		/* Every slot is queued (a limit larger than the pool): read one frame to drop it. */
		static uint8_t sink[VNET_HDR_BYTES + 65536 + 64];

		if (recv(L.rx_fd, sink, sizeof(sink), MSG_DONTWAIT) >= 0) {
			INC(in_pkts);
			INC(drop_bad);
			return 1;
		}
		return 0;
	}
	got = recvmmsg(L.rx_fd, msgs, (unsigned int)want, MSG_DONTWAIT | MSG_TRUNC, NULL);
	if (got < 0) {
		got = 0;
		if (errno == EINVAL) /* a GSO type with no vnet header form */
			INC(drop_gso);
		else if (errno != EAGAIN && errno != EINTR && errno != ENETDOWN)
			fail_runtime("recv", errno);
	}
	now = wire_now_ns();
	for (int i = 0; i < got; i++)
		admit(slots[i], msgs[i].msg_len, &msgs[i].msg_hdr, now);
	for (int i = got; i < want; i++)
		slot_put(slots[i]);
	return got;
}

static void log_line(uint64_t t)
{
	static uint64_t last_deq, last_sum;
	uint64_t out = atomic_load(&pub.out_pkts), deq = L.q.st.deq_pkts,
		 sum = L.q.st.sojourn_sum_ns / LQ_NSEC_PER_USEC;
	uint64_t max = L.q.st.sojourn_max_ns / LQ_NSEC_PER_USEC;

	/* The interval's sojourn maximum restarts here; the stats line keeps its own running max. */
	L.q.st.sojourn_max_ns = 0;
	fprintf(L.log,
		"%.6f,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 "\n",
		(double)t / NSEC_PER_SEC, L.q.backlog_pkts, L.q.backlog_bytes,
		deq - last_deq ? (sum - last_sum) / (deq - last_deq) : 0, max, out, L.q.st.drop_overlimit,
		L.q.st.drop_aqm + L.q.st.drop_blue, L.q.st.mark_aqm + L.q.st.mark_step,
		(uint64_t)atomic_load(&pub.drop_ge), (uint64_t)atomic_load(&pub.out_bytes));
	last_deq = deq;
	last_sum = sum;
}

static uint64_t run_max_sojourn_us;

static void *forward_main(void *arg)
{
	uint64_t start = wire_now_ns(), next_log = start;

	(void)arg;
	free_at = start;
	period_base = start;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = L.rx_fd, .events = POLLIN },
			{ .fd = stop_pipe[0], .events = POLLIN } };
		struct timespec ts, *tsp = NULL;
		uint64_t now = wire_now_ns(), due;
		int got;

		if (L.trace_ns)
			service_trace(now, false);
		else
			service_rate(now);
		jitter_release(now);
		tx_flush();
		got = recv_batch();
		now = wire_now_ns();
		if (L.trace_ns)
			service_trace(now, false);
		else
			service_rate(now);
		jitter_release(now);
		tx_flush();
		publish();
		if (L.log && now >= next_log) {
			uint64_t m = atomic_load(&pub.sojourn_max_us);

			if (m > run_max_sojourn_us)
				run_max_sojourn_us = m;
			log_line(now);
			next_log += L.log_interval_ns;
			if (next_log < now)
				next_log = now + L.log_interval_ns;
		}
		if (got == RX_BATCH) {
			sample_sockbuf();
			continue;
		}
		due = next_event();
		if (L.log && due > next_log)
			due = next_log;
		if (due != UINT64_MAX) {
			tsp = wire_departure_timeout(due > now ? due - now : 0, GUARD_NS, &ts);
		}
		if (ppoll(pfd, 2, tsp, NULL) < 0 && errno != EINTR) {
			fail_runtime("ppoll", errno);
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
	}
}

/* The reverse path (ACKs) goes straight through, in order. */
static void *reverse_main(void *arg)
{
	static uint8_t buf[VNET_HDR_BYTES + 65536 + 64];

	(void)arg;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = L.rev_rx_fd, .events = POLLIN },
			{ .fd = stop_pipe[0], .events = POLLIN } };
		ssize_t n;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
			fail_runtime("poll", errno);
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
		while ((n = recv(L.rev_rx_fd, buf, sizeof(buf), MSG_DONTWAIT)) > (ssize_t)VNET_HDR_BYTES) {
			if (send(L.rev_tx_fd, buf, (size_t)n, 0) >= 0)
				INC(rev_pkts);
			else
				INC(rev_drop_tx);
		}
	}
}

static uint64_t kernel_drops; /* main thread only */

static void print_stats(const char *event)
{
	struct tpacket_stats st;
	socklen_t sl = sizeof(st);

	/* PACKET_STATISTICS resets on read, so accumulate: frames the socket buffer had no room for. */
	if (getsockopt(L.rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) == 0)
		kernel_drops += st.tp_drops;
	uint64_t deq = atomic_load(&pub.deq_pkts);
	uint64_t max = atomic_load(&pub.sojourn_max_us);

	if (max < run_max_sojourn_us)
		max = run_max_sojourn_us;
	printf("{\"event\":\"%s\",\"tag\":\"%s\"", event, tag);
#define F(key) printf(",\"" #key "\":%" PRIu64, (uint64_t)atomic_load(&pub.key))
	F(in_pkts);
	F(out_pkts);
	F(out_bytes);
	F(drop_overlimit);
	F(drop_aqm);
	F(mark_aqm);
	F(mark_step);
	F(drop_blue);
	F(way_collisions);
	F(drop_ge);
	F(drop_gso);
	F(drop_bad);
	F(drop_tx);
	F(backlog_pkts);
	F(backlog_bytes);
	F(max_backlog_bytes);
	F(new_flows);
	F(rev_pkts);
	F(rev_drop_tx);
	F(rx_stamp_fallback);
	F(sockbuf_max_bytes);
	F(rx_wait_max_us);
	F(rx_waited_pkts);
#undef F
	printf(",\"drop_kernel\":%" PRIu64, kernel_drops);
	printf(",\"sojourn_mean_us\":%" PRIu64 ",\"sojourn_max_us\":%" PRIu64 "}\n",
		deq ? (uint64_t)atomic_load(&pub.sojourn_sum_us) / deq : 0, max);
	fflush(stdout);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	return wire_parse_u64(PROG, opt, s, min, max);
}

/* A probability as tc's parse_percent reads netem's: a percentage, the '%' optional ("1%" and "1" are 1%). */
static double parse_percent(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || (*end && strcmp(end, "%")) || !(v >= 0.0 && v <= 100.0)) {
		fprintf(stderr, PROG ": %s: '%s' is not a percentage in 0..100 (see --help)\n", opt, s);
		exit(2);
	}
	return v / 100;
}

/* netem's "loss gemodel P [R [1-H [1-K]]]" (separated by spaces or commas), with tc's defaults for what
 * is left out: R = 1 - P, 1-H = 100% (the bad state loses everything), 1-K = 0. Fills @ge as P, R, loss
 * in the bad state, loss in the good state. */
static void parse_ge(double ge[4], const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok = strtok_r(copy, ", ", &save);
	int n;

	for (n = 0; tok && n < 4; n++, tok = strtok_r(NULL, ", ", &save))
		ge[n] = parse_percent("--ge", tok);
	if (n == 0 || tok)
		die("--ge '%s': expected netem's gemodel P [R [1-H [1-K]]], in percent", arg);
	if (n < 2)
		ge[1] = 1 - ge[0];
	if (n < 3)
		ge[2] = 1;
	if (n < 4)
		ge[3] = 0;
	free(copy);
}

/* A Mahimahi trace, read as mm-link reads it (LinkQueue's constructor, myatoi): one integer millisecond per
 * line as strtol takes it (leading blanks and a sign allowed, nothing after it), no empty lines (nor
 * comments), non-decreasing, the last one above 0: it is the period (the trace loops). Negative counts,
 * which Mahimahi would wrap around, are refused. */
static void load_trace(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t linecap = 0, cap = 0, lineno = 0;
	ssize_t n;
	uint64_t last = 0;

	if (!f) {
		fprintf(stderr, PROG ": --trace %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while ((n = getline(&line, &linecap, f)) >= 0) {
		char *end;
		long ms;

		lineno++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = 0;
		if (n == 0) {
			fprintf(stderr, PROG ": --trace %s: line %zu: empty (Mahimahi refuses empty lines)\n",
				path, lineno);
			exit(2);
		}
		errno = 0;
		ms = strtol(line, &end, 10);
		if (end == line || errno || *end || ms < 0 || (uint64_t)ms > MAX_TRACE_MS ||
			(uint64_t)ms < last) {
			fprintf(stderr,
				PROG ": --trace %s: line %zu: expected a millisecond count not below "
				     "the previous line's\n",
				path, lineno);
			exit(2);
		}
		if (L.trace_len == MAX_TRACE_LINES)
			die("--trace %s: more than 10000000 lines", path);
		if (L.trace_len == cap) {
			cap = cap ? cap * 2 : 4096;
			L.trace_ns = realloc(L.trace_ns, cap * sizeof(*L.trace_ns));
			if (!L.trace_ns)
				die("--trace %s: out of memory", path);
		}
		L.trace_ns[L.trace_len++] = (uint64_t)ms * LQ_NSEC_PER_MSEC;
		last = (uint64_t)ms;
	}
	free(line);
	fclose(f);
	if (!L.trace_len || last == 0)
		die("--trace %s: no delivery opportunity after 0 ms (an empty trace cannot loop)", path);
	L.trace_period_ns = last * LQ_NSEC_PER_MSEC;
}

static void usage(void)
{
	printf("Usage: " PROG " --left IF --right IF --tag TAG (--rate-bps N | --trace FILE) [options]\n"
	       "Forward frames from --left to --right through an emulated bottleneck (rate or trace,\n"
	       "queue, AQM, loss); frames from --right go to --left unshaped.\n"
	       "\n"
	       "  --left IF              data input interface\n"
	       "  --right IF             data output interface\n"
	       "  --tag TAG              label for this instance ([A-Za-z0-9._-], at most %d chars)\n"
	       "  --rate-bps N           constant link rate in bit/s of Ethernet frames (%llu..%llu)\n"
	       "  --trace FILE           Mahimahi trace: one line per delivery opportunity of %d bytes\n"
	       "                         (IP packet + 4, as mm-link), in ms; loops with the last line's\n"
	       "                         time as its period\n"
	       "  --aqm KIND             fifo (default), codel, fq_codel, cake (a subset), pie or step\n"
	       "  --limit-pkts N         queue limit in packets (default: 1000, fq_codel 10240; cake:\n"
	       "                         N MTU frames cap its truesize buffer, default 10240)\n"
	       "  --limit-bytes N        queue limit in bytes (fifo; replaces the packet limit)\n"
	       "  --target-us N          CoDel target (default 5000), PIE reference delay (15000)\n"
	       "  --interval-us N        CoDel interval (default 100000)\n"
	       "  --tupdate-us N         PIE probability update interval (default 15000)\n"
	       "  --quantum N            FQ-CoDel/CAKE DRR quantum in bytes (default: the MTU frame;\n"
	       "                         CAKE: rate/4096 within 300..MTU frame)\n"
	       "  --flows N              FQ-CoDel/CAKE queues (default 1024; CAKE: a multiple of 8)\n"
	       "  --ecn 0|1              CoDel/FQ-CoDel/PIE mark ECT packets instead of dropping\n"
	       "                         (default: codel 0, pie 0, fq_codel 1)\n"
	       "  --step-us N            CE on ECT packets whose sojourn exceeds N us (step's threshold;\n"
	       "                         with codel/fq_codel, their ce_threshold)\n"
	       "  --step-ect1-only       mark only ECT(1) packets (L4S)\n"
	       "  --ge 'P [R [1-H [1-K]]]' Gilbert-Elliott loss as netem's gemodel, in percent: good->bad\n"
	       "                         P, bad->good R per packet, loss 1-H in the bad state and 1-K in\n"
	       "                         the good one (defaults R = 100 - P, 1-H = 100, 1-K = 0)\n"
	       "  --jitter-us N          after the link each frame waits a uniform 0..N us more, in order\n"
	       "  --seed N               seed for the flow hash salt and the loss model (default 1)\n"
	       "  --mtu N                largest IP packet (default %d)\n"
	       "  --log FILE             CSV time series of the queue every --log-interval-us, stamped\n"
	       "                         in CLOCK_MONOTONIC seconds\n"
	       "  --log-interval-us N    default %llu\n"
	       "  --sockbuf-bytes N      kernel socket buffer per socket (default %d)\n"
	       "  --rt-prio N            run the forwarding threads SCHED_FIFO at priority N (1..99)\n"
	       "  --help                 show this help\n"
	       "\n"
	       "Prints {\"event\":\"ready\",...} when forwarding, a {\"event\":\"stats\",...} line of\n"
	       "counters on SIGUSR1 and {\"event\":\"exit\",...} on SIGTERM/SIGINT.\n",
		WIRE_MAX_TAG_LEN, MIN_RATE_BPS, MAX_RATE_BPS, TRACE_OPPORTUNITY_BYTES, DEFAULT_MTU,
		DEFAULT_LOG_INTERVAL_US, DEFAULT_SOCKBUF_BYTES);
}

/* The command line as given; main checks it, then builds the link from it. */
struct link_args {
	const char *left, *right, *trace, *aqm, *log_path;
	uint64_t limit_pkts, limit_bytes, target, interval, tupdate, quantum,
		flows; /* 0: the queue's default */
	uint64_t step, mtu, prio, ecn, log_us, seed;
	int sockbuf;
	bool ect1, have_tag;
	double ge[4]; /* netem's order: P, R, 1-H, 1-K */
};

/* Long options only, numbered past every character getopt could return. */
enum link_opt {
	O_LEFT = 256,
	O_RIGHT,
	O_TAG,
	O_RATE,
	O_TRACE,
	O_AQM,
	O_LPKTS,
	O_LBYTES,
	O_TARGET,
	O_INTERVAL,
	O_TUPDATE,
	O_QUANTUM,
	O_FLOWS,
	O_ECN,
	O_STEP,
	O_ECT1,
	O_GE,
	O_JITTER,
	O_SEED,
	O_MTU,
	O_LOG,
	O_LOGINT,
	O_SOCKBUF,
	O_PRIO,
	O_HELP
};
static const struct option link_opts[] = {
	{ "left", required_argument, NULL, O_LEFT },
	{ "right", required_argument, NULL, O_RIGHT },
	{ "tag", required_argument, NULL, O_TAG },
	{ "rate-bps", required_argument, NULL, O_RATE },
	{ "trace", required_argument, NULL, O_TRACE },
	{ "aqm", required_argument, NULL, O_AQM },
	{ "limit-pkts", required_argument, NULL, O_LPKTS },
	{ "limit-bytes", required_argument, NULL, O_LBYTES },
	{ "target-us", required_argument, NULL, O_TARGET },
	{ "interval-us", required_argument, NULL, O_INTERVAL },
	{ "tupdate-us", required_argument, NULL, O_TUPDATE },
	{ "quantum", required_argument, NULL, O_QUANTUM },
	{ "flows", required_argument, NULL, O_FLOWS },
	{ "ecn", required_argument, NULL, O_ECN },
	{ "step-us", required_argument, NULL, O_STEP },
	{ "step-ect1-only", no_argument, NULL, O_ECT1 },
	{ "ge", required_argument, NULL, O_GE },
	{ "jitter-us", required_argument, NULL, O_JITTER },
	{ "seed", required_argument, NULL, O_SEED },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "log", required_argument, NULL, O_LOG },
	{ "log-interval-us", required_argument, NULL, O_LOGINT },
	{ "sockbuf-bytes", required_argument, NULL, O_SOCKBUF },
	{ "rt-prio", required_argument, NULL, O_PRIO },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static void parse_args(int argc, char **argv, struct link_args *a)
{
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", link_opts, NULL)) != -1) {
		switch (opt) {
		case O_LEFT:
			a->left = optarg;
			break;
		case O_RIGHT:
			a->right = optarg;
			break;
		case O_TAG:
			tag = optarg;
			a->have_tag = true;
			break;
		case O_RATE:
			L.rate_bps = parse_u64("--rate-bps", optarg, MIN_RATE_BPS, MAX_RATE_BPS);
			break;
		case O_TRACE:
			a->trace = optarg;
			break;
		case O_AQM:
			a->aqm = optarg;
			break;
		case O_LPKTS:
			a->limit_pkts = parse_u64("--limit-pkts", optarg, 1, MAX_LIMIT_PKTS);
			break;
		case O_LBYTES:
			a->limit_bytes = parse_u64("--limit-bytes", optarg, 1, MAX_LIMIT_BYTES);
			break;
		case O_TARGET:
			a->target = parse_u64("--target-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_INTERVAL:
			a->interval = parse_u64("--interval-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_TUPDATE:
			a->tupdate = parse_u64("--tupdate-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_QUANTUM:
			a->quantum = parse_u64("--quantum", optarg, 64, 1 << 20);
			break;
		case O_FLOWS:
			a->flows = parse_u64("--flows", optarg, 1, LQ_MAX_FLOWS);
			break;
		case O_ECN:
			a->ecn = parse_u64("--ecn", optarg, 0, 1);
			break;
		case O_STEP:
			a->step = parse_u64("--step-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_ECT1:
			a->ect1 = true;
			break;
		case O_GE:
			parse_ge(a->ge, optarg);
			L.ge_on = true;
			break;
		case O_JITTER:
			L.jitter_ns =
				parse_u64("--jitter-us", optarg, 0, MAX_PARAM_MS * 1000) * LQ_NSEC_PER_USEC;
			break;
		case O_SEED:
			a->seed = parse_u64("--seed", optarg, 0, UINT32_MAX);
			break;
		case O_MTU:
			a->mtu = parse_u64("--mtu", optarg, 576, MAX_MTU);
			break;
		case O_LOG:
			a->log_path = optarg;
			break;
		case O_LOGINT:
			a->log_us = parse_u64("--log-interval-us", optarg, 100, 10000000);
			break;
		case O_SOCKBUF:
			a->sockbuf = (int)parse_u64("--sockbuf-bytes", optarg, 65536, INT_MAX / 2);
			break;
		case O_PRIO:
			a->prio = parse_u64("--rt-prio", optarg, 1, 99);
			break;
		case O_HELP:
			usage();
			exit(0);
		default:
			if (optopt)
				die("option '%s' needs a value (see --help)", argv[optind - 1]);
			die("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
}

/* Bad input stops here, before any socket, thread or file exists. Returns the queue's kind. */
static enum lq_kind check_args(const struct link_args *a)
{
	enum lq_kind kind;

	if (!a->left || !a->right || !a->have_tag)
		die("%s are required (see --help)", "--left, --right and --tag");
	if (!wire_tag_ok(tag))
		die("--tag '%s': use 1-64 characters from [A-Za-z0-9._-]", tag);
	if (!L.rate_bps == !a->trace)
		die("%s", "give exactly one of --rate-bps and --trace");
	if (!strcmp(a->aqm, "fifo"))
		kind = LQ_FIFO;
	else if (!strcmp(a->aqm, "codel"))
		kind = LQ_CODEL;
	else if (!strcmp(a->aqm, "fq_codel"))
		kind = LQ_FQ_CODEL;
	else if (!strcmp(a->aqm, "step"))
		kind = LQ_STEP;
	else if (!strcmp(a->aqm, "pie"))
		kind = LQ_PIE;
	else if (!strcmp(a->aqm, "cake"))
		kind = LQ_CAKE;
	else
		die("--aqm '%s': not one of fifo, codel, fq_codel, cake, pie, step", a->aqm);
	if (a->limit_bytes && kind != LQ_FIFO && kind != LQ_STEP)
		die("--limit-bytes: only for fifo and step (%s limits packets)", a->aqm);
	if ((a->target || a->ecn != UINT64_MAX) && (kind == LQ_FIFO || kind == LQ_STEP))
		die("--target-us and --ecn apply to codel, fq_codel, cake and pie, not %s", a->aqm);
	if (a->interval && kind != LQ_CODEL && kind != LQ_FQ_CODEL && kind != LQ_CAKE)
		die("--interval-us applies to codel, fq_codel and cake, not %s", a->aqm);
	if (a->tupdate && kind != LQ_PIE)
		die("--tupdate-us applies to pie, not %s", a->aqm);
	if ((a->quantum || a->flows) && kind != LQ_FQ_CODEL && kind != LQ_CAKE)
		die("--quantum and --flows apply to fq_codel and cake, not %s", a->aqm);
	if (a->flows % LQ_CAKE_WAYS && kind == LQ_CAKE)
		die("--flows: cake's queues come in sets of 8, not %s",
			"a count that is not a multiple of 8");
	if (kind == LQ_STEP && !a->step)
		die("%s", "--aqm step needs --step-us");
	if (a->ect1 && !a->step)
		die("%s", "--step-ect1-only needs --step-us");
	if (a->trace)
		load_trace(a->trace);
	if (strcmp(a->left, a->right) == 0)
		die("--left and --right are both '%s'", a->left);
	if (!if_nametoindex(a->left))
		die("--left: no interface '%s' in this network namespace", a->left);
	if (!if_nametoindex(a->right))
		die("--right: no interface '%s' in this network namespace", a->right);
	return kind;
}

static void queue_params(const struct link_args *a, enum lq_kind kind, struct lq_params *prm)
{
	lq_defaults(prm, kind, L.frame_max - 4);
	if (a->limit_pkts)
		prm->limit_pkts = (uint32_t)a->limit_pkts;
	if (a->limit_bytes) {
		prm->limit_bytes = a->limit_bytes;
		prm->limit_pkts = a->limit_pkts ? (uint32_t)a->limit_pkts : 0;
	}
	if (a->target)
		prm->target_ns = a->target * LQ_NSEC_PER_USEC;
	if (a->interval)
		prm->interval_ns = a->interval * LQ_NSEC_PER_USEC;
	if (a->tupdate)
		prm->tupdate_ns = a->tupdate * LQ_NSEC_PER_USEC;
	if (a->quantum)
		prm->quantum = (uint32_t)a->quantum;
	if (a->flows)
		prm->flows = (uint32_t)a->flows;
	if (a->ecn != UINT64_MAX)
		prm->ecn = a->ecn;
	prm->step_ns = a->step * LQ_NSEC_PER_USEC;
	prm->step_ect1_only = a->ect1;
	/* CAKE sizes its MTU time and quantum from the link rate (a trace's mean rate). */
	prm->rate_bps = L.rate_bps ? L.rate_bps
				   : (uint64_t)L.trace_len * TRACE_OPPORTUNITY_BYTES * BITS_PER_BYTE *
			NSEC_PER_SEC / L.trace_period_ns;
	if (kind == LQ_CAKE && !a->quantum) {
		uint64_t q = prm->rate_bps / BITS_PER_BYTE >> 12; /* sch_cake: rate/4096, within 300..MTU */

		prm->quantum = (uint32_t)(q < LQ_CAKE_MIN_QUANTUM ? LQ_CAKE_MIN_QUANTUM
				: q > prm->mtu_bytes		  ? prm->mtu_bytes
								  : q);
	}
}

static void alloc_pool(const struct lq *q)
{
	uint64_t cap = lq_capacity_pkts(q);
	uint32_t slots;
	size_t stride;

	/* One slot per packet the queue can hold... */
	slots = cap > MAX_POOL_SLOTS ? MAX_POOL_SLOTS : (uint32_t)cap;
	/* ...plus a receive batch, a send batch, the frame in service and, with jitter, a slot per microsecond
	 * of it (a microsecond carries less than one 1500-byte frame below 12 Gbit/s). */
	slots += 2 * RX_BATCH + 2;
	if (L.jitter_ns)
		slots += (uint32_t)(L.jitter_ns / LQ_NSEC_PER_USEC < MAX_POOL_SLOTS
				? L.jitter_ns / LQ_NSEC_PER_USEC
				: MAX_POOL_SLOTS);
	L.slot_size = VNET_HDR_BYTES + L.frame_max;
	stride = (sizeof(struct slot) + L.slot_size + 63) & ~(size_t)63;
	/* Pages are touched only as the queue grows, and a LIFO free list reuses the same ones. */
	L.pool = mmap(NULL, stride * slots, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (L.pool == MAP_FAILED)
		die("cannot map a packet pool of %s", "the queue's limit");
	for (uint32_t i = slots; i-- > 0;)
		slot_put((struct slot *)(L.pool + stride * i));
}

/* 0, or 2 (bad input) when the log cannot be created. */
static int open_log(const struct link_args *a)
{
	if (!a->log_path)
		return 0;
	L.log = fopen(a->log_path, "w");
	if (!L.log) {
		fprintf(stderr, PROG ": --log %s: %s\n", a->log_path, strerror(errno));
		return 2;
	}
	fputs("t_mono_s,backlog_pkts,backlog_bytes,sojourn_mean_us,sojourn_max_us,out_pkts,"
	      "drop_overlimit,drop_aqm,marks,drop_ge,out_bytes\n",
		L.log);
	L.log_interval_ns = a->log_us * LQ_NSEC_PER_USEC;
	return 0;
}

static int start_threads(uint64_t prio, pthread_t *fwd, pthread_t *rev)
{
	pthread_attr_t attr;

	wire_thread_attr(&attr, prio);
	if (pthread_create(fwd, &attr, forward_main, NULL) ||
		pthread_create(rev, &attr, reverse_main, NULL)) {
		fprintf(stderr, PROG ": cannot start forwarding threads\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct link_args args = { .aqm = "fifo",
		.mtu = DEFAULT_MTU,
		.ecn = UINT64_MAX,
		.log_us = DEFAULT_LOG_INTERVAL_US,
		.seed = 1,
		.sockbuf = DEFAULT_SOCKBUF_BYTES };
	struct lq_params prm;
	enum lq_kind kind;
	const char *err = NULL;
	pthread_t fwd, rev;
	sigset_t sigs;

	parse_args(argc, argv, &args);
	kind = check_args(&args);
	L.frame_max = (uint32_t)args.mtu + L2_OVERHEAD_BYTES;
	queue_params(&args, kind, &prm);
	if (lq_init(&L.q, &prm, on_drop, NULL, &err))
		die("queue: %s", err);
	if (L.ge_on)
		lq_ge_init(&L.ge, args.ge[0], args.ge[1], args.ge[3], args.ge[2], args.seed);
	L.seed = (uint32_t)args.seed;
	jitter_rng = args.seed ^ 0x6a09e667f3bcc908ULL;
	alloc_pool(&L.q);
	if (open_log(&args))
		return 2;

	wire_block_signals(&sigs);
	if (pipe2(stop_pipe, O_CLOEXEC) < 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		return 1;
	}
	L.left = args.left;
	L.rx_fd = wire_open_socket(PROG, args.left, if_nametoindex(args.left), true, args.sockbuf);
	L.tx_fd = wire_open_socket(PROG, args.right, if_nametoindex(args.right), false, args.sockbuf);
	L.rev_rx_fd = wire_open_socket(PROG, args.right, if_nametoindex(args.right), true, args.sockbuf);
	L.rev_tx_fd = wire_open_socket(PROG, args.left, if_nametoindex(args.left), false, args.sockbuf);
	if (start_threads(args.prio, &fwd, &rev))
		return 1;
	printf("{\"event\":\"ready\",\"tag\":\"%s\",\"pid\":%d}\n", tag, (int)getpid());
	fflush(stdout);
	wire_wait_for_stop(&sigs, print_stats);
	if (write(stop_pipe[1], "x", 1) < 0)
		fprintf(stderr, PROG ": stop pipe: %s\n", strerror(errno));
	pthread_join(fwd, NULL);
	pthread_join(rev, NULL);
	if (L.log)
		fclose(L.log);
	print_stats("exit");
	lq_free(&L.q);
	return atomic_load(&fatal_error) ? 1 : 0;
}
