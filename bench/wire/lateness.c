// SPDX-License-Identifier: GPL-2.0
/* Whether a wire tool kept time (lateness.h). */
#include <inttypes.h>
#include <stdio.h>

#include "lateness.h"

#define NSEC_PER_USEC 1000ULL

/* One writer per struct (the direction's thread): a relaxed load and store publish a counter without the
 * locked read-modify-write an atomic add costs, on every frame. */
static void bump(atomic_uint_fast64_t *counter)
{
	atomic_store_explicit(
		counter, atomic_load_explicit(counter, memory_order_relaxed) + 1, memory_order_relaxed);
}

uint32_t wire_lat_bucket(uint64_t us)
{
	int exp;

	if (us < WIRE_LAT_LINEAR_US)
		return (uint32_t)us;
	exp = 63 - __builtin_clzll(us);
	if (exp >= 7 + WIRE_LAT_DOUBLINGS)
		return WIRE_LAT_BUCKETS - 1;
	/* the three bits below the leading one pick the eighth of the doubling */
	return WIRE_LAT_LINEAR_US + (uint32_t)(exp - 7) * WIRE_LAT_SUB +
		(uint32_t)((us >> (exp - 3)) & (WIRE_LAT_SUB - 1));
}

uint64_t wire_lat_floor_us(uint32_t b)
{
	uint32_t exp, sub;

	if (b < WIRE_LAT_LINEAR_US)
		return b;
	exp = (b - WIRE_LAT_LINEAR_US) / WIRE_LAT_SUB + 7;
	sub = (b - WIRE_LAT_LINEAR_US) % WIRE_LAT_SUB;
	return (1ULL << exp) + ((uint64_t)sub << (exp - 3));
}

uint64_t wire_lat_percentile_us(const uint64_t counts[WIRE_LAT_BUCKETS], double pct)
{
	uint64_t total = 0, seen = 0;

	for (uint32_t b = 0; b < WIRE_LAT_BUCKETS; b++)
		total += counts[b];
	for (uint32_t b = 0; b < WIRE_LAT_BUCKETS && total; b++) {
		seen += counts[b];
		if ((double)seen >= pct / 100 * (double)total)
			return wire_lat_floor_us(b);
	}
	return 0;
}

void wire_late(struct wire_lateness *l, uint64_t by_ns)
{
	if (by_ns > WIRE_LATE_NS)
		bump(&l->late_wakeups);
	if (by_ns / NSEC_PER_USEC > atomic_load_explicit(&l->late_max_us, memory_order_relaxed))
		atomic_store_explicit(&l->late_max_us, by_ns / NSEC_PER_USEC, memory_order_relaxed);
}

void wire_added(struct wire_lateness *l, uint64_t ns)
{
	bump(&l->added_hist[wire_lat_bucket(ns / NSEC_PER_USEC)]);
}

/* The @pct percentile of the added delay in us, 0 before any frame. */
static uint64_t added_percentile_us(struct wire_lateness *l, double pct)
{
	uint64_t counts[WIRE_LAT_BUCKETS];

	for (uint32_t b = 0; b < WIRE_LAT_BUCKETS; b++)
		counts[b] = atomic_load_explicit(&l->added_hist[b], memory_order_relaxed);
	return wire_lat_percentile_us(counts, pct);
}

int wire_lateness_json(struct wire_lateness *l, const char *prefix, char *buf, size_t size)
{
	return snprintf(buf, size,
		",\"%slate_wakeups\":%" PRIu64 ",\"%slate_max_us\":%" PRIu64 ",\"%sadded_p50_us\":%" PRIu64
		",\"%sadded_p99_us\":%" PRIu64,
		prefix, (uint64_t)atomic_load_explicit(&l->late_wakeups, memory_order_relaxed), prefix,
		(uint64_t)atomic_load_explicit(&l->late_max_us, memory_order_relaxed), prefix,
		added_percentile_us(l, 50), prefix, added_percentile_us(l, 99));
}
