// SPDX-License-Identifier: GPL-2.0
/* bbr_lockstep: a test-only congestion control that checks bbr1 against the kernel's own BBR,
 * callback by callback, on live connections.
 *
 * On every callback the kernel's BBR decides: this program calls the kfunc of the same name
 * (bbr_init, bbr_main, ... from net/ipv4/tcp_bbr.c, exported to BPF congestion controls like in
 * the kernel's selftest tcp_ca_kfunc.c), which keeps its struct bbr in icsk_ca_priv and sets cwnd
 * and pacing rate on the socket. Beside it, bbrkit's core (bpf/bbr_core.h with bbr1's hooks) runs
 * on a shadow state in socket storage, built with BBR_CUSTOM_OUTPUT so that its decisions land in
 * a shadow result instead of the socket. Both see the same inputs: the socket values the kernel's
 * BBR is about to overwrite (cwnd, pacing rate, ssthresh, app_limited, pacing status) are saved
 * first and handed to the shadow as its starting result; everything else the core reads, the
 * kernel's BBR does not write. The shadow's one random draw (the starting phase of the gain cycle)
 * is the kernel's, read back from its struct bbr.
 *
 * Then the two decisions and models are compared field by field (lockstep.h, enum ls_field; the
 * two state layouts differ, so each field is mapped explicitly): every field of the kernel's
 * struct bbr that the re-sync below copies, so that a re-sync never silently repairs state no
 * comparison looked at. The two stamps kept in different clocks are compared as times relative
 * to the comparison, within both clocks' rounding. A difference is counted and recorded with both
 * states, and the shadow is re-synced from the kernel's state so that one difference does not
 * cascade; each record carries the socket's callback sequence number, so a difference that
 * outlives its re-sync shows as records with consecutive numbers. The kernel's stamps in jiffies
 * are converted to the core's 1024 us ticks on re-sync; that conversion, like the core's tick
 * clock itself, is exact only to a jiffy.
 *
 * Never part of bbrctl: it lives outside bpf/ so that the loader's algorithm table does not see
 * it, and only bench/kernelbbr/lockstep/lockstep.c registers it, through a link that dies with that process.
 */
#define BBR_CUSTOM_OUTPUT
#include "bbr1_hooks.h"
#include "cc_struct_ops.h"
#include "kernel_bbr_kfuncs.h"
#include "lockstep.h"

extern unsigned int CONFIG_HZ __kconfig;

/* The kernel's struct bbr (net/ipv4/tcp_bbr.c), the fields read here. Declared here rather than
 * taken from vmlinux.h, which lacks it when BBR is a module: CO-RE (the ___ suffix is ignored)
 * relocates every access to the running kernel's layout at load time.
 */
struct bbr___kernel {
	u32 min_rtt_us;
	u32 min_rtt_stamp;	  /* jiffies */
	u32 probe_rtt_done_stamp; /* jiffies */
	struct minmax bw;
	u32 rtt_cnt;
	u32 next_rtt_delivered;
	u64 cycle_mstamp;
	u32 mode : 3, prev_ca_state : 3, packet_conservation : 1, round_start : 1, idle_restart : 1,
		probe_rtt_round_done : 1, unused : 13, lt_is_sampling : 1, lt_rtt_cnt : 7, lt_use_bw : 1;
	u32 lt_bw;
	u32 lt_last_delivered;
	u32 lt_last_stamp; /* ms */
	u32 lt_last_lost;
	u32 pacing_gain : 10, cwnd_gain : 10, full_bw_reached : 1, full_bw_cnt : 2, cycle_idx : 3,
		has_seen_rtt : 1, unused_b : 5;
	u32 prior_cwnd;
	u32 full_bw;
	u64 ack_epoch_mstamp;
	u16 extra_acked[2];
	u32 ack_epoch_acked : 20, extra_acked_win_rtts : 5, extra_acked_win_idx : 1, unused_c : 6;
} __attribute__((preserve_access_index));

#define LS_RECORDS_BYTES (1024 * 1024) /* ~5000 mismatch records between two polls */

char _license[] SEC("license") = "GPL";

/* The socket values the kernel's BBR writes: the shadow's result, starting from the inputs. */
struct ls_out {
#define LS_OUT_MEMBER(type, member, field, socket) type member;
	LS_OUTPUTS(LS_OUT_MEMBER)
#undef LS_OUT_MEMBER
};

struct ls_shadow {
	struct bbr_core core; /* first: the accessors below find the rest from the core's address */
	struct ls_out out;
	struct ls_out in;     /* the inputs, saved before the kernel's BBR overwrites them */
	u32 random;	      /* what the core's random draw returns: the kernel's choice */
	struct ls_state k, s; /* the two sides after the callback (kept here: the stack is too small) */
	u64 seq;	      /* state-changing callbacks compared on this socket */
	u32 initialized;      /* init ran on this socket before (the CC was switched away and back) */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ls_shadow);
} shadows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, LS_RECORDS_BYTES);
} records SEC(".maps");

struct ls_counters counters;

BBR_INLINE struct ls_shadow *ls_shadow_of(const struct bbr_core *b)
{
	return (struct ls_shadow *)b;
}

BBR_INLINE u32 bbr_out_cwnd(const struct sock *sk, const struct bbr_core *b)
{
	return ls_shadow_of(b)->out.cwnd;
}

BBR_INLINE void bbr_out_set_cwnd(struct sock *sk, struct bbr_core *b, u32 cwnd)
{
	ls_shadow_of(b)->out.cwnd = cwnd;
}

BBR_INLINE u64 bbr_out_pacing_rate(const struct sock *sk, const struct bbr_core *b)
{
	return ls_shadow_of(b)->out.pacing_rate;
}

BBR_INLINE void bbr_out_set_pacing_rate(struct sock *sk, struct bbr_core *b, u64 rate)
{
	ls_shadow_of(b)->out.pacing_rate = rate;
}

BBR_INLINE u32 bbr_out_ssthresh(const struct sock *sk, const struct bbr_core *b)
{
	return ls_shadow_of(b)->out.ssthresh;
}

BBR_INLINE void bbr_out_set_ssthresh(struct sock *sk, struct bbr_core *b, u32 ssthresh)
{
	ls_shadow_of(b)->out.ssthresh = ssthresh;
}

BBR_INLINE void bbr_out_set_app_limited(struct sock *sk, struct bbr_core *b, u32 app_limited)
{
	ls_shadow_of(b)->out.app_limited = app_limited;
}

BBR_INLINE void bbr_out_request_pacing(struct sock *sk, struct bbr_core *b)
{
	if (ls_shadow_of(b)->out.pacing_status == SK_PACING_NONE)
		ls_shadow_of(b)->out.pacing_status = SK_PACING_NEEDED;
}

BBR_INLINE u32 bbr_out_random(struct sock *sk, struct bbr_core *b)
{
	return ls_shadow_of(b)->random;
}

BBR_INLINE struct bbr___kernel *ls_kernel_bbr(struct sock *sk)
{
	return (struct bbr___kernel *)inet_csk(sk)->icsk_ca_priv;
}

BBR_INLINE void ls_save_inputs(struct sock *sk, struct ls_out *in)
{
	struct tcp_sock *tp = tcp_sk(sk);

#define LS_SAVE(type, member, field, socket) in->member = socket;
	LS_OUTPUTS(LS_SAVE)
#undef LS_SAVE
}

/* Before the shadow runs: its result starts from the saved inputs, and a random draw returns
 * the value that puts the gain cycle where the kernel's draw put it (the draw is followed by one
 * advance: cycle_idx = CYCLE_LEN - 1 - r % BBR_CYCLE_RAND, then + 1).
 */
BBR_INLINE void ls_prepare(struct ls_shadow *s, struct bbr___kernel *k)
{
	s->out = s->in;
	s->random = CYCLE_LEN - 1 - ((k->cycle_idx - 1) & (CYCLE_LEN - 1));
}

/* The moment of a comparison on both sides' clocks, and the kernel's jiffy. */
struct ls_now {
	u32 jiffies;
	u32 ticks;
	u32 jiffy_us;
};

BBR_INLINE void ls_now(struct ls_now *now)
{
	now->jiffies = (u32)bpf_jiffies64();
	now->ticks = bbr_ticks(bbr_clock_us());
	now->jiffy_us = USEC_PER_SEC / CONFIG_HZ;
}

/* A stamp minus now, in us: jiffies (kernel) or 1024 us ticks (core), each exact to its unit. */
BBR_INLINE s64 ls_jiffies_rel_us(u32 stamp, const struct ls_now *now)
{
	return (s64)(s32)(stamp - now->jiffies) * now->jiffy_us;
}

BBR_INLINE s64 ls_ticks_rel_us(u32 stamp, const struct ls_now *now)
{
	return (s64)(s32)(stamp - now->ticks) << BBR_TICK_SHIFT;
}

BBR_INLINE void ls_kernel_state(
	struct sock *sk, struct bbr___kernel *k, struct ls_state *st, const struct ls_now *now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 armed = k->probe_rtt_done_stamp != 0;

#define LS_FROM_SOCKET(type, member, field, socket) st->member = socket;
	LS_OUTPUTS(LS_FROM_SOCKET)
#undef LS_FROM_SOCKET
#define LS_FROM_KERNEL(type, member, field, kernel, core) st->member = k->kernel;
	LS_MODEL(LS_FROM_KERNEL)
#undef LS_FROM_KERNEL
	st->min_rtt_stamp_us = ls_jiffies_rel_us(k->min_rtt_stamp, now);
	st->probe_rtt_done_us = armed * ls_jiffies_rel_us(k->probe_rtt_done_stamp, now);
	st->probe_rtt_armed = armed;
	st->min_tso_segs = 0;
	st->sndbuf_expand = 0;
}

BBR_INLINE void ls_shadow_state(const struct ls_shadow *s, struct ls_state *st, const struct ls_now *now)
{
	const struct bbr_core *b = &s->core;
	u32 armed = b->probe_rtt_done_stamp != 0;

#define LS_FROM_RESULT(type, member, field, socket) st->member = s->out.member;
	LS_OUTPUTS(LS_FROM_RESULT)
#undef LS_FROM_RESULT
#define LS_FROM_CORE(type, member, field, kernel, core) st->member = b->core;
	LS_MODEL(LS_FROM_CORE)
#undef LS_FROM_CORE
	st->min_rtt_stamp_us = ls_ticks_rel_us(b->min_rtt_stamp, now);
	st->probe_rtt_done_us = armed * ls_ticks_rel_us(b->probe_rtt_done_stamp, now);
	st->probe_rtt_armed = armed;
	st->min_tso_segs = 0;
	st->sndbuf_expand = 0;
}

/* 1 when x != 0, without a branch: the verifier walks each branch of a 16-field comparison
 * separately, and their combinations would exceed its budget. The empty asm hides -x from clang,
 * which would otherwise turn the arithmetic back into a compare and branch.
 */
BBR_INLINE u32 ls_nz(u64 x)
{
	u64 neg = 0 - x;

	asm volatile("" : "+r"(neg));
	return (u32)((x | neg) >> 63);
}

/* 1 when |d| > slack, branch-free like ls_nz. */
BBR_INLINE u32 ls_beyond(s64 d, s64 slack)
{
	s64 sign = d >> 63;

	asm volatile("" : "+r"(sign));
	return (u32)((u64)(slack - ((d ^ sign) - sign)) >> 63);
}

/* How far apart the two sides' stamps of one event may read, in us: each clock floors to its unit
 * (a jiffy, a 1024 us tick), a re-sync's conversion of a jiffies stamp to ticks floors once more, and
 * jiffies follow a timer tick that can come late (on this VM the stamps read up to 1.7 ms past the
 * rounding apart, on callbacks right after an idle CPU woke): a jiffy for that.
 */
BBR_INLINE s64 ls_stamp_slack_us(const struct ls_now *now)
{
	return 2 * now->jiffy_us + 2 * (1 << BBR_TICK_SHIFT);
}

/* The end of PROBE_RTT is a stamp plus 200 ms, which the core rounds up to whole ticks. */
#define LS_PROBE_RTT_ROUNDING_US ((BBR_PROBE_RTT_MODE_TICKS << BBR_TICK_SHIFT) - 200 * USEC_PER_MSEC)

BBR_INLINE u32 ls_diff(const struct ls_state *a, const struct ls_state *b, const struct ls_now *now)
{
	s64 slack = ls_stamp_slack_us(now);
	u32 m = 0;

#define LS_DIFF(type, member, field, ...) m |= ls_nz(a->member ^ b->member) << LS_F_##field;
	LS_OUTPUTS(LS_DIFF)
	LS_MODEL(LS_DIFF)
#undef LS_DIFF
	m |= ls_beyond(a->min_rtt_stamp_us - b->min_rtt_stamp_us, slack) << LS_F_MIN_RTT_STAMP;
	m |= (ls_nz(a->probe_rtt_armed ^ b->probe_rtt_armed) |
		     ls_beyond(a->probe_rtt_done_us - b->probe_rtt_done_us, slack + LS_PROBE_RTT_ROUNDING_US))
		<< LS_F_PROBE_RTT_STAMP;
	m |= ls_nz(a->min_tso_segs ^ b->min_tso_segs) << LS_F_MIN_TSO_SEGS;
	m |= ls_nz(a->sndbuf_expand ^ b->sndbuf_expand) << LS_F_SNDBUF_EXPAND;
	return m;
}

/* A kernel stamp in jiffies as a core stamp in 1024 us ticks, through the present moment. */
BBR_INLINE u32 ls_jiffies_to_ticks(u32 stamp, u32 now_jiffies, u32 now_ticks)
{
	s64 us = (s64)(s32)(stamp - now_jiffies) * (USEC_PER_SEC / CONFIG_HZ);

	return now_ticks + (u32)(us >> BBR_TICK_SHIFT);
}

/* Copy the kernel's whole model into the shadow, field by field; the two jiffies stamps through the clocks. */
BBR_INLINE void ls_resync(struct ls_shadow *s, struct bbr___kernel *k)
{
	struct bbr_core *b = &s->core;
	u32 now_j = (u32)bpf_jiffies64(), now_t = bbr_ticks(bbr_clock_us());

#define LS_COPY(type, member, field, kernel, core) b->core = k->kernel;
	LS_MODEL(LS_COPY)
#undef LS_COPY
	b->min_rtt_stamp = ls_jiffies_to_ticks(k->min_rtt_stamp, now_j, now_t);
	b->probe_rtt_done_stamp = k->probe_rtt_done_stamp
		? (ls_jiffies_to_ticks(k->probe_rtt_done_stamp, now_j, now_t) ?: 1)
		: 0;
}

BBR_INLINE void ls_count(u64 *counter)
{
	__sync_fetch_and_add(counter, 1);
}

/* Keep the widest gap between agreeing min_rtt stamps (racy across CPUs: a lost maximum only
 * understates the margin for one comparison).
 */
BBR_INLINE void ls_widest_gap(const struct ls_state *k, const struct ls_state *s, u32 fields)
{
	s64 d = k->min_rtt_stamp_us - s->min_rtt_stamp_us;
	u64 gap = d < 0 ? -d : d;

	if (!(fields & (1U << LS_F_MIN_RTT_STAMP)) && gap > counters.stamp_gap_us)
		counters.stamp_gap_us = gap;
}

/* Compare after a callback; on a difference count it, record both states and re-sync. For
 * ssthresh and undo_cwnd the decision is the return value (TCP stores it afterwards): kret and
 * sret, the two sides' returns, stand in for ssthresh and cwnd there; for min_tso_segs and
 * sndbuf_expand they are compared as fields of their own.
 */
BBR_INLINE void ls_compare(
	struct sock *sk, struct ls_shadow *s, u8 callback, u8 arg, u8 mode_before, u32 kret, u32 sret)
{
	struct bbr___kernel *k = ls_kernel_bbr(sk);
	struct ls_record *r;
	struct ls_now now;
	u32 fields, i;

	ls_now(&now);
	ls_kernel_state(sk, k, &s->k, &now);
	ls_shadow_state(s, &s->s, &now);
	if (callback == LS_CB_SSTHRESH) {
		s->k.ssthresh = kret;
		s->s.ssthresh = sret;
	} else if (callback == LS_CB_UNDO) {
		s->k.cwnd = kret;
		s->s.cwnd = sret;
	} else if (callback == LS_CB_MIN_TSO_SEGS) {
		s->k.min_tso_segs = kret;
		s->s.min_tso_segs = sret;
	} else if (callback == LS_CB_SNDBUF_EXPAND) {
		s->k.sndbuf_expand = kret;
		s->s.sndbuf_expand = sret;
	}
	fields = ls_diff(&s->k, &s->s, &now);
	/* min_tso_segs and sndbuf_expand change no state, and the state was compared after the callback
	 * before them: only their returns are compared (they run thousands of times per second, each a
	 * chance for a late jiffy to pass for a state difference).
	 */
	if (callback >= LS_CB_MIN_TSO_SEGS)
		fields &= ~LS_STATE_FIELDS;
	else
		ls_widest_gap(&s->k, &s->s, fields);

	/* Only callbacks that may change state count: a run of consecutive numbers in the records
	 * is a difference that came back after each re-sync.
	 */
	if (callback < LS_CB_MIN_TSO_SEGS)
		s->seq++;
	if (callback < LS_CB_COUNT)
		ls_count(&counters.compared[callback]);
	if (callback == LS_CB_ACK && mode_before < LS_MODES)
		ls_count(&counters.acks_by_mode[mode_before]);
	if (!fields)
		return;

	if (callback < LS_CB_COUNT)
		ls_count(&counters.mismatched[callback]);
	if (callback == LS_CB_ACK && mode_before < LS_MODES)
		ls_count(&counters.mismatched_acks_by_mode[mode_before]);
	for (i = 0; i < LS_F_COUNT; i++)
		__sync_fetch_and_add(&counters.field[i], (fields >> i) & 1);

	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (r) {
		r->t_ns = bpf_ktime_get_ns();
		r->seq = s->seq;
		r->fields = fields;
		r->delivered = tcp_sk(sk)->delivered;
		r->srtt_us = tcp_sk(sk)->srtt_us >> 3;
		r->jiffy_us = now.jiffy_us;
		r->sport = sk->__sk_common.skc_num;
		r->dport = bpf_ntohs(sk->__sk_common.skc_dport);
		r->callback = callback;
		r->arg = arg;
		r->ca_state = inet_csk(sk)->icsk_ca_state;
		r->mode_before = mode_before;
		r->kernel = s->k;
		r->shadow = s->s;
		bpf_ringbuf_submit(r, 0);
	} else {
		ls_count(&counters.lost_records);
	}
	if (fields & LS_STATE_FIELDS) {
		ls_count(&counters.resyncs);
		ls_resync(s, k);
	}
}

/* Branch-free like the comparison, for the same reason. */
BBR_INLINE void ls_cover(struct sock *sk, const struct rate_sample *rs)
{
	struct bbr___kernel *k = ls_kernel_bbr(sk);
	u8 ca_state = inet_csk(sk)->icsk_ca_state;

	__sync_fetch_and_add(&counters.covered[LS_COV_RECOVERY], 1 - ls_nz(ca_state ^ TCP_CA_Recovery));
	__sync_fetch_and_add(&counters.covered[LS_COV_LOSS], 1 - ls_nz(ca_state ^ TCP_CA_Loss));
	__sync_fetch_and_add(&counters.covered[LS_COV_CONSERVATION], k->packet_conservation);
	__sync_fetch_and_add(&counters.covered[LS_COV_LT_SAMPLING], k->lt_is_sampling);
	__sync_fetch_and_add(&counters.covered[LS_COV_LT_USE_BW], k->lt_use_bw);
	__sync_fetch_and_add(&counters.covered[LS_COV_APP_LIMITED], ls_nz(rs->is_app_limited));
}

/* Where the kernel's min_rtt window stands after an ACK that follows init (racy across flows: the
 * times are for one-flow runs, where one CPU at a time handles the socket's ACKs). An ACK before init
 * finds the window stamped 0, long expired: the kernel's BBR enters PROBE_RTT there, and init undoes it.
 */
BBR_INLINE void ls_window(const struct bbr___kernel *k, u32 min_rtt_before_us)
{
	if (!counters.first_ack_ns)
		counters.first_ack_ns = bpf_ktime_get_ns();
	if (counters.probe_rtt_entered_ns)
		return;
	if (k->mode == BBRKIT_PROBE_RTT)
		counters.probe_rtt_entered_ns = bpf_ktime_get_ns();
	else if (k->min_rtt_us < min_rtt_before_us)
		counters.min_rtt_lowered_ns = bpf_ktime_get_ns();
}

/* The shadow is created, zeroed like the private area TCP zeroes when it assigns the algorithm, by
 * the first callback, which need not be init: on a socket given its algorithm before connect(), the
 * ACK of the SYN reaches cong_control before init (tcp_rcv_synsent_state_process acks, then
 * tcp_finish_connect inits), and what that ACK leaves, init does not all reset (the gains).
 */
BBR_INLINE struct ls_shadow *ls_get(struct sock *sk)
{
	struct ls_shadow *s = bpf_sk_storage_get(&shadows, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	if (!s)
		ls_count(&counters.no_shadow);
	return s;
}

BBR_INLINE void ls_init(struct sock *sk)
{
	struct ls_shadow *s = ls_get(sk);

	if (!s) {
		bbr_init(sk);
		return;
	}
	ls_save_inputs(sk, &s->in);
	bbr_init(sk);
	/* Switched back to this algorithm: TCP zeroed the private area again (the storage outlived the
	 * switch away); otherwise the shadow holds what any callbacks before init left, as the kernel's does.
	 */
	if (s->initialized)
		__builtin_memset(&s->core, 0, sizeof(s->core));
	s->initialized = 1;
	ls_prepare(s, ls_kernel_bbr(sk));
	bbr_core_init(sk, &s->core);
	ls_compare(sk, s, LS_CB_INIT, 0, BBRKIT_STARTUP, 0, 0);
}

BBR_INLINE void ls_main(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	struct ls_shadow *s = ls_get(sk);
	u8 mode = ls_kernel_bbr(sk)->mode;
	u32 min_rtt_us;

	if (!s) {
		bbr_main(sk, ack, flag, rs);
		return;
	}
	ls_save_inputs(sk, &s->in);
	min_rtt_us = ls_kernel_bbr(sk)->min_rtt_us;
	bbr_main(sk, ack, flag, rs);
	if (s->initialized)
		ls_window(ls_kernel_bbr(sk), min_rtt_us);
	ls_prepare(s, ls_kernel_bbr(sk));
	bbr_core_main(sk, &s->core, rs);
	ls_compare(sk, s, LS_CB_ACK, 0, mode, 0, 0);
	ls_cover(sk, rs);
}

BBR_INLINE void ls_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	struct ls_shadow *s = ls_get(sk);
	u8 mode = ls_kernel_bbr(sk)->mode;

	if (!s) {
		bbr_cwnd_event(sk, event);
		return;
	}
	ls_save_inputs(sk, &s->in);
	bbr_cwnd_event(sk, event);
	ls_prepare(s, ls_kernel_bbr(sk));
	bbr_core_cwnd_event(sk, &s->core, event);
	ls_compare(sk, s, LS_CB_CWND_EVENT, event, mode, 0, 0);
	if (event == CA_EVENT_TX_START && ls_kernel_bbr(sk)->idle_restart)
		ls_count(&counters.covered[LS_COV_IDLE_RESTART]);
}

BBR_INLINE u32 ls_ssthresh(struct sock *sk)
{
	struct ls_shadow *s = ls_get(sk);
	u8 mode = ls_kernel_bbr(sk)->mode;
	u32 ret;

	if (!s)
		return bbr_ssthresh(sk);
	ls_save_inputs(sk, &s->in);
	ret = bbr_ssthresh(sk);
	ls_prepare(s, ls_kernel_bbr(sk));
	ls_compare(sk, s, LS_CB_SSTHRESH, 0, mode, ret, bbr_core_ssthresh(sk, &s->core));
	return ret;
}

BBR_INLINE u32 ls_undo_cwnd(struct sock *sk)
{
	struct ls_shadow *s = ls_get(sk);
	u8 mode = ls_kernel_bbr(sk)->mode;
	u32 ret;

	if (!s)
		return bbr_undo_cwnd(sk);
	ls_save_inputs(sk, &s->in);
	ret = bbr_undo_cwnd(sk);
	ls_prepare(s, ls_kernel_bbr(sk));
	ls_compare(sk, s, LS_CB_UNDO, 0, mode, ret, bbr_core_undo_cwnd(sk, &s->core));
	return ret;
}

BBR_INLINE void ls_set_state(struct sock *sk, u8 new_state)
{
	struct ls_shadow *s = ls_get(sk);
	u8 mode = ls_kernel_bbr(sk)->mode;

	if (!s) {
		bbr_set_state(sk, new_state);
		return;
	}
	ls_save_inputs(sk, &s->in);
	bbr_set_state(sk, new_state);
	ls_prepare(s, ls_kernel_bbr(sk));
	bbr_core_set_state(sk, &s->core, new_state);
	ls_compare(sk, s, LS_CB_SET_STATE, new_state, mode, 0, 0);
	if (new_state == TCP_CA_Loss)
		ls_count(&counters.covered[LS_COV_RTO]);
}

BBR_INLINE u32 ls_sndbuf_expand(struct sock *sk)
{
	struct ls_shadow *s = ls_get(sk);
	u8 mode = ls_kernel_bbr(sk)->mode;
	u32 ret;

	if (!s)
		return bbr_sndbuf_expand(sk);
	ls_save_inputs(sk, &s->in);
	ret = bbr_sndbuf_expand(sk);
	ls_prepare(s, ls_kernel_bbr(sk));
	ls_compare(sk, s, LS_CB_SNDBUF_EXPAND, 0, mode, ret, bbr1_sndbuf_expand(sk));
	return ret;
}

BBR_INLINE u32 ls_min_tso_segs(struct sock *sk)
{
	struct ls_shadow *s = ls_get(sk);
	u8 mode = ls_kernel_bbr(sk)->mode;
	u32 ret;

	if (!s)
		return bbr_min_tso_segs(sk);
	ls_save_inputs(sk, &s->in);
	ret = bbr_min_tso_segs(sk);
	ls_prepare(s, ls_kernel_bbr(sk));
	ls_compare(sk, s, LS_CB_MIN_TSO_SEGS, 0, mode, ret, bbr1_min_tso_segs(sk));
	return ret;
}

/* The eight programs and the table, written as for bbrkit's algorithms and the floor. */
#define LOCKSTEP(fn) ls_##fn
CC_STRUCT_OPS(lockstep, "bbr_lockstep", LOCKSTEP);
