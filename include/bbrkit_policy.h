/* SPDX-License-Identifier: GPL-2.0 */
/* The policy: which new TCP connections get which congestion control. Shared by bpf/policy.bpf.c,
 * bbrctl (loader/policy*.c, export.c, ss.c) and the host unit tests.
 *
 * One sockops program on the cgroup v2 root runs when a connection is established (both the
 * connections a service accepts and those it opens) and, before the kernel initialises the
 * congestion control, sets TCP_CONGESTION to the arm of the first matching rule. Rules are slots of
 * a pinned array map; the destination prefixes live in an LPM trie whose value is the set of rules
 * whose prefix contains the key's, so one lookup gives every rule the destination matches.
 */
#ifndef BBRKIT_POLICY_H
#define BBRKIT_POLICY_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define BBRKIT_POLICY_RULES 32	  /* slots; one bit each in the LPM trie's rule set (a __u32) */
#define BBRKIT_POLICY_ARMS 4	  /* arms of a split: a candidate, a holdback and two more to compare */
#define BBRKIT_POLICY_NAME_MAX 16 /* rule names and algorithm names, as the kernel's TCP_CA_NAME_MAX */
/* Weights are in basis points: 1% steps are too coarse for a 0.5% canary, and 10000 fits a __u32
 * comparison against a 16-bit hash fraction without a division.
 */
#define BBRKIT_POLICY_WEIGHT_TOTAL 10000
#define BBRKIT_POLICY_PREFIXES 256  /* LPM trie entries: destination prefixes over all rules */
#define BBRKIT_POLICY_DSTS 4	    /* destination prefixes of one rule */
#define BBRKIT_POLICY_CGROUP_MAX 96 /* a rule's cgroup path, "/a/b" without "//" or a trailing "/" */
/* Levels and name length of a cgroup path the program compares name by name (a systemd service is at
 * level 2, a container's scope at 3 or 4; a kernfs name is at most NAME_MAX but these are short).
 */
#define BBRKIT_POLICY_NETNS_MAX 64 /* a rule's netns as given: a name under /run/netns, a path, an inode */
#define BBRKIT_POLICY_CGROUP_LEVELS 8
#define BBRKIT_POLICY_CGROUP_NAME 64

/* Rule flags. */
#define BBRKIT_RULE_FALLBACK (1U << 0) /* arm's algorithm gone: keep the default, allow its detach */

/* LPM trie key: IPv4 as an IPv4-mapped IPv6 address (::ffff:a.b.c.d, prefix + 96), as dual-stack
 * sockets carry it, so one trie serves both families.
 */
struct bbrkit_policy_prefix {
	__u32 prefixlen;
	__u8 addr[16];
};

struct bbrkit_policy_arm {
	char cc[BBRKIT_POLICY_NAME_MAX];
	__u32 weight; /* basis points; the arms of a rule add up to BBRKIT_POLICY_WEIGHT_TOTAL */
	__u32 pad;
};

/* One slot of the "rules" map. A slot with narms == 0 is free. */
struct bbrkit_policy_rule {
	char name[BBRKIT_POLICY_NAME_MAX];
	__u64 cgroup_id;    /* cgroup v2 id when added (the directory's inode); 0: any cgroup */
	__u32 cgroup_level; /* its depth below the cgroup2 root: the ancestor of the socket's to compare */
	__u32 netns;	    /* network namespace inode; 0: any */
	__u32 priority;	    /* lower first */
	__u32 created;	    /* creation order, kept by edits: of equal priorities the older rule wins */
	__u32 generation;   /* bumped when the slot gets another rule: storage of older sockets is left out */
	__u16 lport, rport; /* host byte order; 0: any */
	__u8 narms;
	__u8 holdback; /* index of the holdback arm: what `policy revert` and rollout's guard go back to */
	__u8 flags;    /* BBRKIT_RULE_* */
	__u8 ndst;     /* > 0: matches only destinations under a prefix of the LPM trie naming this slot */
	struct bbrkit_policy_arm arms[BBRKIT_POLICY_ARMS];
	/* What bbrctl needs to rebuild the trie and to print the rule; the program reads none of it. */
	struct bbrkit_policy_prefix dst[BBRKIT_POLICY_DSTS];
	char cgroup_path[BBRKIT_POLICY_CGROUP_MAX];
	char netns_name[BBRKIT_POLICY_NETNS_MAX];
	/* The path's names, each zero-padded, compared word by word when the id does not match (a cgroup
	 * made again has another id).
	 */
	char cgroup_names[BBRKIT_POLICY_CGROUP_LEVELS][BBRKIT_POLICY_CGROUP_NAME];
};

/* Per rule slot and arm (index slot * BBRKIT_POLICY_ARMS + arm), per CPU. Counters of closed
 * connections are added when the socket leaves ESTABLISHED-or-later for CLOSE, so that their bytes
 * and retransmissions stay counted after they are gone (Prometheus counters).
 */
struct bbrkit_policy_stats {
	__u64 connections; /* assigned to the arm */
	__u64 fallbacks;   /* the arm's algorithm could not be set: the connection kept the default */
	__u64 locked;	   /* of those, refused because the route locks it (ip route ... congctl lock) */
	__u64 closed;	   /* of those, closed since */
	__u64 closed_bytes_acked;
	__u64 closed_bytes_received;
	__u64 closed_segs_out;
	__u64 closed_retrans; /* segments retransmitted */
	__u64 closed_delivered;
	__u64 closed_delivered_ce;
	__u64 closed_lost; /* packets lost, tp->lost */
	__u64 migrated;	   /* established connections `policy migrate` moved to the arm */
};

/* Kept in the socket's storage: which rule and arm chose its algorithm. */
struct bbrkit_policy_sk {
	__u64 start_ns; /* CLOCK_MONOTONIC */
	__u32 slot, generation;
	__u8 arm;
	__u8 fallback; /* 1: the arm's algorithm could not be set */
	__u8 pad[6];
};

/* One connection `policy migrate` looked at: where it was and what it got. */
struct bbrkit_migration {
	__u8 saddr[16]; /* IPv6, or IPv4-mapped as above */
	__u8 daddr[16];
	char from[BBRKIT_POLICY_NAME_MAX];
	char to[BBRKIT_POLICY_NAME_MAX];
	__u16 sport, dport; /* host byte order */
	__u32 netns;
	__s32 err; /* bpf_setsockopt's: 0 moved, -EPERM a route locks the algorithm */
	__u32 arm;
};

/* Why a rule does or does not match a connection: `policy explain` gets a mask of slots per verdict. */
enum bbrkit_policy_verdict {
	BBRKIT_VERDICT_MATCH,
	BBRKIT_VERDICT_FREE, /* no rule in the slot */
	BBRKIT_VERDICT_DST,
	BBRKIT_VERDICT_LPORT,
	BBRKIT_VERDICT_RPORT,
	BBRKIT_VERDICT_NETNS,
	BBRKIT_VERDICT_CGROUP,
	BBRKIT_VERDICTS = 8, /* the masks' array, a power of two the program indexes within */
};

/* One established connection as `policy explain` sees it: where the policy placed it, where it would
 * place it now, and each rule's verdict.
 */
struct bbrkit_explain {
	__u8 saddr[16]; /* IPv6, or IPv4-mapped as above */
	__u8 daddr[16];
	char cc[BBRKIT_POLICY_NAME_MAX];
	__u16 sport, dport;
	__u32 netns;
	__u32 placed_slot; /* from its storage; BBRKIT_POLICY_RULES: not placed */
	__u32 placed_generation;
	__u32 placed_arm;
	__u32 placed_fallback;
	__u32 now_slot; /* BBRKIT_POLICY_RULES: no rule matches now */
	__u32 now_arm;
	__u32 point;			 /* the 4-tuple's hash in [0, BBRKIT_POLICY_WEIGHT_TOTAL) */
	__u32 verdicts[BBRKIT_VERDICTS]; /* per verdict, a bit per slot */
};

/* One connection as the policy's iterators write it: where it belongs and the kernel's own TCP state
 * (struct tcp_sock, the fields tcp_info reports).
 */
struct bbrkit_sock {
	__u64 start_ns;	       /* 0: not chosen by the policy */
	__u64 bytes_acked;     /* tcpi_bytes_acked */
	__u64 bytes_received;  /* tcpi_bytes_received */
	__u64 delivery_age_us; /* since the last delivery (tp->delivered_mstamp) */
	__u8 saddr[16];	       /* IPv6, or IPv4-mapped as above */
	__u8 daddr[16];
	char cc[BBRKIT_POLICY_NAME_MAX];
	__u16 sport, dport; /* host byte order */
	__u32 netns;	    /* network namespace inode */
	__u32 slot;	    /* BBRKIT_POLICY_RULES: not chosen by the policy */
	__u32 generation;
	__u8 arm;
	__u8 fallback;
	__u8 state; /* TCP_ESTABLISHED ... */
	__u8 ca_state;
	__u32 srtt_us;
	__u32 min_rtt_us;
	__u32 mss;
	__u32 cwnd;
	__u32 packets_out;
	__u32 retrans_out;
	__u32 total_retrans; /* segments retransmitted, total */
	__u32 lost;
	__u32 segs_out;
	__u32 delivered;
	__u32 delivered_ce;
	__u32 rate_delivered; /* last rate sample: packets over rate_interval_us (tcpi_delivery_rate) */
	__u32 rate_interval_us;
};
_Static_assert(sizeof(struct bbrkit_sock) == 152, "struct bbrkit_sock changed size: readers must follow");

/* bpffs: BBRKIT_PIN_ROOT/BBRKIT_POLICY_DIR/{link, rules, prefixes, stats, storage, flows}. A dash
 * cannot occur in an algorithm's (C identifier) name, so this never collides with one.
 */
#define BBRKIT_POLICY_DIR "-policy"

#endif /* BBRKIT_POLICY_H */
