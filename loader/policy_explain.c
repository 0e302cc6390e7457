// SPDX-License-Identifier: GPL-2.0
/* policy explain [ADDR:]PORT: for each established connection with that end, which rule and arm the
 * policy gave it when it was established, which it would give it now and why: every rule's verdict,
 * worked out by the program's own matching code (the policy object's explain_socks iterator).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"
#include "policy_internal.h"

#define V4_MAPPED_PREFIX 12 /* bytes of ::ffff: before an IPv4 address */

struct endpoint {
	bool any_addr;
	__u8 addr[16];
	__u16 port;
};

/* "PORT", "ADDR:PORT" or "[V6]:PORT"; EXIT_USAGE after one line. */
static int parse_endpoint(const char *text, struct endpoint *e)
{
	char buf[INET6_ADDRSTRLEN + 8], *colon, *end, *host = buf;
	long port;

	memset(e, 0, sizeof(*e));
	if (snprintf(buf, sizeof(buf), "%s", text) >= (int)sizeof(buf))
		return bad_argument("'%s' is not [ADDR:]PORT", text);
	colon = strrchr(buf, ':');
	e->any_addr = !colon;
	if (colon)
		*colon = '\0';
	port = strtol(colon ? colon + 1 : buf, &end, 10);
	if (end == (colon ? colon + 1 : buf) || *end || port < 1 || port > 65535)
		return bad_argument("'%s' is not [ADDR:]PORT (a port 1-65535)", text);
	e->port = (__u16)port;
	if (!colon)
		return EXIT_SUCCESS;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		host[strlen(host) - 1] = '\0';
		host++;
	}
	if (inet_pton(AF_INET6, host, e->addr) == 1)
		return EXIT_SUCCESS;
	e->addr[10] = e->addr[11] = 0xff;
	if (inet_pton(AF_INET, host, e->addr + V4_MAPPED_PREFIX) == 1)
		return EXIT_SUCCESS;
	return bad_argument("'%s' is not [ADDR:]PORT ('%s' is not an address)", text, host);
}

static bool has_end(const struct bbrkit_explain *x, const struct endpoint *e)
{
	return (x->sport == e->port && (e->any_addr || !memcmp(x->saddr, e->addr, 16))) ||
		(x->dport == e->port && (e->any_addr || !memcmp(x->daddr, e->addr, 16)));
}

/* The arm's share of the hash range: [lo, hi) of BBRKIT_POLICY_WEIGHT_TOTAL. */
static void arm_share(const struct bbrkit_policy_rule *r, __u32 arm, __u32 *lo, __u32 *hi)
{
	*lo = 0;
	for (__u32 i = 0; i < arm && i < r->narms; i++)
		*lo += r->arms[i].weight;
	*hi = *lo + r->arms[arm].weight;
}

static void why_not(
	const struct bbrkit_policy_rule *r, enum bbrkit_policy_verdict v, const struct bbrkit_explain *x)
{
	char text[BBRCTL_MAX_PATH];

	switch (v) {
	case BBRKIT_VERDICT_DST:
		policy_prefix_text(&r->dst[0], text, sizeof(text));
		printf("no: the remote address is in none of its dst prefixes (%s%s)", text,
			r->ndst > 1 ? ", ..." : "");
		break;
	case BBRKIT_VERDICT_LPORT:
		printf("no: lport=%u, the connection's is %u", r->lport, x->sport);
		break;
	case BBRKIT_VERDICT_RPORT:
		printf("no: rport=%u, the connection's is %u", r->rport, x->dport);
		break;
	case BBRKIT_VERDICT_NETNS:
		printf("no: netns=%s (inode %u), the connection's is %u", r->netns_name, r->netns, x->netns);
		break;
	case BBRKIT_VERDICT_CGROUP:
		printf("no: cgroup=%s, the connection's socket is in neither it nor a cgroup below it",
			r->cgroup_path);
		break;
	default:
		printf("no");
	}
}

static void explain_one(const struct bbrkit_explain *x, const struct bbrkit_policy_rule *rules)
{
	char from[BBRCTL_MAX_PATH], to[BBRCTL_MAX_PATH];
	const struct bbrkit_policy_rule *placed = NULL, *now = NULL;

	policy_endpoint_text(x->saddr, x->sport, from, sizeof(from));
	policy_endpoint_text(x->daddr, x->dport, to, sizeof(to));
	printf("%s %s netns %u: runs %.*s\n", from, to, x->netns, BBRKIT_POLICY_NAME_MAX, x->cc);
	if (x->placed_slot < BBRKIT_POLICY_RULES && rules[x->placed_slot].narms &&
		rules[x->placed_slot].generation == x->placed_generation)
		placed = &rules[x->placed_slot];
	if (placed)
		printf("  placed by rule %s, arm %s%s\n", placed->name, placed->arms[x->placed_arm].cc,
			x->placed_fallback
				? " (a fallback: the algorithm could not be set, it kept the default)"
				: "");
	else if (x->placed_slot < BBRKIT_POLICY_RULES)
		printf("  placed by a rule since deleted or given other algorithms\n");
	else
		printf("  not placed by the policy: no rule matched when it was established, or it is older "
		       "than "
		       "the policy\n");
	if (x->now_slot < BBRKIT_POLICY_RULES) {
		__u32 lo, hi;

		now = &rules[x->now_slot];
		arm_share(now, x->now_arm, &lo, &hi);
		printf("  now: rule %s, arm %s: its 4-tuple hashes to %u of %u, in %s's share [%u, %u)%s\n",
			now->name, now->arms[x->now_arm].cc, x->point, BBRKIT_POLICY_WEIGHT_TOTAL,
			now->arms[x->now_arm].cc, lo, hi,
			strncmp(x->cc, now->arms[x->now_arm].cc, BBRKIT_POLICY_NAME_MAX)
				? " (policy migrate would move it)"
				: "");
	} else {
		printf("  now: no rule matches; new connections like it keep the namespace default\n");
	}
	for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++) {
		const struct bbrkit_policy_rule *r = &rules[s];
		enum bbrkit_policy_verdict v = BBRKIT_VERDICT_FREE;

		if (!r->narms)
			continue;
		for (unsigned int i = 0; i < BBRKIT_VERDICTS; i++)
			if (x->verdicts[i] & (1U << s))
				v = (enum bbrkit_policy_verdict)i;
		printf("  rule %s (priority %u, created %u): ", r->name, r->priority, r->created);
		if (v == BBRKIT_VERDICT_MATCH)
			printf(r == now ? "matches, first" : "matches, but rule %s comes first",
				now ? now->name : "?");
		else
			why_not(r, v, x);
		printf("\n");
	}
}

int policy_explain(const char *what)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	struct endpoint e;
	char *buf = NULL;
	size_t used = 0, shown = 0;
	int ret = parse_endpoint(what, &e), err;

	if (ret)
		return ret;
	if (check_root())
		return EXIT_FAILURE;
	if (!policy_exists())
		return fail(0, "no policy: bbrctl policy add creates one");
	err = policy_read_rules(rules);
	if (err)
		return fail(err, "cannot read the policy's rules");
	ret = policy_iterate("explain_socks", BBRKIT_POLICY_RULES, true, &buf, &used);
	for (size_t i = 0; !ret && i < used / sizeof(struct bbrkit_explain); i++) {
		const struct bbrkit_explain *x = (const void *)(buf + i * sizeof(*x));

		if (has_end(x, &e)) {
			explain_one(x, rules);
			shown++;
		}
	}
	free(buf);
	if (!ret && !shown)
		return fail(0, "no established connection has the end %s", what);
	return ret;
}
