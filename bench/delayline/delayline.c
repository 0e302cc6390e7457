// SPDX-License-Identifier: GPL-2.0
/*
 * bbrkit-delay: a transparent bump-in-the-wire that delays every frame by a
 * fixed time per direction, for kernels without netem.
 *
 * Mechanism: one AF_PACKET socket pair per interface (both interfaces live in
 * one network namespace, typically the two inner ends of two veth pairs).
 * PACKET_VNET_HDR makes the kernel hand us GSO super-packets (up to 64 KiB)
 * whole, with their offload metadata, and lets us re-inject them whole, so a
 * gigabit TCP flow costs a few thousand syscalls per second, not ~100k.
 *
 * Each direction has one thread and one FIFO byte ring: frames are stamped on
 * arrival and sent at arrival + delay. A constant delay over a FIFO keeps
 * per-direction order. The ring is capped in bytes; frames that do not fit are
 * dropped and counted (tail drop). Threads block in ppoll() with a timeout
 * equal to the head frame's remaining delay, so an idle delay line uses no CPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "afpacket.h"
#include "lateness.h"
#include "options.h"
#include "process.h"

#define PROG "bbrkit-delay"
#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_SEC 1000000000ULL
/* Longest delay accepted: 10 s per direction is far beyond any scenario. */
#define MAX_DELAY_US 10000000ULL
#define DEFAULT_LIMIT_BYTES (64ULL << 20)
#define MIN_LIMIT_BYTES (1ULL << 20)
#define MAX_LIMIT_BYTES (16ULL << 30)
#define DEFAULT_SOCKBUF_BYTES (32 << 20)
/* A GSO super-packet is at most 64 KiB of IP plus the Ethernet/VLAN header. */
#define MAX_FRAME_BYTES (65536 + 64)
#define VNET_HDR_BYTES ((uint32_t)sizeof(struct virtio_net_hdr))
/* Receive at most this many frames before sending due ones again, so a
 * flood in one direction cannot postpone departures past their due time. */
#define RX_BATCH 32
/* Departures later than this count as late: a tenth of the accuracy target. */
#define LATE_NS 50000ULL
#define DEFAULT_GUARD_US 1000ULL
#define MAX_GUARD_US 100000ULL

/* Ring record header; records are 8-byte aligned and contiguous in the ring. */
struct rec {
	uint64_t due_ns;
	uint32_t len;  /* vnet header + frame bytes */
	uint32_t size; /* whole record incl. header and padding; 0 = wrap marker */
};
#define REC_HDR ((uint64_t)sizeof(struct rec))
#define MAX_REC (((REC_HDR + VNET_HDR_BYTES + MAX_FRAME_BYTES) + 7) & ~7ULL)

struct counters {
	atomic_uint_fast64_t pkts;
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t drop_queue; /* ring full */
	atomic_uint_fast64_t drop_tx;	 /* output device refused the frame */
	atomic_uint_fast64_t drop_bad;	 /* oversize or unparsable offload */
	atomic_uint_fast64_t queued_pkts;
	atomic_uint_fast64_t queued_bytes;
	atomic_uint_fast64_t max_queued_bytes;
	atomic_uint_fast64_t late_pkts;	    /* sent more than LATE_NS after due */
	atomic_uint_fast64_t max_rx_age_ns; /* kernel receive to our read */
	atomic_uint_fast64_t bad_tstamp;
};

struct dir {
	const char *name; /* "lr" or "rl" */
	const char *in_if;
	int rx_fd; /* bound to the input interface */
	int tx_fd; /* bound to the output interface */
	uint64_t delay_ns;
	uint8_t *ring;
	uint64_t cap, head, tail, count, queued_bytes;
	uint8_t *scratch;      /* used only when the ring has no room for MAX_REC */
	uint64_t kernel_drops; /* socket receive queue overflows; main thread only */
	struct counters c;
	struct wire_lateness lateness; /* the trust check's: late wake-ups and each frame's added delay */
	pthread_t thread;
};

static struct dir dirs[2];
/* Set from the command line before the threads start, read-only after. */
static const char *tag = "";
static uint64_t guard_ns;

static struct rec *rec_at(struct dir *d, uint64_t pos)
{
	return (struct rec *)(d->ring + pos);
}

/* Where a record of @size bytes can be written, or UINT64_MAX if it does not fit. */
static uint64_t ring_reserve(struct dir *d, uint64_t size)
{
	if (d->count == 0) {
		d->head = d->tail = 0;
		return size <= d->cap ? 0 : UINT64_MAX;
	}
	if (d->tail > d->head) {
		if (d->cap - d->tail >= size)
			return d->tail;
		return size <= d->head ? 0 : UINT64_MAX;
	}
	if (d->tail < d->head && d->head - d->tail >= size)
		return d->tail;
	return UINT64_MAX;
}

static void ring_commit(struct dir *d, uint64_t pos, uint64_t due, uint32_t len)
{
	uint64_t size = (REC_HDR + len + 7) & ~7ULL;
	struct rec *r;
	uint64_t q;

	/* A record placed at 0 behind the tail means the writer wrapped; the
	 * reader wraps on a marker, or on its own when no header fits. */
	if (pos != d->tail && d->cap - d->tail >= REC_HDR)
		rec_at(d, d->tail)->size = 0;
	r = rec_at(d, pos);
	r->due_ns = due;
	r->len = len;
	r->size = (uint32_t)size;
	d->tail = pos + size;
	d->count++;
	d->queued_bytes += len;
	q = d->queued_bytes;
	atomic_store_explicit(&d->c.queued_pkts, d->count, memory_order_relaxed);
	atomic_store_explicit(&d->c.queued_bytes, q, memory_order_relaxed);
	if (q > atomic_load_explicit(&d->c.max_queued_bytes, memory_order_relaxed))
		atomic_store_explicit(&d->c.max_queued_bytes, q, memory_order_relaxed);
}

static struct rec *ring_front(struct dir *d)
{
	if (d->count == 0)
		return NULL;
	if (d->cap - d->head < REC_HDR || rec_at(d, d->head)->size == 0)
		d->head = 0;
	return rec_at(d, d->head);
}

static void ring_pop(struct dir *d, struct rec *r)
{
	d->head += r->size;
	d->count--;
	d->queued_bytes -= r->len;
	atomic_store_explicit(&d->c.queued_pkts, d->count, memory_order_relaxed);
	atomic_store_explicit(&d->c.queued_bytes, d->queued_bytes, memory_order_relaxed);
}

static void send_due(struct dir *d)
{
	uint64_t now = wire_now_ns();
	struct rec *r;

	while ((r = ring_front(d)) != NULL && r->due_ns <= now) {
		ssize_t n = send(d->tx_fd, (uint8_t *)r + REC_HDR, r->len, 0);
		uint64_t late = now - r->due_ns;

		if (late > LATE_NS)
			atomic_fetch_add_explicit(&d->c.late_pkts, 1, memory_order_relaxed);
		/* The schedule is the frame's kernel receive stamp plus the delay: lateness is the added delay. */
		wire_late(&d->lateness, late);
		wire_added(&d->lateness, late);

		if (n >= 0) {
			atomic_fetch_add_explicit(&d->c.pkts, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&d->c.bytes, r->len - VNET_HDR_BYTES, memory_order_relaxed);
		} else if (errno == ENXIO || errno == ENODEV) {
			wire_fail("output interface disappeared", errno);
			return;
		} else {
			/* ENOBUFS (peer backlog full), ENETDOWN (link down): a
			 * lost frame, as on a real wire. */
			atomic_fetch_add_explicit(&d->c.drop_tx, 1, memory_order_relaxed);
		}
		ring_pop(d, r);
		now = wire_now_ns();
	}
}

/*
 * How long ago the kernel received the frame. Waking this thread can take
 * hundreds of microseconds on a virtual CPU, so the delay counts from the
 * kernel's receive timestamp, not from when we read the frame. The timestamp
 * is CLOCK_REALTIME; only its age against the current realtime clock is used,
 * and implausible ages (clock steps) count as zero.
 */
static uint64_t arrival_age_ns(struct dir *d, struct msghdr *msg)
{
	int64_t age = wire_rx_age_ns(msg);

	if (age == WIRE_BAD_STAMP)
		atomic_fetch_add_explicit(&d->c.bad_tstamp, 1, memory_order_relaxed);
	if (age < 0)
		return 0;
	if ((uint64_t)age > atomic_load_explicit(&d->c.max_rx_age_ns, memory_order_relaxed))
		atomic_store_explicit(&d->c.max_rx_age_ns, (uint64_t)age, memory_order_relaxed);
	return (uint64_t)age;
}

/* Receives up to RX_BATCH frames without blocking; returns how many. */
static int recv_batch(struct dir *d)
{
	int got;

	for (got = 0; got < RX_BATCH; got++) {
		uint64_t pos = ring_reserve(d, MAX_REC);
		uint8_t *buf = pos == UINT64_MAX ? d->scratch : d->ring + pos + REC_HDR;
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(struct timespec))];
		} ctl;
		struct iovec iov = { .iov_base = buf, .iov_len = VNET_HDR_BYTES + MAX_FRAME_BYTES };
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = &ctl,
			.msg_controllen = sizeof(ctl),
		};
		ssize_t n = recvmsg(d->rx_fd, &msg, MSG_DONTWAIT | MSG_TRUNC);
		uint64_t due;

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (errno == EINVAL) {
				/* GSO type that has no vnet header form */
				atomic_fetch_add_explicit(&d->c.drop_bad, 1, memory_order_relaxed);
				continue;
			}
			if (errno == ENETDOWN) {
				if (if_nametoindex(d->in_if) == 0) {
					wire_fail("input interface disappeared", ENODEV);
					break;
				}
				continue;
			}
			wire_fail("recv", errno);
			break;
		}
		if ((uint64_t)n > VNET_HDR_BYTES + MAX_FRAME_BYTES || (uint64_t)n <= VNET_HDR_BYTES) {
			atomic_fetch_add_explicit(&d->c.drop_bad, 1, memory_order_relaxed);
			continue;
		}
		due = wire_now_ns() - arrival_age_ns(d, &msg) + d->delay_ns;
		if (pos == UINT64_MAX) {
			pos = ring_reserve(d, (REC_HDR + (uint64_t)n + 7) & ~7ULL);
			if (pos == UINT64_MAX) {
				atomic_fetch_add_explicit(&d->c.drop_queue, 1, memory_order_relaxed);
				continue;
			}
			memcpy(d->ring + pos + REC_HDR, d->scratch, (size_t)n);
		}
		ring_commit(d, pos, due, (uint32_t)n);
	}
	return got;
}

static void *dir_main(void *arg)
{
	struct dir *d = arg;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = d->rx_fd, .events = POLLIN },
			{ .fd = wire_stop_fd(), .events = POLLIN },
		};
		struct timespec ts, *tsp = NULL;
		struct rec *r;

		send_due(d);
		if (recv_batch(d) == RX_BATCH)
			continue;
		r = ring_front(d);
		if (r) {
			uint64_t now = wire_now_ns();

			tsp = wire_departure_timeout(r->due_ns > now ? r->due_ns - now : 0, guard_ns, &ts);
		}
		if (ppoll(pfd, 2, tsp, NULL) < 0 && errno != EINTR) {
			wire_fail("ppoll", errno);
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
	}
}

static void print_stats(const char *event)
{
	char line[2048], prefix[8];
	int off;

	off = snprintf(line, sizeof(line), "{\"event\":\"%s\",\"tag\":\"%s\"", event, tag);
	for (int i = 0; i < 2; i++) {
		struct dir *d = &dirs[i];

		if (d->rx_fd >= 0)
			wire_count_kernel_drops(d->rx_fd, &d->kernel_drops);
#define F(key, val) \
	off += snprintf(line + off, sizeof(line) - (size_t)off, ",\"%s_" key "\":%" PRIu64, d->name, \
		(uint64_t)(val))
		F("pkts", atomic_load(&d->c.pkts));
		F("bytes", atomic_load(&d->c.bytes));
		F("drop_queue", atomic_load(&d->c.drop_queue));
		F("drop_kernel", d->kernel_drops);
		F("drop_tx", atomic_load(&d->c.drop_tx));
		F("drop_bad", atomic_load(&d->c.drop_bad));
		F("queued_pkts", atomic_load(&d->c.queued_pkts));
		F("queued_bytes", atomic_load(&d->c.queued_bytes));
		F("max_queued_bytes", atomic_load(&d->c.max_queued_bytes));
		F("late_pkts", atomic_load(&d->c.late_pkts));
		F("max_rx_age_us", atomic_load(&d->c.max_rx_age_ns) / NSEC_PER_USEC);
		F("bad_tstamp", atomic_load(&d->c.bad_tstamp));
		F("delay_us", d->delay_ns / NSEC_PER_USEC);
#undef F
		snprintf(prefix, sizeof(prefix), "%s_", d->name);
		off += wire_lateness_json(&d->lateness, prefix, line + off, sizeof(line) - (size_t)off);
	}
	snprintf(line + off, sizeof(line) - (size_t)off, "}\n");
	fputs(line, stdout);
	fflush(stdout);
}

static void usage(void)
{
	printf("Usage: " PROG " --left IF --right IF --delay-lr-us N --delay-rl-us N --tag TAG [options]\n"
	       "Forward every frame between two interfaces of this network namespace, delayed by a\n"
	       "fixed time per direction (left->right and right->left), in order.\n"
	       "\n"
	       "  --left IF            first interface\n"
	       "  --right IF           second interface\n"
	       "  --delay-lr-us N      delay left->right in microseconds (0..%llu)\n"
	       "  --delay-rl-us N      delay right->left in microseconds (0..%llu)\n"
	       "  --tag TAG            label for this instance ([A-Za-z0-9._-], at most %d chars)\n"
	       "  --limit-bytes N      queue cap per direction in bytes (default %llu); frames that\n"
	       "                       do not fit are dropped and counted\n"
	       "  --sockbuf-bytes N    kernel socket buffer per socket (default %d)\n"
	       "  --guard-us N         wake N us before each departure and wait the rest in\n"
	       "                       50 us steps, because long sleeps overshoot on virtual\n"
	       "                       CPUs (default %llu; 0 = one sleep per departure)\n"
	       "  --rt-prio N          run the forwarding threads SCHED_FIFO at priority N (1..99)\n"
	       "  --cpu-latency-us N   hold a PM QoS CPU latency request of N us while running (0: idle\n"
	       "                       CPUs poll instead of halting, so a wake-up waits for no\n"
	       "                       hypervisor; machine-wide; a refusal is reported and ignored)\n"
	       "  --help               show this help\n"
	       "\n"
	       "Prints one JSON line {\"event\":\"ready\",...} when forwarding, one\n"
	       "{\"event\":\"stats\",...} line of counters on SIGUSR1 and {\"event\":\"exit\",...} on\n"
	       "SIGTERM/SIGINT.\n",
		MAX_DELAY_US, MAX_DELAY_US, WIRE_MAX_TAG_LEN, (unsigned long long)DEFAULT_LIMIT_BYTES,
		DEFAULT_SOCKBUF_BYTES, DEFAULT_GUARD_US);
}

static void setup_dir(struct dir *d, const char *name, const char *in_if, int rx_fd, int tx_fd,
	uint64_t delay_us, uint64_t limit)
{
	d->name = name;
	d->in_if = in_if;
	d->rx_fd = rx_fd;
	d->tx_fd = tx_fd;
	d->delay_ns = delay_us * NSEC_PER_USEC;
	d->cap = limit & ~7ULL;
	/* Pages are touched only as the queue grows, so RSS tracks the backlog. */
	d->ring = mmap(
		NULL, d->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	d->scratch = malloc(VNET_HDR_BYTES + MAX_FRAME_BYTES);
	if (d->ring == MAP_FAILED || !d->scratch) {
		fprintf(stderr, PROG ": cannot allocate a %" PRIu64 "-byte queue\n", d->cap);
		exit(1);
	}
}

/* The command line: the options both wire tools take, then the delays (UINT64_MAX: not given), the queue cap
 * and the guard. */
struct delay_args {
	struct wire_args wire;
	uint64_t delay_lr_us, delay_rl_us, limit, guard_us;
};

/* The required options, the tag's form and the two interfaces, which must exist in this network namespace. */
static void check_args(struct delay_args *a)
{
	wire_check_required(&a->wire);
	if (a->delay_lr_us == UINT64_MAX)
		wire_die("--delay-lr-us is required (see --help)");
	if (a->delay_rl_us == UINT64_MAX)
		wire_die("--delay-rl-us is required (see --help)");
	wire_check_interfaces(&a->wire);
}

int main(int argc, char **argv)
{
	struct delay_args args = { .wire.sockbuf_bytes = DEFAULT_SOCKBUF_BYTES,
		.wire.cpu_latency_us = WIRE_NO_CPU_LATENCY,
		.delay_lr_us = UINT64_MAX,
		.delay_rl_us = UINT64_MAX,
		.limit = DEFAULT_LIMIT_BYTES,
		.guard_us = DEFAULT_GUARD_US };
	const struct wire_opt delay_opts[] = {
		{ .name = "delay-lr-us",
			.has_arg = required_argument,
			.value = &args.delay_lr_us,
			.max = MAX_DELAY_US },
		{ .name = "delay-rl-us",
			.has_arg = required_argument,
			.value = &args.delay_rl_us,
			.max = MAX_DELAY_US },
		{ .name = "limit-bytes",
			.has_arg = required_argument,
			.value = &args.limit,
			.min = MIN_LIMIT_BYTES,
			.max = MAX_LIMIT_BYTES },
		{ .name = "guard-us",
			.has_arg = required_argument,
			.value = &args.guard_us,
			.max = MAX_GUARD_US },
	};
	const struct wire_args *w = &args.wire;
	pthread_attr_t attr;
	sigset_t sigs;
	bool cpu_latency;

	wire_init(PROG);
	wire_parse_args(argc, argv, delay_opts, sizeof(delay_opts) / sizeof(delay_opts[0]), NULL, NULL, usage,
		&args.wire);
	check_args(&args);
	tag = w->tag;
	guard_ns = args.guard_us * NSEC_PER_USEC;

	wire_start(&sigs);
	cpu_latency = wire_hold_cpu_latency(w->cpu_latency_us);
	setup_dir(&dirs[0], "lr", w->left,
		wire_open_socket(w->left, w->left_ifindex, true, (int)w->sockbuf_bytes, NULL, 0, 0, NULL),
		wire_open_socket(w->right, w->right_ifindex, false, (int)w->sockbuf_bytes, NULL, 0, 0, NULL),
		args.delay_lr_us, args.limit);
	setup_dir(&dirs[1], "rl", w->right,
		wire_open_socket(w->right, w->right_ifindex, true, (int)w->sockbuf_bytes, NULL, 0, 0, NULL),
		wire_open_socket(w->left, w->left_ifindex, false, (int)w->sockbuf_bytes, NULL, 0, 0, NULL),
		args.delay_rl_us, args.limit);

	wire_thread_attr(&attr, w->rt_prio);
	for (int i = 0; i < 2; i++) {
		int err = pthread_create(&dirs[i].thread, &attr, dir_main, &dirs[i]);

		if (err) {
			fprintf(stderr, PROG ": cannot start forwarding thread: %s\n", strerror(err));
			return 1;
		}
	}
	printf("{\"event\":\"ready\",\"tag\":\"%s\",\"pid\":%d,\"cpu_latency_us\":%lld}\n", tag,
		(int)getpid(), cpu_latency ? (long long)w->cpu_latency_us : -1LL);
	fflush(stdout);

	wire_wait_for_stop(&sigs, print_stats);
	wire_stop();
	for (int i = 0; i < 2; i++)
		pthread_join(dirs[i].thread, NULL);
	print_stats("exit");
	return wire_exit_status();
}
