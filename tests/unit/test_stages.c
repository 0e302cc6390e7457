// SPDX-License-Identifier: GPL-2.0
/* Host tests of the path conditions around bbrkit-link's queue (bench/link/stages.c), each held to its
 * reference: RFC 2697's single-rate marker (with EBS = 0, red dropped) for the policer, sch_netem.c's
 * netem_enqueue for reordering and its slot (get_slot_next, netem_dequeue) for ACK aggregation. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stages.h"

#define US 1000ULL
#define MS 1000000ULL
#define MAX_PKTS 4096

static void check_setup(void)
{
}

TEST(police_passes_the_burst_then_the_rate)
{
	/* RFC 2697: the committed bucket starts full at CBS; back to back, exactly CBS / size packets are
	 * green, and over a second of offered load at twice the rate CBS + CIR x 1 s bytes pass. */
	struct ls_police p;
	uint64_t passed = 0, t;
	int burst = 0;

	ls_police_init(&p, 8000000, 15000, 0); /* 1 MB/s, 10 full packets of burst */
	while (ls_police_conform(&p, 1500, 0))
		burst++;
	CHECK_EQ(burst, 10);
	ls_police_init(&p, 8000000, 15000, 0);
	for (t = 0; t <= 1000 * MS; t += 750 * US) /* 1500 bytes per 0.75 ms: 2 MB/s offered */
		passed += ls_police_conform(&p, 1500, t) ? 1500 : 0;
	CHECK_NEAR(passed, 15000 + 1000000, 1500);
}

TEST(police_red_takes_no_tokens)
{
	/* RFC 2697 section 3: a red packet leaves Tc unchanged, so a smaller one that fits still passes. */
	struct ls_police p;

	ls_police_init(&p, 8000000, 1000, 0);
	CHECK(!ls_police_conform(&p, 1500, 0));
	CHECK(ls_police_conform(&p, 1000, 0));
	CHECK(!ls_police_conform(&p, 1, 0));
	CHECK(ls_police_conform(&p, 500, 500 * US)); /* 0.5 ms at 1 MB/s refills 500 bytes */
	CHECK(!ls_police_conform(&p, 1, 500 * US));
}

TEST(police_bucket_never_exceeds_its_depth)
{
	/* After a long idle spell the bucket holds CBS, not the idle time's worth. */
	struct ls_police p;
	int burst = 0;

	ls_police_init(&p, 8000000, 3000, 0);
	while (ls_police_conform(&p, 1500, 10000 * MS))
		burst++;
	CHECK_EQ(burst, 2);
}

TEST(reorder_with_certainty_jumps_every_gapth_packet)
{
	/* netem "reorder 100% gap 5": packets 5, 10, 15, ... are sent at once, the rest delayed. */
	struct ls_reorder r;

	ls_reorder_init(&r, 1.0, 5, 1);
	for (int i = 1; i <= 50; i++)
		CHECK_EQ(ls_reorder_jump(&r), i % 5 == 0);
}

TEST(reorder_share_follows_probability_and_gap)
{
	/* netem: after gap - 1 packets in order each packet jumps with probability P, which restarts the
	 * count, so a jump comes every (gap - 1) + 1/P packets on average: 1/4 for gap 3 and P 0.5, P itself
	 * for gap 1. */
	struct ls_reorder r;
	int jumps = 0, n = 200000;

	ls_reorder_init(&r, 0.5, 3, 7);
	for (int i = 0; i < n; i++)
		jumps += ls_reorder_jump(&r);
	CHECK_NEAR((double)jumps / n, 0.25, 0.005);
	ls_reorder_init(&r, 0.25, 1, 9);
	jumps = 0;
	for (int i = 0; i < n; i++)
		jumps += ls_reorder_jump(&r);
	CHECK_NEAR((double)jumps / n, 0.25, 0.005);
}

/* Feeds packets arriving at @arrive (ns, sorted) through @a, stepping the clock every 10 us as the link's
 * thread would wake, and records each departure time in @out; returns how many left. */
static int run_agg(struct ls_agg *a, const uint64_t *arrive, int n, uint64_t end, uint64_t *out)
{
	uint64_t joined[MAX_PKTS];
	int head = 0, tail = 0, next = 0, sent = 0;

	for (uint64_t now = 0; now <= end; now += 10 * US) {
		uint64_t wake;

		while (next < n && arrive[next] <= now)
			joined[tail++] = arrive[next++];
		while (head < tail && ls_agg_may_send(a, joined[head], (uint32_t)(tail - head), now, &wake)) {
			out[sent++] = now;
			head++;
			ls_agg_sent(a, now);
		}
	}
	return sent;
}

TEST(slot_releases_what_a_slot_finds_and_restarts_on_a_late_packet)
{
	/* netem "slot 10ms" with an ACK every ms from 1 ms on: the first slot opens at 10 ms and sends the 10
	 * waiting; the next ACK (11 ms) finds the slot open but no packet was ready at its start, so
	 * netem_dequeue restarts it from then (get_slot_next at 11 ms: opens at 21 ms). Bursts of 11 every
	 * 11 ms follow. */
	static uint64_t arrive[200], out[200];
	struct ls_agg a;
	int n;

	for (int i = 0; i < 200; i++)
		arrive[i] = (uint64_t)(i + 1) * MS;
	ls_agg_init(&a, LS_AGG_SLOT, 10 * MS, 10 * MS, 0, 1, 0);
	n = run_agg(&a, arrive, 200, 120 * MS, out);
	CHECK(n >= 100);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(out[i], 10 * MS);
	for (int b = 0; b < 8; b++)
		for (int i = 0; i < 11; i++)
			CHECK_EQ(out[10 + b * 11 + i], (uint64_t)(21 + 11 * b) * MS);
}

TEST(slot_packet_budget_splits_a_backlog)
{
	/* netem "slot 10ms packets 3": ten packets waiting leave three per slot, the next slot opening
	 * 10 ms after the budget ran out. */
	static uint64_t arrive[10], out[10];
	struct ls_agg a;

	for (int i = 0; i < 10; i++)
		arrive[i] = 0;
	ls_agg_init(&a, LS_AGG_SLOT, 10 * MS, 10 * MS, 3, 1, 0);
	CHECK_EQ(run_agg(&a, arrive, 10, 100 * MS, out), 10);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(out[i], (uint64_t)(10 + 10 * (i / 3)) * MS);
}

TEST(count_releases_k_at_a_time_and_the_rest_at_the_timeout)
{
	/* Every 4th ACK releases the 4 held; the last two of ten wait for the 50 ms time-out from the
	 * older one's arrival. */
	static uint64_t arrive[10], out[10];
	struct ls_agg a;

	for (int i = 0; i < 10; i++)
		arrive[i] = (uint64_t)(i + 1) * MS;
	ls_agg_init(&a, LS_AGG_COUNT, 50 * MS, 0, 4, 1, 0);
	CHECK_EQ(run_agg(&a, arrive, 10, 100 * MS, out), 10);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(out[i], (uint64_t)(4 * (i / 4) + 4) * MS);
	CHECK_EQ(out[8], 59 * MS);
	CHECK_EQ(out[9], 59 * MS);
}

TEST(onoff_passes_while_on_and_holds_while_off)
{
	/* 5 ms on, 15 ms off from time 0: ACKs at 0..4 ms leave at once, those at 5..19 ms at 20 ms. */
	static uint64_t arrive[20], out[20];
	struct ls_agg a;

	for (int i = 0; i < 20; i++)
		arrive[i] = (uint64_t)i * MS;
	ls_agg_init(&a, LS_AGG_ONOFF, 5 * MS, 15 * MS, 0, 1, 0);
	CHECK_EQ(run_agg(&a, arrive, 20, 40 * MS, out), 20);
	for (int i = 0; i < 20; i++)
		CHECK_EQ(out[i], i < 5 ? (uint64_t)i * MS : 20 * MS);
}

TEST(ring_holds_the_gap_at_the_rate)
{
	/* 20 ms at 2.4 Gbit/s in 1518-byte frames is 3952 frames, in 2 KiB slots 7.7 MiB, above a 4 MiB
	 * floor; at 100 Mbit/s 20 ms is 164 frames, so the floor stands; 40 Gbit/s hits the 64 MiB cap. */
	CHECK_EQ(ls_ring_bytes(4 << 20, 2400000000ULL, 1518, 2048),
		(2400000000ULL / 50 / 8 / 1518 + 1) * 2048);
	CHECK(ls_ring_bytes(4 << 20, 2400000000ULL, 1518, 2048) / 2048 * 1518 * 8 * 50 >= 2400000000ULL);
	CHECK_EQ(ls_ring_bytes(4 << 20, 100000000ULL, 1518, 2048), 4 << 20);
	CHECK_EQ(ls_ring_bytes(4 << 20, 40000000000ULL, 1518, 2048), LS_RING_MAX_BYTES);
	CHECK_EQ(ls_ring_bytes(LS_RING_MAX_BYTES * 2, 40000000000ULL, 1518, 2048), LS_RING_MAX_BYTES * 2);
}

TEST(source_delays_share_a_line_per_delay_and_find_each_address)
{
	/* Senders of one delay share a line (their frames keep their order in it); a second delay opens a line of
	 * its own; an address not given is line 0 (no source delay), whatever order the addresses came in. */
	static struct ls_src_delay s;

	memset(&s, 0, sizeof(s));
	CHECK_EQ(ls_src_add(&s, 0xc6120301u, 50 * MS), 0);
	CHECK_EQ(ls_src_add(&s, 0xc6120001u, 10 * MS), 0);
	CHECK_EQ(ls_src_add(&s, 0xc6120201u, 10 * MS), 0);
	CHECK_EQ(s.n_lines, 2);
	CHECK_EQ(ls_src_line(&s, 0xc6120001u), ls_src_line(&s, 0xc6120201u));
	CHECK_EQ(s.line_ns[ls_src_line(&s, 0xc6120201u)], 10 * MS);
	CHECK_EQ(s.line_ns[ls_src_line(&s, 0xc6120301u)], 50 * MS);
	CHECK_EQ(ls_src_line(&s, 0xc6120101u), 0);
	CHECK_EQ(ls_src_line(&s, 0), 0);
	CHECK_EQ(ls_src_add(&s, 0xc6120001u, 20 * MS), -1);
}

TEST(source_delays_refuse_past_their_table)
{
	/* 256 addresses fit, the 257th does not; 16 distinct delays fit, a 17th does not, while a repeated
	 * delay still takes an address. */
	static struct ls_src_delay s;
	uint32_t a;

	memset(&s, 0, sizeof(s));
	for (a = 0; a < LS_MAX_SRC_LINES; a++)
		CHECK_EQ(ls_src_add(&s, 0x0a000000u + a, (a + 1) * MS), 0);
	CHECK_EQ(ls_src_add(&s, 0x0b000000u, 99 * MS), -2);
	for (; a < LS_MAX_SRC_ADDRS; a++)
		CHECK_EQ(ls_src_add(&s, 0x0a000000u + a, MS), 0);
	CHECK_EQ(ls_src_add(&s, 0x0c000000u, MS), -2);
	for (a = 0; a < LS_MAX_SRC_ADDRS; a++)
		CHECK_EQ(
			s.line_ns[ls_src_line(&s, 0x0a000000u + a)], (a < LS_MAX_SRC_LINES ? a + 1 : 1) * MS);
}
