// SPDX-License-Identifier: GPL-2.0
/* Host tests of the wire tools' trust-check counters (bench/wire/lateness.c): the added-delay histogram's
 * percentiles against the nearest-rank percentile of the exact values, late departures counted past
 * WIRE_LATE_NS, and the JSON members both tools print. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lateness.h"

static void check_setup(void)
{
}

TEST(latency_histogram_percentiles_are_within_an_eighth)
{
	/* 1000 values 0, 7, 14, ... 6993 us: the nearest-rank p50 is the 500th (3493 us), p99 the 990th
	 * (6923 us). Each bucket reads as its smallest value, so a percentile is at most the exact one and
	 * more than 7/8 of it; under 128 us buckets are exact. */
	static uint64_t counts[WIRE_LAT_BUCKETS];
	static const struct {
		double pct;
		uint64_t exact;
	} want[] = { { 50, 3493 }, { 99, 6923 }, { 1, 63 } };

	for (uint64_t v = 0; v < 7000; v += 7)
		counts[wire_lat_bucket(v)]++;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t got = wire_lat_percentile_us(counts, want[i].pct);

		CHECK(got <= want[i].exact && got * 8 > want[i].exact * 7);
	}
	CHECK_EQ(wire_lat_percentile_us(counts, 1), 63); /* the 10th value, in a 1 us bucket */
	for (uint64_t v = 1; v < (1ULL << 24); v = v * 3 + 1)
		CHECK(wire_lat_floor_us(wire_lat_bucket(v)) <= v &&
			wire_lat_floor_us(wire_lat_bucket(v)) * 8 > v * 7);
	CHECK_EQ(wire_lat_bucket(UINT64_MAX), WIRE_LAT_BUCKETS - 1);
	memset(counts, 0, sizeof(counts));
	CHECK_EQ(wire_lat_percentile_us(counts, 99), 0);
}

TEST(late_departures_count_past_200_us_and_print_with_their_percentiles)
{
	static struct wire_lateness l;
	char json[512];

	/* 98 frames 10 us late, one exactly at the limit (not late), one 5 ms late: one late wake-up, the
	 * latest 5000 us, p50 in the 10 us bucket, p99 the 99th value (the 200 us one). */
	for (int i = 0; i < 98; i++) {
		wire_late(&l, 10000);
		wire_added(&l, 10000);
	}
	wire_late(&l, WIRE_LATE_NS);
	wire_added(&l, WIRE_LATE_NS);
	wire_late(&l, 5000000);
	wire_added(&l, 5000000);
	wire_lateness_json(&l, "lr_", json, sizeof(json));
	CHECK(strcmp(json,
		      ",\"lr_late_wakeups\":1,\"lr_late_max_us\":5000,\"lr_added_p50_us\":10,"
		      "\"lr_added_p99_us\":192") == 0);
}
