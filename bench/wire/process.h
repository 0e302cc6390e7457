/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What bbrkit-delay and bbrkit-link share as processes, beside their sockets (afpacket.h) and command line
 * (options.h): the program's name in every message, the exits for bad input and for a failure while
 * forwarding, the run tag that names them to the harness's clean-up, signals taken by the main thread
 * alone, the stop pipe that ends the forwarding threads, threads at an optional real-time priority, and
 * the wait before a frame's departure.
 */
#ifndef BBRKIT_WIRE_PROCESS_H
#define BBRKIT_WIRE_PROCESS_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define WIRE_MAX_TAG_LEN 64
#define WIRE_TAG_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
/* Below this a sleep is taken in one go; above, it stops this short of the departure and steps. */
#define WIRE_FINE_STEP_NS 50000ULL

/* Names the process in every message that follows ("bbrkit-link: ..."); the first call in main. */
void wire_init(const char *prog);
const char *wire_prog(void);
/* Bad input: "PROG: MESSAGE" on stderr and exit status 2, before anything exists to undo. */
void __attribute__((noreturn, format(printf, 1, 2))) wire_die(const char *fmt, ...);
/* A fatal error while forwarding, from any thread: prints "PROG: WHAT: strerror(err)", then stops the
 * process as SIGTERM would, so the main thread still joins the threads and prints its exit line. */
void wire_fail(const char *what, int err);
/* The process's exit status: 1 after a wire_fail, else 0. */
int wire_exit_status(void);

/* Blocks the stop and stats signals in this thread and every thread it starts, so that only
 * wire_wait_for_stop() takes them, synchronously, and opens the stop pipe; exits with status 1 if the
 * pipe cannot be made. A timer slack of 1 ns: the default 50 us would show in the delay.
 */
void wire_start(sigset_t *sigs);
/* --cpu-latency-us not given: the CPUs' idle states are left to the kernel. */
#define WIRE_NO_CPU_LATENCY UINT64_MAX
/* The PM QoS interface takes a signed 32-bit value; a longer request would ask for nothing in practice. */
#define WIRE_MAX_CPU_LATENCY_US 1000000

/* Holds a PM QoS CPU latency request of @us (WIRE_NO_CPU_LATENCY: none) until the process exits: with 0 an
 * idle CPU polls instead of halting, so waking a thread on it does not wait for the hypervisor. Returns
 * whether it is held; a refusal is one line on stderr and the tool runs without it. */
bool wire_hold_cpu_latency(uint64_t us);
/* The stop pipe's read end: a forwarding thread polls it beside its socket and returns once readable. */
int wire_stop_fd(void);
/* Makes the stop pipe readable: every forwarding thread returns. */
void wire_stop(void);

/* 1-64 characters that need no quoting in a process listing or a file name. */
static inline bool wire_tag_ok(const char *tag)
{
	size_t n = strlen(tag);

	return n && n <= WIRE_MAX_TAG_LEN && strspn(tag, WIRE_TAG_CHARS) == n;
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
