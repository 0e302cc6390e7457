// SPDX-License-Identifier: GPL-2.0
/* bbr2: where the BBRv2 alpha differs from bbr3 (gains, STARTUP's estimator and loss exit, the end
 * of UP), on synthetic ACK sequences; and that the shared v3 machinery runs for it.
 */
#include "bbr2.bpf.c"
#include "sim.h"
#include "sim_v3.h"
#include "sim_loop.h"

TEST(startup_paces_and_sizes_cwnd_at_2_885)
{
	params = defaults;
	sim_round(10, SIM_RTT_US);
	CHECK_EQ(core()->pacing_gain, BBR_HIGH_GAIN);
	CHECK_EQ(core()->cwnd_gain, BBR_HIGH_GAIN);
}

TEST(down_paces_at_three_quarters_and_up_keeps_cwnd_gain_2)
{
	to_up();
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT * 5 / 4);
	CHECK_EQ(core()->cwnd_gain, BBR_UNIT * 2);
	bbr3_start_bw_probe_down(sk, core(), st());
	ack(200, 0, false);
	CHECK_EQ(core()->pacing_gain, BBR_UNIT * 3 / 4);
}

/* BBRv1's estimator: the windowed max per round, three rounds without 25% growth. */
TEST(startup_exits_on_plateau_of_the_max_filter)
{
	params = defaults;
	sim_tp.packets_out = 1000;
	sim_round(10, SIM_RTT_US);
	sim_round(20, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	sim_round(40, SIM_RTT_US);
	CHECK(!core()->full_bw_reached);
	sim_round(40, SIM_RTT_US);
	CHECK(core()->full_bw_reached);
	CHECK_EQ(core()->mode, BBRKIT_DRAIN);
}

/* v3 leaves STARTUP after 6 loss events; v2alpha needs 8, and its inflight_hi is the BDP alone. */
TEST(startup_loss_exit_needs_eight_loss_events)
{
	lossy_startup_round(7, 2);
	end_round();
	CHECK(!core()->full_bw_reached);
}

TEST(startup_loss_exit_sets_inflight_hi_to_bdp)
{
	lossy_startup_round(8, 2);
	CHECK(!core()->full_bw_reached);
	end_round();
	CHECK(core()->full_bw_reached);
	CHECK_EQ(st()->inflight_hi, bbr3_inflight(sk, core(), bbr3_max_bw(st()), BBR_UNIT));
}

/* UP goes on through a bandwidth plateau (which ends v3's UP) until it has lasted one min_rtt with
 * the flight at 1.25 x BDP (counting the next TSO skb, as the EDT estimate does).
 */
TEST(up_ends_once_the_flight_reaches_five_quarters_of_bdp)
{
	to_up();
	u32 target =
		bbr3_inflight(sk, core(), bbr3_max_bw(st()), BBR3_UP_GAIN) - bbr_tso_segs_goal(sk, core());
	for (int i = 0; i < 4; i++)
		round_of(target - 1);
	CHECK_EQ(phase(), BBRKIT_V3_UP);
	ack(target, 0, false);
	CHECK_EQ(phase(), BBRKIT_V3_DOWN);
}

/* The shared v3 machinery: too much loss in UP cuts inflight_hi and ends the probe. */
TEST(up_ends_on_loss_as_in_v3)
{
	to_up();
	ack(100, 5, false);
	CHECK(phase() != BBRKIT_V3_UP);
	CHECK_EQ(st()->inflight_hi, 97);
}

/* In UP, ACKs while inflight_hi does not limit cwnd earn no credit for later growth. */
TEST(up_forgets_acks_while_not_cwnd_limited)
{
	to_up();
	st()->inflight_hi = 150;
	st()->bw_probe_up_acks = 7;
	sim_tp.is_cwnd_limited = 0;
	ack(100, 0, false);
	CHECK_EQ(st()->bw_probe_up_acks, 0);
}

/* v2alpha judges each lost skb as v3 does (tcp_bbr2.c: bbr2_skb_marked_lost, the same 2% rule and
 * inflight_hi from the lost skb): the per-packet path takes exactly the reference's decisions in
 * the closed loop of sim_loop.h (the twin's path), at 1% random loss.
 */
TEST(per_packet_path_decides_as_v2alpha_at_1_percent_loss)
{
	struct twin_cfg p = loop_path(5, 200, 20000, 10000); /* packets/ms, FIFO packets, RTT us, ppm */
	struct loop_stats s;

	p.seed = 2;
	s = loop_run(&p, true, 20000000, 0);

	CHECK(s.ref_cuts > 0);
	CHECK_EQ(s.differ + s.extra, 0);
}
