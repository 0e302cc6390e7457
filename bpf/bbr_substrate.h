/* SPDX-License-Identifier: GPL-2.0 */
/* The substrate every bbrkit algorithm builds on: BBRv1 and its variants (bbr_core.h) and BBRv3 with
 * the BBRv2 alpha (bbr3_core.h).
 *
 * What the two families share, from the kernel's net/ipv4/tcp_bbr.c: the state in icsk_ca_priv
 * (struct bbr_core), the windowed max filter, the clock (1024 us ticks, see bbr_core.h for how it
 * differs from the kernel's), the pacing rate from bandwidth and gain less a 1% margin, BDP, TSO
 * sizing, the EDT inflight estimate, cwnd save, the ACK-aggregation filter and its cwnd allowance,
 * STARTUP's plateau check, idle restart, the reset at init and the state record. Decisions leave
 * through the bbr_out_*() accessors. No state machine: each family brings its own.
 */
#ifndef BBR_SUBSTRATE_H
#define BBR_SUBSTRATE_H

#include "bbr_env.h"
#include "bbrkit.h"

#define USEC_PER_MSEC 1000ULL
#define USEC_PER_SEC 1000000ULL

/* The clock of the state's stamps: tcp_mstamp >> 10, ticks of 1024 us. */
#define BBR_TICK_SHIFT 10
#define BBR_US_TO_TICKS(us) ((u32)(((us) + (1U << BBR_TICK_SHIFT) - 1) >> BBR_TICK_SHIFT))
/* Window length of the min_rtt filter, in ticks: re-probe the path's delay every 10 s. */
#define BBR_MIN_RTT_WIN_TICKS BBR_US_TO_TICKS(10 * USEC_PER_SEC)
/* Minimum time spent at BBR_CWND_MIN_TARGET in PROBE_RTT, in ticks (200 ms): bounds its cost to ~2%. */
#define BBR_PROBE_RTT_MODE_TICKS BBR_US_TO_TICKS(200 * USEC_PER_MSEC)
/* Skip TSO below this rate, in bit/s: at low rates one-packet bursts are cheap enough. */
#define BBR_MIN_TSO_RATE_BIT_PER_SEC 1200000UL
/* Pace about 1% below the estimate, in percent: drives the bottleneck queue towards empty. */
#define BBR_PACING_MARGIN_PERCENT 1
/* 2/ln(2) in BBR_UNIT: the smallest gain that doubles the sending rate every round. */
#define BBR_HIGH_GAIN (BBR_UNIT * 2885 / 1000 + 1)
/* 1/high_gain in BBR_UNIT: drains STARTUP's queue in about one round. */
#define BBR_DRAIN_GAIN (BBR_UNIT * 1000 / 2885)
/* Steady-state cwnd gain in BBR_UNIT: tolerates delayed and stretched ACKs. */
#define BBR_CWND_GAIN (BBR_UNIT * 2)
/* Packets: two ACK-every-other-packet pairs keep the pipe going. */
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this floor; never in the BPF build */
#define BBR_CWND_MIN_TARGET (TWIN_MUTANT(min_cwnd) ? 1U : 4U)
#else
#define BBR_CWND_MIN_TARGET 4U
#endif
/* Bandwidth growth, in BBR_UNIT, that counts as "still growing" in STARTUP (25%). */
#define BBR_FULL_BW_THRESH (BBR_UNIT * 5 / 4)
/* Rounds without that growth after which the pipe is taken to be full. Three, because a receiver's
 * window can hold the first round back: in one round autotuning grows the window, in the next the
 * sender fills it, only in the third do the delivery-rate samples show the larger rate (and transient
 * cross traffic or radio noise has a chance to pass).
 */
#define BBR_FULL_BW_CNT 3
/* Gain, in BBR_UNIT, applied to the measured ACK aggregation when sizing cwnd. */
#define BBR_EXTRA_ACKED_GAIN BBR_UNIT
/* Rounds per half of the ACK-aggregation max filter. */
#define BBR_EXTRA_ACKED_WIN_RTTS 5
/* Packets: past this many ACKed in one epoch, start a new epoch (the counter is 20 bits). */
#define BBR_ACK_EPOCH_ACKED_RESET_THRESH (1U << 20)
/* Microseconds: cap the aggregation allowance at what 100 ms of bandwidth would deliver. */
#define BBR_EXTRA_ACKED_MAX_US (100 * 1000)

/* Kernel constants this code mirrors (include/net/tcp.h, include/linux/netdevice.h). */
#define TCP_INIT_CWND 10
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define GSO_LEGACY_MAX_SIZE 65536
/* MAX_TCP_HEADER on x86_64 with the usual tunnel headroom, in bytes. */
#define BBR_MAX_TCP_HEADER 320

/* A windowed max filter keeping three samples: the best, the best of the later part of the
 * window, and the best of the latest part, so an expiring maximum is replaced in O(1).
 */
struct bbr_minmax_sample {
	u32 t; /* round count when measured */
	u32 v; /* value */
};

struct bbr_minmax {
	struct bbr_minmax_sample s[3];
};

/* 32-bit words (12 bytes) of icsk_ca_priv left over for a variant's own state. */
#define BBR_EXT_WORDS 3

struct bbr_core {
	u32 min_rtt_us;			  /* min RTT in the BBR_MIN_RTT_WIN_TICKS window */
	u32 min_rtt_stamp;		  /* ticks, when min_rtt_us was measured */
	u32 probe_rtt_done_stamp;	  /* ticks, end of PROBE_RTT; 0 while not yet armed */
	struct bbr_minmax bw;		  /* max recent delivery rate, packets/us << BW_SCALE */
	u32 rtt_cnt;			  /* packet-timed rounds so far */
	u32 next_rtt_delivered;		  /* tp->delivered at the end of this round */
	u32 cycle_stamp;		  /* us (low 32 bits), start of this gain cycle phase */
	u32 mode : 3,			  /* enum bbrkit_mode */
		prev_ca_state : 3,	  /* CA state on the previous ACK */
		packet_conservation : 1,  /* in the first round of recovery */
		round_start : 1,	  /* this ACK starts a new round */
		idle_restart : 1,	  /* restarting after idle */
		probe_rtt_round_done : 1, /* a PROBE_RTT round at minimum cwnd completed */
		lt_is_sampling : 1,	  /* taking long-term samples now */
		lt_rtt_cnt : 7,		  /* rounds in this long-term interval */
		lt_use_bw : 1,		  /* pace at lt_bw: a policer was detected */
		full_bw_reached : 1,	  /* STARTUP filled the pipe */
		full_bw_cnt : 2,	  /* rounds without large bandwidth growth */
		cycle_idx : 3,		  /* phase in the PROBE_BW gain cycle */
		has_seen_rtt : 1,	  /* an RTT sample has been seen */
		unused_a : 6;
	u32 lt_bw;		/* long-term delivery rate, packets/us << BW_SCALE */
	u32 lt_last_delivered;	/* tp->delivered at the start of the LT interval */
	u32 lt_last_stamp;	/* ms, tp->delivered_mstamp at the start of the LT interval */
	u32 lt_last_lost;	/* tp->lost at the start of the LT interval */
	u32 pacing_gain : 10,	/* BBR_UNIT, the state machine's gain */
		cwnd_gain : 10, /* BBR_UNIT */
		unused_b : 12;
	u32 prior_cwnd;			  /* cwnd on entering recovery or PROBE_RTT */
	u32 full_bw;			  /* recent bandwidth, to tell if the pipe is full */
	u32 ack_epoch_stamp;		  /* us (low 32 bits), start of the ACK sampling epoch */
	u16 extra_acked[2];		  /* max excess data ACKed in each half of the window */
	u32 ack_epoch_acked : 20,	  /* packets (S)ACKed in this epoch */
		extra_acked_win_rtts : 5, /* age of extra_acked, in rounds */
		extra_acked_win_idx : 1,  /* current half of the extra_acked window */
		unused_c : 6;
	u32 ext[BBR_EXT_WORDS]; /* the variant's own state */
};

_Static_assert(sizeof(struct bbr_core) <= 104, "BBR state must fit in icsk_ca_priv");

BBR_INLINE struct bbr_core *bbr_core_of(const struct sock *sk)
{
	return (struct bbr_core *)inet_csk(sk)->icsk_ca_priv;
}

/* The core's decisions (cwnd, pacing rate, ssthresh, PROBE_RTT's app-limited mark, the pacing
 * request) and its one random draw go through these accessors, never straight to the socket.
 * The shipped programs and the host tests map them to the socket here: inlined, they are the
 * same loads and stores as before. A build that defines BBR_CUSTOM_OUTPUT defines them itself
 * after including this header: the lockstep check (bench/kernelbbr/lockstep) keeps them in a shadow result
 * beside a shadow state, and takes the random phase from the kernel's own BBR.
 */
#ifndef BBR_CUSTOM_OUTPUT
BBR_INLINE u32 bbr_out_cwnd(const struct sock *sk, const struct bbr_core *b)
{
	return tcp_sk(sk)->snd_cwnd;
}

BBR_INLINE void bbr_out_set_cwnd(struct sock *sk, struct bbr_core *b, u32 cwnd)
{
	tcp_sk(sk)->snd_cwnd = cwnd;
}

BBR_INLINE u64 bbr_out_pacing_rate(const struct sock *sk, const struct bbr_core *b)
{
	return sk->sk_pacing_rate;
}

BBR_INLINE void bbr_out_set_pacing_rate(struct sock *sk, struct bbr_core *b, u64 rate)
{
	sk->sk_pacing_rate = rate;
}

BBR_INLINE u32 bbr_out_ssthresh(const struct sock *sk, const struct bbr_core *b)
{
	return tcp_sk(sk)->snd_ssthresh;
}

BBR_INLINE void bbr_out_set_ssthresh(struct sock *sk, struct bbr_core *b, u32 ssthresh)
{
	tcp_sk(sk)->snd_ssthresh = ssthresh;
}

BBR_INLINE void bbr_out_set_app_limited(struct sock *sk, struct bbr_core *b, u32 app_limited)
{
	tcp_sk(sk)->app_limited = app_limited;
}

/* TCP paces by itself unless an fq qdisc has taken pacing over (SK_PACING_FQ). */
BBR_INLINE void bbr_out_request_pacing(struct sock *sk, struct bbr_core *b)
{
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
}

BBR_INLINE u32 bbr_out_random(struct sock *sk, struct bbr_core *b)
{
	return bbr_random_u32();
}
#else
BBR_INLINE u32 bbr_out_cwnd(const struct sock *sk, const struct bbr_core *b);
BBR_INLINE void bbr_out_set_cwnd(struct sock *sk, struct bbr_core *b, u32 cwnd);
BBR_INLINE u64 bbr_out_pacing_rate(const struct sock *sk, const struct bbr_core *b);
BBR_INLINE void bbr_out_set_pacing_rate(struct sock *sk, struct bbr_core *b, u64 rate);
BBR_INLINE u32 bbr_out_ssthresh(const struct sock *sk, const struct bbr_core *b);
BBR_INLINE void bbr_out_set_ssthresh(struct sock *sk, struct bbr_core *b, u32 ssthresh);
BBR_INLINE void bbr_out_set_app_limited(struct sock *sk, struct bbr_core *b, u32 app_limited);
BBR_INLINE void bbr_out_request_pacing(struct sock *sk, struct bbr_core *b);
BBR_INLINE u32 bbr_out_random(struct sock *sk, struct bbr_core *b);
#endif

BBR_INLINE u32 bbr_min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}

BBR_INLINE u32 bbr_max_u32(u32 a, u32 b)
{
	return a > b ? a : b;
}

BBR_INLINE u64 bbr_min_u64(u64 a, u64 b)
{
	return a < b ? a : b;
}

/* Wrap-safe "a is later than b" for 32-bit sequence numbers and stamps. */
BBR_INLINE bool bbr_after(u32 a, u32 b)
{
	return (s32)(a - b) > 0;
}

/* Microseconds from stamp t0 to the later t1, modulo 2^32: tcp_stamp_us_delta()'s u32 result. */
BBR_INLINE u32 bbr_stamp_delta_us(u64 t1, u32 t0)
{
	return (u32)t1 - t0;
}

BBR_INLINE u32 bbr_ticks(u64 stamp_us)
{
	return (u32)(stamp_us >> BBR_TICK_SHIFT);
}

BBR_INLINE u32 bbr_now_ticks(const struct tcp_sock *tp)
{
	return bbr_ticks(tp->tcp_mstamp);
}

/* Milliseconds, as the kernel's long-term sampling keeps them; a division, but only at the
 * boundaries of a sampling interval, never on an ordinary ACK.
 */
BBR_INLINE u32 bbr_ms(u64 stamp_us)
{
	return (u32)(stamp_us / USEC_PER_MSEC);
}

BBR_INLINE u32 bbr_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* The windowed max filter. A new maximum, or a window that saw no sample for its whole
 * length, restarts the filter; otherwise the sample may become the 2nd or 3rd choice, and
 * choices that have aged out are shifted forward.
 */
BBR_INLINE u32 bbr_minmax_running_max(struct bbr_minmax *m, u32 win, u32 t, u32 v)
{
	struct bbr_minmax_sample fresh = { .t = t, .v = v };
	u32 age;

	if (v >= m->s[0].v || t - m->s[2].t > win) {
		m->s[0] = fresh;
		m->s[1] = fresh;
		m->s[2] = fresh;
		return v;
	}
	if (v >= m->s[1].v) {
		m->s[1] = fresh;
		m->s[2] = fresh;
	} else if (v >= m->s[2].v) {
		m->s[2] = fresh;
	}

	age = t - m->s[0].t;
	if (age > win) {
		/* The best sample expired: promote the later ones. */
		m->s[0] = m->s[1];
		m->s[1] = m->s[2];
		m->s[2] = fresh;
		if (t - m->s[0].t > win) {
			m->s[0] = m->s[1];
			m->s[1] = m->s[2];
		}
	} else if (m->s[1].t == m->s[0].t && age > win / 4) {
		/* A quarter of the window passed with one sample: take a 2nd choice. */
		m->s[1] = fresh;
		m->s[2] = fresh;
	} else if (m->s[2].t == m->s[1].t && age > win / 2) {
		/* Half the window passed: take a 3rd choice. */
		m->s[2] = fresh;
	}
	return m->s[0].v;
}

BBR_INLINE void bbr_minmax_reset(struct bbr_minmax *m, u32 t, u32 v)
{
	struct bbr_minmax_sample s = { .t = t, .v = v };

	m->s[0] = s;
	m->s[1] = s;
	m->s[2] = s;
}

BBR_INLINE u32 bbr_max_bw(const struct bbr_core *b)
{
	return b->bw.s[0].v;
}

/* The bandwidth to use: the policed rate while a policer is detected, else the max filter. */
BBR_INLINE u32 bbr_bw(const struct bbr_core *b)
{
	return b->lt_use_bw ? b->lt_bw : bbr_max_bw(b);
}

BBR_INLINE u32 bbr_extra_acked(const struct bbr_core *b)
{
	return b->extra_acked[0] > b->extra_acked[1] ? b->extra_acked[0] : b->extra_acked[1];
}

/* rate (packets/us << BW_SCALE) x gain -> bytes per second, less the pacing margin. The order of
 * operations avoids u64 overflow up to ~2.9 Tbit/s at gain 2.89.
 */
BBR_INLINE u64 bbr_rate_bytes_per_sec(const struct tcp_sock *tp, u64 rate, u32 gain)
{
	rate *= tp->mss_cache;
	rate *= gain;
	rate >>= BBR_SCALE;
	rate *= USEC_PER_SEC / 100 * (100 - BBR_PACING_MARGIN_PERCENT);
	return rate >> BW_SCALE;
}

BBR_INLINE u64 bbr_bw_to_pacing_rate(struct sock *sk, u32 bw, u32 gain)
{
	return bbr_min_u64(bbr_rate_bytes_per_sec(tcp_sk(sk), bw, gain), sk->sk_max_pacing_rate);
}

/* STARTUP's pacing gain in BBR_UNIT, for the initial pacing rate. Each family's core defines it:
 * BBRv1's 2/ln 2 (bbr_core.h), BBRv3's lower one (bbr3_core.h).
 */
BBR_INLINE u32 bbr_core_startup_pacing_gain(void);

/* Before any bandwidth sample: STARTUP's gain x initial cwnd / RTT (1 ms when no RTT is known). */
BBR_INLINE void bbr_init_pacing_rate_from_rtt(struct sock *sk, struct bbr_core *b)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 rtt_us = USEC_PER_MSEC;
	u64 bw;

	if (tp->srtt_us) {
		rtt_us = bbr_max_u32(tp->srtt_us >> 3, 1);
		b->has_seen_rtt = 1;
	}
	bw = (u64)bbr_out_cwnd(sk, b) * BW_UNIT / rtt_us;
	bbr_out_set_pacing_rate(sk, b, bbr_bw_to_pacing_rate(sk, bw, bbr_core_startup_pacing_gain()));
}

BBR_INLINE void bbr_set_pacing_rate(struct sock *sk, struct bbr_core *b, u32 bw, u32 gain)
{
	u64 rate = bbr_bw_to_pacing_rate(sk, bw, gain);

	if (!b->has_seen_rtt && tcp_sk(sk)->srtt_us)
		bbr_init_pacing_rate_from_rtt(sk, b);
	/* Never slow down in STARTUP: early samples underestimate the path. */
	if (b->full_bw_reached || rate > bbr_out_pacing_rate(sk, b))
		bbr_out_set_pacing_rate(sk, b, rate);
}

BBR_INLINE u32 bbr_min_tso_segs_at(u64 pacing_rate)
{
	return pacing_rate < (BBR_MIN_TSO_RATE_BIT_PER_SEC >> 3) ? 1 : 2;
}

BBR_INLINE u32 bbr_core_min_tso_segs(const struct sock *sk)
{
	return bbr_min_tso_segs_at(sk->sk_pacing_rate);
}

/* Like tcp_tso_autosize(), ignoring the driver's GSO limit. */
BBR_INLINE u32 bbr_tso_segs_goal(struct sock *sk, const struct bbr_core *b)
{
	u64 rate = bbr_out_pacing_rate(sk, b);
	u64 bytes = rate >> sk->sk_pacing_shift;
	u32 segs;

	bytes = bbr_min_u64(bytes, GSO_LEGACY_MAX_SIZE - 1 - BBR_MAX_TCP_HEADER);
	segs = bbr_max_u32((u32)bytes / tcp_sk(sk)->mss_cache, bbr_min_tso_segs_at(rate));
	return bbr_min_u32(segs, 0x7F);
}

/* Remember the last known good cwnd, to restore after recovery or PROBE_RTT. */
BBR_INLINE void bbr_save_cwnd(struct sock *sk, struct bbr_core *b)
{
	u32 cwnd = bbr_out_cwnd(sk, b);

	if (b->prev_ca_state < TCP_CA_Recovery && b->mode != BBRKIT_PROBE_RTT)
		b->prior_cwnd = cwnd;
	else /* recovery or PROBE_RTT cut cwnd for now */
		b->prior_cwnd = bbr_max_u32(b->prior_cwnd, cwnd);
}

/* bdp = ceil(bw x min_rtt x gain), in packets. */
BBR_INLINE u32 bbr_bdp(const struct bbr_core *b, u32 bw, u32 gain)
{
	u64 w;

	/* No valid RTT sample yet (possible without timestamps after retransmitted SYNs). */
	if (b->min_rtt_us == ~0U)
		return TCP_INIT_CWND;
	w = (u64)bw * b->min_rtt_us;
	return (u32)((((w * gain) >> BBR_SCALE) + BW_UNIT - 1) / BW_UNIT);
}

/* Packets still in the network when the next skb departs, given the departure time (EDT)
 * already baked into queued skbs: inflight_at_edt - (EDT - now) x bw.
 */
BBR_INLINE u32 bbr_packets_in_net_at_edt(struct sock *sk, const struct bbr_core *b, u32 inflight_now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u64 now_ns = tp->tcp_clock_cache;
	u64 edt_ns = tp->tcp_wstamp_ns > now_ns ? tp->tcp_wstamp_ns : now_ns;
	u64 interval_us = (edt_ns - now_ns) / 1000;
	u32 interval_delivered = (u32)(((u64)bbr_bw(b) * interval_us) >> BW_SCALE);
	u32 inflight_at_edt = inflight_now;

	if (b->pacing_gain > BBR_UNIT) /* increasing inflight: count the EDT skb too */
		inflight_at_edt += bbr_tso_segs_goal(sk, b);
	if (interval_delivered >= inflight_at_edt)
		return 0;
	return inflight_at_edt - interval_delivered;
}

/* Extra cwnd for the measured ACK aggregation, capped at 100 ms of bandwidth. */
BBR_INLINE u32 bbr_aggregation_allowance(const struct bbr_core *b)
{
	u32 max_aggr_cwnd, aggr_cwnd;

	max_aggr_cwnd = (u32)(((u64)bbr_bw(b) * BBR_EXTRA_ACKED_MAX_US) / BW_UNIT);
	aggr_cwnd = (BBR_EXTRA_ACKED_GAIN * bbr_extra_acked(b)) >> BBR_SCALE;
#ifdef TWIN_MUTANT /* the twin's conformance mutation of this step; never in the BPF build */
	aggr_cwnd = TWIN_MUTANT(extra_acked) ? 0 : aggr_cwnd;
#endif
	return bbr_min_u32(aggr_cwnd, max_aggr_cwnd);
}

/* Transmission restarts after idle while app-limited: true when this event is one. PROBE_RTT's
 * check is the caller's (BBRv1 and v3 leave PROBE_RTT differently).
 */
BBR_INLINE bool bbr_restart_from_idle(struct sock *sk, struct bbr_core *b, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (event != CA_EVENT_TX_START || !tp->app_limited)
		return false;
	b->idle_restart = 1;
	b->ack_epoch_stamp = (u32)tp->tcp_mstamp;
	b->ack_epoch_acked = 0;
	/* Pace at the estimate, no need for more. */
	if (b->mode == BBRKIT_PROBE_BW)
		bbr_set_pacing_rate(sk, b, bbr_bw(b), BBR_UNIT);
	return true;
}

/* Long-term sampling is BBRv1's (bbr_core.h); its state is part of the state reset at init. */
BBR_INLINE void bbr_reset_lt_bw_sampling_interval(struct sock *sk, struct bbr_core *b)
{
	struct tcp_sock *tp = tcp_sk(sk);

	b->lt_last_stamp = bbr_ms(tp->delivered_mstamp);
	b->lt_last_delivered = tp->delivered;
	b->lt_last_lost = tp->lost;
	b->lt_rtt_cnt = 0;
}

BBR_INLINE void bbr_reset_lt_bw_sampling(struct sock *sk, struct bbr_core *b)
{
	b->lt_bw = 0;
	b->lt_use_bw = 0;
	b->lt_is_sampling = 0;
	bbr_reset_lt_bw_sampling_interval(sk, b);
}

/* The verifier refuses variable offsets into the socket, so the window half is chosen by branch. */
BBR_INLINE u16 bbr_cur_extra_acked(const struct bbr_core *b)
{
	return b->extra_acked_win_idx ? b->extra_acked[1] : b->extra_acked[0];
}

BBR_INLINE void bbr_set_extra_acked(struct bbr_core *b, u16 v)
{
	if (b->extra_acked_win_idx)
		b->extra_acked[1] = v;
	else
		b->extra_acked[0] = v;
}

/* Windowed max of the data ACKed beyond what the bandwidth estimate explains, over two windows of
 * win_rtts rounds each.
 */
BBR_INLINE void bbr_update_ack_aggregation_win(
	struct sock *sk, struct bbr_core *b, const struct rate_sample *rs, u32 win_rtts)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 epoch_us, expected_acked, extra_acked;

	if (rs->acked_sacked <= 0 || rs->delivered < 0 || rs->interval_us <= 0)
		return;

	if (b->round_start) {
		b->extra_acked_win_rtts = bbr_min_u32(0x1F, b->extra_acked_win_rtts + 1);
		if (b->extra_acked_win_rtts >= win_rtts) {
			b->extra_acked_win_rtts = 0;
			b->extra_acked_win_idx = b->extra_acked_win_idx ? 0 : 1;
			bbr_set_extra_acked(b, 0);
		}
	}

	epoch_us = bbr_stamp_delta_us(tp->delivered_mstamp, b->ack_epoch_stamp);
	expected_acked = (u32)(((u64)bbr_bw(b) * epoch_us) / BW_UNIT);

	/* New epoch when ACKs arrive slower than expected, or the epoch is very old. */
	if (b->ack_epoch_acked <= expected_acked ||
		b->ack_epoch_acked + rs->acked_sacked >= BBR_ACK_EPOCH_ACKED_RESET_THRESH) {
		b->ack_epoch_acked = 0;
		b->ack_epoch_stamp = (u32)tp->delivered_mstamp;
		expected_acked = 0;
	}

	b->ack_epoch_acked = bbr_min_u32(0xFFFFF, b->ack_epoch_acked + rs->acked_sacked);
	extra_acked = b->ack_epoch_acked - expected_acked;
	extra_acked = bbr_min_u32(extra_acked, bbr_out_cwnd(sk, b));
	if (extra_acked > bbr_cur_extra_acked(b))
		bbr_set_extra_acked(b, (u16)extra_acked);
}

/* The kernel's (v1) window: BBR_EXTRA_ACKED_WIN_RTTS rounds in every mode. */
BBR_INLINE void bbr_update_ack_aggregation(struct sock *sk, struct bbr_core *b, const struct rate_sample *rs)
{
	bbr_update_ack_aggregation_win(sk, b, rs, BBR_EXTRA_ACKED_WIN_RTTS);
}

/* STARTUP filled the pipe when bandwidth grew < 25% for three non-app-limited rounds. */
BBR_INLINE void bbr_check_full_bw_reached(struct bbr_core *b, const struct rate_sample *rs)
{
	u32 bw_thresh;

	if (b->full_bw_reached || !b->round_start || rs->is_app_limited)
		return;

	bw_thresh = (u32)(((u64)b->full_bw * BBR_FULL_BW_THRESH) >> BBR_SCALE);
	if (bbr_max_bw(b) >= bw_thresh) {
		b->full_bw = bbr_max_bw(b);
		b->full_bw_cnt = 0;
		return;
	}
	++b->full_bw_cnt;
	b->full_bw_reached = b->full_bw_cnt >= BBR_FULL_BW_CNT;
}

/* TCP zeroes icsk_ca_priv when it assigns the algorithm, but on a socket given it before connect()
 * the ACK of the SYN reaches cong_control before init (tcp_rcv_synsent_state_process acks, then
 * tcp_finish_connect inits): found by the lockstep check, which saw that ACK's PROBE_RTT entry leave
 * prior_cwnd and an armed PROBE_RTT end behind. Like the kernel's bbr_init(), everything is reset
 * but the gains, which the first ACK sets from the mode; the rest below is what is not zero.
 */
BBR_INLINE void bbr_core_reset(struct sock *sk, struct bbr_core *b)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 pacing_gain = b->pacing_gain, cwnd_gain = b->cwnd_gain;

	__builtin_memset(b, 0, sizeof(*b));
	b->pacing_gain = pacing_gain;
	b->cwnd_gain = cwnd_gain;

	bbr_out_set_ssthresh(sk, b, TCP_INFINITE_SSTHRESH);
	b->next_rtt_delivered = tp->delivered; /* the first round ends with data sent from now on */
	b->prev_ca_state = TCP_CA_Open;
	b->min_rtt_us = tp->rtt_min.s[0].v; /* tcp_min_rtt(): ~0U until the first sample */
	/* tcp_mstamp is stale on a socket that switches algorithm after an idle period. */
	b->min_rtt_stamp = bbr_ticks(bbr_clock_us());
	bbr_minmax_reset(&b->bw, 0, 0);
	bbr_init_pacing_rate_from_rtt(sk, b);
	bbr_reset_lt_bw_sampling(sk, b);
	b->mode = BBRKIT_STARTUP; /* the gains follow from the mode at the first ACK, as in the kernel */
	b->ack_epoch_stamp = (u32)tp->tcp_mstamp;
}

BBR_INLINE u32 bbr_core_sndbuf_expand(struct sock *sk)
{
	(void)sk;
	return 3; /* BBR may slow-start even during recovery: provision 3 x cwnd */
}

/* The substrate's part of a state record; the variant's part, addresses and time are the caller's. */
BBR_INLINE void bbr_fill_flow_common(
	struct bbrkit_flow *f, struct sock *sk, const struct bbr_core *b, u8 event)
{
	struct tcp_sock *tp = tcp_sk(sk);

	f->event = event;
	f->mode = b->mode;
	f->ca_state = inet_csk(sk)->icsk_ca_state;
	f->cycle_idx = b->cycle_idx;
	f->flags = (b->full_bw_reached ? BBRKIT_F_FULL_BW_REACHED : 0) |
		(b->lt_use_bw ? BBRKIT_F_LT_USE_BW : 0) |
		(b->packet_conservation ? BBRKIT_F_PACKET_CONSERVATION : 0) |
		(b->idle_restart ? BBRKIT_F_IDLE_RESTART : 0) | (tp->app_limited ? BBRKIT_F_APP_LIMITED : 0);
	f->pacing_gain = b->pacing_gain;
	f->cwnd_gain = b->cwnd_gain;
	f->bw = bbr_bw(b);
	f->pacing_rate = bbr_out_pacing_rate(sk, b);
	f->min_rtt_us = b->min_rtt_us;
	f->rtt_us = tp->rack.rtt_us;
	f->srtt_us = tp->srtt_us >> 3;
	f->cwnd = bbr_out_cwnd(sk, b);
	f->inflight = bbr_packets_in_flight(tp);
	f->round = b->rtt_cnt;
	f->mss = tp->mss_cache;
	f->lost = tp->lost;
	f->retrans = tp->total_retrans;
	f->delivered = tp->delivered;
	f->prior_cwnd = b->prior_cwnd;
	f->max_bw = bbr_max_bw(b);
	f->full_bw = b->full_bw;
	f->full_bw_cnt = b->full_bw_cnt;
	f->extra_acked = bbr_extra_acked(b);
}

#endif /* BBR_SUBSTRATE_H */
