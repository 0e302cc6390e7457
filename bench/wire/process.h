/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What bbrkit-delay and bbrkit-link share as processes, beside their sockets (afpacket.h): the run
 * tag that names them to the harness's clean-up, signals taken by the main thread alone, forwarding
 * threads at an optional real-time priority, and the wait before a frame's departure.
 */
#ifndef BBRKIT_WIRE_PROCESS_H
#define BBRKIT_WIRE_PROCESS_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define WIRE_MAX_TAG_LEN 64
#define WIRE_TAG_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
/* Below this a sleep is taken in one go; above, it stops this short of the departure and steps. */
#define WIRE_FINE_STEP_NS 50000ULL

/* 1-64 characters that need no quoting in a process listing or a file name. */
static inline bool wire_tag_ok(const char *tag)
{
	size_t n = strlen(tag);

	return n && n <= WIRE_MAX_TAG_LEN && strspn(tag, WIRE_TAG_CHARS) == n;
}

/* Blocks the stop and stats signals in this thread and every thread it starts, so that only
 * wire_wait_for_stop() takes them, synchronously. A timer slack of 1 ns: the default 50 us would
 * show in the delay.
 */
static inline void wire_block_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGHUP);
	sigaddset(sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
}

/* prio 0: the default scheduler; 1-99: SCHED_FIFO at that priority. */
static inline void wire_thread_attr(pthread_attr_t *attr, uint64_t prio)
{
	struct sched_param sp = { .sched_priority = (int)prio };

	pthread_attr_init(attr);
	if (!prio)
		return;
	pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(attr, SCHED_FIFO);
	pthread_attr_setschedparam(attr, &sp);
}

/* SIGUSR1 prints the counters; any other blocked signal ends the wait. */
static inline void wire_wait_for_stop(const sigset_t *sigs, void (*print_stats)(const char *event))
{
	for (;;) {
		int sig = sigwaitinfo(sigs, NULL);

		if (sig == SIGUSR1)
			print_stats("stats");
		else if (sig > 0)
			return;
	}
}

/* ppoll's timeout for a departure wait_ns away: long sleeps overshoot by milliseconds on a virtual
 * CPU while short ones are precise, so sleep until guard_ns before it, then in short steps.
 */
static inline struct timespec *wire_departure_timeout(
	uint64_t wait_ns, uint64_t guard_ns, struct timespec *ts)
{
	if (wait_ns > guard_ns)
		wait_ns -= guard_ns;
	else if (wait_ns > WIRE_FINE_STEP_NS)
		wait_ns = WIRE_FINE_STEP_NS;
	ts->tv_sec = (time_t)(wait_ns / 1000000000ULL);
	ts->tv_nsec = (long)(wait_ns % 1000000000ULL);
	return ts;
}

#endif /* BBRKIT_WIRE_PROCESS_H */
