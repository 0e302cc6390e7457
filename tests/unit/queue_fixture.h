/* SPDX-License-Identifier: GPL-2.0 */
/* What the queue's host tests share (test_queue.c, test_cake.c): a pool of frames, a clock, the drop
 * callback that records when each drop came, and a queue of one kind at its defaults. */
#ifndef QUEUE_FIXTURE_H
#define QUEUE_FIXTURE_H

#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "queue.h"

#define MS LQ_NSEC_PER_MSEC
#define FRAME_BYTES 1514
#define POOL_PKTS 4096

struct slot {
	struct lq_pkt p;
	uint8_t frame[FRAME_BYTES];
};

static struct slot pool[POOL_PKTS];
static int used;
static int dropped;
static uint64_t drop_times[256];
static uint64_t clock_ns;

static void check_setup(void)
{
	used = 0;
	dropped = 0;
	clock_ns = 0;
}

static void on_drop(void *ctx, struct lq_pkt *p)
{
	(void)ctx;
	(void)p;
	if (dropped < 256)
		drop_times[dropped] = clock_ns;
	dropped++;
}

static inline uint16_t ip_checksum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* An Ethernet/IPv4/TCP frame of @len bytes from port @sport with ECN field @ecn. */
static inline struct lq_pkt *frame(uint32_t len, uint16_t sport, uint8_t ecn)
{
	struct slot *s = &pool[used++ % POOL_PKTS];
	uint8_t *f = s->frame;
	uint16_t sum;

	memset(f, 0, 54);
	f[12] = 0x08;
	f[14] = 0x45;
	f[15] = ecn;
	f[16] = (uint8_t)((len - 14) >> 8);
	f[17] = (uint8_t)(len - 14);
	f[22] = 64;
	f[23] = 6;
	f[26] = 10, f[29] = 1, f[30] = 10, f[33] = 2;
	sum = ip_checksum(f + 14);
	f[24] = (uint8_t)(sum >> 8);
	f[25] = (uint8_t)sum;
	f[34] = (uint8_t)(sport >> 8);
	f[35] = (uint8_t)sport;
	f[37] = 80;
	s->p.len = len;
	lq_frame_info(&s->p, f, len, 0);
	return &s->p;
}

static inline void setup(struct lq *q, enum lq_kind kind, bool ecn)
{
	struct lq_params prm;
	const char *err = NULL;

	lq_defaults(&prm, kind, FRAME_BYTES);
	prm.ecn = ecn;
	prm.limit_pkts = POOL_PKTS;
	if (lq_init(q, &prm, on_drop, NULL, &err))
		abort();
}

/* Three seconds of random load on @q: 0-3 full-size frames from one of @ports source ports every 250 us, and
 * a dequeue one time in three, each of which must find a frame unless the queue is empty (a queue that
 * strands a backlog fails here). */
static inline void random_load(struct lq *q, uint64_t seed, uint32_t ports)
{
	uint64_t rng = seed;

	for (clock_ns = 0; clock_ns < 3000 * MS; clock_ns += MS / 4) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		for (uint32_t i = 0; i < (rng >> 62); i++)
			lq_enqueue(q, frame(FRAME_BYTES, (uint16_t)(1 + (rng >> 40) % ports), LQ_ECN_NOT_ECT),
				clock_ns);
		if ((rng >> 33) % 3 == 0) {
			struct lq_pkt *p = lq_dequeue(q, clock_ns);

			CHECK(p != NULL || q->backlog_pkts == 0);
		}
	}
}

#endif /* QUEUE_FIXTURE_H */
