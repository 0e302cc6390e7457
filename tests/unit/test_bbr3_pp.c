// SPDX-License-Identifier: GPL-2.0
/* bbr3's per-packet loss path in a closed loop (sim_loop.h: the twin's path): every skb
 * marked lost is judged by v3's rule (google/bbr v3, net/ipv4/tcp_bbr.c: bbr_skb_marked_lost ->
 * bbr_is_inflight_too_high with the skb's tx.in_flight and tp->lost - tx.lost, then
 * bbr_inflight_hi_from_lost_skb), computed here from the sender's own per-packet state. The
 * per-packet path must take exactly those decisions; the ACK-time path (approximations A-C, F of
 * bbr3_core.h), the fallback, is shown to take others.
 */
#include "bbr3.bpf.c"
#include "sim.h"
#include "sim_v3.h"
#include "sim_loop.h"

#define RUN_US 20000000ULL /* 20 s: several probe cycles */

/* 5 packets/ms (58 Mbit/s), a 2-BDP FIFO, 20 ms. */
#define DEEP_PKTS_PER_MS 5
#define DEEP_BUFFER 200
#define DEEP_RTT_US 20000

#define SEEDS 5 /* runs per case, each with its own random drops */

static void show(const char *what, const struct loop_stats *s, int runs)
{
	printf("  %-26s v3 cuts %3u  agree %3u  differ %3u  extra %3u  %5.1f Mbit/s, lost %.2f%%\n", what,
		s->ref_cuts, s->agree, s->differ, s->extra,
		(double)s->delivered * SIM_MSS * 8 / ((double)RUN_US * runs), 100.0 * s->lost / s->sent);
}

static void add(struct loop_stats *sum, const struct loop_stats *s)
{
	sum->ref_cuts += s->ref_cuts;
	sum->agree += s->agree;
	sum->differ += s->differ;
	sum->extra += s->extra;
	sum->sent += s->sent;
	sum->lost += s->lost;
	sum->delivered += s->delivered;
}

/* Both paths on one path, SEEDS runs each: the per-packet one takes v3's decisions at every mark,
 * and there were some to take; returns the ACK-time path's count of decisions unlike v3's.
 */
static u32 compare(const char *what, struct twin_cfg p)
{
	struct loop_stats pp = { 0 }, ack = { 0 }, one;

	for (p.seed = 1; p.seed <= SEEDS; p.seed++) {
		one = loop_run(&p, true, RUN_US, 0);
		add(&pp, &one);
		one = loop_run(&p, false, RUN_US, 0);
		add(&ack, &one);
	}
	show(what, &pp, SEEDS);
	show("  (ACK-time path)", &ack, SEEDS);
	if (!pp.ref_cuts || pp.differ || pp.extra) {
		fprintf(stderr, "%s: the per-packet path differs from v3's rule\n", what);
		check_failed_now = 1;
	}
	return ack.differ + ack.extra;
}

static u32 random_loss(const char *what, u32 ppm)
{
	return compare(what, loop_path(DEEP_PKTS_PER_MS, DEEP_BUFFER, DEEP_RTT_US, ppm));
}

TEST(per_packet_path_decides_as_v3_at_0_1_percent_loss)
{
	random_loss("0.1% random loss", 1000);
}

TEST(per_packet_path_decides_as_v3_at_1_percent_loss)
{
	CHECK(random_loss("1% random loss", 10000) > 0);
}

TEST(per_packet_path_decides_as_v3_at_5_percent_loss)
{
	CHECK(random_loss("5% random loss", 50000) > 0);
}

TEST(per_packet_path_decides_as_v3_with_a_shallow_buffer)
{
	CHECK(compare("shallow buffer (1/4 BDP)", loop_path(DEEP_PKTS_PER_MS, 25, DEEP_RTT_US, 0)) > 0);
}

TEST(per_packet_path_decides_as_v3_over_rate_steps)
{
	struct twin_cfg p = loop_path(DEEP_PKTS_PER_MS, 50, DEEP_RTT_US, 0);

	p.rate[p.nrate++] = (struct twin_step){ RUN_US / 2, LOOP_RATE(DEEP_PKTS_PER_MS) / 2 };
	CHECK(compare("rate step 5 -> 2.5 pkt/ms", p) > 0);
}

#define HOLE_US 250000 /* the black hole in UP: every packet in it is lost, so an RTO fires */

/* An RTO in UP: v3 judges each marked skb with its own send-time flight; the ACK-time path's
 * stand-in (F) judges them as one, with the flight outstanding at the RTO.
 */
TEST(per_packet_path_decides_as_v3_on_an_rto_in_up)
{
	struct twin_cfg p = loop_path(DEEP_PKTS_PER_MS, DEEP_BUFFER, DEEP_RTT_US, 0);
	struct loop_stats pp, ack;

	pp = loop_run(&p, true, RUN_US, HOLE_US);
	ack = loop_run(&p, false, RUN_US, HOLE_US);
	show("RTO during UP", &pp, 1);
	show("  (ACK-time path)", &ack, 1);
	printf("  inflight_hi after the RTO: per-packet %u, ACK-time %u\n", pp.hi_after_rto,
		ack.hi_after_rto);
	CHECK(pp.ref_cuts > 0);
	CHECK_EQ(pp.differ + pp.extra, 0);
	CHECK(ack.differ + ack.extra > 0);
}

/* A new flow on the per-packet path. */
static void pp_setup(void)
{
	bbr3_pp_live = 1;
	check_setup();
	bbr3_pp_live = 0;
}

/* The ACK of packets 0-9 (one skb, recorded as sent with `in_flight` when tp->lost was `lost_then`),
 * with `flight` in flight.
 */
static void ack_recorded_skb(u32 in_flight, u32 lost_then, u32 flight)
{
	struct rate_sample rs;

	host_bbr3_pp.head = 1;
	host_bbr3_pp.ring[0] = (struct bbr3_tx){ .seq = 0, .in_flight = in_flight, .lost = lost_then };
	host_bbr3_pp.end_seq = 10 * SIM_MSS;
	rs = ack_sample(flight);
	rs.last_end_seq = 10 * SIM_MSS;
	bbrkit_on_ack(sk, &rs);
}

/* A flow in UP on the per-packet path, `round_lost` losses into its loss round and `lost_since`
 * since the ACKed skb (packets 0-9) went out with `in_flight`, then that ACK, with a flight of 100.
 */
static void ack_with_record(u32 in_flight, u32 lost_since, u32 round_lost)
{
	pp_setup();
	to_up();
	sim_tp.snd_nxt = 20 * SIM_MSS;
	sim_tp.lost += lost_since;
	st()->round_lost = sim_tp.lost - round_lost;
	ack_recorded_skb(in_flight, sim_tp.lost - lost_since, 100);
}

/* In a loss round the per-ACK check reads the ACKed skb's own record, as v3 reads rs->tx_in_flight
 * and rs->lost: 3 losses since a 200-packet flight was sent are within 2% (200 x 5/256 = 3), so UP
 * goes on, where approximations A and B (a flight of 100 at the ACK, 10 losses since the loss round
 * began) would end it.
 */
TEST(per_ack_check_reads_the_acked_skbs_record)
{
	ack_with_record(200, 3, 10);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	CHECK(st()->bw_probe_samples);
}

/* Losses before this loss round began still count for an skb sent before them, as v3's rs->lost
 * counts from the skb's send: with none in the round (approximation B is 0), an ACK of an skb whose
 * flight of 33 has lost 4 since (above 33 x 5/256) ends UP, as v3 does (inflight_hi cut to
 * max(33, beta x target)), where reading the record only in loss rounds kept probing.
 */
TEST(per_ack_check_reads_the_record_for_losses_before_the_round)
{
	ack_with_record(33, 4, 0);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->inflight_hi >= 33 && st()->inflight_hi < 100);
	CHECK(st()->loss_in_cycle);
}

/* Skbs sent after a lost one before its retransmit is ACKed: a recovery at a 334-packet flight
 * (48 Mbit/s, 80 ms with its queue) with one-packet skbs, as on the differential's 1% loss path
 * (docs/v3-differential.md), where the hole at snd_una held 730 later skbs.
 */
#define LONG_RECOVERY_SKBS 800

/* The record of an ACKed retransmit outlives a long recovery: the skb at snd_una went out with a
 * flight of 33 and 4 packets were lost since, and LONG_RECOVERY_SKBS skbs went out after it before
 * its retransmit was ACKed. v3 reads that skb's tx.in_flight and tx.lost and ends UP; with the record
 * evicted, approximations A and B (a flight of 100, no loss in this round) would keep probing.
 */
TEST(per_ack_check_reads_the_record_of_an_skb_sent_long_before)
{
	struct rate_sample rs;

	pp_setup();
	to_up();
	st()->round_lost = sim_tp.lost + 4;
	for (u32 i = 0; i <= LONG_RECOVERY_SKBS; i++) {
		struct bbr3_pp_sock c = {
			.snd_nxt = i * SIM_MSS, .in_flight = i ? 100 : 32, .lost = sim_tp.lost, .mss = SIM_MSS
		};

		bbr3_pp_sent(&host_bbr3_pp, &c, i * SIM_MSS, (i + 1) * SIM_MSS, 1);
	}
	sim_tp.lost += 4;
	sim_tp.snd_nxt = (LONG_RECOVERY_SKBS + 1) * SIM_MSS;
	rs = ack_sample(100);
	rs.last_end_seq = SIM_MSS;
	bbrkit_on_ack(sk, &rs);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
	CHECK(st()->inflight_hi >= 33 && st()->inflight_hi < 100);
}

/* CRUISE just after inflight_hi was cut to 15 (a probe's loss, cwnd 20: max(15, 0.7 x 20)) while
 * snd_nxt was at `cut_at` packets; then the ACK of packets 0-9, sent with a flight of `sent_with`,
 * arrives with `flight` in flight and no loss since.
 */
static void cruise_ack_after_cut(u32 cut_at, u32 sent_with, u32 flight)
{
	pp_setup();
	start();
	bbr3_start_bw_probe_down(sk, core(), st());
	bbr3_start_bw_probe_cruise(core(), st());
	sim_tp.snd_nxt = cut_at * SIM_MSS;
	bbr3_handle_inflight_too_high(sk, core(), st(), 15, 20, false);
	CHECK_EQ(st()->inflight_hi, 15);
	sim_tp.snd_nxt = 40 * SIM_MSS;
	sim_tp.snd_cwnd = 13; /* CRUISE keeps headroom below inflight_hi */
	ack_recorded_skb(sent_with, sim_tp.lost, flight);
}

/* An skb that left before the cut with a flight of 17 proves 17 safe: v3 raises inflight_hi to its
 * rs->tx_in_flight, although the flight when its ACK arrives (10) is below the bound.
 */
TEST(safe_flight_sent_before_a_cut_raises_inflight_hi)
{
	cruise_ack_after_cut(20, 17, 10);
	CHECK_EQ(st()->inflight_hi, 17);
}

/* An skb sent after the cut went out within inflight_hi (12): v3 does not raise it, although the
 * flight when its ACK arrives (20, approximation A) is above it.
 */
TEST(flight_sent_within_inflight_hi_does_not_raise_it)
{
	cruise_ack_after_cut(5, 12, 20);
	CHECK_EQ(st()->inflight_hi, 15);
}

/* The counters are in packets, as tp->lost is, so that pp_decisions / lost is the share judged per
 * packet: a lost 3-packet TSO skb with a record counts 3 decisions, an unrecorded 2-packet one 2
 * misses.
 */
TEST(per_packet_counters_count_packets_as_tp_lost_does)
{
	struct bbr3_pp_sock c = { .snd_nxt = 0, .in_flight = 10, .lost = 0, .cwnd = 20, .mss = SIM_MSS };

	pp_setup();
	bbr3_pp_sent(&host_bbr3_pp, &c, 0, 3 * SIM_MSS, 3);
	bbr3_pp_lost(&host_bbr3_pp, &c, 0, 3 * SIM_MSS, 3, false, true);
	CHECK_EQ(host_bbr3_pp.decisions, 3);
	bbr3_pp_lost(&host_bbr3_pp, &c, 50 * SIM_MSS, 52 * SIM_MSS, 2, false, true);
	CHECK_EQ(host_bbr3_pp.misses, 2);
}
