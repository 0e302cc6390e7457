// SPDX-License-Identifier: GPL-2.0
/* Host tests of bbrkit-link's queue (bench/link/queue.h: queue.c and the AQMs' files) against RFC 8289
 * (CoDel), RFC 8290 (FQ-CoDel), RFC 8033 (PIE), the step marker's threshold and netem's Gilbert-Elliott
 * model. CAKE's: test_cake.c. */
#include "queue_fixture.h"

/* A standing queue: 1000 packets at t=0, one dequeue per ms from 10 ms on. RFC 8289: the first drop
 * comes one interval after the sojourn first exceeded target; then drop k+1 follows drop k by
 * interval x 1/sqrt(k+1) as Linux computes it (include/net/codel_impl.h): 1/sqrt in Q0.16, starting at
 * 0xffff for count 1 and moved by one codel_Newton_step per count, which gives 32769 (0.500, not
 * 0.707) at count 2, 36864 at 3 and 31968 at 4. */
TEST(codel_drops_on_linuxs_newton_step_schedule)
{
	static const uint64_t rec_inv_sqrt[] = { 65535, 32769, 36864, 31968 };
	struct lq q;
	uint64_t due = 110 * MS;

	setup(&q, LQ_CODEL, false);
	for (int i = 0; i < 1000; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	for (clock_ns = 10 * MS; clock_ns < 700 * MS && q.backlog_pkts; clock_ns += MS)
		CHECK(lq_dequeue(&q, clock_ns) != NULL);
	CHECK(dropped >= 5);
	/* The first drop at 110 ms; from then on the schedule advances from the previous due time, not
	 * from when the dequeue happened, and dequeues happen on whole milliseconds. */
	CHECK_EQ(drop_times[0], 110 * MS);
	for (int k = 1; k < 5; k++) {
		due += LQ_CODEL_INTERVAL_NS * rec_inv_sqrt[k - 1] >> 16;
		CHECK_EQ(drop_times[k], (due + MS - 1) / MS * MS);
	}
	CHECK_EQ(drop_times[2], 260 * MS); /* exact 1/sqrt(2) would give 281 ms */
	CHECK(q.cv.dropping);
	lq_free(&q);
}

TEST(codel_leaves_the_drop_state_when_sojourn_falls_below_target)
{
	struct lq q;
	int before;

	setup(&q, LQ_CODEL, false);
	for (int i = 0; i < 400; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	for (clock_ns = 10 * MS; clock_ns <= 120 * MS; clock_ns += MS)
		lq_dequeue(&q, clock_ns);
	CHECK(q.cv.dropping);
	/* Drain, then a fresh packet with a short sojourn: the state ends, no drop. */
	while (q.backlog_pkts > 0)
		lq_dequeue(&q, clock_ns);
	before = dropped;
	lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), clock_ns);
	lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), clock_ns);
	lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), clock_ns);
	CHECK(lq_dequeue(&q, clock_ns + MS) != NULL);
	CHECK(!q.cv.dropping);
	CHECK_EQ(q.cv.first_above_ns, 0);
	CHECK_EQ(dropped, before);
	lq_free(&q);
}

/* RFC 8289 section 5.6: re-entering within 16 intervals starts from count - lastcount; later, from 1. */
static void drop_state_episode(struct lq *q, uint64_t start, uint64_t length)
{
	for (int i = 0; i < 600; i++)
		lq_enqueue(q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), start);
	for (clock_ns = start + 10 * MS; clock_ns < start + length; clock_ns += MS)
		lq_dequeue(q, clock_ns);
	while (q->backlog_pkts > 0)
		lq_dequeue(q, clock_ns);
	lq_dequeue(q, clock_ns); /* empty: leaves the drop state */
}

TEST(codel_reentry_keeps_the_drop_rate_within_sixteen_intervals)
{
	struct lq q;
	uint32_t count;

	setup(&q, LQ_CODEL, false);
	drop_state_episode(&q, 0, 450 * MS);
	count = q.cv.count;
	CHECK(count >= 4);
	CHECK(!q.cv.dropping);
	drop_state_episode(&q, clock_ns, 130 * MS);
	CHECK(q.cv.dropping || q.cv.lastcount == count - 1);
	CHECK_EQ(q.cv.lastcount, count - 1);
	lq_free(&q);
}

TEST(codel_reentry_after_sixteen_intervals_starts_over)
{
	struct lq q;

	setup(&q, LQ_CODEL, false);
	drop_state_episode(&q, 0, 450 * MS);
	CHECK(q.cv.count >= 4);
	drop_state_episode(&q, clock_ns + 17 * LQ_CODEL_INTERVAL_NS, 130 * MS);
	CHECK_EQ(q.cv.lastcount, 1);
	lq_free(&q);
}

TEST(codel_marks_ect_packets_instead_of_dropping_them)
{
	struct lq q;
	struct lq_pkt *p;
	int marked = 0;

	setup(&q, LQ_CODEL, true);
	for (int i = 0; i < 500; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_ECT0), 0);
	for (clock_ns = 10 * MS; clock_ns < 400 * MS; clock_ns += MS) {
		p = lq_dequeue(&q, clock_ns);
		CHECK(p != NULL);
		if (lq_ecn(p) == LQ_ECN_CE) {
			marked++;
			CHECK_EQ(ip_checksum(p->l3), 0); /* the updated header still sums to zero */
			if (marked == 1)
				CHECK_EQ(clock_ns, 110 * MS);
		}
	}
	CHECK_EQ(dropped, 0);
	CHECK(marked >= 3);
	CHECK_EQ(q.st.mark_aqm, marked);
	lq_free(&q);
}

/* One packet waiting 49 ms at a time: its sojourn is far above target, but a queue holding at most
 * one MTU is never dropped from (RFC 8289 section 4.2, MAXPACKET). */
TEST(codel_never_drops_the_last_packet_worth_of_bytes)
{
	struct lq q;

	setup(&q, LQ_CODEL, false);
	for (clock_ns = 0; clock_ns < 2000 * MS; clock_ns += 50 * MS) {
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), clock_ns);
		CHECK(lq_dequeue(&q, clock_ns + 49 * MS) != NULL);
	}
	CHECK_EQ(dropped, 0);
	lq_free(&q);
}

/* RFC 8290 section 4.2: a queue that becomes active joins the new list and is served before the
 * old list's queues. */
TEST(fq_codel_serves_a_new_sparse_flow_before_backlogged_ones)
{
	struct lq q;
	struct lq_pkt *p, *sparse;

	setup(&q, LQ_FQ_CODEL, true);
	for (int i = 0; i < 100; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	for (int i = 0; i < 5; i++)
		CHECK((p = lq_dequeue(&q, MS)) != NULL);
	CHECK_EQ(q.new_list.head, LQ_NO_FLOW); /* the bulk queue spent its first quantum: old list */
	sparse = frame(100, 2, LQ_ECN_NOT_ECT);
	lq_enqueue(&q, sparse, MS);
	CHECK(lq_dequeue(&q, 2 * MS) == sparse);
	CHECK_EQ(q.st.new_flows, 2);
	lq_free(&q);
}

/* A new queue emptied while the old list has queues goes to the old list, so a flow that sends a
 * packet per round cannot stay "new" forever (RFC 8290 section 4.2, last paragraph). */
TEST(fq_codel_moves_an_emptied_new_flow_to_the_old_list)
{
	struct lq q;
	struct lq_pkt *sparse = NULL;
	uint32_t sparse_idx;

	setup(&q, LQ_FQ_CODEL, true);
	for (int i = 0; i < 100; i++)
		lq_enqueue(&q, frame(500, 1, LQ_ECN_NOT_ECT), 0);
	/* Four 500-byte packets spend the bulk queue's first quantum; the fifth moves it to the old list
	 * with a fresh quantum, 528 bytes of it left: it will not rotate behind the sparse queue. */
	for (int i = 0; i < 5; i++)
		lq_dequeue(&q, MS);
	sparse = frame(100, 2, LQ_ECN_NOT_ECT);
	sparse_idx = sparse->hash % q.prm.flows;
	lq_enqueue(&q, sparse, MS);
	CHECK(lq_dequeue(&q, MS) == sparse);
	lq_dequeue(&q, MS); /* finds the sparse queue empty on the new list */
	CHECK_EQ(q.flow[sparse_idx].list, LQ_LIST_OLD);
	lq_enqueue(&q, frame(100, 2, LQ_ECN_NOT_ECT), MS);
	CHECK_EQ(q.st.new_flows, 2); /* not new again while it waits on the old list */
	lq_free(&q);
}

/* DRR: backlogged queues get equal bytes whatever their packet sizes, within a quantum. */
TEST(fq_codel_shares_bytes_by_quantum_not_by_packets)
{
	struct lq q;
	uint64_t bytes[2] = { 0, 0 };
	struct lq_pkt *p;
	uint32_t big_idx;

	setup(&q, LQ_FQ_CODEL, true);
	p = frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT);
	big_idx = p->hash % q.prm.flows;
	lq_enqueue(&q, p, 0);
	for (int i = 0; i < 400; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	for (int i = 0; i < 1200; i++)
		lq_enqueue(&q, frame(500, 2, LQ_ECN_NOT_ECT), 0);
	for (int i = 0; i < 800; i++) {
		p = lq_dequeue(&q, MS);
		bytes[p->hash % q.prm.flows == big_idx] += p->len;
	}
	CHECK_NEAR((double)bytes[0], (double)bytes[1], FRAME_BYTES);
	lq_free(&q);
}

TEST(fq_codel_overflow_drops_from_the_fattest_queue)
{
	struct lq q;
	struct lq_params prm;
	const char *err;
	uint32_t fat_idx, thin_idx;
	struct lq_pkt *p;

	lq_defaults(&prm, LQ_FQ_CODEL, FRAME_BYTES);
	prm.limit_pkts = 100;
	CHECK_EQ(lq_init(&q, &prm, on_drop, NULL, &err), 0);
	p = frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT);
	fat_idx = p->hash % q.prm.flows;
	lq_enqueue(&q, p, 0);
	for (int i = 0; i < 89; i++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	p = frame(FRAME_BYTES, 2, LQ_ECN_NOT_ECT);
	thin_idx = p->hash % q.prm.flows;
	CHECK(fat_idx != thin_idx);
	for (int i = 0; i < 10; i++)
		CHECK(lq_enqueue(&q, i ? frame(FRAME_BYTES, 2, LQ_ECN_NOT_ECT) : p, 0));
	CHECK_EQ(dropped, 0);
	/* The 101st packet, from the thin flow, costs the fat one half its bytes (45 packets). */
	CHECK(lq_enqueue(&q, frame(FRAME_BYTES, 2, LQ_ECN_NOT_ECT), 0));
	CHECK_EQ(dropped, 45);
	CHECK_EQ(q.flow[thin_idx].q.pkts, 11);
	CHECK_EQ(q.flow[fat_idx].q.pkts, 45);
	CHECK_EQ(q.st.drop_overlimit, 45);
	/* Linux fq_codel_drop: the batch adds to the fat queue's CoDel count (cvars.count += i), so a drop
	 * state it re-enters resumes at a rate that reflects them. */
	CHECK_EQ(q.flow[fat_idx].cv.count, 45);
	CHECK_EQ(q.flow[thin_idx].cv.count, 0);
	lq_free(&q);
}

/* The queue's own sojourn, enqueue to dequeue (what its AQM judged), whatever the owner does after. */
TEST(sojourn_is_counted_from_enqueue_to_dequeue)
{
	struct lq q;

	setup(&q, LQ_FIFO, false);
	lq_enqueue(&q, frame(FRAME_BYTES, 1, 0), 1 * MS);
	lq_enqueue(&q, frame(FRAME_BYTES, 1, 0), 2 * MS);
	lq_dequeue(&q, 8 * MS);
	lq_dequeue(&q, 5 * MS + 2 * MS);
	CHECK_EQ(q.st.sojourn_sum_ns, 7 * MS + 5 * MS);
	CHECK_EQ(q.st.sojourn_max_ns, 7 * MS);
	lq_free(&q);
}

TEST(step_marker_marks_ect_above_the_threshold_only)
{
	struct lq q;
	struct lq_params prm;
	const char *err;
	struct lq_pkt *below, *above, *not_ect, *ect1, *ect0;

	lq_defaults(&prm, LQ_STEP, FRAME_BYTES);
	prm.step_ns = MS;
	CHECK_EQ(lq_init(&q, &prm, on_drop, NULL, &err), 0);
	below = frame(FRAME_BYTES, 1, LQ_ECN_ECT0);
	lq_enqueue(&q, below, 0);
	CHECK(lq_dequeue(&q, MS) == below);
	CHECK_EQ(lq_ecn(below), LQ_ECN_ECT0); /* sojourn equal to the threshold is not above it */
	above = frame(FRAME_BYTES, 1, LQ_ECN_ECT0);
	not_ect = frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT);
	lq_enqueue(&q, above, 0);
	lq_enqueue(&q, not_ect, 0);
	CHECK(lq_dequeue(&q, MS + 1) == above);
	CHECK(lq_dequeue(&q, MS + 1) == not_ect);
	CHECK_EQ(lq_ecn(above), LQ_ECN_CE);
	CHECK_EQ(ip_checksum(above->l3), 0);
	CHECK_EQ(lq_ecn(not_ect), LQ_ECN_NOT_ECT);
	CHECK_EQ(q.st.mark_step, 1);
	CHECK_EQ(dropped, 0);
	lq_free(&q);

	prm.step_ect1_only = true;
	CHECK_EQ(lq_init(&q, &prm, on_drop, NULL, &err), 0);
	ect1 = frame(FRAME_BYTES, 1, LQ_ECN_ECT1);
	ect0 = frame(FRAME_BYTES, 1, LQ_ECN_ECT0);
	lq_enqueue(&q, ect1, 0);
	lq_enqueue(&q, ect0, 0);
	lq_dequeue(&q, 2 * MS);
	lq_dequeue(&q, 2 * MS);
	CHECK_EQ(lq_ecn(ect1), LQ_ECN_CE);
	CHECK_EQ(lq_ecn(ect0), LQ_ECN_ECT0);
	lq_free(&q);
}

TEST(fifo_tail_drops_at_the_packet_or_byte_limit)
{
	struct lq q;
	struct lq_params prm;
	const char *err;

	lq_defaults(&prm, LQ_FIFO, FRAME_BYTES);
	prm.limit_pkts = 10;
	CHECK_EQ(lq_init(&q, &prm, on_drop, NULL, &err), 0);
	for (int i = 0; i < 12; i++)
		CHECK_EQ(lq_enqueue(&q, frame(FRAME_BYTES, 1, 0), 0), i < 10);
	CHECK_EQ(q.st.drop_overlimit, 2);
	lq_free(&q);

	prm.limit_pkts = 0;
	prm.limit_bytes = 3000;
	CHECK_EQ(lq_init(&q, &prm, on_drop, NULL, &err), 0);
	CHECK(lq_enqueue(&q, frame(FRAME_BYTES, 1, 0), 0));
	CHECK(!lq_enqueue(&q, frame(FRAME_BYTES, 1, 0), 0)); /* 3028 > 3000 */
	CHECK(lq_enqueue(&q, frame(1486, 1, 0), 0));	     /* exactly 3000 */
	CHECK_EQ(q.backlog_bytes, 3000);
	lq_free(&q);
}

TEST(bad_parameters_are_named)
{
	struct lq q;
	struct lq_params prm;
	const char *err = NULL;

	lq_defaults(&prm, LQ_CODEL, FRAME_BYTES);
	prm.target_ns = 200 * MS;
	CHECK(lq_init(&q, &prm, on_drop, NULL, &err) != 0);
	CHECK(strstr(err, "target") != NULL);
	lq_defaults(&prm, LQ_FQ_CODEL, FRAME_BYTES);
	prm.flows = 0;
	CHECK(lq_init(&q, &prm, on_drop, NULL, &err) != 0);
	CHECK(strstr(err, "flows") != NULL);
	lq_defaults(&prm, LQ_STEP, FRAME_BYTES);
	CHECK(lq_init(&q, &prm, on_drop, NULL, &err) != 0);
	CHECK(strstr(err, "step") != NULL);
}

TEST(ipv6_ce_sets_the_traffic_class_bits)
{
	struct lq_pkt p;
	uint8_t f[14 + 40] = { 0 };

	f[12] = 0x86, f[13] = 0xdd;
	f[14] = 0x60 | 0x0;
	f[15] = LQ_ECN_ECT1 << 4;
	lq_frame_info(&p, f, sizeof(f), 0);
	CHECK_EQ(lq_ecn(&p), LQ_ECN_ECT1);
	CHECK(lq_set_ce(&p));
	CHECK_EQ(lq_ecn(&p), LQ_ECN_CE);
	CHECK_EQ(f[14], 0x60);
}

/* Stationary loss rate and mean bad-state length of the 4-parameter model: with pi_bad =
 * p / (p + r), loss = (1 - pi_bad) * loss_good + pi_bad * loss_bad; bursts last 1/r packets. */
TEST(gilbert_elliott_matches_its_stationary_loss_rate)
{
	struct lq_ge g;
	const double p = 0.01, r = 0.25, lg = 0.001, lb = 0.5;
	double expect = (r / (p + r)) * lg + (p / (p + r)) * lb;
	long lost = 0, n = 2000000;

	lq_ge_init(&g, p, r, lg, lb, 42);
	for (long i = 0; i < n; i++)
		lost += lq_ge_lose(&g);
	CHECK_NEAR((double)lost / (double)n, expect, expect * 0.05);
}

/* netem's loss_gilb_ell moves between states per packet, so with 1-h = 100% and 1-k = 0 the losses come in
 * runs as long as the bad state lasts, 1/r packets on average (geometric), and the gaps between them last
 * 1/p: with p = 1%, r = 25% runs of 4 and gaps of 100. */
TEST(gilbert_elliott_loses_in_bursts_of_one_over_r)
{
	struct lq_ge g;
	long runs = 0, lost = 0, n = 2000000;
	bool prev = false;

	lq_ge_init(&g, 0.01, 0.25, 0, 1, 7);
	for (long i = 0; i < n; i++) {
		bool now = lq_ge_lose(&g);

		runs += now && !prev;
		lost += now;
		prev = now;
	}
	CHECK(runs > 10000);
	CHECK_NEAR((double)lost / (double)runs, 1 / 0.25, 0.1);
	CHECK_NEAR((double)(n - lost) / (double)runs, 1 / 0.01, 3);
}

/* Whatever the arrivals, drops and marks, a queue with a backlog always yields a packet. */
TEST(fq_codel_never_strands_a_backlog)
{
	struct lq q;

	setup(&q, LQ_FQ_CODEL, false);
	q.prm.limit_pkts = 300;
	random_load(&q, 7, 6);
	CHECK(q.st.drop_aqm > 0);
	lq_free(&q);
}

/* A standing queue of 40 ms (above PIE's 15 ms reference) arriving every ms and leaving every ms. */
static void pie_run(struct lq *q, uint64_t until, uint64_t sojourn)
{
	for (; clock_ns < until; clock_ns += MS) {
		lq_enqueue(q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), clock_ns);
		if (clock_ns >= sojourn)
			lq_dequeue(q, clock_ns);
	}
}

/* RFC 8033 section 4.4 as Linux runs it: a fresh PIE gives a 150 ms burst allowance that runs down by
 * dequeue time (pie_process_dequeue). A standing queue of 300 ms starts leaving at 300 ms: the
 * probability climbs at once (above 250 ms each update adds 2%), but nothing is dropped early until 150 ms
 * of dequeues have spent the allowance; then drops follow. */
TEST(pie_burst_allowance_holds_early_drops_for_150ms_of_dequeues)
{
	struct lq q;

	setup(&q, LQ_PIE, false);
	pie_run(&q, 451 * MS, 300 * MS);
	CHECK(q.pie.drop_prob > 0.2); /* high enough that drops would have come without the allowance */
	CHECK_EQ(q.pie.burst_allowance_ns, 0);
	CHECK_EQ(q.st.drop_aqm, 0);
	pie_run(&q, 600 * MS, 300 * MS);
	CHECK(q.st.drop_aqm > 10);
	CHECK_EQ(q.st.drop_overlimit, 0);
	lq_free(&q);
}

/* Linux pie_calculate_probability: a delay above 250 ms adds 2% per update even while the scaled
 * controller step is tiny, and once the probability is 10% or more an update raises it by at most 2%
 * (a 200 ms delay asks 0.125 x 0.185 = 2.3%). */
TEST(pie_steps_by_two_percent_above_ten_percent_and_jumps_above_250ms)
{
	struct lq q;
	double prev = 0;
	int capped = 0;

	setup(&q, LQ_PIE, false);
	pie_run(&q, 300 * MS, 300 * MS);
	CHECK_EQ(q.pie.drop_prob, 0);
	pie_run(&q, 316 * MS, 300 * MS); /* one update with a 300 ms delay */
	CHECK(q.pie.drop_prob >= 0.02 && q.pie.drop_prob < 0.021);
	lq_free(&q);

	setup(&q, LQ_PIE, false);
	for (clock_ns = 0; clock_ns < 3000 * MS && q.pie.drop_prob < 1; clock_ns += MS) {
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), clock_ns);
		/* every packet leaves after exactly 200 ms, whatever early drops thinned out */
		while (q.fifo.head && q.fifo.head->enq_ns + 200 * MS <= clock_ns)
			lq_dequeue(&q, clock_ns);
		if (q.pie.drop_prob != prev) {
			if (prev >= 0.1 && q.pie.drop_prob < 1) {
				CHECK_NEAR(q.pie.drop_prob - prev, LQ_PIE_MAX_STEP, 1e-9);
				capped++;
			}
			prev = q.pie.drop_prob;
		}
	}
	CHECK(capped >= 10);
	lq_free(&q);
}

/* Linux: with no delay at two updates in a row the probability loses 1/64 per update (RFC 8033 says 2%).
 * A 1 ns reference makes the controller's own step for zero delay negligible (alpha x 1 ns), so what is
 * left is the decay alone: (63/64)^10 over ten updates. */
TEST(pie_probability_decays_by_a_64th_per_update_once_the_queue_empties)
{
	struct lq q;
	struct lq_params prm;
	const char *err;
	double before;

	lq_defaults(&prm, LQ_PIE, FRAME_BYTES);
	prm.target_ns = 1;
	prm.limit_pkts = POOL_PKTS;
	CHECK_EQ(lq_init(&q, &prm, on_drop, NULL, &err), 0);
	pie_run(&q, 1000 * MS, 40 * MS);
	while (q.backlog_pkts)
		lq_dequeue(&q, clock_ns);
	clock_ns +=
		2 * LQ_PIE_TUPDATE_NS; /* two updates: the delay falls to zero, then so does the old one */
	lq_dequeue(&q, clock_ns);
	before = q.pie.drop_prob;
	CHECK(before > 0.05);
	clock_ns += 10 * LQ_PIE_TUPDATE_NS;
	lq_dequeue(&q, clock_ns);
	CHECK_NEAR(q.pie.drop_prob, before * pow(63.0 / 64, 10), 1e-6);
	lq_free(&q);
}

/* A PIE held at probability 10% with the updates stopped: the state pie_drop_early reads. */
static void pie_hold(struct lq *q, uint64_t qdelay_ns, uint64_t qdelay_old_ns)
{
	setup(q, LQ_PIE, false);
	for (int i = 0; i < 3; i++) /* more than two MTUs queued */
		lq_enqueue(q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
	q->pie.next_update_ns = UINT64_MAX;
	q->pie.burst_allowance_ns = 0;
	q->pie.drop_prob = 0.1;
	q->pie.qdelay_ns = qdelay_ns;
	q->pie.qdelay_old_ns = qdelay_old_ns;
}

/* Linux pie_drop_early reads the current delay (RFC 8033's pseudocode reads qdelay_old) and
 * derandomises (RFC 8033 section 5.1): at 10% no two drops are closer than 9 packets (the summed
 * probability must reach 0.85) nor further apart than 86 (from 8.5 a drop is certain). */
TEST(pie_drops_early_on_the_current_delay_with_derandomised_gaps)
{
	struct lq q;
	int last = -1, min_gap = 1000, max_gap = 0;

	pie_hold(&q, 0, 20 * MS); /* the delay fell below half the reference: no early drop */
	for (clock_ns = 0; clock_ns < 500; clock_ns++)
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), clock_ns);
	CHECK_EQ(q.st.drop_aqm, 0);
	lq_free(&q);

	pie_hold(&q, 20 * MS, 0);
	for (clock_ns = 0; clock_ns < 2000; clock_ns++) { /* the clock counts packets here */
		int before = dropped;

		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_NOT_ECT), 0);
		if (dropped == before)
			continue;
		if (last >= 0) {
			min_gap = (int)clock_ns - last < min_gap ? (int)clock_ns - last : min_gap;
			max_gap = (int)clock_ns - last > max_gap ? (int)clock_ns - last : max_gap;
		}
		last = (int)clock_ns;
	}
	CHECK(q.st.drop_aqm >= 20);
	CHECK(min_gap >= 9);
	CHECK(max_gap <= 86);
	lq_free(&q);
}

/* RFC 8033 section 5.1: ECT packets are marked instead of dropped while the probability is at most 10%. */
TEST(pie_marks_ect_packets_below_ten_percent)
{
	struct lq q;

	setup(&q, LQ_PIE, true);
	for (clock_ns = 0; clock_ns < 5000 * MS && !q.st.drop_aqm; clock_ns += MS) {
		lq_enqueue(&q, frame(FRAME_BYTES, 1, LQ_ECN_ECT0), clock_ns);
		if (clock_ns >= 40 * MS)
			lq_dequeue(&q, clock_ns);
	}
	/* Marks do not shorten this synthetic queue, so the probability climbs past 10% and drops begin. */
	CHECK(q.st.mark_aqm > 0);
	CHECK_EQ(q.st.drop_aqm, 1);
	CHECK(q.pie.drop_prob > LQ_PIE_MARK_MAX_PROB);
	lq_free(&q);
}

/* Below half the reference delay with a probability under 20%, nothing is dropped early. */
TEST(pie_leaves_a_short_queue_alone)
{
	struct lq q;

	setup(&q, LQ_PIE, false);
	pie_run(&q, 3000 * MS, 5 * MS);
	CHECK_EQ(q.st.drop_aqm, 0);
	CHECK_NEAR(q.pie.drop_prob, 0, 1e-9);
	lq_free(&q);
}
