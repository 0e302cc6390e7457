/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a wire tool kept time, as both report it for the trust check (bench/link/README.md, "Trust
 * check"): departures that left over WIRE_LATE_NS after their time (the thread woke late), the latest of
 * them, and a histogram of how late each frame left against its schedule (its added delay), read as
 * percentiles. One thread writes a struct wire_lateness (the direction's), the stats lines read it.
 */
#ifndef BBRKIT_WIRE_LATENESS_H
#define BBRKIT_WIRE_LATENESS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A departure this long after its time means the thread woke late. */
#define WIRE_LATE_NS 200000ULL

/* A latency histogram in microseconds: 1 us buckets below WIRE_LAT_LINEAR_US, then WIRE_LAT_SUB buckets per
 * doubling (each within 1/8 of its values) up to 2^24 us (about 16 s), the last bucket holding the rest. */
#define WIRE_LAT_LINEAR_US 128 /* 2^7 */
#define WIRE_LAT_SUB 8
#define WIRE_LAT_DOUBLINGS 17 /* 2^7 .. 2^24 us */
#define WIRE_LAT_BUCKETS (WIRE_LAT_LINEAR_US + WIRE_LAT_SUB * WIRE_LAT_DOUBLINGS)
uint32_t wire_lat_bucket(uint64_t us);
/* The smallest value bucket @b holds. */
uint64_t wire_lat_floor_us(uint32_t b);
/* The @pct percentile (0..100) of @counts as its bucket's smallest value (nearest rank); 0 when empty. */
uint64_t wire_lat_percentile_us(const uint64_t counts[WIRE_LAT_BUCKETS], double pct);

struct wire_lateness {
	atomic_uint_fast64_t late_wakeups; /* departures over WIRE_LATE_NS after their time */
	atomic_uint_fast64_t late_max_us;
	atomic_uint_fast64_t added_hist[WIRE_LAT_BUCKETS];
};

/* A departure @by_ns after its time. */
void wire_late(struct wire_lateness *l, uint64_t by_ns);
/* A frame that left @ns after its schedule: the time the tool added beyond the configured path. */
void wire_added(struct wire_lateness *l, uint64_t ns);
/* The counters as JSON members ",\"PREFIXlate_wakeups\":N,...,\"PREFIXadded_p99_us\":N" into @buf; returns
 * what snprintf returns. */
int wire_lateness_json(struct wire_lateness *l, const char *prefix, char *buf, size_t size);

#endif /* BBRKIT_WIRE_LATENESS_H */
