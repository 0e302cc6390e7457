// SPDX-License-Identifier: GPL-2.0
/* policy rules from the command line: NAME KEY=VALUE... into a struct bbrkit_policy_rule. No system
 * state, so the unit tests run it without root; a bad rule is one line naming the key and the reason.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"
#include "policy_internal.h"

#define DEFAULT_PRIORITY 100
#define MAX_PRIORITY 1000000

static const char *const rule_keys =
	"arms, holdback, cgroup, netns, lport, rport, dst, priority, fallback, replace";

static bool valid_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n >= max)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

/* "12.5" percent into basis points; -1 when malformed or above 100. */
static long parse_percent(const char *s)
{
	long whole = 0, frac = 0;
	int places = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++)
		if ((whole = whole * 10 + (*p - '0')) > 100)
			return -1;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, places++)
			if (places < 2)
				frac = frac * 10 + (*p - '0');
			else if (*p != '0')
				return -1; /* finer than 0.01% is not representable */
		if (!places)
			return -1;
	}
	if (*p)
		return -1;
	for (; places < 2; places++)
		frac *= 10;
	return whole * PERCENT_SCALE + frac;
}

static int parse_arms(const char *text, struct bbrkit_policy_rule *r)
{
	char buf[256], *save = NULL;
	long total = 0;
	bool weighted = false;

	if (snprintf(buf, sizeof(buf), "%s", text) >= (int)sizeof(buf))
		return bad_argument("arms '%.32s...' is too long", text);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		long w = BBRKIT_POLICY_WEIGHT_TOTAL;

		if (r->narms == BBRKIT_POLICY_ARMS)
			return bad_argument("arms: at most %d arms", BBRKIT_POLICY_ARMS);
		if (colon) {
			*colon = '\0';
			w = parse_percent(colon + 1);
			if (w < 0)
				return bad_argument(
					"arms: weight '%s' of %s is not a percentage (0-100, two decimals)",
					colon + 1, tok);
			weighted = true;
		}
		if (!valid_name(tok, BBRKIT_POLICY_NAME_MAX))
			return bad_argument("arms: '%s' is not an algorithm name", tok);
		for (unsigned int i = 0; i < r->narms; i++)
			if (!strcmp(r->arms[i].cc, tok))
				return bad_argument("arms: %s appears twice", tok);
		snprintf(r->arms[r->narms].cc, sizeof(r->arms[0].cc), "%s", tok);
		r->arms[r->narms++].weight = (__u32)w;
		total += w;
	}
	if (!r->narms)
		return bad_argument("arms: no algorithm given");
	if (r->narms > 1 && !weighted)
		return bad_argument("arms: a split needs a weight per arm, e.g. arms=bbr3:90,cubic:10");
	if (total != BBRKIT_POLICY_WEIGHT_TOTAL)
		return bad_argument("arms: weights add up to %ld.%02ld%%, not 100%%", total / PERCENT_SCALE,
			total % PERCENT_SCALE);
	return EXIT_SUCCESS;
}

static int parse_port(const char *key, const char *v, __u16 *out)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < 1 || n > 65535)
		return bad_argument("%s '%s' is not a port (1-65535)", key, v);
	*out = (__u16)n;
	return EXIT_SUCCESS;
}

/* "10.0.0.0/8" or "2001:db8::/32" into a trie key; a prefix with host bits set is refused, since
 * the operator meant some other prefix.
 */
int policy_parse_prefix(const char *text, struct bbrkit_policy_prefix *p)
{
	char addr[INET6_ADDRSTRLEN + 8], *slash, *end;
	long len;
	bool v6;

	if (snprintf(addr, sizeof(addr), "%s", text) >= (int)sizeof(addr))
		return bad_argument("dst '%s' is not a prefix", text);
	slash = strchr(addr, '/');
	if (!slash)
		return bad_argument("dst '%s' is not a prefix (ADDRESS/LENGTH)", text);
	*slash = '\0';
	v6 = strchr(addr, ':') != NULL;
	len = strtol(slash + 1, &end, 10);
	if (!slash[1] || *end || len < 0 || len > (v6 ? 128 : 32))
		return bad_argument("dst '%s': prefix length must be 0-%d", text, v6 ? 128 : 32);
	memset(p, 0, sizeof(*p));
	if (v6) {
		if (inet_pton(AF_INET6, addr, p->addr) != 1)
			return bad_argument("dst '%s': '%s' is not an IPv6 address", text, addr);
		p->prefixlen = (__u32)len;
	} else {
		if (inet_pton(AF_INET, addr, p->addr + 12) != 1)
			return bad_argument("dst '%s': '%s' is not an IPv4 address", text, addr);
		p->addr[10] = p->addr[11] = 0xff;
		p->prefixlen = (__u32)len + V4_MAPPED_BITS;
	}
	for (unsigned int bit = p->prefixlen; bit < 128; bit++)
		if (p->addr[bit / 8] & (0x80 >> (bit % 8)))
			return bad_argument("dst '%s' has host bits set beyond /%ld", text, len);
	return EXIT_SUCCESS;
}

/* "/a//b/" as "/a/b" into cgroup_path and its names into cgroup_names (fitting: cgroup_path_fits). */
static void store_cgroup(const char *v, struct bbrkit_policy_rule *r)
{
	size_t n = 0;
	unsigned int level = 0;

	for (; *v; v++)
		if (*v != '/' || (v[1] && v[1] != '/'))
			r->cgroup_path[n++] = *v;
	r->cgroup_path[n] = '\0';
	memset(r->cgroup_names, 0, sizeof(r->cgroup_names));
	for (const char *p = r->cgroup_path; *p && level < BBRKIT_POLICY_CGROUP_LEVELS; level++) {
		size_t len = strcspn(++p, "/");

		memcpy(r->cgroup_names[level], p, len);
		p += len;
	}
}

/* Within the levels and name lengths the program compares. */
static bool cgroup_path_fits(const char *v)
{
	unsigned int levels = 0;

	while (*v) {
		size_t len;

		v += strspn(v, "/");
		len = strcspn(v, "/");
		if (len >= BBRKIT_POLICY_CGROUP_NAME - 1) /* a longer kernel name reads cut to this */
			return false;
		levels += len > 0;
		v += len;
	}
	return levels <= BBRKIT_POLICY_CGROUP_LEVELS;
}

static int parse_bool(const char *key, const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "on"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "off"))
		*out = false;
	else
		return bad_argument("%s '%s' is not yes or no", key, v);
	return EXIT_SUCCESS;
}

int policy_parse(const char *name, int argc, char **argv, struct policy_spec *s)
{
	const char *holdback = NULL;
	bool fallback = false;
	int ret = EXIT_SUCCESS;

	memset(s, 0, sizeof(*s));
	s->rule.priority = DEFAULT_PRIORITY;
	if (!valid_name(name, BBRKIT_POLICY_NAME_MAX))
		return bad_argument("rule name '%s' must be 1-%d letters, digits, '_', '-' or '.'", name,
			BBRKIT_POLICY_NAME_MAX - 1);
	snprintf(s->rule.name, sizeof(s->rule.name), "%s", name);
	for (int i = 0; i < argc && !ret; i++) {
		char *eq = strchr(argv[i], '=');
		const char *v;
		size_t klen;

		if (!eq || eq == argv[i])
			return bad_argument("'%s' is not KEY=VALUE (keys: %s)", argv[i], rule_keys);
		v = eq + 1;
		klen = (size_t)(eq - argv[i]);
#define KEY(k) (klen == strlen(k) && !strncmp(argv[i], k, klen))
		if (KEY("arms")) {
			ret = parse_arms(v, &s->rule);
		} else if (KEY("holdback")) {
			holdback = v;
		} else if (KEY("cgroup")) {
			if (v[0] != '/' || strlen(v) >= BBRKIT_POLICY_CGROUP_MAX || strstr(v, "/../") ||
				(strlen(v) >= 3 && !strcmp(v + strlen(v) - 3, "/..")) || !cgroup_path_fits(v))
				return bad_argument(
					"cgroup '%s' must be a path below the cgroup2 root, e.g. "
					"/system.slice/nginx.service (at most %d characters, %d levels, "
					"names under %d characters)",
					v, BBRKIT_POLICY_CGROUP_MAX - 1, BBRKIT_POLICY_CGROUP_LEVELS,
					BBRKIT_POLICY_CGROUP_NAME - 1);
			store_cgroup(v, &s->rule);
		} else if (KEY("netns")) {
			if (!*v || strlen(v) >= BBRKIT_POLICY_NETNS_MAX)
				return bad_argument(
					"netns '%s' must be a name under /run/netns, a path such as "
					"/proc/PID/ns/net or an inode number (at most %d characters)",
					v, BBRKIT_POLICY_NETNS_MAX - 1);
			snprintf(s->rule.netns_name, sizeof(s->rule.netns_name), "%s", v);
		} else if (KEY("lport")) {
			ret = parse_port("lport", v, &s->rule.lport);
		} else if (KEY("rport")) {
			ret = parse_port("rport", v, &s->rule.rport);
		} else if (KEY("dst")) {
			char buf[256], *save = NULL;

			snprintf(buf, sizeof(buf), "%s", v);
			for (char *tok = strtok_r(buf, ",", &save); tok && !ret;
				tok = strtok_r(NULL, ",", &save)) {
				if (s->rule.ndst == BBRKIT_POLICY_DSTS)
					return bad_argument(
						"dst: at most %d prefixes per rule", BBRKIT_POLICY_DSTS);
				ret = policy_parse_prefix(tok, &s->rule.dst[s->rule.ndst++]);
			}
		} else if (KEY("priority")) {
			char *end;
			long n = strtol(v, &end, 10);

			if (!*v || *end || n < 0 || n > MAX_PRIORITY)
				return bad_argument("priority '%s' is not 0-%d", v, MAX_PRIORITY);
			s->rule.priority = (__u32)n;
		} else if (KEY("fallback")) {
			ret = parse_bool("fallback", v, &fallback);
		} else if (KEY("replace")) {
			ret = parse_bool("replace", v, &s->replace);
		} else {
			return bad_argument("unknown key '%.*s' (keys: %s)", (int)klen, argv[i], rule_keys);
		}
#undef KEY
	}
	if (ret)
		return ret;
	if (!s->rule.narms)
		return bad_argument("missing arms=ALGO[:PERCENT],... (e.g. arms=bbr3:90,cubic:10)");
	s->rule.flags = fallback ? BBRKIT_RULE_FALLBACK : 0;
	s->rule.holdback = (__u8)(s->rule.narms - 1); /* "bbr3:90,cubic:10": the last arm holds back */
	if (holdback) {
		unsigned int i;

		for (i = 0; i < s->rule.narms && strcmp(s->rule.arms[i].cc, holdback); i++)
			;
		if (i == s->rule.narms)
			return bad_argument("holdback '%s' is not one of the rule's arms", holdback);
		s->rule.holdback = (__u8)i;
	}
	return EXIT_SUCCESS;
}
