// SPDX-License-Identifier: GPL-2.0
/*
 * The threads of bbrkit-link's directions (forward.h): a shaping one receives a batch, runs the link, and
 * then polls again for a while or sleeps until the next departure; the unshaped ACK direction's passes
 * frames straight through.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "arrival.h"
#include "forward.h"
#include "idle.h"
#include "path.h"
#include "process.h"
#include "service.h"

/* Wake this long before the next departure, then step (wire_departure_timeout): long sleeps
 * overshoot by milliseconds on a virtual CPU, short ones by microseconds (bbrkit-delay's measurements). */
#define GUARD_NS 1000000ULL

static void publish(struct lpath *p)
{
	LP_SET(p, backlog_pkts, p->q.backlog_pkts);
	LP_SET(p, backlog_bytes, p->q.backlog_bytes);
	LP_SET(p, max_backlog_bytes, p->q.st.max_backlog_bytes);
	LP_SET(p, drop_overlimit, p->q.st.drop_overlimit);
	LP_SET(p, drop_aqm, p->q.st.drop_aqm);
	LP_SET(p, mark_aqm, p->q.st.mark_aqm);
	LP_SET(p, mark_step, p->q.st.mark_step);
	LP_SET(p, new_flows, p->q.st.new_flows);
	LP_SET(p, drop_blue, p->q.st.drop_blue);
	LP_SET(p, way_collisions, p->q.st.way_collisions);
	LP_SET(p, deq_pkts, p->q.st.deq_pkts);
	LP_SET(p, sojourn_sum_us, p->q.st.sojourn_sum_ns / LQ_NSEC_PER_USEC);
	LP_SET(p, sojourn_max_us, p->q.st.sojourn_max_ns / LQ_NSEC_PER_USEC);
}

static void log_line(struct lpath *p, uint64_t t)
{
	uint64_t out = atomic_load(&p->pub.out_pkts), deq = p->q.st.deq_pkts,
		 sum = p->q.st.sojourn_sum_ns / LQ_NSEC_PER_USEC;
	uint64_t max = p->q.st.sojourn_max_ns / LQ_NSEC_PER_USEC, idle_pkts, idle_bytes;

	lp_idle_counts(&p->idle, &idle_pkts, &idle_bytes); /* the idle path's frames left the link too */

	/* The interval's sojourn maximum restarts here; the stats line keeps its own running max. */
	p->q.st.sojourn_max_ns = 0;
	fprintf(p->log,
		"%.6f,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
		(double)t / WIRE_NSEC_PER_SEC, p->q.backlog_pkts, p->q.backlog_bytes,
		deq - p->log_last_deq ? (sum - p->log_last_sum) / (deq - p->log_last_deq) : 0, max,
		out + idle_pkts, p->q.st.drop_overlimit, p->q.st.drop_aqm + p->q.st.drop_blue,
		p->q.st.mark_aqm + p->q.st.mark_step, (uint64_t)atomic_load(&p->pub.drop_ge),
		(uint64_t)atomic_load(&p->pub.out_bytes) + idle_bytes,
		(uint64_t)(p->forfeit_ns / LQ_NSEC_PER_USEC));
	p->log_last_deq = deq;
	p->log_last_sum = sum;
}

/* The thread's own CPU time: a busy-poll's cost is what it ran, not the wall time it was preempted in. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * WIRE_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The CPU time spent polling without a frame (the busy-poll's cost) goes to spin_us. */
static void end_spin(struct lpath *p)
{
	if (!p->spinning)
		return;
	LP_ADD(p, spin_us, (thread_cpu_ns() - p->spin_cpu_ns) / LQ_NSEC_PER_USEC);
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
 * 200 us late, against 1.7-2.4% as FIFO (docs/link-benchmarks.md). A refused switch leaves the class as it was. */
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

		lp_service(p, now);
		got = lp_receive(p);
		now = wire_now_ns();
		lp_service(p, now);
		publish(p);
		if (p->idle.skel) /* what the thread holds is looked at only where the idle path runs */
			lp_idle_settle(&p->idle, atomic_load_explicit(&p->pub.in_pkts, memory_order_relaxed),
				p->cur || p->q.backlog_pkts || lp_next_event(p) != UINT64_MAX, now);
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
			lp_sample_sockbuf(p);
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
		due = lp_next_event(p);
		if (p->log && due > next_log)
			due = next_log;
		if (lp_idle_next_check(&p->idle) < due)
			due = lp_idle_next_check(&p->idle);
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
	static uint8_t buf[LP_VNET_HDR_BYTES + 65536 + 64];
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
		while ((n = recv(p->rx_fd, buf, sizeof(buf), MSG_DONTWAIT)) > (ssize_t)LP_VNET_HDR_BYTES) {
			if (send(p->tx_fd, buf, (size_t)n, 0) >= 0)
				LP_INC(p, out_pkts);
			else
				LP_INC(p, drop_tx);
		}
	}
}
