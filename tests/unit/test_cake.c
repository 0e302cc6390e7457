// SPDX-License-Identifier: GPL-2.0
/* Host tests of bbrkit-link's CAKE subset (bench/link/queue.h) against the kernel's sch_cake: its
 * set-associative hashing, COBALT (CoDel with sch_cake's inverse square root table, BLUE on overflow),
 * its target and interval at low rates and its truesize buffer accounting. */
#include "queue_fixture.h"

/* The queue CAKE gave a flow: the way of its set that carries its tag. */
static uint32_t cake_queue_of(const struct lq *q, uint32_t hash)
{
	for (uint32_t i = 0; i < q->prm.flows; i++)
		if (q->flow[i].tag == hash)
			return i;
	return UINT32_MAX;
}

static void setup_cake(struct lq *q, uint32_t flows, uint32_t limit_pkts)
{
	struct lq_params prm;
	const char *err = NULL;

	lq_defaults(&prm, LQ_CAKE, FRAME_BYTES);
	prm.limit_pkts = limit_pkts;
	prm.rate_bps = 100000000;
	prm.flows = flows;
	if (lq_init(q, &prm, on_drop, NULL, &err))
		abort();
}

/* CAKE at @rate_bps with sch_cake's defaults otherwise (10240 packets, 1024 queues). */
static void cake_at(struct lq *q, uint64_t rate_bps)
{
	struct lq_params prm;
	const char *err = NULL;

	lq_defaults(&prm, LQ_CAKE, FRAME_BYTES);
	prm.rate_bps = rate_bps;
	if (lq_init(q, &prm, on_drop, NULL, &err))
		abort();
}

/* Two flows whose hashes pick the same slot share a queue in FQ-CoDel but not in CAKE, which finds
 * them free ways of the slot's set of 8. */
TEST(cake_set_associative_hashing_separates_flows_of_one_slot)
{
	struct lq q;
	struct lq_pkt *a = frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), *b = NULL;
	uint32_t slot_a = a->hash % 8;

	for (uint16_t port = 2; port < 2000 && !b; port++) {
		struct lq_pkt *c = frame(FRAME_BYTES, port, LQ_ECN_NOT_ECT);

		if (c->hash % 8 == slot_a)
			b = c;
	}
	CHECK(b != NULL);
	setup_cake(&q, 8, POOL_PKTS); /* one set: every flow maps to it */
	lq_enqueue(&q, a, 0);
	lq_enqueue(&q, b, 0);
	CHECK_EQ(q.st.new_flows, 2);
	CHECK_EQ(q.st.way_collisions, 0);
	lq_free(&q);
	/* Nine flows in a set of eight: the ninth collides. */
	setup_cake(&q, 8, POOL_PKTS);
	for (uint16_t port = 1; port <= 9; port++)
		lq_enqueue(&q, frame(FRAME_BYTES, port, LQ_ECN_NOT_ECT), 0);
	CHECK_EQ(q.st.way_collisions, 1);
	lq_free(&q);
}

/* sch_cake's cobalt_should_drop gives a fresh queue no interval of grace: its rec_inv_sqrt is 0, so the
 * first late packet arms drop_next at once and the next one is dropped. Then drop_next moves by interval x
 * sch_cake's invsqrt table (cobalt_cache_init: four Newton steps per count), whose entries for counts 2,
 * 3 and 4 are 3035289760, 2479700455 and 2147483647 (/ 2^32: 0.70671, 0.57735, 0.5). */
TEST(cake_cobalt_drops_with_no_interval_of_grace_on_sch_cakes_invsqrt_table)
{
	static const uint64_t rec_inv_sqrt[] = { 3035289760U, 2479700455U, 2147483647U };
	struct lq q;
	struct lq_pkt *p = frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT);
	struct lq_cobalt *cb;
	uint64_t due = 10 * MS;

	setup_cake(&q, 1024, POOL_PKTS);
	lq_enqueue(&q, p, 0);
	cb = &q.flow[cake_queue_of(&q, p->hash)].cb;
	for (int i = 0; i < 999; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	for (clock_ns = 10 * MS; clock_ns <= 200 * MS; clock_ns += MS) {
		int before = dropped;

		CHECK(lq_dequeue(&q, clock_ns) != NULL);
		if (dropped == before)
			continue;
		CHECK_EQ(clock_ns, dropped == 1 ? 11 * MS : (due + MS - 1) / MS * MS);
		if (dropped > 3)
			break;
		due += (uint64_t)((unsigned __int128)LQ_CODEL_INTERVAL_NS * rec_inv_sqrt[dropped - 1] >> 32);
		CHECK_EQ(cb->drop_next_ns, due);
	}
	CHECK_EQ(dropped, 4);
	lq_free(&q);
}

/* A queue whose count has decayed back to 0 (rec_inv_sqrt at table entry 0, ~1.0) that passed a packet
 * within the last interval gets an interval of grace before its first drop; one idle for longer does
 * not: cobalt_should_drop pulls a schedule found behind now up to now, so the next late packet goes. */
TEST(cake_cobalt_grace_only_for_a_queue_active_within_the_interval)
{
	for (int idle = 0; idle < 2; idle++) {
		struct lq q;
		struct lq_pkt *p = frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT);
		uint64_t start = idle ? 150 * MS : 2 * MS;

		check_setup();
		setup_cake(&q, 1024, POOL_PKTS);
		lq_enqueue(&q, p, 0);
		q.flow[cake_queue_of(&q, p->hash)].cb.rec_inv_sqrt = UINT32_MAX;
		CHECK(lq_dequeue(&q, MS) == p); /* on time: drop_next becomes 1 ms + interval */
		for (int i = 0; i < 300; i++)
			lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), start);
		for (clock_ns = start + 10 * MS; !dropped && clock_ns < start + 200 * MS; clock_ns += MS)
			lq_dequeue(&q, clock_ns);
		CHECK_EQ(drop_times[0], idle ? start + 11 * MS : start + 10 * MS + LQ_CODEL_INTERVAL_NS);
		lq_free(&q);
	}
}

/* A queue that empties with its count up is kept on the decaying list, and each dequeue (while other
 * queues have packets: sch_cake does nothing with an empty qdisc) gives it a turn: its count goes down
 * by exactly one each time drop_next passes, drop_next moving on by interval x invsqrt(new count), until
 * the count is 0 and drop_next is past; then it leaves the lists. */
TEST(cake_cobalt_count_decays_one_step_per_schedule_then_the_queue_rests)
{
	struct lq q;
	struct lq_pkt *a = frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT);
	uint32_t idx, count;
	uint64_t due;
	int steps = 0;

	setup_cake(&q, 1024, POOL_PKTS);
	lq_enqueue(&q, a, 0);
	idx = cake_queue_of(&q, a->hash);
	for (int i = 0; i < 299; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	for (clock_ns = 10 * MS; q.flow[idx].q.pkts; clock_ns += MS)
		lq_dequeue(&q, clock_ns);
	/* Another flow keeps the link busy: one small packet per dequeue. */
	for (int i = 0; i < 2000; i++)
		lq_enqueue(&q, frame(100, 2, LQ_ECN_NOT_ECT), clock_ns);
	while (q.flow[idx].list == LQ_LIST_OLD) /* until a dequeue finds it empty: decaying */
		lq_dequeue(&q, clock_ns);
	CHECK_EQ(q.flow[idx].list, LQ_LIST_DECAYING);
	count = q.flow[idx].cb.count;
	CHECK(count >= 3);
	due = q.flow[idx].cb.drop_next_ns;
	for (; q.flow[idx].list == LQ_LIST_DECAYING && clock_ns < 3000 * MS; clock_ns += MS) {
		uint32_t before = q.flow[idx].cb.count;

		lq_dequeue(&q, clock_ns);
		if (q.flow[idx].cb.count == before)
			continue;
		CHECK_EQ(q.flow[idx].cb.count, before - 1);
		CHECK(clock_ns >= due && clock_ns < due + MS);
		due = q.flow[idx].cb.drop_next_ns;
		steps++;
	}
	CHECK_EQ(steps, count);
	CHECK_EQ(q.flow[idx].list, LQ_LIST_NONE);
	clock_ns -= MS; /* the dequeue that let it go */
	CHECK(clock_ns >= due && clock_ns < due + MS);
	lq_free(&q);
}

/* In egress mode (ours: the link is the shaper) sch_cake's target test does not grow with the bulk
 * queues (cobalt_should_drop gets bulk_flow_count x 0): with 20 bulk queues at 50 Mbit/s a 7 ms sojourn
 * is over the 5 ms target, though 2 x 20 MTU times would be 9.7 ms. */
TEST(cake_target_does_not_grow_with_the_bulk_queues_in_egress_mode)
{
	struct lq q;

	cake_at(&q, 50000000);
	for (int i = 0; i < 40; i++)
		for (uint16_t port = 1; port <= 20; port++)
			lq_enqueue(&q, frame(FRAME_BYTES, port, LQ_ECN_NOT_ECT), 0);
	for (int i = 0; i < 400; i++)
		lq_dequeue(&q, 7 * MS);
	CHECK(q.st.drop_aqm >= 20);
	lq_free(&q);
}

/* sch_cake delivers a queue's last packet whatever COBALT decides (`|| !flow->head`), and BLUE drops a
 * packet CoDel's side marked: three ECT packets of a queue with BLUE at certainty and CoDel's drop due:
 * the first is marked and still dropped, the second dropped, the third delivered. */
TEST(cake_blue_drops_marked_packets_but_never_a_queues_last)
{
	struct lq q;
	struct lq_pkt *p[3];
	struct lq_flow *f;

	setup_cake(&q, 1024, POOL_PKTS);
	for (int i = 0; i < 3; i++)
		lq_enqueue(&q, p[i] = frame(FRAME_BYTES, 1, LQ_ECN_ECT0), 0);
	f = &q.flow[cake_queue_of(&q, p[0]->hash)];
	f->cb.p_drop = 1;
	f->cb.count = 1;
	f->cb.dropping = true;
	CHECK(lq_dequeue(&q, 50 * MS) == p[2]);
	CHECK_EQ(lq_ecn(p[0]), LQ_ECN_CE);
	CHECK_EQ(q.st.drop_blue, 2);
	CHECK_EQ(dropped, 2);
	lq_free(&q);
}

/* A mark whose next due time is still behind now pulls drop_next up to now (cobalt_should_drop's
 * `schedule > 0 && !drop`), so a stale schedule costs two marks, not one per packet until it catches up. */
TEST(cake_a_mark_pulls_a_stale_schedule_up_to_now)
{
	struct lq q;
	struct lq_flow *f;
	struct lq_pkt *p = frame(FRAME_BYTES, 1, LQ_ECN_ECT0);

	setup_cake(&q, 1024, POOL_PKTS);
	lq_enqueue(&q, p, 0);
	for (int i = 0; i < 9; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_ECT0), 0);
	f = &q.flow[cake_queue_of(&q, p->hash)];
	f->cb.count = 4;
	f->cb.dropping = true;
	f->cb.drop_next_ns = 50 * MS;
	for (int i = 0; i < 10; i++)
		CHECK(lq_dequeue(&q, 1000 * MS) != NULL);
	CHECK_EQ(q.st.mark_aqm, 2);
	CHECK_EQ(dropped, 0);
	lq_free(&q);
}

/* sch_cake's flow chain: an emptied queue whose COBALT state is active (here only drop_next ahead: a
 * packet passed within the interval) waits on the decaying list; a packet for it makes it new again, with
 * a fresh quantum, so it is served ahead of a backlogged queue on the old list. */
TEST(cake_a_returning_decaying_queue_is_new_again)
{
	struct lq q;
	struct lq_pkt *a = frame(100, 1, LQ_ECN_NOT_ECT), *again;
	uint32_t idx;

	setup_cake(&q, 1024, POOL_PKTS);
	lq_enqueue(&q, a, 0);
	idx = cake_queue_of(&q, a->hash);
	for (int i = 0; i < 100; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 2, LQ_ECN_NOT_ECT), 0);
	CHECK(lq_dequeue(&q, MS) == a);
	for (int i = 0; i < 3; i++)
		lq_dequeue(&q, MS); /* the bulk queue spends its quantum and goes to the old list */
	CHECK_EQ(q.flow[idx].list, LQ_LIST_DECAYING);
	CHECK_EQ(q.flow[idx].cb.count, 0);
	CHECK(q.flow[idx].cb.p_drop == 0);
	again = frame(100, 1, LQ_ECN_NOT_ECT);
	lq_enqueue(&q, again, 2 * MS);
	CHECK_EQ(q.flow[idx].list, LQ_LIST_NEW);
	CHECK_EQ(q.flow[idx].deficit, q.prm.quantum);
	CHECK(lq_dequeue(&q, 2 * MS) == again);
	CHECK_EQ(q.st.new_flows, 3);
	lq_free(&q);
}

/* sch_cake's buffer: max(4 x rate x interval, 4 MiB) of truesize, at most the packet limit in MTU frames.
 * At 50 Mbit/s 4 intervals are 2.5 MB, so 4 MiB holds 4194304 / (1514 + 576) = 2006 full frames; at
 * 1 Gbit/s 50 MB is capped by 10240 MTU frames, 7418 of them. */
TEST(cake_buffer_is_truesize_bytes_not_packets)
{
	struct lq q;

	cake_at(&q, 50000000);
	for (int i = 0; i < 3000; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	CHECK_EQ(q.backlog_pkts, 2006);
	CHECK_EQ(q.st.drop_overlimit, 994);
	lq_free(&q);
	cake_at(&q, 1000000000);
	CHECK_EQ(q.cake_buffer_bytes, 10240ULL * FRAME_BYTES);
	CHECK_EQ(lq_capacity_pkts(&q), 10240ULL * FRAME_BYTES / (60 + 576) + 1);
	lq_free(&q);
}

/* sch_cake's cake_set_rate: at 1 Mbit/s one 1514-byte frame takes 12.1 ms, so target becomes 1.5 of that
 * (18.2 ms) and interval grows by as much (113.2 ms); at 100 Mbit/s both stay 5 and 100 ms. */
TEST(cake_raises_target_and_interval_at_low_rates)
{
	struct lq q;
	uint64_t mtu_ns = FRAME_BYTES * 8ULL * 1000;

	cake_at(&q, 1000000);
	CHECK_EQ(q.prm.target_ns, mtu_ns * 3 / 2);
	CHECK_EQ(q.prm.interval_ns, LQ_CODEL_INTERVAL_NS + mtu_ns * 3 / 2 - LQ_CODEL_TARGET_NS);
	lq_free(&q);
	setup_cake(&q, 1024, POOL_PKTS);
	CHECK_EQ(q.prm.target_ns, LQ_CODEL_TARGET_NS);
	CHECK_EQ(q.prm.interval_ns, LQ_CODEL_INTERVAL_NS);
	lq_free(&q);
}

/* BLUE: overflow raises the drop probability of the queue that overflowed, at most once per target. */
TEST(cake_blue_steps_up_on_overflow_and_drops_even_ect)
{
	struct lq q;
	struct lq_params prm;
	const char *err;
	uint32_t idx;
	struct lq_pkt *p;
	int blue_before;

	lq_defaults(&prm, LQ_CAKE, FRAME_BYTES);
	prm.limit_pkts = 50;
	prm.rate_bps = 100000000;
	CHECK_EQ(lq_init(&q, &prm, on_drop, NULL, &err), 0);
	p = frame(FRAME_BYTES, 1, LQ_ECN_ECT0);
	lq_enqueue(&q, p, 0);
	idx = cake_queue_of(&q, p->hash);
	CHECK(idx != UINT32_MAX);
	for (clock_ns = 0; clock_ns < 100 * MS; clock_ns += MS / 10)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_ECT0), clock_ns);
	CHECK(q.st.drop_overlimit > 100);
	/* one step per 5 ms target over 100 ms of overflow */
	CHECK_NEAR(q.flow[idx].cb.p_drop, 20 * LQ_CAKE_BLUE_INC, 2 * LQ_CAKE_BLUE_INC);
	blue_before = (int)q.st.drop_blue;
	for (int i = 0; i < 40; i++)
		lq_dequeue(&q, clock_ns);
	CHECK(q.st.drop_blue > (uint64_t)blue_before); /* ECT packets are dropped by BLUE, not marked */
	lq_free(&q);
}

TEST(cake_never_strands_a_backlog)
{
	struct lq q;

	setup_cake(&q, 64, 200);
	random_load(&q, 11, 40);
	CHECK(q.st.drop_aqm + q.st.drop_overlimit > 0);
	lq_free(&q);
}
