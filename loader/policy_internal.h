/* SPDX-License-Identifier: GPL-2.0 */
/* What the policy's files (loader/policy*.c) share among themselves; what other commands use of the
 * policy is in bbrctl.h.
 */
#ifndef BBRCTL_POLICY_INTERNAL_H
#define BBRCTL_POLICY_INTERNAL_H

#include "bbrctl.h"
#include "bbrkit_policy.h"

#define PERCENT_SCALE 100 /* weights are given in percent with two decimals: basis points */
#define V4_MAPPED_BITS 96 /* an IPv4 address sits in the last 32 bits of ::ffff:0:0/96 */
#define OWN_CGROUP2_PARENT "/run/bbrkit"
/* Where bbrctl mounts cgroup2 when the host has no cgroup v2 hierarchy mounted (v1-only hosts). */
#define OWN_CGROUP2 OWN_CGROUP2_PARENT "/cgroup2"
/* Pins under BBRKIT_PIN_ROOT/BBRKIT_POLICY_DIR. */
#define PIN_RULES "rules"
#define PIN_PREFIXES "prefixes"
#define PIN_STATS "stats"
#define PIN_STORAGE "storage"
#define PIN_FLOWS "flows"

/* policy_cgroup.c */
bool find_cgroup2(char *out, size_t size);
int mount_cgroup2(char *out, size_t size);
void unmount_own_cgroup2(void);
int cgroup_id_of(const char *root, const char *rel, __u64 *id, __u32 *level);

/* policy_maps.c */
int create_policy(const char *cgroot);
int remove_policy(void);
int rebuild_prefixes(const struct bbrkit_policy_rule *rules);
bool prefix_contains(const struct bbrkit_policy_prefix *outer, const struct bbrkit_policy_prefix *inner);
int write_slot(__u32 slot, const struct bbrkit_policy_rule *r);
/* Each arm of now gets the counters of was's arm of the same algorithm, others start at zero (was
 * NULL: all start at zero).
 */
int remap_stats(__u32 slot, const struct bbrkit_policy_rule *was, const struct bbrkit_policy_rule *now);
/* The slot of the rule called name, or -1; how many slots hold a rule. */
int find_slot(const struct bbrkit_policy_rule *rules, const char *name);
int nrules(const struct bbrkit_policy_rule *rules);

/* policy_migrate.c: moves the established connections the policy now gives to the rule in slot
 * (called name) to the algorithm of their arm, or with dry_run lists them; EXIT_FAILURE after a
 * one-line error or when the kernel refused a move. Call with the pin root locked.
 */
int policy_migrate_slot(__u32 slot, const char *name, bool dry_run);
/* Runs the policy object's iter/tcp program prog on the pinned maps in every network namespace (with
 * migrate_slot and dry_run for migrate_socks): what it wrote, malloc()ed, or EXIT_FAILURE after a
 * one-line error.
 */
int policy_iterate(const char *prog, __u32 migrate_slot, bool dry_run, char **buf, size_t *used);
/* "10.0.0.1:80" or "[2001:db8::1]:80" of an address as records carry it (IPv6 or IPv4-mapped). */
void policy_endpoint_text(const __u8 *a, __u16 port, char *buf, size_t size);

/* policy_explain.c: `policy explain [ADDR:]PORT`. */
int policy_explain(const char *what);

/* policy_print.c: a rule as `policy add` takes it, every key in one order (two rules that say the
 * same have the same text): "arms=bbr3:90,cubic:10 holdback=cubic lport=8080 priority=100".
 */
void policy_rule_text(const struct bbrkit_policy_rule *r, char *buf, size_t size);
/* policy_print.c: list (only NULL) or show one rule. */
int policy_print(bool json, const char *only);

#endif /* BBRCTL_POLICY_INTERNAL_H */
