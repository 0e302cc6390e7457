/* SPDX-License-Identifier: GPL-2.0 */
/* The interface between the differential (tests/diff/v3diff.c) and a reference congestion control
 * it runs beside bbr3: a shared object, built outside the project around the reference's own source
 * (Google's v3 net/ipv4/tcp_bbr.c), that exports v3diff_ref(). The differential calls the reference
 * where the kernel calls a tcp_congestion_ops member, passing the sender's state at that moment; the
 * reference copies it into its own socket, runs the member, and reports its state afterwards.
 */
#ifndef V3DIFF_REF_H
#define V3DIFF_REF_H

#include <stdint.h>

#define V3DIFF_REF_ABI 1 /* bumped on any change below */

/* The reference's jiffy, in microseconds: bbr3's tick (bbr_substrate.h), with durations rounded up
 * to whole ticks as bbr3 rounds them, so that the two clocks' granularity is not a divergence (at
 * HZ=1000 PROBE_RTT starts an ACK apart, and the runs part there).
 */
#define V3DIFF_TICK_US 1024

/* The sender's tcp_sock at a call, in the kernel's units. */
struct v3diff_sock {
	uint64_t now_us;	   /* tp->tcp_mstamp and the clock (jiffies: now_us / V3DIFF_TICK_US) */
	uint64_t delivered_mstamp; /* tp->delivered_mstamp */
	uint64_t pacing_rate;	   /* sk->sk_pacing_rate in bytes/s before the call */
	uint32_t snd_cwnd;	   /* before the call */
	uint32_t delivered, delivered_ce, lost;
	uint32_t packets_out, sacked_out, lost_out, retrans_out;
	uint32_t app_limited; /* tp->app_limited */
	uint32_t srtt_us;     /* tp->srtt_us (<< 3) */
	uint32_t min_rtt_us;  /* tcp_min_rtt() */
	uint32_t mss;
	uint32_t random; /* what the kernel's random helpers return during this call */
	uint8_t is_cwnd_limited;
	uint8_t ca_state; /* icsk_ca_state before the call */
};

/* The rate sample of one ACK (tcp_rate_gen()), with v3's two send-time fields. */
struct v3diff_rs {
	uint64_t prior_mstamp;
	uint32_t prior_delivered;
	int32_t delivered;
	int64_t interval_us;
	int64_t rtt_us;
	int32_t losses;
	uint32_t acked_sacked;
	uint32_t prior_in_flight;
	uint32_t tx_in_flight; /* the ACKed skb's tx.in_flight */
	int32_t lost;	       /* tp->lost minus the ACKed skb's tx.lost */
	uint8_t is_app_limited;
	uint8_t is_retrans;
};

/* The send record of an skb being marked lost (v3 keeps it in TCP_SKB_CB(skb)->tx). */
struct v3diff_skb {
	uint32_t in_flight; /* tx.in_flight */
	uint32_t lost;	    /* tx.lost */
	uint32_t pcount;
	uint8_t is_app_limited;
};

/* The reference's state after a call: what the differential compares. */
struct v3diff_state {
	uint64_t pacing_rate; /* bytes/s */
	uint32_t cwnd;
	uint32_t inflight_hi, inflight_lo, bw_lo, max_bw; /* max_bw: max(bw_hi[0], bw_hi[1]) */
	uint32_t min_rtt_us;
	uint32_t app_limited; /* tp->app_limited: PROBE_RTT sets it */
	uint8_t mode, cycle_idx, ack_phase;
	uint8_t bw_probe_samples, loss_in_cycle, loss_in_round, full_bw_reached, prev_probe_too_high;
};

/* tcp_ca_event values the differential passes. */
#define V3DIFF_EV_TX_START 0

struct v3diff_ref_ops {
	int abi; /* V3DIFF_REF_ABI */
	void (*init)(const struct v3diff_sock *tp);
	void (*cong_control)(const struct v3diff_sock *tp, const struct v3diff_rs *rs);
	void (*skb_marked_lost)(const struct v3diff_sock *tp, const struct v3diff_skb *skb);
	uint32_t (*ssthresh)(const struct v3diff_sock *tp);
	void (*set_state)(const struct v3diff_sock *tp, uint8_t new_state);
	uint32_t (*undo_cwnd)(const struct v3diff_sock *tp);
	void (*cwnd_event)(const struct v3diff_sock *tp, int event);
	void (*state)(struct v3diff_state *out);
};

/* The symbol the shared object exports. */
typedef const struct v3diff_ref_ops *(*v3diff_ref_fn)(void);
#define V3DIFF_REF_SYMBOL "v3diff_ref"

#endif /* V3DIFF_REF_H */
