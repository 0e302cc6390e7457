// SPDX-License-Identifier: GPL-2.0
/* The v3 differential: bbr3's host build (bpf/bbr3.bpf.c, the BPF programs' C) and a reference
 * (Google's v3 tcp_bbr.c behind tests/diff/v3diff_ref.h, loaded from a shared object built outside
 * the project) on one packet-level sender: the twin's path (bench/twin/twin_path.h). Each
 * tcp_congestion_ops member the sender calls on bbr3 is called on the reference too, with the
 * sender's state as bbr3 saw it, and each skb's send record and loss mark reach the reference where
 * v3's kernel hooks them (tcp_rate_skb_sent(), tcp_mark_skb_lost() -> skb_marked_lost). After every
 * ACK and every RTO both sides' decisions (inflight_hi/lo, mode, PROBE_BW phase, bw_probe_samples,
 * loss_in_cycle) are diffed against their own previous state, and the two event lists compared.
 *
 * One side leads: its cwnd, pacing rate and app-limited mark drive the sender (--lead); both then see
 * the same flight. After the first divergence the two models evolve apart, so the first divergence
 * of each run is the finding and later counts are consequences as much as causes.
 *
 * Usage: V3DIFF_REF=/path/v3_ref.so bbrkit-v3diff [--lead v3|bbr3] [--log] [--json] [--ack-time]
 *        [--scenario steady|loss_1|loss_5|bw_step|burst] [--seeds N]
 * --ack-time runs bbr3 without its per-packet path (as when bbrctl cannot attach it); --seeds: runs
 * of each random-loss scenario (default 3).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>

#include "twin.h"
static enum twin_mutation tw_mutation;
#define TWIN_MUTANT(name) (tw_mutation == TWIN_MUT_##name)
#include "bbr3.bpf.c"
#include "v3diff_ref.h"

/* The sender's calls into the congestion control go to both sides (wrappers defined below). */
static void dv_init(struct sock *sk);
static void dv_ack(struct sock *sk, const struct rate_sample *rs);
static u32 dv_ssthresh(struct sock *sk);
static void dv_set_state(struct sock *sk, u8 new_state);
static u32 dv_undo_cwnd(struct sock *sk);
static void dv_cwnd_event(struct sock *sk, enum tcp_ca_event event);
#define bbr3_init dv_init
#define bbrkit_on_ack dv_ack
#define bbr3_ssthresh dv_ssthresh
#define bbr3_set_state dv_set_state
#define bbrkit_on_undo_cwnd dv_undo_cwnd
#define bbrkit_on_cwnd_event dv_cwnd_event
#include "twin_path.h"
#undef bbr3_init
#undef bbrkit_on_ack
#undef bbr3_ssthresh
#undef bbr3_set_state
#undef bbrkit_on_undo_cwnd
#undef bbrkit_on_cwnd_event

#define DV_MAX_PACKETS 600000ULL   /* transmits of one run: 30 s at 10 packets/ms, with room */
#define DV_MAX_EVENTS 8		   /* decisions one ACK can make on one side */
#define DV_CONTEXT_STEPS 6	   /* ACKs printed before a first divergence */
#define DV_RANDOM_PERIOD_US 100000 /* see dv_reseed() */
/* The same decision on both sides this close is shifted, not missing: bbr3 keeps PROBE_RTT's clock
 * in 1024 us ticks where v3 has jiffies, so its entry and exit may fall an ACK or a few apart.
 */
#define DV_SHIFT_US 10000
#define DV_PENDING 64

static void host_trace_record(const struct bbrkit_flow *f)
{
}

static const struct v3diff_ref_ops *ref;
static bool dv_lead_v3, dv_log;

/* What v3 keeps per skb at transmit (google/bbr v3: tcp_set_tx_in_flight() in tcp_write_xmit() for
 * new data, tx.lost in tcp_rate_skb_sent() at every transmit).
 */
static u32 dv_tx_in_flight[DV_MAX_PACKETS], dv_tx_lost[DV_MAX_PACKETS];
static u8 dv_tx_app_limited[DV_MAX_PACKETS];

/* Both sides draw the same random number for any call in the same 100 ms of the clock (the twin
 * reseeds per call), so a decision taken one ACK apart on the two sides (PROBE_RTT's tick against
 * jiffy) still picks the same probe wait.
 */
static void dv_reseed(void)
{
	u64 x = (tw_tp.tcp_mstamp / DV_RANDOM_PERIOD_US + 1) * 0x9E3779B97F4A7C15ULL ^ tw_cfg->seed;

	host_random_value = (u32)((x ^ (x >> 29)) * 0xBF58476D1CE4E5B9ULL >> 32);
}

static struct v3diff_sock dv_sock(void)
{
	dv_reseed();
	return (struct v3diff_sock){ .now_us = tw_tp.tcp_mstamp,
		.delivered_mstamp = tw_tp.delivered_mstamp,
		.pacing_rate = tw_sk->sk_pacing_rate,
		.snd_cwnd = tw_tp.snd_cwnd,
		.delivered = tw_tp.delivered,
		.delivered_ce = tw_tp.delivered_ce,
		.lost = tw_tp.lost,
		.packets_out = tw_tp.packets_out,
		.sacked_out = tw_tp.sacked_out,
		.lost_out = tw_tp.lost_out,
		.retrans_out = tw_tp.retrans_out,
		.app_limited = tw_tp.app_limited,
		.srtt_us = tw_tp.srtt_us,
		.min_rtt_us = tw_tp.rtt_min.s[0].v,
		.mss = TWIN_MSS,
		.random = host_random_value,
		.is_cwnd_limited = tw_tp.is_cwnd_limited,
		.ca_state = tw_tp.inet_conn.icsk_ca_state };
}

/* With v3 leading, its outputs replace bbr3's in the sender after every call. */
static void dv_follow(void)
{
	struct v3diff_state v;

	if (!dv_lead_v3)
		return;
	ref->state(&v);
	tw_tp.snd_cwnd = v.cwnd;
	tw_sk->sk_pacing_rate = v.pacing_rate;
	tw_tp.app_limited = v.app_limited;
}

/* The sender's call of a member, on both sides: bbr3's (`ours`) and the reference's (`theirs`, with
 * the sender's state as bbr3 saw it, in `v`), then the leader's outputs drive the sender.
 */
#define DV_BOTH_VOID(name, params, ours, theirs) \
	static void name params \
	{ \
		struct v3diff_sock v = dv_sock(); \
		ours; \
		theirs; \
		dv_follow(); \
	}
#define DV_BOTH_U32(name, params, ours, theirs) \
	static u32 name params \
	{ \
		struct v3diff_sock v = dv_sock(); \
		u32 a = ours, b = theirs; \
		dv_follow(); \
		return dv_lead_v3 ? b : a; \
	}

DV_BOTH_VOID(dv_init, (struct sock * sk), bbr3_init(sk), ref->init(&v))
DV_BOTH_VOID(dv_set_state, (struct sock * sk, u8 new_state), bbr3_set_state(sk, new_state),
	ref->set_state(&v, new_state))
DV_BOTH_VOID(dv_cwnd_event, (struct sock * sk, enum tcp_ca_event event), bbrkit_on_cwnd_event(sk, event),
	ref->cwnd_event(&v, event))
DV_BOTH_U32(dv_ssthresh, (struct sock * sk), bbr3_ssthresh(sk), ref->ssthresh(&v))
DV_BOTH_U32(dv_undo_cwnd, (struct sock * sk), bbrkit_on_undo_cwnd(sk), ref->undo_cwnd(&v))

/* cong_control, with v3's rs->tx_in_flight and rs->lost from the ACKed skb's send record (one ACK per
 * packet: the packet ending at rs->last_end_seq).
 */
static void dv_ack(struct sock *sk, const struct rate_sample *rs)
{
	struct v3diff_sock v = dv_sock();
	u32 i = rs->last_end_seq / TWIN_MSS - 1;
	struct v3diff_rs r = { .prior_mstamp = rs->prior_mstamp,
		.prior_delivered = rs->prior_delivered,
		.delivered = rs->delivered,
		.interval_us = rs->interval_us,
		.rtt_us = rs->rtt_us,
		.losses = rs->losses,
		.acked_sacked = rs->acked_sacked,
		.prior_in_flight = rs->prior_in_flight,
		.tx_in_flight = dv_tx_in_flight[i],
		.lost = (s32)(tw_tp.lost - dv_tx_lost[i]),
		.is_app_limited = rs->is_app_limited };

	bbrkit_on_ack(sk, rs);
	ref->cong_control(&v, &r);
	dv_follow();
}

/* tcp_rate_skb_sent(): packet i leaves, tp's counts not yet updated for it. */
static void dv_sent(u32 i, bool rexmit)
{
	if (!rexmit)
		dv_tx_in_flight[i] = tw_in_flight() + 1;
	dv_tx_lost[i] = tw_tp.lost;
	dv_tx_app_limited[i] = tw_tp.app_limited != 0;
}

/* tcp_mark_skb_lost() -> tcp_notify_skb_loss_event(): tp->lost and lost_out count the skb, then
 * skb_marked_lost. The twin calls this before it counts.
 */
static void dv_lost(u32 i)
{
	struct v3diff_sock v = dv_sock();
	struct v3diff_skb skb = { .in_flight = dv_tx_in_flight[i],
		.lost = dv_tx_lost[i],
		.pcount = 1,
		.is_app_limited = dv_tx_app_limited[i] };

	v.lost++;
	if (!tw_pk[i].marked)
		v.lost_out++;
	if (tw_pk[i].rexmit)
		v.retrans_out--;
	ref->skb_marked_lost(&v, &skb);
}

enum dv_kind {
	DV_HI_CUT,     /* inflight_hi lowered (or first set) */
	DV_HI_RAISE,   /* inflight_hi raised */
	DV_LO_CUT,     /* inflight_lo lowered or set */
	DV_LO_RESET,   /* inflight_lo lifted (~0) */
	DV_MODE,       /* mode changed: value is the new mode */
	DV_PHASE,      /* PROBE_BW phase changed: value is the new phase */
	DV_SAMPLES,    /* bw_probe_samples changed: value is the new one */
	DV_LOSS_CYCLE, /* loss_in_cycle changed: value is the new one */
	DV_KINDS
};

static const char *const dv_kind_name[DV_KINDS] = { "hi_cut", "hi_raise", "lo_cut", "lo_reset", "mode",
	"phase", "probe_samples", "loss_in_cycle" };
static const char *const dv_mode_name[] = { "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT" };
static const char *const dv_phase_name[] = { "UP", "DOWN", "CRUISE", "REFILL" };

struct dv_event {
	u8 kind;
	u32 value;
};

struct dv_side {
	struct v3diff_state
		prev; /* its state after the last step: the decisions compared are changes of it */
	struct dv_event ev[DV_MAX_EVENTS];
	int nev;
};

struct dv_stats {
	u32 steps, events_v3, events_bbr3;
	u32 v3_only[DV_KINDS], bbr3_only[DV_KINDS], value_differs[DV_KINDS], shifted[DV_KINDS];
	u32 cwnd_differs, pacing_differs;
	u64 first_cwnd_us;		    /* time of the first ACK after which the cwnds differ */
	u32 first_cwnd_v3, first_cwnd_bbr3; /* and theirs */
	u64 first_step;			    /* 0: no divergence */
	char first[1536];
	u64 delivered;
	u32 pp_decisions, pp_misses; /* bbr3's per-packet path: lost packets judged, and without a record */
};

static struct dv_side dv_v3, dv_bbr3;
static struct dv_stats dv_s;
static char dv_ring[DV_CONTEXT_STEPS][560];
static u32 dv_ring_n;

/* bbr3's state in the reference's terms. */
static struct v3diff_state dv_state_bbr3(void)
{
	const struct bbr_core *b = bbr_core_of(tw_sk);

	return (struct v3diff_state){ .pacing_rate = tw_sk->sk_pacing_rate,
		.cwnd = tw_tp.snd_cwnd,
		.inflight_hi = host_bbr3.inflight_hi,
		.inflight_lo = host_bbr3.inflight_lo,
		.mode = b->mode,
		.cycle_idx = b->cycle_idx,
		.bw_probe_samples = host_bbr3.bw_probe_samples,
		.loss_in_cycle = host_bbr3.loss_in_cycle };
}

static void dv_add(struct dv_side *s, enum dv_kind kind, u32 value)
{
	if (s->nev < DV_MAX_EVENTS)
		s->ev[s->nev++] = (struct dv_event){ kind, value };
}

/* One side's decisions in this step: what changed since its previous step. */
static void dv_events(struct dv_side *s, struct v3diff_state now)
{
	const struct v3diff_state p = s->prev;

	s->nev = 0;
	if (now.inflight_hi < p.inflight_hi)
		dv_add(s, DV_HI_CUT, now.inflight_hi);
	else if (now.inflight_hi > p.inflight_hi)
		dv_add(s, DV_HI_RAISE, now.inflight_hi);
	if (now.inflight_lo < p.inflight_lo)
		dv_add(s, DV_LO_CUT, now.inflight_lo);
	else if (now.inflight_lo == ~0U && p.inflight_lo != ~0U)
		dv_add(s, DV_LO_RESET, 0);
	if (now.mode != p.mode)
		dv_add(s, DV_MODE, now.mode);
	if (now.mode == BBRKIT_PROBE_BW && (now.cycle_idx != p.cycle_idx || p.mode != BBRKIT_PROBE_BW))
		dv_add(s, DV_PHASE, now.cycle_idx);
	if (now.bw_probe_samples != p.bw_probe_samples)
		dv_add(s, DV_SAMPLES, now.bw_probe_samples);
	if (now.loss_in_cycle != p.loss_in_cycle)
		dv_add(s, DV_LOSS_CYCLE, now.loss_in_cycle);
	s->prev = now;
}

static const struct dv_event *dv_find(const struct dv_side *s, u8 kind)
{
	for (int i = 0; i < s->nev; i++)
		if (s->ev[i].kind == kind)
			return &s->ev[i];
	return NULL;
}

static int dv_format_event(char *buf, size_t n, const struct dv_event *e)
{
	if (e->kind == DV_MODE)
		return snprintf(buf, n, " %s=%s", dv_kind_name[e->kind], dv_mode_name[e->value & 3]);
	if (e->kind == DV_PHASE)
		return snprintf(buf, n, " %s=%s", dv_kind_name[e->kind], dv_phase_name[e->value & 3]);
	return snprintf(buf, n, " %s=%u", dv_kind_name[e->kind], e->value);
}

static void dv_format_side(char *buf, size_t n, const char *who, const struct dv_side *s)
{
	int w = snprintf(buf, n, "%s:", who);

	for (int i = 0; i < s->nev && w < (int)n; i++)
		w += dv_format_event(buf + w, n - w, &s->ev[i]);
	if (w < (int)n)
		snprintf(buf + w, n - w, " [hi %u lo %u cwnd %u %s/%s]", s->prev.inflight_hi,
			s->prev.inflight_lo, s->prev.cwnd, dv_mode_name[s->prev.mode & 3],
			dv_phase_name[s->prev.cycle_idx & 3]);
}

/* A decision one side took and the other has not (yet): missing unless the other takes it within
 * DV_SHIFT_US.
 */
struct dv_pending {
	u8 v3; /* taken by v3, else by bbr3 */
	u8 kind;
	u32 value;
	u64 at_us;
	u64 step;
	char context[1536];
};

static struct dv_pending dv_pend[DV_PENDING];
static int dv_npend;

/* The last DV_CONTEXT_STEPS steps with decisions or losses, then `line`. */
static void dv_context(char *buf, size_t n, const char *line)
{
	int w = 0;

	for (u32 j = dv_ring_n > DV_CONTEXT_STEPS ? dv_ring_n - DV_CONTEXT_STEPS : 0; j < dv_ring_n; j++)
		w += snprintf(buf + w, n - w, "      %s\n", dv_ring[j % DV_CONTEXT_STEPS]);
	if (w < (int)n)
		snprintf(buf + w, n - w, "    * %s\n", line);
}

static void dv_first(u64 step, const char *context)
{
	if (dv_s.first_step && dv_s.first_step <= step)
		return;
	dv_s.first_step = step;
	snprintf(dv_s.first, sizeof(dv_s.first), "%s", context);
}

/* Pending decisions older than the shift window (all of them when `all`) are missing on the other side. */
static void dv_expire(bool all)
{
	int k = 0;

	for (int i = 0; i < dv_npend; i++) {
		struct dv_pending *p = &dv_pend[i];

		if (!all && p->at_us + DV_SHIFT_US > tw_now) {
			dv_pend[k++] = *p;
			continue;
		}
		if (p->v3)
			dv_s.v3_only[p->kind]++;
		else
			dv_s.bbr3_only[p->kind]++;
		dv_first(p->step, p->context);
	}
	dv_npend = k;
}

/* A decision only one side took in this step: the other's pending one of the same kind and value
 * within the window makes it a shift; otherwise it waits.
 */
static bool dv_one_side(bool v3, const struct dv_event *e, const char *line)
{
	for (int i = 0; i < dv_npend; i++)
		if (dv_pend[i].v3 != v3 && dv_pend[i].kind == e->kind && dv_pend[i].value == e->value) {
			dv_s.shifted[e->kind]++;
			dv_pend[i] = dv_pend[--dv_npend];
			return false;
		}
	if (dv_npend == DV_PENDING)
		dv_expire(true);
	dv_pend[dv_npend] = (struct dv_pending){
		.v3 = v3, .kind = e->kind, .value = e->value, .at_us = tw_now, .step = dv_s.steps
	};
	dv_context(dv_pend[dv_npend].context, sizeof(dv_pend[0].context), line);
	dv_npend++;
	return true;
}

/* After each ACK (rto false) or RTO: both sides' events, compared kind by kind. */
static void dv_step(u32 losses, bool rto)
{
	char a[240], b[240], line[560];
	bool differ = false;

	struct v3diff_state v3, bbr3 = dv_state_bbr3();

	ref->state(&v3);
	dv_events(&dv_v3, v3);
	dv_events(&dv_bbr3, bbr3);
	dv_s.steps++;
	dv_s.events_v3 += dv_v3.nev;
	dv_s.events_bbr3 += dv_bbr3.nev;
	dv_format_side(a, sizeof(a), "v3", &dv_v3);
	dv_format_side(b, sizeof(b), "bbr3", &dv_bbr3);
	snprintf(line, sizeof(line), "t=%.3f %s losses=%u lost=%u inflight=%u | %s | %s",
		(double)tw_since() / 1e6, rto ? "RTO" : "ACK", losses, tw_tp.lost, tw_in_flight(), a, b);
	dv_expire(false);
	for (int k = 0; k < DV_KINDS; k++) {
		const struct dv_event *x = dv_find(&dv_v3, k), *y = dv_find(&dv_bbr3, k);

		if (x && y && x->value != y->value) {
			char context[1536];

			dv_s.value_differs[k]++;
			dv_context(context, sizeof(context), line);
			dv_first(dv_s.steps, context);
			differ = true;
		} else if (x && !y)
			differ |= dv_one_side(true, x, line);
		else if (y && !x)
			differ |= dv_one_side(false, y, line);
	}
	if (dv_v3.prev.cwnd != dv_bbr3.prev.cwnd && !dv_s.cwnd_differs++) {
		dv_s.first_cwnd_us = tw_since();
		dv_s.first_cwnd_v3 = dv_v3.prev.cwnd;
		dv_s.first_cwnd_bbr3 = dv_bbr3.prev.cwnd;
	}
	if (dv_v3.prev.pacing_rate != dv_bbr3.prev.pacing_rate)
		dv_s.pacing_differs++;
	if (dv_log && (dv_v3.nev || dv_bbr3.nev))
		printf("  %s%s\n", differ ? "* " : "  ", line);
	if (losses || dv_v3.nev || dv_bbr3.nev)
		snprintf(dv_ring[dv_ring_n++ % DV_CONTEXT_STEPS], sizeof(dv_ring[0]), "%s", line);
}

static u32 dv_pending_losses;

static void dv_marked(u32 losses, u32 prior_in_flight, bool rto)
{
	dv_pending_losses = losses;
}

static void dv_done(bool rto)
{
	dv_step(dv_pending_losses, rto);
	dv_pending_losses = 0;
}

static struct dv_stats dv_run(const struct twin_cfg *cfg, bool ack_time)
{
	static struct tw_watch watch = {
		.sent = dv_sent, .lost = dv_lost, .marked = dv_marked, .done = dv_done
	};

	memset(&dv_s, 0, sizeof(dv_s));
	memset(&dv_v3, 0, sizeof(dv_v3));
	memset(&dv_bbr3, 0, sizeof(dv_bbr3));
	dv_ring_n = 0;
	dv_npend = 0;
	watch.ack_time_loss = ack_time;
	params = (__typeof__(params))BBRKIT_PARAMS_DEFAULTS(BBR3_PARAMS_TABLE);
	if (tw_run(cfg, DV_MAX_PACKETS, &watch)) {
		fprintf(stderr, "v3diff: out of memory\n");
		exit(1);
	}
	bbr3_pp_live = 0;
	dv_expire(true);
	dv_s.delivered = tw_tp.delivered;
	dv_s.pp_decisions = host_bbr3_pp.decisions;
	dv_s.pp_misses = host_bbr3_pp.misses;
	return dv_s;
}

/* Bit/s of a rate in packets per millisecond. */
#define DV_RATE(pkts_per_ms) ((u64)(pkts_per_ms)*TWIN_MSS * 8 * 1000)
#define DV_RTT_US 40000
#define DV_SECONDS 30

/* The scenarios: a 48 Mbit/s (4 packets/ms), 40 ms path with a one-BDP buffer, and what differs. */
static struct twin_cfg dv_base(u64 seed)
{
	return (struct twin_cfg){ .rate = { { 0, DV_RATE(4) } },
		.nrate = 1,
		.rtt_us = DV_RTT_US,
		.buffer_bytes = 160ULL * TWIN_MSS,
		.duration_us = DV_SECONDS * USEC_PER_SEC,
		.seed = seed };
}

static struct twin_cfg dv_scenario(const char *name, u64 seed)
{
	struct twin_cfg c = dv_base(seed);

	if (!strcmp(name, "loss_1") || !strcmp(name, "loss_5"))
		c.loss[c.nloss++] = (struct twin_window){ 0, UINT64_MAX, name[5] == '1' ? 10000 : 50000 };
	else if (!strcmp(name, "bw_step")) { /* halves at 10 s, back at 20 s */
		c.rate[c.nrate++] = (struct twin_step){ 10 * USEC_PER_SEC, DV_RATE(2) };
		c.rate[c.nrate++] = (struct twin_step){ 20 * USEC_PER_SEC, DV_RATE(4) };
	} else if (!strcmp(name, "burst")) /* 30% of packets lost for 100 ms at 8 s and at 17 s */
		for (int i = 0; i < 2; i++)
			c.loss[c.nloss++] = (struct twin_window){ (8 + 9 * i) * USEC_PER_SEC,
				(8 + 9 * i) * USEC_PER_SEC + 100000, 300000 };
	return c; /* steady */
}

static const char *const dv_scenarios[] = { "steady", "loss_1", "loss_5", "bw_step", "burst" };

static bool dv_json;

static bool dv_known(const char *name)
{
	for (size_t i = 0; i < sizeof(dv_scenarios) / sizeof(dv_scenarios[0]); i++)
		if (!strcmp(name, dv_scenarios[i]))
			return true;
	return false;
}

static void dv_report(const char *name, u64 seed, const struct dv_stats *s)
{
	u32 v3_only = 0, bbr3_only = 0, value = 0, shifted = 0;
	double mbps = (double)s->delivered * TWIN_MSS * 8 / DV_SECONDS / 1e6;

	for (int k = 0; k < DV_KINDS; k++) {
		v3_only += s->v3_only[k];
		bbr3_only += s->bbr3_only[k];
		value += s->value_differs[k];
		shifted += s->shifted[k];
	}
	if (dv_json) {
		printf("{\"scenario\": \"%s\", \"seed\": %llu, \"lead\": \"%s\", \"acks\": %u, "
		       "\"decisions_v3\": %u, \"decisions_bbr3\": %u, \"v3_only\": %u, \"bbr3_only\": %u, "
		       "\"values_differ\": %u, \"shifted\": %u, \"cwnd_differs\": %u, \"goodput_mbps\": "
		       "%.2f, "
		       "\"pp_decisions\": %u, \"pp_misses\": %u, \"first_divergence\": %llu}\n",
			name, (unsigned long long)seed, dv_lead_v3 ? "v3" : "bbr3", s->steps, s->events_v3,
			s->events_bbr3, v3_only, bbr3_only, value, shifted, s->cwnd_differs, mbps,
			s->pp_decisions, s->pp_misses, (unsigned long long)s->first_step);
		return;
	}
	printf("%s seed %llu lead %s: %u ACKs, %u/%u decisions (v3/bbr3), v3-only %u, bbr3-only %u, "
	       "values differ %u, shifted %u, cwnd differs on %u ACKs, goodput %.2f Mbit/s, "
	       "per-packet %u judged %u missed, first divergence %s\n",
		name, (unsigned long long)seed, dv_lead_v3 ? "v3" : "bbr3", s->steps, s->events_v3,
		s->events_bbr3, v3_only, bbr3_only, value, shifted, s->cwnd_differs, mbps, s->pp_decisions,
		s->pp_misses, s->first_step ? "below" : "none");
	for (int k = 0; k < DV_KINDS; k++)
		if (s->v3_only[k] || s->bbr3_only[k] || s->value_differs[k] || s->shifted[k])
			printf("    %-14s v3-only %u  bbr3-only %u  values differ %u  shifted %u\n",
				dv_kind_name[k], s->v3_only[k], s->bbr3_only[k], s->value_differs[k],
				s->shifted[k]);
	if (s->cwnd_differs)
		printf("  cwnds first differ at t=%.3f: v3 %u, bbr3 %u\n", (double)s->first_cwnd_us / 1e6,
			s->first_cwnd_v3, s->first_cwnd_bbr3);
	if (s->first_step)
		printf("  first divergence at ACK/RTO %llu (context, then the step):\n%s",
			(unsigned long long)s->first_step, s->first);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "lead", required_argument, NULL, 'l' },
		{ "log", no_argument, NULL, 'g' }, { "ack-time", no_argument, NULL, 'a' },
		{ "scenario", required_argument, NULL, 's' }, { "seeds", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 } };
	const char *path = getenv("V3DIFF_REF"), *only = NULL;
	bool ack_time = false;
	int seeds = 3, c;
	v3diff_ref_fn get;
	void *so;

	opterr = 0; /* our own one-line error below */
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'l' && (!strcmp(optarg, "v3") || !strcmp(optarg, "bbr3")))
			dv_lead_v3 = !strcmp(optarg, "v3");
		else if (c == 'g')
			dv_log = true;
		else if (c == 'a')
			ack_time = true;
		else if (c == 'j')
			dv_json = true;
		else if (c == 's')
			only = optarg;
		else if (c == 'n' && atoi(optarg) > 0)
			seeds = atoi(optarg);
		else if (c == 'l' || c == 'n') {
			fprintf(stderr, "v3diff: bad value '%s' for --%s\n", optarg,
				c == 'l' ? "lead" : "seeds");
			return 2;
		} else {
			fprintf(stderr,
				"v3diff: bad option '%s' (see the usage at the top of tests/diff/v3diff.c)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (only && !dv_known(only)) {
		fprintf(stderr, "v3diff: unknown scenario '%s' (known:", only);
		for (size_t i = 0; i < sizeof(dv_scenarios) / sizeof(dv_scenarios[0]); i++)
			fprintf(stderr, " %s", dv_scenarios[i]);
		fprintf(stderr, ")\n");
		return 2;
	}
	if (!path || !*path) {
		fprintf(stderr, "v3diff: no reference: set V3DIFF_REF to the reference's shared object\n");
		return 2;
	}
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	get = so ? (v3diff_ref_fn)dlsym(so, V3DIFF_REF_SYMBOL) : NULL;
	if (!get) {
		fprintf(stderr, "v3diff: cannot load reference %s: %s\n", path, dlerror());
		return 2;
	}
	ref = get();
	if (!ref || ref->abi != V3DIFF_REF_ABI) {
		fprintf(stderr, "v3diff: reference %s has interface %d, not %d\n", path, ref ? ref->abi : -1,
			V3DIFF_REF_ABI);
		return 2;
	}
	for (size_t i = 0; i < sizeof(dv_scenarios) / sizeof(dv_scenarios[0]); i++) {
		const char *name = dv_scenarios[i];
		bool random = !strcmp(name, "loss_1") || !strcmp(name, "loss_5");

		if (only && strcmp(only, name))
			continue;
		for (int seed = 1; seed <= (random ? seeds : 1); seed++) {
			struct twin_cfg cfg = dv_scenario(name, (u64)seed);
			struct dv_stats s;

			if (dv_log)
				printf("%s seed %d:\n", name, seed);
			s = dv_run(&cfg, ack_time);
			dv_report(name, (u64)seed, &s);
		}
	}
	return 0;
}
