// SPDX-License-Identifier: GPL-2.0
/*
 * The machine's own wake-up latency, without the link or the network: a thread blocked on an eventfd is
 * woken every 10 ms by a thread on a given CPU, and the time from the write to the sleeper running is
 * recorded. Waker and sleeper on two vCPUs is what an idle link pays per frame (the frame arrives in the
 * sender's softirq; the forward thread sleeps on the other vCPU); on one vCPU, what it pays when it shares
 * the sender's. With a fifth argument of 1 the program holds a CPU latency request of 0 us while it runs.
 *
 *     cc -O2 -pthread -o wakeup wakeup.c
 *     ./wakeup SAMPLES WAKER_CPU SLEEPER_CPU FIFO_PRIO QOS
 *
 * Prints one line: the median, 90th and 99th percentiles and the maximum in microseconds.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define GAP_US 10000 /* linkbench's ping interval: long enough for an idle vCPU to halt */

static int efd, samples, sleeper_cpu, fifo_prio;
static uint64_t *lat_ns;
static _Atomic uint64_t written_ns;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "wakeup: cannot pin to CPU %d\n", cpu), exit(1);
}

static void *sleeper(void *arg)
{
	struct sched_param sp = { .sched_priority = fifo_prio };
	uint64_t v;

	(void)arg;
	pin(sleeper_cpu);
	if (fifo_prio && pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		fprintf(stderr, "wakeup: SCHED_FIFO refused\n"), exit(1);
	for (int i = 0; i < samples; i++) {
		if (read(efd, &v, sizeof(v)) != sizeof(v))
			exit(1);
		lat_ns[i] = now_ns() - written_ns;
	}
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(double pct)
{
	int rank = (int)(pct / 100.0 * samples + 0.5);

	return lat_ns[rank < 1 ? 0 : rank - 1] / 1e3;
}

int main(int argc, char **argv)
{
	int waker_cpu, qos, qos_fd = -1;
	int32_t zero = 0;
	pthread_t t;

	if (argc != 6)
		fprintf(stderr, "usage: wakeup SAMPLES WAKER_CPU SLEEPER_CPU FIFO_PRIO QOS\n"), exit(2);
	samples = atoi(argv[1]), waker_cpu = atoi(argv[2]), sleeper_cpu = atoi(argv[3]);
	fifo_prio = atoi(argv[4]), qos = atoi(argv[5]);
	if (samples < 100)
		fprintf(stderr, "wakeup: at least 100 samples\n"), exit(2);
	if (qos) {
		qos_fd = open("/dev/cpu_dma_latency", O_WRONLY);
		if (qos_fd < 0 || write(qos_fd, &zero, sizeof(zero)) != sizeof(zero))
			perror("wakeup: /dev/cpu_dma_latency"), exit(1);
	}
	lat_ns = calloc((size_t)samples, sizeof(*lat_ns));
	efd = eventfd(0, 0);
	if (!lat_ns || efd < 0 || pthread_create(&t, NULL, sleeper, NULL))
		perror("wakeup"), exit(1);
	pin(waker_cpu);
	usleep(100000);
	for (int i = 0; i < samples; i++) {
		uint64_t one = 1;

		usleep(GAP_US);
		written_ns = now_ns();
		if (write(efd, &one, sizeof(one)) != sizeof(one))
			exit(1);
	}
	pthread_join(t, NULL);
	qsort(lat_ns, (size_t)samples, sizeof(*lat_ns), by_value);
	printf("{\"samples\":%d,\"waker_cpu\":%d,\"sleeper_cpu\":%d,\"fifo_prio\":%d,\"cpu_latency_0\":%d,"
	       "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
		samples, waker_cpu, sleeper_cpu, fifo_prio, qos, pct_us(50), pct_us(90), pct_us(99),
		lat_ns[samples - 1] / 1e3);
	if (qos_fd >= 0)
		close(qos_fd);
	return 0;
}
