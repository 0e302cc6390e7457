// SPDX-License-Identifier: GPL-2.0
/* Printing the policy: `policy list` and `policy show` as a table or JSON, and the rules that keep an
 * algorithm from being detached.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "policy_internal.h"

void policy_prefix_text(const struct bbrkit_policy_prefix *p, char *buf, size_t size)
{
	char addr[INET6_ADDRSTRLEN];
	static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	bool v4 = p->prefixlen >= V4_MAPPED_BITS && !memcmp(p->addr, mapped, sizeof(mapped));

	inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? p->addr + 12 : p->addr, addr, sizeof(addr));
	snprintf(buf, size, "%s/%u", addr, v4 ? p->prefixlen - V4_MAPPED_BITS : p->prefixlen);
}

static void match_text(const struct bbrkit_policy_rule *r, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	if (r->cgroup_path[0])
		used += (size_t)snprintf(buf + used, size - used, "cgroup=%s ", r->cgroup_path);
	if (r->netns_name[0] && used < size)
		used += (size_t)snprintf(buf + used, size - used, "netns=%s ", r->netns_name);
	if (r->lport && used < size)
		used += (size_t)snprintf(buf + used, size - used, "lport=%u ", r->lport);
	if (r->rport && used < size)
		used += (size_t)snprintf(buf + used, size - used, "rport=%u ", r->rport);
	for (unsigned int d = 0; d < r->ndst && used < size; d++) {
		char p[INET6_ADDRSTRLEN + 8];

		policy_prefix_text(&r->dst[d], p, sizeof(p));
		used += (size_t)snprintf(buf + used, size - used, "%s%s", d ? "," : "dst=", p);
		if (d + 1 == r->ndst && used < size)
			used += (size_t)snprintf(buf + used, size - used, " ");
	}
	if (!used)
		snprintf(buf, size, "any ");
	buf[strlen(buf) - 1] = '\0';
}

/* A weight in percent as a rule is written: "90", "12.5", "0.05". */
static void weight_text(__u32 bp, char *buf, size_t size)
{
	int len = snprintf(buf, size, "%u.%02u", bp / PERCENT_SCALE, bp % PERCENT_SCALE);

	while (buf[len - 1] == '0')
		buf[--len] = '\0';
	if (buf[len - 1] == '.')
		buf[--len] = '\0';
}

void policy_rule_text(const struct bbrkit_policy_rule *r, char *buf, size_t size)
{
	size_t used = 0;

	for (unsigned int i = 0; i < r->narms && used < size; i++) {
		char w[16];

		weight_text(r->arms[i].weight, w, sizeof(w));
		used += (size_t)snprintf(
			buf + used, size - used, "%s%s:%s", i ? "," : "arms=", r->arms[i].cc, w);
	}
	if (used < size)
		used += (size_t)snprintf(buf + used, size - used, " holdback=%s", r->arms[r->holdback].cc);
	if (used < size) {
		char match[512];

		match_text(r, match, sizeof(match));
		if (strcmp(match, "any"))
			used += (size_t)snprintf(buf + used, size - used, " %s", match);
	}
	if (used < size)
		used += (size_t)snprintf(buf + used, size - used, " priority=%u", r->priority);
	if (used < size && r->flags & BBRKIT_RULE_FALLBACK)
		snprintf(buf + used, size - used, " fallback=yes");
}

static void rule_json(struct json *j, __u32 slot, const struct bbrkit_policy_rule *r)
{
	json_object(j);
	json_key(j, "name");
	json_string(j, r->name);
	json_key(j, "slot");
	json_uint(j, slot);
	json_key(j, "priority");
	json_uint(j, r->priority);
	json_key(j, "cgroup");
	json_string(j, r->cgroup_path[0] ? r->cgroup_path : NULL);
	json_key(j, "netns");
	json_string(j, r->netns_name[0] ? r->netns_name : NULL);
	json_key(j, "lport");
	if (r->lport)
		json_uint(j, r->lport);
	else
		json_null(j);
	json_key(j, "rport");
	if (r->rport)
		json_uint(j, r->rport);
	else
		json_null(j);
	json_key(j, "dst");
	json_array(j);
	for (unsigned int d = 0; d < r->ndst; d++) {
		char p[INET6_ADDRSTRLEN + 8];

		policy_prefix_text(&r->dst[d], p, sizeof(p));
		json_string(j, p);
	}
	json_array_end(j);
	json_key(j, "fallback");
	json_bool(j, r->flags & BBRKIT_RULE_FALLBACK);
	json_key(j, "holdback");
	json_string(j, r->arms[r->holdback].cc);
	json_key(j, "arms");
	json_array(j);
	for (unsigned int i = 0; i < r->narms; i++) {
		struct bbrkit_policy_stats st;

		policy_read_stats(slot, i, &st);
		json_object(j);
		json_key(j, "algo");
		json_string(j, r->arms[i].cc);
		json_key(j, "weight");
		json_double(j, (double)r->arms[i].weight / PERCENT_SCALE, 4);
		json_key(j, "connections");
		json_uint(j, st.connections);
		json_key(j, "fallbacks");
		json_uint(j, st.fallbacks);
		json_key(j, "locked");
		json_uint(j, st.locked);
		json_key(j, "migrated");
		json_uint(j, st.migrated);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

int policy_print(bool json, const char *only)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	char cgroot[BBRCTL_MAX_PATH] = "";
	struct json j;
	int err;

	if (check_root())
		return EXIT_FAILURE;
	if (!policy_exists()) {
		if (only)
			return fail(0, "no policy: bbrctl policy add creates one");
		memset(rules, 0, sizeof(rules));
	} else if ((err = policy_read_rules(rules))) {
		return fail(err, "cannot read the policy's rules");
	} else {
		find_cgroup2(cgroot, sizeof(cgroot));
	}
	if (only && find_slot(rules, only) < 0)
		return bad_argument("no rule '%s' (bbrctl policy list)", only);
	if (json) {
		json_init(&j, stdout);
		json_object(&j);
		json_key(&j, "attached");
		json_bool(&j, policy_exists());
		json_key(&j, "cgroup2");
		json_string(&j, cgroot[0] ? cgroot : NULL);
		json_key(&j, "rules");
		json_array(&j);
		for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++)
			if (rules[s].narms && (!only || !strcmp(rules[s].name, only)))
				rule_json(&j, s, &rules[s]);
		json_array_end(&j);
		json_object_end(&j);
		return EXIT_SUCCESS;
	}
	if (!only)
		printf("%-15s %-8s %-40s %-8s %s\n", "RULE", "PRIORITY", "MATCH", "HOLDBACK",
			"ARMS (weight, connections)");
	for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++) {
		const struct bbrkit_policy_rule *r = &rules[s];
		char match[512];

		if (!r->narms || (only && strcmp(r->name, only)))
			continue;
		match_text(r, match, sizeof(match));
		if (only)
			printf("rule %s\n  priority %u\n  match %s\n  holdback %s\n  fallback %s\n  arms:\n",
				r->name, r->priority, match, r->arms[r->holdback].cc,
				r->flags & BBRKIT_RULE_FALLBACK
					? "yes (the default where the arm's algorithm is gone)"
					: "no (its algorithms cannot be detached)");
		else
			printf("%-15s %-8u %-40s %-8s", r->name, r->priority, match, r->arms[r->holdback].cc);
		for (unsigned int i = 0; i < r->narms; i++) {
			struct bbrkit_policy_stats st;

			policy_read_stats(s, i, &st);
			if (only)
				printf("    %-12s %6.2f%%  %llu connections, %llu fallbacks (%llu under a "
				       "route's "
				       "congctl lock), %llu migrated here, %llu closed\n",
					r->arms[i].cc, (double)r->arms[i].weight / PERCENT_SCALE,
					(unsigned long long)st.connections, (unsigned long long)st.fallbacks,
					(unsigned long long)st.locked, (unsigned long long)st.migrated,
					(unsigned long long)st.closed);
			else
				printf(" %s:%.2f%%(%llu)", r->arms[i].cc,
					(double)r->arms[i].weight / PERCENT_SCALE,
					(unsigned long long)st.connections);
		}
		if (!only)
			putchar('\n');
	}
	if (!only && cgroot[0])
		printf("(program on the cgroup2 root at %s)\n", cgroot);
	return EXIT_SUCCESS;
}

/* detach: rules naming algo without fallback=yes; their names in out. */
int policy_blocks_detach(const char *algo, char *out, size_t size)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	size_t used = 0;
	int n = 0;

	out[0] = '\0';
	if (!policy_exists() || policy_read_rules(rules))
		return 0;
	for (unsigned int s = 0; s < BBRKIT_POLICY_RULES; s++)
		for (unsigned int i = 0; i < rules[s].narms; i++)
			if (!strcmp(rules[s].arms[i].cc, algo) && !(rules[s].flags & BBRKIT_RULE_FALLBACK) &&
				used < size) {
				used += (size_t)snprintf(
					out + used, size - used, "%s%s", n++ ? ", " : "", rules[s].name);
				break;
			}
	return n;
}
