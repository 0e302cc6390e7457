// SPDX-License-Identifier: GPL-2.0
/* The process state both wire tools share (process.h): their name, the fatal-error flag, the stop pipe. */
#define _GNU_SOURCE
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static const char *prog_name = "";
static atomic_int fatal_error;
static int stop_pipe[2] = { -1, -1 };

void wire_init(const char *prog)
{
	prog_name = prog;
}

const char *wire_prog(void)
{
	return prog_name;
}

void wire_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

void wire_fail(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", prog_name, what, strerror(err));
	atomic_store(&fatal_error, 1);
	kill(getpid(), SIGTERM);
}

int wire_exit_status(void)
{
	return atomic_load(&fatal_error) ? 1 : 0;
}

void wire_start(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGHUP);
	sigaddset(sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (pipe2(stop_pipe, O_CLOEXEC) < 0) {
		fprintf(stderr, "%s: pipe: %s\n", prog_name, strerror(errno));
		exit(1);
	}
}

/* The kernel keeps the request while this file stays open, and drops it when the process exits. */
#define CPU_LATENCY_DEVICE "/dev/cpu_dma_latency"

bool wire_hold_cpu_latency(uint64_t us)
{
	int32_t value = (int32_t)us;
	int fd;

	if (us == WIRE_NO_CPU_LATENCY)
		return false;
	fd = open(CPU_LATENCY_DEVICE, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, &value, sizeof(value)) == (ssize_t)sizeof(value))
		return true;
	fprintf(stderr, "%s: CPU latency request of %" PRIu64 " us refused (%s): idle CPUs may halt\n",
		prog_name, us, strerror(errno));
	if (fd >= 0)
		close(fd);
	return false;
}

int wire_stop_fd(void)
{
	return stop_pipe[0];
}

void wire_stop(void)
{
	if (write(stop_pipe[1], "x", 1) < 0)
		fprintf(stderr, "%s: stop pipe: %s\n", prog_name, strerror(errno));
}
