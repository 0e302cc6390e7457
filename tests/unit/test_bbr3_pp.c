// SPDX-License-Identifier: GPL-2.0
/* bbr3's per-packet loss path (issue 30) in a closed loop (sim_pkt.h): every skb marked lost is
 * judged by v3's rule (google/bbr v3, net/ipv4/tcp_bbr.c: bbr_skb_marked_lost ->
 * bbr_is_inflight_too_high with the skb's tx.in_flight and tp->lost - tx.lost, then
 * bbr_inflight_hi_from_lost_skb), computed here from the sender's own per-packet state. The
 * per-packet path must take exactly those decisions; the ACK-time path (approximations A-C, F of
 * bbr3_core.h), the fallback, is shown to take others.
 */
#include "bbr3.bpf.c"
#include "sim.h"
#include "sim_v3.h"
#include "sim_pkt.h"

#define RUN_US 20000000ULL /* 20 s: several probe cycles */

static const struct pkt_path deep = { .rate_x1000 = 5000, .buffer = 200, .rtt_us = 20000, .seed = 1 };

static void show(const char *what, const struct pkt_stats *s)
{
	printf("  %-22s v3 cuts %3u  agree %3u  differ %3u  extra %3u  sent %6u lost %5u (%.2f%%)\n", what,
		s->ref_cuts, s->agree, s->differ, s->extra, s->sent, s->lost, 100.0 * s->lost / s->sent);
}

/* Both paths on one path; the per-packet one takes v3's decisions at every mark, and there were
 * some to take; returns the ACK-time path's count of decisions unlike v3's.
 */
static u32 compare(const char *what, struct pkt_path p)
{
	struct pkt_stats pp = pkt_run(&p, true, RUN_US), ack = pkt_run(&p, false, RUN_US);

	show(what, &pp);
	show("  (ACK-time path)", &ack);
	if (!pp.ref_cuts || pp.differ || pp.extra) {
		fprintf(stderr, "%s: the per-packet path differs from v3's rule\n", what);
		check_failed_now = 1;
	}
	return ack.differ + ack.extra;
}

static u32 random_loss(const char *what, u32 ppm)
{
	struct pkt_path p = deep;

	p.loss_ppm = ppm;
	return compare(what, p);
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
	struct pkt_path p = deep;

	p.buffer = 25;
	CHECK(compare("shallow buffer (1/4 BDP)", p) > 0);
}

TEST(per_packet_path_decides_as_v3_over_rate_steps)
{
	struct pkt_path p = deep;

	p.buffer = 50;
	p.step_at_us = SIM_START_US + RUN_US / 2;
	p.step_rate_x1000 = 2500;
	CHECK(compare("rate step 5 -> 2.5 pkt/ms", p) > 0);
}

/* An RTO in UP: v3 judges each marked skb with its own send-time flight; the ACK-time path's
 * stand-in (F) judges them as one, with the flight outstanding at the RTO.
 */
TEST(per_packet_path_decides_as_v3_on_an_rto_in_up)
{
	struct pkt_path p = deep;
	struct pkt_stats pp, ack;

	p.blackhole_in_up = true;
	p.blackhole_us = 250000;
	pp = pkt_run(&p, true, RUN_US);
	ack = pkt_run(&p, false, RUN_US);
	show("RTO during UP", &pp);
	show("  (ACK-time path)", &ack);
	printf("  inflight_hi after the RTO: per-packet %u, ACK-time %u\n", pp.hi_after_rto,
		ack.hi_after_rto);
	CHECK(pp.ref_cuts > 0);
	CHECK_EQ(pp.differ + pp.extra, 0);
	CHECK(ack.differ + ack.extra > 0);
}
