// SPDX-License-Identifier: GPL-2.0
/*
 * One direction of bbrkit-link (path.h): set up from its configuration (the queue, the path conditions,
 * the packet pool, the logs), its counters as the stats lines print them, and closed. The thread that
 * runs it is forward.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "afpacket.h"
#include "path.h"

#define MAX_POOL_SLOTS (1U << 20)
/* The rate a line after an unlimited link is sized for (the fastest a veth pair moves frames here). */
#define LINE_RATE_BPS 10000000000ULL

static void on_drop(void *ctx, struct lq_pkt *pkt)
{
	lp_slot_put(ctx, (struct lp_slot *)pkt);
}

static void alloc_pool(struct lpath *p)
{
	uint64_t cap = lq_capacity_pkts(&p->q);
	uint32_t slots;
	uint64_t line_ns, src_ns = 0;

	/* One slot per packet the queue can hold... */
	slots = cap > MAX_POOL_SLOTS ? MAX_POOL_SLOTS : (uint32_t)cap;
	/* ...plus a receive batch, a send batch, the frame in service and what the line and the aggregation stage
	 * after the link hold (their delay, jitter and longest hold):
	 * its delay and jitter at the rate (none: LINE_RATE_BPS) in minimum-size frames. */
	slots += 2 * LP_RX_BATCH + 2;
	line_ns = p->cfg.delay_ns + p->cfg.jitter_ns + p->cfg.agg_a_ns + p->cfg.agg_b_ns;
	for (uint32_t l = 1; l <= p->cfg.src.n_lines; l++)
		if (p->cfg.src.line_ns[l] > src_ns)
			src_ns = p->cfg.src.line_ns[l];
	line_ns += src_ns;
	if (line_ns) {
		uint64_t rate = p->cfg.rate_bps ? p->cfg.rate_bps : LINE_RATE_BPS;
		uint64_t line = line_ns / LQ_NSEC_PER_USEC * (rate / LS_BITS_PER_BYTE / LQ_MIN_FRAME_BYTES) /
				1000000 +
			1;

		slots += (uint32_t)(line < MAX_POOL_SLOTS ? line : MAX_POOL_SLOTS);
	}
	p->slot_size = LP_VNET_HDR_BYTES + p->frame_max;
	p->pool_stride = (sizeof(struct lp_slot) + p->slot_size + 63) & ~(size_t)63;
	/* Reserved, not touched: lp_slot_get() hands out fresh slots only when the free list (LIFO, so the
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
		      "drop_overlimit,drop_aqm,marks,drop_ge,out_bytes,forfeit_us\n",
			p->log);
		p->log_interval_ns = log_interval_ns;
	}
}

/* What the idle path adds to counter @key: its frames entered and left the link too. */
static uint64_t idle_share(const char *key, uint64_t pkts, uint64_t bytes)
{
	if (!strcmp(key, "in_pkts") || !strcmp(key, "out_pkts"))
		return pkts;
	return strcmp(key, "out_bytes") ? 0 : bytes;
}

void lp_print_counters(struct lpath *p, const char *prefix)
{
	uint64_t deq = atomic_load(&p->pub.deq_pkts), max = atomic_load(&p->pub.sojourn_max_us);
	uint64_t idle_pkts, idle_bytes;
	char lateness[512];

	lp_idle_counts(&p->idle, &idle_pkts, &idle_bytes);

	wire_count_kernel_drops(p->rx_fd, &p->kernel_drops);
	if (max < p->run_max_sojourn_us)
		max = p->run_max_sojourn_us;
#define LP_PRINT(key) \
	if (strcmp(#key, "deq_pkts") && strcmp(#key, "sojourn_sum_us") && strcmp(#key, "sojourn_max_us")) \
		printf(",\"%s" #key "\":%" PRIu64, prefix, \
			(uint64_t)atomic_load(&p->pub.key) + idle_share(#key, idle_pkts, idle_bytes));
	LP_COUNTERS(LP_PRINT)
#undef LP_PRINT
	printf(",\"%sxdp_idle_pkts\":%" PRIu64 ",\"%sxdp_idle_bytes\":%" PRIu64, prefix, idle_pkts, prefix,
		idle_bytes);
	printf(",\"%sdrop_kernel\":%" PRIu64, prefix, p->kernel_drops);
	wire_lateness_json(&p->lateness, prefix, lateness, sizeof(lateness));
	fputs(lateness, stdout);
	printf(",\"%ssojourn_mean_us\":%" PRIu64 ",\"%ssojourn_max_us\":%" PRIu64, prefix,
		deq ? (uint64_t)atomic_load(&p->pub.sojourn_sum_us) / deq : 0, prefix, max);
}

void lp_close(struct lpath *p)
{
	lp_idle_close(&p->idle);
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
