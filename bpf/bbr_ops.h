/* SPDX-License-Identifier: GPL-2.0 */
/* The tcp_congestion_ops glue every bbrkit algorithm shares: per-ACK entry with tracing, the
 * struct_ops callbacks, the trace ring buffer, and the iterators behind `bbrctl flows`.
 *
 * Include it last, after the family's core (bbr_core.h and the variant hooks, or bbr3_core.h), with
 * BBRKIT_ALGO defined to the congestion control's name (at most 15 characters, unique in the kernel).
 *
 * The struct_ops programs and the tcp_congestion_ops table come from cc_struct_ops.h, as the overhead
 * floor's do.
 *
 * Telemetry costs nothing per ACK while nobody traces: records are produced only at the end of
 * a round or on a mode change, and only while ctl.tracers > 0 (a plain load from a global).
 * `bbrctl flows` reads state on demand through an iterator instead, so it costs the data path
 * nothing but one storage allocation per connection.
 *
 * Only the struct_ops programs are needed to register. Kernels differ in what else they allow, so
 * the loader loads each iterator on its own and clears `features` for what the kernel lacks
 * (include/bbrkit.h): the congestion control never depends on its telemetry.
 */
#ifndef BBR_OPS_H
#define BBR_OPS_H

#ifndef BBRKIT_ALGO
#error "define BBRKIT_ALGO, the congestion control's name, before including bbr_ops.h"
#endif

/* The callbacks' implementations come from the algorithm's core: BBRKIT_CC(fn) names them (bbr_core.h:
 * bbr1_main(), bbr1_init(), ...; bbr3_core.h: bbr3_main(), ...).
 */
#ifndef BBRKIT_CC
#error "include bbr_core.h or bbr3_core.h, which define BBRKIT_CC, before bbr_ops.h"
#endif

BBR_INLINE bool bbrkit_tracing(void);
/* rs: the ACK's rate sample, NULL outside an ACK. */
BBR_INLINE void bbrkit_emit(
	struct sock *sk, const struct bbr_core *b, u8 event, const struct rate_sample *rs);

/* The record's flag for the ACK's rate sample, which the state does not keep. */
BBR_INLINE void bbrkit_fill_sample(struct bbrkit_flow *f, const struct rate_sample *rs)
{
	if (rs && rs->is_app_limited)
		f->flags |= BBRKIT_F_RS_APP_LIMITED;
}

/* Per-ACK entry: the BBR core, then a trace record when a round ends, the mode changes or the
 * PROBE_BW cycle moves to another phase.
 */
BBR_INLINE void bbrkit_on_ack(struct sock *sk, const struct rate_sample *rs)
{
	struct bbr_core *b = bbr_core_of(sk);
	u32 mode = b->mode, cycle_idx = b->cycle_idx;

	BBRKIT_CC(main)(sk, rs);
	if ((b->round_start || b->mode != mode || b->cycle_idx != cycle_idx) && bbrkit_tracing())
		bbrkit_emit(sk, b,
			b->mode != mode			    ? BBRKIT_EV_MODE
				: b->cycle_idx != cycle_idx ? BBRKIT_EV_PHASE
							    : BBRKIT_EV_ROUND,
			rs);
}

/* undo_cwnd: the state after a spurious recovery's undo gets a record. */
BBR_INLINE u32 bbrkit_on_undo_cwnd(struct sock *sk)
{
	u32 cwnd = BBRKIT_CC(undo_cwnd)(sk);

	if (bbrkit_tracing())
		bbrkit_emit(sk, bbr_core_of(sk), BBRKIT_EV_UNDO, NULL);
	return cwnd;
}

/* cwnd_event: a restart from idle gets a record, as the next ACK with data clears idle_restart. */
BBR_INLINE void bbrkit_on_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	struct bbr_core *b = bbr_core_of(sk);
	u32 idle_restart = b->idle_restart;

	BBRKIT_CC(cwnd_event)(sk, event);
	if (event == CA_EVENT_TX_START && !idle_restart && b->idle_restart && bbrkit_tracing())
		bbrkit_emit(sk, b, BBRKIT_EV_IDLE, NULL);
}

#ifdef __bpf__

#include "cc_struct_ops.h"

#define AF_INET 2
#define AF_INET6 10
#define BBRKIT_EVENTS_BYTES (512 * 1024) /* ~2400 records: several rounds of 100 flows */

char _license[] SEC("license") = "GPL";

struct bbrkit_ctl ctl SEC(".data.ctl") = { .tracers = 0 };

const volatile struct bbrkit_features features SEC(".rodata.features") = { .trace = 1, .storage = 1 };

/* Read by bbrctl only (include/bbrkit.h): records and maps of this object are laid out as this says. */
const volatile __u32 abi_version SEC(BBRKIT_ABI_SECTION) = BBRKIT_ABI_VERSION;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BBRKIT_EVENTS_BYTES);
} events SEC(".maps");

/* One entry per connection using this algorithm: what the flows iterator walks. */
struct bbrkit_sk {
	u64 init_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbrkit_sk);
} flow_storage SEC(".maps");

/* The closed connections' totals (struct bbrkit_closed_totals, include/bbrkit.h): an array map, which
 * every kernel with struct_ops creates, so the congestion control never lacks it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbrkit_closed_totals);
} closed_totals SEC(".maps");

BBR_INLINE bool bbrkit_tracing(void)
{
	return features.trace && ctl.tracers != 0;
}

/* The flow id kept in the socket's storage, 0 where the kernel has no sk_storage. */
BBR_INLINE u64 bbrkit_cookie(struct sock *sk)
{
	struct bbrkit_sk *s;

	if (!features.storage)
		return 0;
	s = bpf_sk_storage_get(&flow_storage, sk, 0, 0);
	return s ? s->init_ns : 0;
}

BBR_INLINE void bbrkit_fill_addrs(struct bbrkit_flow *f, const struct sock *sk)
{
	const struct sock_common *c = &sk->__sk_common;

	f->sport = c->skc_num;
	f->dport = bpf_ntohs(c->skc_dport);
	f->netns = c->skc_net.net->ns.inum;
	if (c->skc_family == AF_INET6) {
		__builtin_memcpy(f->saddr, &c->skc_v6_rcv_saddr, 16);
		__builtin_memcpy(f->daddr, &c->skc_v6_daddr, 16);
		f->flags |= BBRKIT_F_IPV6;
	} else {
		__builtin_memcpy(f->saddr, &c->skc_rcv_saddr, 4);
		__builtin_memcpy(f->daddr, &c->skc_daddr, 4);
	}
}

BBR_INLINE void bbrkit_emit(struct sock *sk, const struct bbr_core *b, u8 event, const struct rate_sample *rs)
{
	struct bbrkit_flow *f = bpf_ringbuf_reserve(&events, sizeof(*f), 0);

	if (!f)
		return; /* the reader is behind: drop this record rather than stall the ACK */
	__builtin_memset(f, 0, sizeof(*f));
	f->t_ns = bpf_ktime_get_ns();
	BBRKIT_CC(fill_flow)(f, sk, b, event);
	bbrkit_fill_sample(f, rs);
	bbrkit_fill_addrs(f, sk);
	f->cookie = bbrkit_cookie(sk);
	bpf_ringbuf_submit(f, 0);
}

/* The callbacks as cc_struct_ops.h calls them: init adds the flow id and a trace record, main the
 * trace record of bbrkit_on_ack(); the others are the family's own.
 */
BBR_INLINE void bbrkit_cb_init(struct sock *sk)
{
	struct bbrkit_sk *s;

	BBRKIT_CC(init)(sk);
	if (features.storage) {
		s = bpf_sk_storage_get(&flow_storage, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (s)
			s->init_ns = bpf_ktime_get_ns();
	}
	if (bbrkit_tracing())
		bbrkit_emit(sk, bbr_core_of(sk), BBRKIT_EV_INIT, NULL);
}

BBR_INLINE void bbrkit_cb_main(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	bbrkit_on_ack(sk, rs);
}

#define bbrkit_cb_ssthresh BBRKIT_CC(ssthresh)
#define bbrkit_cb_undo_cwnd bbrkit_on_undo_cwnd
#define bbrkit_cb_cwnd_event bbrkit_on_cwnd_event
#define bbrkit_cb_set_state BBRKIT_CC(set_state)
#define bbrkit_cb_sndbuf_expand BBRKIT_CC(sndbuf_expand)
#define bbrkit_cb_min_tso_segs BBRKIT_CC(min_tso_segs)
#define BBRKIT_CB(fn) bbrkit_cb_##fn

/* release: once per connection, when it closes or switches to another algorithm (the kernel's
 * tcp_cleanup_congestion_control()); its counters join the closed totals. Atomic adds, as
 * connections close on every CPU.
 */
SEC("struct_ops")
void BPF_PROG(bbrkit_release, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bbrkit_closed_totals *t;
	u32 zero = 0;

	t = bpf_map_lookup_elem(&closed_totals, &zero);
	if (!t)
		return;
	__sync_fetch_and_add(&t->bytes_acked, tp->bytes_acked);
	__sync_fetch_and_add(&t->total_retrans, (u64)tp->total_retrans);
}

CC_STRUCT_OPS(ops, BBRKIT_ALGO, BBRKIT_CB, .release = (void *)bbrkit_release);

/* True when the socket still uses this algorithm (storage outlives a switch to another CC). */
BBR_INLINE bool bbrkit_uses_us(const struct tcp_sock *tp)
{
	static const char want[16] = BBRKIT_ALGO;
	char name[16];
	int i;

	if (bpf_probe_read_kernel(name, sizeof(name), tp->inet_conn.icsk_ca_ops->name))
		return false;
#pragma unroll
	for (i = 0; i < 16; i++) {
		if (name[i] != want[i])
			return false;
		if (!name[i])
			break;
	}
	return true;
}

/* Writes one raw struct bbrkit_flow: the state of a connection using this algorithm. */
BBR_INLINE void bbrkit_snapshot(struct seq_file *seq, struct tcp_sock *tp, u64 cookie)
{
	struct bbrkit_flow f = {};
	struct bbr_core core;

	if (bpf_probe_read_kernel(&core, sizeof(core), tp->inet_conn.icsk_ca_priv))
		return;
	f.t_ns = bpf_ktime_get_ns();
	BBRKIT_CC(fill_flow)(&f, (struct sock *)tp, &core, BBRKIT_EV_SNAPSHOT);
	bbrkit_fill_addrs(&f, (struct sock *)tp);
	f.cookie = cookie;
	bpf_seq_write(seq, &f, sizeof(f));
}

/* `bbrctl flows`, first choice: one pass over every connection that ran init, in every network
 * namespace. Some kernels refuse map-element iterators (EPERM before verification).
 */
SEC("iter/bpf_sk_storage_map")
int dump_flows(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct bbrkit_sk *storage = ctx->value;
	struct sock *sk = ctx->sk;
	struct tcp_sock *tp;

	if (!sk || !storage)
		return 0;
	tp = bpf_skc_to_tcp_sock(sk);
	if (tp && bbrkit_uses_us(tp))
		bbrkit_snapshot(ctx->meta->seq, tp, storage->init_ns);
	return 0;
}

/* `bbrctl flows`, fallback: the TCP sockets of the reader's network namespace (the reader enters
 * each namespace in turn). With sk_storage, exactly the connections that ran init, as above.
 */
SEC("iter/tcp")
int dump_tcp_flows(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct bbrkit_sk *storage;
	struct tcp_sock *tp;
	u8 state;

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp || !bbrkit_uses_us(tp))
		return 0;
	if (features.storage) {
		storage = bpf_sk_storage_get(&flow_storage, tp, 0, 0);
		if (storage)
			bbrkit_snapshot(ctx->meta->seq, tp, storage->init_ns);
		return 0;
	}
	/* Without storage, the states that have not run the CC's init yet are left out by name. */
	state = skc->skc_state;
	if (state == TCP_SYN_SENT || state == TCP_SYN_RECV || state == TCP_LISTEN)
		return 0;
	bbrkit_snapshot(ctx->meta->seq, tp, 0);
	return 0;
}

#else /* host unit tests: records go to an in-memory log the tests inspect */

BBR_INLINE bool bbrkit_tracing(void)
{
	return host_trace_enabled;
}

BBR_INLINE void bbrkit_emit(struct sock *sk, const struct bbr_core *b, u8 event, const struct rate_sample *rs)
{
	struct bbrkit_flow f = { 0 };

	f.t_ns = tcp_sk(sk)->tcp_mstamp * 1000;
	BBRKIT_CC(fill_flow)(&f, sk, b, event);
	bbrkit_fill_sample(&f, rs);
	host_trace_record(&f);
}

#endif /* __bpf__ */

#endif /* BBR_OPS_H */
