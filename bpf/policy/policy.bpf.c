// SPDX-License-Identifier: GPL-2.0
/* The policy program (include/bbrkit_policy.h): a sockops program on the cgroup v2 root that gives
 * each new TCP connection the congestion control its first matching rule names.
 *
 * When: at BPF_SOCK_OPS_{ACTIVE,PASSIVE}_ESTABLISHED_CB. The kernel runs these from
 * tcp_init_transfer() just before tcp_init_congestion_control(), so the chosen algorithm's init is the
 * first and only one the connection runs, for both the connections a service opens and those it
 * accepts; nothing of the handshake depends on the congestion control. (TCP_CONNECT_CB would cover
 * only active opens, and a listener's choice would be made before the peer's address is known.)
 * bpf_setsockopt(TCP_CONGESTION) fails cleanly (ENOENT) for an algorithm that is not registered: the
 * connection keeps its namespace's default, counted as a fallback; it never breaks.
 *
 * Not a congestion control: the Makefile keeps this file out of bbrctl's algorithm table.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "bbrkit_policy.h"

#define AF_INET6 10
#define SOL_TCP 6
#define TCP_CONGESTION 13
#define NSEC_PER_USEC 1000
#define EPERM 1

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BBRKIT_POLICY_RULES);
	__type(key, __u32);
	__type(value, struct bbrkit_policy_rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BBRKIT_POLICY_PREFIXES);
	__type(key, struct bbrkit_policy_prefix);
	__type(value, __u32); /* the slots whose prefix contains this one */
} prefixes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BBRKIT_POLICY_RULES *BBRKIT_POLICY_ARMS);
	__type(key, __u32);
	__type(value, struct bbrkit_policy_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbrkit_policy_sk);
} storage SEC(".maps");

/* murmur3's 32-bit finaliser: every input bit reaches every output bit, so consecutive ephemeral
 * ports spread evenly over the arms.
 */
static __always_inline __u32 mix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

/* The 4-tuple from the socket itself (not the sockops context, whose address arrays the verifier
 * refuses to index): addresses IPv4-mapped as in the trie, ports in host byte order.
 */
struct tuple {
	__u32 remote[4], local[4];
	__u16 lport, rport;
	__u32 netns; /* inode */
};

static __always_inline void tuple_of(struct tcp_sock *tp, struct tuple *t)
{
	const struct sock_common *c = &tp->inet_conn.icsk_inet.sk.__sk_common;

	t->lport = c->skc_num;
	t->rport = bpf_ntohs(c->skc_dport);
	t->netns = BPF_CORE_READ(c, skc_net.net, ns.inum);
	if (c->skc_family == AF_INET6) {
		BPF_CORE_READ_INTO(&t->remote, c, skc_v6_daddr.in6_u.u6_addr32);
		BPF_CORE_READ_INTO(&t->local, c, skc_v6_rcv_saddr.in6_u.u6_addr32);
	} else {
		t->remote[0] = t->remote[1] = t->local[0] = t->local[1] = 0;
		t->remote[2] = t->local[2] = bpf_htonl(0xffff);
		t->remote[3] = c->skc_daddr;
		t->local[3] = c->skc_rcv_saddr;
	}
}

/* The arm of a connection: a hash of its 4-tuple scaled to [0, WEIGHT_TOTAL) without a division. */
static __always_inline __u32 tuple_point(const struct tuple *t)
{
	__u32 h = t->lport | ((__u32)t->rport << 16);

	for (int i = 0; i < 4; i++) {
		h = mix32(h ^ t->remote[i]);
		h = mix32(h ^ t->local[i]);
	}
	return (__u32)(((__u64)h * BBRKIT_POLICY_WEIGHT_TOTAL) >> 32);
}

/* The socket's cgroup v2 ancestor at level (its own at its own level), NULL when it is not that deep. */
static __always_inline struct cgroup *cgroup_at(struct tcp_sock *tp, __u32 level)
{
	struct cgroup *cg = BPF_CORE_READ(tp, inet_conn.icsk_inet.sk.sk_cgrp_data.cgroup), *anc = NULL;

	if (!cg || level > (__u32)BPF_CORE_READ(cg, level))
		return NULL;
	if (bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level]))
		return NULL;
	return anc;
}

/* The path of cg (at level) is the rule's, compared name by name from the root, a word at a time: how a
 * rule keeps matching a cgroup removed and made again under the same path (a restarted service, a
 * container of the same name), whose id is new. Runs at connection setup, when the id does not match.
 */
static __always_inline bool cgroup_path_is(struct cgroup *cg, __u32 level, const struct bbrkit_policy_rule *r)
{
	__u64 name[BBRKIT_POLICY_CGROUP_NAME / sizeof(__u64)];

	if (level > BBRKIT_POLICY_CGROUP_LEVELS)
		return false;
	for (__u32 l = 1; l <= BBRKIT_POLICY_CGROUP_LEVELS; l++) {
		struct cgroup *anc = NULL;
		const __u64 *want = (const __u64 *)r->cgroup_names[l - 1];

		if (l > level)
			break;
		if (bpf_core_read(&anc, sizeof(anc), &cg->ancestors[l]) || !anc)
			return false;
		__builtin_memset(name, 0, sizeof(name));
		if (bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(anc, kn, name)) <= 1)
			return false;
		for (__u32 w = 0; w < BBRKIT_POLICY_CGROUP_NAME / sizeof(__u64); w++)
			if (name[w] != want[w])
				return false;
	}
	return true;
}

static __always_inline enum bbrkit_policy_verdict rule_verdict(const struct bbrkit_policy_rule *r, __u32 bit,
	__u32 dst_rules, const struct tuple *t, struct tcp_sock *tp)
{
	struct cgroup *cg;

	if (!r->narms)
		return BBRKIT_VERDICT_FREE;
	if (r->ndst && !(dst_rules & bit))
		return BBRKIT_VERDICT_DST;
	if (r->lport && r->lport != t->lport)
		return BBRKIT_VERDICT_LPORT;
	if (r->rport && r->rport != t->rport)
		return BBRKIT_VERDICT_RPORT;
	if (r->netns && r->netns != t->netns)
		return BBRKIT_VERDICT_NETNS;
	if (!r->cgroup_id)
		return BBRKIT_VERDICT_MATCH;
	cg = cgroup_at(tp, r->cgroup_level);
	if (cg && (BPF_CORE_READ(cg, kn, id) == r->cgroup_id || cgroup_path_is(cg, r->cgroup_level, r)))
		return BBRKIT_VERDICT_MATCH;
	return BBRKIT_VERDICT_CGROUP;
}

struct scan {
	const struct tuple *t;
	struct tcp_sock *tp;
	__u32 dst_rules, slot;
	const struct bbrkit_policy_rule *best;
	__u32 *verdicts; /* explain's masks, or NULL */
};

/* Lower priority first, then the older rule: a rule added later never takes connections from an
 * older one of equal priority, whichever slot it got.
 */
static __always_inline bool precedes(
	const struct bbrkit_policy_rule *r, const struct bbrkit_policy_rule *best)
{
	return !best || r->priority < best->priority ||
		(r->priority == best->priority && r->created < best->created);
}

/* bpf_loop's body: the verifier checks it once, not once per slot. */
static long scan_slot(__u32 slot, void *ctx)
{
	struct scan *sc = ctx;
	const struct bbrkit_policy_rule *r = bpf_map_lookup_elem(&rules, &slot);

	enum bbrkit_policy_verdict v;

	if (!r)
		return 0;
	v = rule_verdict(r, 1U << (slot & 31), sc->dst_rules, sc->t, sc->tp);
	if (sc->verdicts)
		sc->verdicts[v & (BBRKIT_VERDICTS - 1)] |= 1U << (slot & 31);
	if (v == BBRKIT_VERDICT_MATCH && precedes(r, sc->best)) {
		sc->best = r;
		sc->slot = slot;
	}
	return 0;
}

/* Where the policy puts a connection now: its first matching rule and the arm its 4-tuple hashes to. */
struct placement {
	const struct bbrkit_policy_rule *rule; /* NULL: no rule matches */
	__u32 slot, arm, point;
};

/* verdicts: explain's masks (BBRKIT_VERDICTS), or NULL. */
static __always_inline void place(struct tcp_sock *tp, struct placement *p, __u32 *verdicts)
{
	struct bbrkit_policy_prefix key = {};
	struct tuple t;
	struct scan sc = { .t = &t, .tp = tp, .verdicts = verdicts };
	__u32 *found, point, cum = 0;

	p->rule = NULL;
	p->arm = p->point = 0;
	tuple_of(tp, &t);
	key.prefixlen = 128;
	__builtin_memcpy(key.addr, t.remote, sizeof(t.remote));
	found = bpf_map_lookup_elem(&prefixes, &key);
	if (found)
		sc.dst_rules = *found;
	bpf_loop(BBRKIT_POLICY_RULES, scan_slot, &sc, 0);
	if (!sc.best)
		return;
	point = tuple_point(&t);
	p->point = point;
	for (__u32 i = 0; i < BBRKIT_POLICY_ARMS; i++) {
		if (i >= sc.best->narms)
			break;
		p->arm = i;
		cum += sc.best->arms[i].weight;
		if (point < cum)
			break;
	}
	if (p->arm < BBRKIT_POLICY_ARMS) {
		p->rule = sc.best;
		p->slot = sc.slot;
	}
}

static __always_inline struct bbrkit_policy_stats *arm_stats(__u32 slot, __u32 arm)
{
	__u32 idx = slot * BBRKIT_POLICY_ARMS + arm;

	return bpf_map_lookup_elem(&stats, &idx);
}

static __always_inline void choose(struct bpf_sock_ops *ops)
{
	struct bbrkit_policy_stats *st;
	struct bbrkit_policy_sk *sk;
	struct placement pl;
	struct bpf_sock *bsk = ops->sk;
	struct tcp_sock *tp;
	char cc[BBRKIT_POLICY_NAME_MAX];
	long err;

	if (!bsk)
		return;
	tp = bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return;
	place(tp, &pl, NULL);
	if (!pl.rule || pl.arm >= BBRKIT_POLICY_ARMS)
		return;
	sk = bpf_sk_storage_get(&storage, bsk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!sk)
		return;
	sk->start_ns = bpf_ktime_get_ns();
	sk->slot = pl.slot;
	sk->generation = pl.rule->generation;
	sk->arm = pl.arm;
	__builtin_memcpy(cc, pl.rule->arms[pl.arm].cc, sizeof(cc));
	err = bpf_setsockopt(ops, SOL_TCP, TCP_CONGESTION, cc, sizeof(cc));
	sk->fallback = err ? 1 : 0;
	/* Counted at close too: the close adds what the connection did to its arm's counters. */
	bpf_sock_ops_cb_flags_set(ops, ops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_STATE_CB_FLAG);
	st = arm_stats(pl.slot, pl.arm);
	if (st) {
		st->connections++;
		st->fallbacks += sk->fallback;
		st->locked += err == -EPERM; /* tcp_set_congestion_control(): the route's congctl lock */
	}
}

static __always_inline void closed(struct bpf_sock_ops *ops)
{
	const struct bbrkit_policy_rule *r;
	struct bbrkit_policy_stats *st;
	struct bbrkit_policy_sk *sk;
	struct bpf_sock *bsk = ops->sk;
	struct tcp_sock *tp;
	__u32 idx;

	if (!bsk)
		return;
	sk = bpf_sk_storage_get(&storage, bsk, 0, 0);
	tp = bpf_skc_to_tcp_sock(bsk);
	if (!sk || !tp || sk->slot >= BBRKIT_POLICY_RULES || sk->arm >= BBRKIT_POLICY_ARMS)
		return;
	idx = sk->slot;
	r = bpf_map_lookup_elem(&rules, &idx);
	/* A rule written since (deleted, replaced) starts its counters afresh. */
	if (!r || r->generation != sk->generation)
		goto done;
	idx = sk->slot * BBRKIT_POLICY_ARMS + sk->arm;
	st = bpf_map_lookup_elem(&stats, &idx);
	if (!st)
		goto done;
	st->closed++;
	st->closed_bytes_acked += tp->bytes_acked;
	st->closed_bytes_received += tp->bytes_received;
	st->closed_segs_out += tp->segs_out;
	st->closed_retrans += tp->total_retrans;
	st->closed_delivered += tp->delivered;
	st->closed_delivered_ce += tp->delivered_ce;
	st->closed_lost += tp->lost;
done:
	bpf_sk_storage_delete(&storage, bsk);
}

SEC("sockops")
int policy_sockops(struct bpf_sock_ops *ops)
{
	switch (ops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		choose(ops);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (ops->args[1] == BPF_TCP_CLOSE)
			closed(ops);
		break;
	}
	return 1;
}

/* A connection's ends as records carry them: addresses IPv6 or IPv4-mapped (both arrays start zeroed),
 * ports in host byte order, the namespace's inode.
 */
static __always_inline void ends_of(
	const struct sock_common *c, __u8 *saddr, __u8 *daddr, __u16 *sport, __u16 *dport, __u32 *netns)
{
	*sport = c->skc_num;
	*dport = bpf_ntohs(c->skc_dport);
	*netns = c->skc_net.net->ns.inum;
	if (c->skc_family == AF_INET6) {
		__builtin_memcpy(saddr, &c->skc_v6_rcv_saddr, 16);
		__builtin_memcpy(daddr, &c->skc_v6_daddr, 16);
	} else {
		saddr[10] = saddr[11] = daddr[10] = daddr[11] = 0xff;
		__builtin_memcpy(saddr + 12, &c->skc_rcv_saddr, 4);
		__builtin_memcpy(daddr + 12, &c->skc_daddr, 4);
	}
}

/* One struct bbrkit_sock: tcp_info's fields, from the same struct tcp_sock the kernel fills it from. */
static __always_inline void write_sock(
	struct seq_file *seq, struct tcp_sock *tp, const struct bbrkit_policy_sk *s)
{
	const struct sock_common *c = &tp->inet_conn.icsk_inet.sk.__sk_common;
	struct bbrkit_sock o = {};
	__u64 now_us = bpf_ktime_get_ns() / NSEC_PER_USEC;

	o.slot = BBRKIT_POLICY_RULES;
	if (s) {
		o.start_ns = s->start_ns;
		o.slot = s->slot;
		o.generation = s->generation;
		o.arm = s->arm;
		o.fallback = s->fallback;
	}
	o.state = c->skc_state;
	ends_of(c, o.saddr, o.daddr, &o.sport, &o.dport, &o.netns);
	bpf_probe_read_kernel(o.cc, sizeof(o.cc), tp->inet_conn.icsk_ca_ops->name);
	o.ca_state = BPF_CORE_READ_BITFIELD(&tp->inet_conn, icsk_ca_state);
	o.bytes_acked = tp->bytes_acked;
	o.bytes_received = tp->bytes_received;
	o.delivery_age_us =
		tp->delivered_mstamp && now_us > tp->delivered_mstamp ? now_us - tp->delivered_mstamp : 0;
	o.srtt_us = tp->srtt_us >> 3;
	o.min_rtt_us = tp->rtt_min.s[0].v;
	o.mss = tp->mss_cache;
	o.cwnd = tp->snd_cwnd;
	o.packets_out = tp->packets_out;
	o.retrans_out = tp->retrans_out;
	o.total_retrans = tp->total_retrans;
	o.lost = tp->lost;
	o.segs_out = tp->segs_out;
	o.delivered = tp->delivered;
	o.delivered_ce = tp->delivered_ce;
	o.rate_delivered = tp->rate_delivered;
	o.rate_interval_us = tp->rate_interval_us;
	bpf_seq_write(seq, &o, sizeof(o));
}

/* The exporter's source: every connection the policy placed, in all network namespaces at once. */
SEC("iter/bpf_sk_storage_map")
int dump_policy(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct bbrkit_policy_sk *s = ctx->value;
	struct tcp_sock *tp;

	if (!ctx->sk || !s)
		return 0;
	tp = bpf_skc_to_tcp_sock(ctx->sk);
	if (tp)
		write_sock(ctx->meta->seq, tp, s);
	return 0;
}

/* `bbrctl ss`: every connected TCP socket of the reader's network namespace, placed or not. */
SEC("iter/tcp")
int dump_socks(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;

	if (!skc || skc->skc_state == BPF_TCP_LISTEN)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (tp)
		write_sock(ctx->meta->seq, tp, bpf_sk_storage_get(&storage, tp, 0, 0));
	return 0;
}

/* bpf_strncmp() wants a constant for its second string. */
static __always_inline bool same_name(const char *a, const char *b)
{
	for (int i = 0; i < BBRKIT_POLICY_NAME_MAX; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

/* The TCP socket of an iterator's established connection, else NULL. */
static __always_inline struct tcp_sock *established(struct sock_common *skc)
{
	return skc && skc->skc_state == BPF_TCP_ESTABLISHED ? bpf_skc_to_tcp_sock(skc) : NULL;
}

/* `policy migrate`: the slot of the rule whose established connections move to the arm the policy
 * gives them now (set before load).
 */
const volatile __u32 migrate_slot = BBRKIT_POLICY_RULES;
const volatile bool migrate_dry_run;

/* Runs with the socket locked (bpf_iter_tcp), where the kernel allows bpf_setsockopt: the switch is
 * tcp_set_congestion_control() as setsockopt(2) does it, the old algorithm's release then the new
 * one's init on the live connection; its data and sequence space are untouched.
 */
SEC("iter/tcp")
int migrate_socks(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct bbrkit_migration m = {};
	struct bbrkit_policy_stats *st;
	struct bbrkit_policy_sk *sk;
	struct placement pl;
	struct tcp_sock *tp;

	tp = established(skc);
	if (!tp)
		return 0;
	place(tp, &pl, NULL);
	if (!pl.rule || pl.slot != migrate_slot || pl.arm >= BBRKIT_POLICY_ARMS)
		return 0;
	if (bpf_getsockopt(tp, SOL_TCP, TCP_CONGESTION, m.from, sizeof(m.from)))
		return 0;
	__builtin_memcpy(m.to, pl.rule->arms[pl.arm].cc, sizeof(m.to));
	if (same_name(m.from, m.to))
		return 0;
	m.arm = pl.arm;
	ends_of(skc, m.saddr, m.daddr, &m.sport, &m.dport, &m.netns);
	if (!migrate_dry_run)
		m.err = bpf_setsockopt(tp, SOL_TCP, TCP_CONGESTION, m.to, sizeof(m.to));
	if (!migrate_dry_run && !m.err) {
		/* Its rule and arm are now the ones it runs: ss and the exporter show it there. */
		sk = bpf_sk_storage_get(&storage, tp, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (sk) {
			if (!sk->start_ns)
				sk->start_ns = bpf_ktime_get_ns();
			sk->slot = pl.slot;
			sk->generation = pl.rule->generation;
			sk->arm = pl.arm;
			sk->fallback = 0;
		}
		st = arm_stats(pl.slot, pl.arm);
		if (st)
			st->migrated++;
	}
	bpf_seq_write(ctx->meta->seq, &m, sizeof(m));
	return 0;
}

/* `policy explain`: every established connection with its placement then and now and each rule's
 * verdict; bbrctl picks the ones asked for.
 */
SEC("iter/tcp")
int explain_socks(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct bbrkit_explain e = {};
	struct bbrkit_policy_sk *sk;
	struct placement pl;
	struct tcp_sock *tp;

	tp = established(skc);
	if (!tp)
		return 0;
	place(tp, &pl, e.verdicts);
	e.now_slot = pl.rule ? pl.slot : BBRKIT_POLICY_RULES;
	e.now_arm = pl.arm;
	e.point = pl.point;
	e.placed_slot = BBRKIT_POLICY_RULES;
	sk = bpf_sk_storage_get(&storage, tp, 0, 0);
	if (sk) {
		e.placed_slot = sk->slot;
		e.placed_generation = sk->generation;
		e.placed_arm = sk->arm;
		e.placed_fallback = sk->fallback;
	}
	ends_of(skc, e.saddr, e.daddr, &e.sport, &e.dport, &e.netns);
	bpf_probe_read_kernel(e.cc, sizeof(e.cc), tp->inet_conn.icsk_ca_ops->name);
	bpf_seq_write(ctx->meta->seq, &e, sizeof(e));
	return 0;
}
