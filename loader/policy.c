// SPDX-License-Identifier: GPL-2.0
/* policy: which new TCP connections get which congestion control (include/bbrkit_policy.h).
 *
 * The first `policy add` loads bpf/policy.bpf.c, attaches its sockops program to the cgroup v2 root
 * through a pinned link and pins its maps under BBRKIT_PIN_ROOT/BBRKIT_POLICY_DIR; the last `policy
 * del` takes all of it away again, and the cgroup2 mount bbrctl made where the host had none.
 * Everything a rule says is checked before anything is written: a bad rule is one line and no change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbrctl.h"
#include "policy_internal.h"

/* Each arm's algorithm is registered now: bpf_setsockopt loads no modules. */
static int check_algorithms(const struct bbrkit_policy_rule *r)
{
	char avail[1024];

	for (unsigned int i = 0; i < r->narms; i++) {
		const char *cc = r->arms[i].cc;

		if (kernel_has_cc(cc))
			continue;
		if (algo_find(cc))
			return bad_argument("%s is not attached: bbrctl attach %s first", cc, cc);
		if (read_available_cc(avail, sizeof(avail)))
			avail[0] = '\0';
		avail[strcspn(avail, "\n")] = '\0';
		return bad_argument("unknown algorithm '%s' (registered: %s; a module's algorithm must be "
				    "loaded first, e.g. modprobe tcp_%s)",
			cc, avail, cc);
	}
	return EXIT_SUCCESS;
}
/* The arms name the same algorithms in the same order: the arm indexes of placed connections hold. */
static bool same_arms(const struct bbrkit_policy_rule *a, const struct bbrkit_policy_rule *b)
{
	if (a->narms != b->narms)
		return false;
	for (unsigned int i = 0; i < a->narms; i++)
		if (strncmp(a->arms[i].cc, b->arms[i].cc, sizeof(a->arms[i].cc)))
			return false;
	return true;
}

/* A rule's netns= as the inode the program compares: a name under /run/netns, a path, or the inode. */
static int netns_inode_of(const char *text, __u32 *inode)
{
	char path[BBRCTL_MAX_PATH];
	struct stat st;

	if (text[strspn(text, "0123456789")] == '\0') {
		unsigned long n = strtoul(text, NULL, 10);

		if (!n || n > UINT32_MAX)
			return bad_argument("netns '%s' is not an inode number", text);
		*inode = (__u32)n;
		return EXIT_SUCCESS;
	}
	snprintf(path, sizeof(path), strchr(text, '/') ? "%s" : "/run/netns/%s", text);
	if (stat(path, &st))
		return bad_argument("netns '%s': %s: %s", text, path, strerror(errno));
	*inode = (__u32)st.st_ino;
	return EXIT_SUCCESS;
}

/* a's matches include all of b's: every key a sets, b sets to the same or to something narrower. */
static bool covers(const struct bbrkit_policy_rule *a, const struct bbrkit_policy_rule *b)
{
	size_t n = strlen(a->cgroup_path);

	if ((a->lport && a->lport != b->lport) || (a->rport && a->rport != b->rport) ||
		(a->netns && a->netns != b->netns))
		return false;
	if (n &&
		(strncmp(a->cgroup_path, b->cgroup_path, n) ||
			(b->cgroup_path[n] && b->cgroup_path[n] != '/')))
		return false;
	if (a->ndst && !b->ndst)
		return false;
	for (unsigned int i = 0; a->ndst && i < b->ndst; i++) {
		bool inside = false;

		for (unsigned int j = 0; j < a->ndst; j++)
			inside |= prefix_contains(&a->dst[j], &b->dst[i]);
		if (!inside)
			return false;
	}
	return true;
}

/* The program's order: lower priority first, then the older rule. */
static bool precedes(const struct bbrkit_policy_rule *a, const struct bbrkit_policy_rule *b)
{
	return a->priority < b->priority || (a->priority == b->priority && a->created < b->created);
}

/* What the operator may not have meant: a rule for every connection, a rule no connection reaches
 * because an earlier one takes all of its connections, or an earlier rule doing that to another.
 */
static void warn_reach(const struct bbrkit_policy_rule *rules, int slot)
{
	const struct bbrkit_policy_rule *r = &rules[slot];

	if (!r->cgroup_path[0] && !r->netns && !r->lport && !r->rport && !r->ndst)
		warn(0, "rule %s matches every connection (no cgroup, netns, lport, rport or dst)", r->name);
	for (int s = 0; s < BBRKIT_POLICY_RULES; s++) {
		const struct bbrkit_policy_rule *o = &rules[s];

		if (s == slot || !o->narms)
			continue;
		if (precedes(o, r) && covers(o, r))
			warn(0,
				"rule %s is shadowed by rule %s (priority %u, earlier): it gets no "
				"connection",
				r->name, o->name, o->priority);
		else if (precedes(r, o) && covers(r, o))
			warn(0, "rule %s now shadows rule %s (priority %u): that rule gets no connection",
				r->name, o->name, o->priority);
	}
}

/* One past the newest rule's creation order. */
static __u32 next_created(const struct bbrkit_policy_rule *rules)
{
	__u32 newest = 0;

	for (unsigned int s = 0; s < BBRKIT_POLICY_RULES; s++)
		if (rules[s].narms && rules[s].created > newest)
			newest = rules[s].created;
	return newest + 1;
}

static int policy_add(const char *name, int argc, char **argv)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	struct policy_spec s;
	char cgroot[BBRCTL_MAX_PATH];
	int ret, err, old, slot = -1, rootfd;
	bool created = false;

	ret = policy_parse(name, argc, argv, &s);
	if (!ret)
		ret = check_algorithms(&s.rule);
	if (ret)
		return ret;
	if (check_root() || check_kernel())
		return EXIT_FAILURE;
	rootfd = lock_root(true);
	if (rootfd < 0)
		return fail(rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	err = mount_cgroup2(cgroot, sizeof(cgroot));
	if (err) {
		ret = fail(err, "no cgroup2 hierarchy and cannot mount one at " OWN_CGROUP2);
		goto out;
	}
	if (s.rule.cgroup_path[0]) {
		ret = cgroup_id_of(cgroot, s.rule.cgroup_path, &s.rule.cgroup_id, &s.rule.cgroup_level);
		if (ret)
			goto undo;
	}
	if (s.rule.netns_name[0]) {
		ret = netns_inode_of(s.rule.netns_name, &s.rule.netns);
		if (ret)
			goto undo;
	}
	if (!policy_exists()) {
		remove_stale(rootfd);
		ret = create_policy(cgroot);
		if (ret)
			goto undo;
		created = true;
	}
	err = policy_read_rules(rules);
	if (err) {
		ret = fail(err, "cannot read the policy's rules");
		goto undo;
	}
	old = find_slot(rules, name);
	if (old >= 0 && !s.replace) {
		ret = bad_argument("rule '%s' exists (replace=yes changes it)", name);
		goto undo;
	}
	for (int i = 0; i < BBRKIT_POLICY_RULES && slot < 0 && old < 0; i++)
		if (!rules[i].narms)
			slot = i;
	if (slot < 0 && old < 0) {
		ret = bad_argument("all %d rule slots are taken", BBRKIT_POLICY_RULES);
		goto undo;
	}
	if (old >= 0) {
		/* An edit stays in its slot with its creation order and counters, and its placed
		 * connections stay counted, unless an arm now names another algorithm: each algorithm
		 * keeps its own counters then and connections placed before are left out at close.
		 * Like revert it is one write of the slot, seen whole by the next connection.
		 */
		slot = old;
		s.rule.created = rules[old].created;
		s.rule.generation = rules[old].generation + !same_arms(&rules[old], &s.rule);
		err = same_arms(&rules[old], &s.rule) ? 0 : remap_stats((__u32)slot, &rules[old], &s.rule);
	} else {
		s.rule.created = next_created(rules);
		s.rule.generation = rules[slot].generation + 1;
		err = remap_stats((__u32)slot, NULL, NULL);
	}
	rules[slot] = s.rule;
	if (!err)
		err = rebuild_prefixes(rules);
	if (!err)
		err = write_slot((__u32)slot, &s.rule);
	if (err) {
		ret = fail(err, "cannot write rule '%s'", name);
		goto undo;
	}
	warn_reach(rules, slot);
	printf("rule %s %s: new connections only\n", name, old >= 0 ? "replaced" : "added");
	ret = EXIT_SUCCESS;
	goto out;
undo:
	/* Nothing changed: a policy this add created goes again, with the mount it made. */
	if (created)
		remove_policy();
	else if (!policy_exists())
		unmount_own_cgroup2();
out:
	close(rootfd);
	return ret;
}

static int open_policy_locked(int *rootfd)
{
	if (check_root())
		return EXIT_FAILURE;
	*rootfd = bpffs_mounted() ? lock_root(false) : -ENOENT;
	if (*rootfd == -ENOENT || (*rootfd >= 0 && !policy_exists())) {
		if (*rootfd >= 0)
			close(*rootfd);
		return fail(0, "no policy: bbrctl policy add creates one");
	}
	if (*rootfd < 0)
		return fail(*rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	return EXIT_SUCCESS;
}

/* With the pin root locked (*rootfd, to close), the rules and the slot of rule name; -1 after a
 * one-line error in *ret.
 */
static int locked_rule(const char *name, struct bbrkit_policy_rule *rules, int *rootfd, int *ret)
{
	int err, slot;

	if (open_policy_locked(rootfd)) {
		*ret = EXIT_FAILURE;
		*rootfd = -1;
		return -1;
	}
	err = policy_read_rules(rules);
	slot = err ? -1 : find_slot(rules, name);
	if (err)
		*ret = fail(err, "cannot read the policy's rules");
	else if (slot < 0)
		*ret = bad_argument("no rule '%s' (bbrctl policy list)", name);
	return slot;
}

static int policy_del(const char *name)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	int rootfd, slot, err, ret;

	slot = locked_rule(name, rules, &rootfd, &ret);
	if (slot >= 0) {
		rules[slot].narms = 0;
		rules[slot].generation++;
		err = write_slot((__u32)slot, &rules[slot]);
		if (!err)
			err = rebuild_prefixes(rules);
		if (err)
			ret = fail(err, "cannot delete rule '%s'", name);
		else if (nrules(rules) == 0)
			ret = remove_policy();
		else
			ret = EXIT_SUCCESS;
		if (!ret)
			printf("rule %s deleted%s\n", name,
				nrules(rules) ? "" : "; no rules left: policy program detached");
	}
	if (rootfd >= 0)
		close(rootfd);
	return ret;
}

static int policy_revert(const char *name, bool migrate)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	int rootfd, slot, err, ret;

	slot = locked_rule(name, rules, &rootfd, &ret);
	if (slot >= 0) {
		struct bbrkit_policy_rule *r = &rules[slot];

		/* The arms stay, at weight 0, so that their series go on in the exporter. */
		for (unsigned int i = 0; i < r->narms; i++)
			r->arms[i].weight = i == r->holdback ? BBRKIT_POLICY_WEIGHT_TOTAL : 0;
		err = write_slot((__u32)slot, r);
		ret = err ? fail(err, "cannot write rule '%s'", name) : EXIT_SUCCESS;
		if (!ret)
			printf("rule %s reverted: %s connections get %s\n", name, migrate ? "all" : "new",
				r->arms[r->holdback].cc);
		if (!ret && migrate)
			ret = policy_migrate_slot((__u32)slot, name, false);
	}
	if (rootfd >= 0)
		close(rootfd);
	return ret;
}

static int policy_migrate(const char *name, bool dry_run)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	int rootfd, slot, ret;

	slot = locked_rule(name, rules, &rootfd, &ret);
	if (slot >= 0)
		ret = policy_migrate_slot((__u32)slot, name, dry_run);
	if (rootfd >= 0)
		close(rootfd);
	return ret;
}

#define VERBS "add, del, list, show, revert, migrate, explain"

int cmd_policy(const struct cmd_opts *o, int argc, char **argv)
{
	static const char *const named[] = { "add", "del", "show", "revert", "migrate", "explain", NULL };
	const char *verb = argv[0];
	bool known = false;

	for (const char *const *v = named; *v; v++)
		known |= !strcmp(verb, *v);
	if (!strcmp(verb, "list") || !strcmp(verb, "show") || !strcmp(verb, "explain") || o->dry_run)
		audit_skip();
	if (!strcmp(verb, "list")) {
		if (argc != 1)
			return bad_argument("list takes no arguments");
		return policy_print(o->json, NULL);
	}
	if (!known)
		return bad_argument("unknown verb '%s' (" VERBS ")", verb);
	if (argc < 2)
		return bad_argument("%s needs a RULE name", verb);
	set_context("policy %s %s", verb, argv[1]);
	if (o->dry_run && strcmp(verb, "migrate"))
		return bad_argument("--dry-run goes with migrate only");
	if (o->migrate && strcmp(verb, "revert"))
		return bad_argument("--migrate goes with revert only");
	if (!strcmp(verb, "add"))
		return policy_add(argv[1], argc - 2, argv + 2);
	if (argc != 2)
		return bad_argument("%s takes one RULE name", verb);
	if (!strcmp(verb, "del"))
		return policy_del(argv[1]);
	if (!strcmp(verb, "show"))
		return policy_print(o->json, argv[1]);
	if (!strcmp(verb, "revert"))
		return policy_revert(argv[1], o->migrate);
	if (!strcmp(verb, "explain"))
		return policy_explain(argv[1]);
	return policy_migrate(argv[1], o->dry_run);
}
