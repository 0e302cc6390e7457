// SPDX-License-Identifier: GPL-2.0
/* policy: which new TCP connections get which congestion control (include/bbrkit_policy.h).
 *
 * The first `policy add` loads bpf/policy.bpf.c, attaches its sockops program to the cgroup v2 root
 * through a pinned link and pins its maps under BBRKIT_PIN_ROOT/BBRKIT_POLICY_DIR; the last `policy
 * del` takes all of it away again, and the cgroup2 mount bbrctl made where the host had none.
 * Everything a rule says is checked before anything is written: a bad rule is one line and no change.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "bbrkit_policy.h"
#include "policy.skel.h"

#define OWN_CGROUP2_PARENT "/run/bbrkit"
/* Where bbrctl mounts cgroup2 when the host has no cgroup v2 hierarchy mounted (v1-only hosts). */
#define OWN_CGROUP2 OWN_CGROUP2_PARENT "/cgroup2"
#define DEFAULT_PRIORITY 100
#define MAX_PRIORITY 1000000
#define PERCENT_SCALE 100 /* weights are given in percent with two decimals: basis points */
#define V4_MAPPED_BITS 96
#define PIN_RULES "rules"
#define PIN_PREFIXES "prefixes"
#define PIN_STATS "stats"
#define PIN_STORAGE "storage"
#define PIN_FLOWS "flows"

static const char *const rule_keys = "arms, holdback, cgroup, lport, rport, dst, priority, fallback, replace";

/* ---- parsing: no system state, so the unit tests run it without root ---- */

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
				(strlen(v) >= 3 && !strcmp(v + strlen(v) - 3, "/..")))
				return bad_argument("cgroup '%s' must be a path below the cgroup2 root, e.g. "
						    "/system.slice/nginx.service (at most %d characters)",
					v, BBRKIT_POLICY_CGROUP_MAX - 1);
			snprintf(s->rule.cgroup_path, sizeof(s->rule.cgroup_path), "%s", v);
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

/* ---- what the running system must have for a rule ---- */

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

/* A cgroup2 mount of the whole hierarchy: at want, or (want NULL) the first one, bbrctl's own
 * included. BBRCTL_DISABLE=host-cgroup2 ignores the host's, to test the v1-only path.
 */
static bool cgroup2_mount(const char *want, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char root[256], mnt[256], *sep = strstr(line, " - ");
		char fstype[32];

		if (!sep || sscanf(line, "%*s %*s %*s %255s %255s", root, mnt) != 2 ||
			sscanf(sep + 3, "%31s", fstype) != 1 || strcmp(fstype, "cgroup2") ||
			strcmp(root, "/"))
			continue;
		if ((want && strcmp(mnt, want)) ||
			(strcmp(mnt, OWN_CGROUP2) && feature_disabled("host-cgroup2")))
			continue;
		snprintf(out, size, "%s", mnt);
		found = true;
	}
	fclose(f);
	return found;
}

static bool find_cgroup2(char *out, size_t size)
{
	/* bbrctl's own first: the one it attached to when it made one. */
	return cgroup2_mount(OWN_CGROUP2, out, size) || cgroup2_mount(NULL, out, size);
}

static bool own_cgroup2_mounted(void)
{
	char mnt[BBRCTL_MAX_PATH];

	return cgroup2_mount(OWN_CGROUP2, mnt, sizeof(mnt));
}

static int mount_cgroup2(char *out, size_t size)
{
	if (find_cgroup2(out, size))
		return 0;
	if ((mkdir(OWN_CGROUP2_PARENT, 0755) && errno != EEXIST) ||
		(mkdir(OWN_CGROUP2, 0755) && errno != EEXIST))
		return -errno;
	if (mount("cgroup2", OWN_CGROUP2, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
		int err = -errno;

		rmdir(OWN_CGROUP2);
		rmdir(OWN_CGROUP2_PARENT);
		return err;
	}
	snprintf(out, size, "%s", OWN_CGROUP2);
	return 0;
}

/* Leaves the host as it was: only bbrctl's own mount goes, and its directories. */
static void unmount_own_cgroup2(void)
{
	if (own_cgroup2_mounted() && umount2(OWN_CGROUP2, 0))
		warn(-errno, "cannot unmount " OWN_CGROUP2);
	rmdir(OWN_CGROUP2);
	rmdir(OWN_CGROUP2_PARENT);
}

/* The cgroup v2 id (what bpf_get_current_cgroup_id() and the kernel's kn->id say) and depth. */
static int cgroup_id_of(const char *root, const char *rel, __u64 *id, __u32 *level)
{
	char path[BBRCTL_MAX_PATH * 2];
	struct {
		struct file_handle fh;
		__u64 id;
	} h = { .fh.handle_bytes = sizeof(__u64) };
	int mount_id;
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return bad_argument(
			"cgroup '%s' does not exist under the cgroup2 hierarchy at %s", rel, root);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0))
		return fail(-errno, "cannot read the id of cgroup %s", path);
	*id = h.id;
	*level = 0;
	for (const char *p = rel; *p; p++)
		*level += p[0] == '/' && p[1] && p[1] != '/';
	return EXIT_SUCCESS;
}

/* ---- the pinned policy ---- */

static void policy_pin(char *buf, const char *name)
{
	pin_path(buf, BBRKIT_POLICY_DIR, name);
}

bool policy_exists(void)
{
	char link[BBRCTL_MAX_PATH];

	policy_pin(link, BBRKIT_PIN_LINK);
	return !access(link, F_OK);
}

int policy_open_map(const char *name)
{
	char path[BBRCTL_MAX_PATH];

	policy_pin(path, name);
	return bpf_obj_get(path);
}

/* Loads the program, attaches it to the cgroup2 root and pins link, maps and the exporter's
 * iterator under a temporary name renamed into place: a failure leaves nothing.
 */
static int create_policy(const char *cgroot)
{
	char tmp[BBRCTL_MAX_PATH], dir[BBRCTL_MAX_PATH], path[BBRCTL_MAX_PATH * 2];
	struct bpf_link *link = NULL, *iter = NULL;
	struct policy *skel;
	union bpf_iter_link_info linfo = {};
	LIBBPF_OPTS(bpf_iter_attach_opts, iter_opts, .link_info = &linfo, .link_info_len = sizeof(linfo));
	int cgfd = -1, err;
	char why[512];

	pin_path(tmp, BBRKIT_POLICY_DIR "-attaching", NULL);
	policy_pin(dir, NULL);
	skel = policy__open();
	if (!skel)
		return fail(-errno, "cannot open the policy's BPF object");
	/* `bbrctl ss` loads its iter/tcp program itself, when it runs. */
	bpf_program__set_autoload(skel->progs.dump_socks, false);
	libbpf_log_reset();
	err = policy__load(skel);
	if (err) {
		/* A kernel that refuses map iterators still gets the policy; export then reads iter/tcp. */
		policy__destroy(skel);
		skel = policy__open();
		if (!skel)
			return fail(-errno, "cannot open the policy's BPF object");
		bpf_program__set_autoload(skel->progs.dump_socks, false);
		bpf_program__set_autoload(skel->progs.dump_policy, false);
		libbpf_log_reset();
		err = policy__load(skel);
		if (err) {
			describe_load_failure(err, libbpf_failed_prog(), "sockops", why, sizeof(why));
			policy__destroy(skel);
			return fail(0, "%s", why);
		}
		if (verbose)
			warn(0,
				"the kernel refused the policy's map iterator: export reads iter/tcp in each "
				"network namespace instead");
	}
	cgfd = open(cgroot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0) {
		err = fail(-errno, "cannot open the cgroup2 root %s", cgroot);
		goto out;
	}
	link = bpf_program__attach_cgroup(skel->progs.policy_sockops, cgfd);
	if (!link) {
		err = fail(-errno, "cannot attach the sockops program to the cgroup2 root %s", cgroot);
		goto out;
	}
	if (bpf_program__fd(skel->progs.dump_policy) >= 0) {
		linfo.map.map_fd = bpf_map__fd(skel->maps.storage);
		iter = bpf_program__attach_iter(skel->progs.dump_policy, &iter_opts);
		if (!iter)
			warn(-errno, "bbrctl export unavailable: cannot attach the policy's iterator");
	}
	remove_pin_dir(tmp);
	if (mkdir(tmp, 0700)) {
		err = fail(-errno, "cannot create %s", tmp);
		goto out;
	}
#define PIN(obj, fn, name) (snprintf(path, sizeof(path), "%s/%s", tmp, name), fn(obj, path))
	if (PIN(skel->maps.rules, bpf_map__pin, PIN_RULES) ||
		PIN(skel->maps.prefixes, bpf_map__pin, PIN_PREFIXES) ||
		PIN(skel->maps.stats, bpf_map__pin, PIN_STATS) ||
		PIN(skel->maps.storage, bpf_map__pin, PIN_STORAGE) ||
		(iter && PIN(iter, bpf_link__pin, PIN_FLOWS)) || PIN(link, bpf_link__pin, BBRKIT_PIN_LINK) ||
		rename(tmp, dir)) {
		err = fail(-errno, "cannot pin the policy under %s", dir);
		remove_pin_dir(tmp);
		goto out;
	}
#undef PIN
	err = EXIT_SUCCESS;
out:
	if (cgfd >= 0)
		close(cgfd);
	bpf_link__destroy(iter);
	bpf_link__destroy(link); /* the pin keeps the attachment */
	policy__destroy(skel);
	return err;
}

/* Detaches the program (new connections are no longer placed; placed ones keep their algorithm) and
 * removes the pins and bbrctl's own cgroup2 mount.
 */
static int remove_policy(void)
{
	char dir[BBRCTL_MAX_PATH], link[BBRCTL_MAX_PATH];
	int fd, err;

	policy_pin(dir, NULL);
	policy_pin(link, BBRKIT_PIN_LINK);
	fd = bpf_obj_get(link);
	if (fd >= 0) {
		if (bpf_link_detach(fd) && errno != EOPNOTSUPP && errno != EINVAL)
			warn(-errno, "cannot detach the policy's cgroup link; removing its pin");
		close(fd);
	}
	err = remove_pin_dir(dir);
	if (err)
		return fail(err, "cannot remove %s", dir);
	rmdir(BBRKIT_PIN_ROOT);
	unmount_own_cgroup2();
	return EXIT_SUCCESS;
}

int policy_read_rules(struct bbrkit_policy_rule *rules)
{
	int fd = policy_open_map(PIN_RULES);

	if (fd < 0)
		return -errno;
	for (__u32 slot = 0; slot < BBRKIT_POLICY_RULES; slot++)
		if (bpf_map_lookup_elem(fd, &slot, &rules[slot])) {
			int err = -errno;

			close(fd);
			return err;
		}
	close(fd);
	return 0;
}

static bool contains(const struct bbrkit_policy_prefix *outer, const struct bbrkit_policy_prefix *inner)
{
	if (outer->prefixlen > inner->prefixlen)
		return false;
	for (unsigned int bit = 0; bit < outer->prefixlen; bit++) {
		__u8 mask = 0x80 >> (bit % 8);

		if ((outer->addr[bit / 8] & mask) != (inner->addr[bit / 8] & mask))
			return false;
	}
	return true;
}

/* The trie as the rules say: each key's value is the set of slots with a prefix containing it, so
 * the longest match for an address gives every rule whose prefix holds the address.
 */
static int rebuild_prefixes(const struct bbrkit_policy_rule *rules)
{
	struct bbrkit_policy_prefix keys[BBRKIT_POLICY_RULES * BBRKIT_POLICY_DSTS], key, next;
	__u32 masks[BBRKIT_POLICY_RULES * BBRKIT_POLICY_DSTS];
	size_t n = 0;
	int fd = policy_open_map(PIN_PREFIXES), err = 0;

	if (fd < 0)
		return -errno;
	for (unsigned int s = 0; s < BBRKIT_POLICY_RULES; s++)
		for (unsigned int d = 0; rules[s].narms && d < rules[s].ndst; d++) {
			size_t k;

			for (k = 0; k < n && memcmp(&keys[k], &rules[s].dst[d], sizeof(key)); k++)
				;
			if (k == n)
				keys[n++] = rules[s].dst[d];
		}
	for (size_t k = 0; k < n; k++) {
		masks[k] = 0;
		for (unsigned int s = 0; s < BBRKIT_POLICY_RULES; s++)
			for (unsigned int d = 0; rules[s].narms && d < rules[s].ndst; d++)
				if (contains(&rules[s].dst[d], &keys[k]))
					masks[k] |= 1U << s;
		if (bpf_map_update_elem(fd, &keys[k], &masks[k], BPF_ANY) && !err)
			err = -errno;
	}
	/* Keys no rule names any more; deleting moves the walk, so start over after each. */
	for (bool again = true; again && !err;) {
		again = false;
		for (int r = bpf_map_get_next_key(fd, NULL, &next); !r;
			r = bpf_map_get_next_key(fd, &key, &next)) {
			size_t k;

			for (k = 0; k < n && memcmp(&keys[k], &next, sizeof(next)); k++)
				;
			if (k == n) {
				bpf_map_delete_elem(fd, &next);
				again = true;
				break;
			}
			key = next;
		}
	}
	close(fd);
	return err;
}

static int write_slot(__u32 slot, const struct bbrkit_policy_rule *r)
{
	int fd = policy_open_map(PIN_RULES), err = 0;

	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &slot, r, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}

static int zero_stats(__u32 slot)
{
	int ncpu = libbpf_num_possible_cpus(), fd = policy_open_map(PIN_STATS), err = 0;
	struct bbrkit_policy_stats *zero;

	if (fd < 0 || ncpu <= 0)
		return fd < 0 ? -errno : ncpu;
	zero = calloc((size_t)ncpu, sizeof(*zero));
	for (__u32 a = 0; zero && a < BBRKIT_POLICY_ARMS && !err; a++) {
		__u32 key = slot * BBRKIT_POLICY_ARMS + a;

		if (bpf_map_update_elem(fd, &key, zero, BPF_ANY))
			err = -errno;
	}
	err = zero ? err : -ENOMEM;
	free(zero);
	close(fd);
	return err;
}

int policy_read_stats(__u32 slot, __u32 arm, struct bbrkit_policy_stats *sum)
{
	int ncpu = libbpf_num_possible_cpus(), fd = policy_open_map(PIN_STATS), err = 0;
	struct bbrkit_policy_stats *per;
	__u32 key = slot * BBRKIT_POLICY_ARMS + arm;

	memset(sum, 0, sizeof(*sum));
	if (fd < 0 || ncpu <= 0)
		return fd < 0 ? -errno : ncpu;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per || bpf_map_lookup_elem(fd, &key, per))
		err = per ? -errno : -ENOMEM;
	for (int c = 0; !err && c < ncpu; c++) {
		const __u64 *from = (const __u64 *)&per[c];
		__u64 *to = (__u64 *)sum;

		for (size_t i = 0; i < sizeof(*sum) / sizeof(__u64); i++)
			to[i] += from[i];
	}
	free(per);
	close(fd);
	return err;
}

static int find_slot(const struct bbrkit_policy_rule *rules, const char *name)
{
	for (int s = 0; s < BBRKIT_POLICY_RULES; s++)
		if (rules[s].narms && !strcmp(rules[s].name, name))
			return s;
	return -1;
}

static int nrules(const struct bbrkit_policy_rule *rules)
{
	int n = 0;

	for (int s = 0; s < BBRKIT_POLICY_RULES; s++)
		n += rules[s].narms != 0;
	return n;
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
	for (int i = 0; i < BBRKIT_POLICY_RULES && slot < 0; i++)
		if (!rules[i].narms)
			slot = i;
	if (slot < 0 && old < 0) {
		ret = bad_argument("all %d rule slots are taken", BBRKIT_POLICY_RULES);
		goto undo;
	}
	/* A replacement goes to a free slot and the old one is cleared after: a connection being placed
	 * meanwhile sees one whole rule or the other (the old wins a priority tie, by slot order).
	 */
	if (slot < 0)
		slot = old;
	s.rule.generation = rules[slot].generation + 1;
	rules[slot] = s.rule;
	err = zero_stats((__u32)slot);
	if (!err)
		err = rebuild_prefixes(rules);
	if (!err)
		err = write_slot((__u32)slot, &s.rule);
	if (!err && old >= 0 && old != slot) {
		rules[old].narms = 0;
		rules[old].generation++;
		err = write_slot((__u32)old, &rules[old]);
		if (!err)
			err = rebuild_prefixes(rules);
	}
	if (err) {
		ret = fail(err, "cannot write rule '%s'", name);
		goto undo;
	}
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

static int policy_revert(const char *name)
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
			printf("rule %s reverted: new connections get %s\n", name, r->arms[r->holdback].cc);
	}
	if (rootfd >= 0)
		close(rootfd);
	return ret;
}

/* ---- printing ---- */

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
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

static int policy_print(bool json, const char *only)
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
				printf("    %-12s %6.2f%%  %llu connections, %llu fallbacks, %llu closed\n",
					r->arms[i].cc, (double)r->arms[i].weight / PERCENT_SCALE,
					(unsigned long long)st.connections, (unsigned long long)st.fallbacks,
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

int cmd_policy(const struct cmd_opts *o, int argc, char **argv)
{
	const char *verb = argv[0];

	if (!strcmp(verb, "list")) {
		if (argc != 1)
			return bad_argument("list takes no arguments");
		return policy_print(o->json, NULL);
	}
	if (argc < 2)
		return bad_argument(strcmp(verb, "add") && strcmp(verb, "del") && strcmp(verb, "show") &&
					strcmp(verb, "revert")
				? "unknown verb '%s' (add, del, list, show, revert)"
				: "%s needs a RULE name",
			verb);
	set_context("policy %s %s", verb, argv[1]);
	if (!strcmp(verb, "add"))
		return policy_add(argv[1], argc - 2, argv + 2);
	if (argc != 2 && strcmp(verb, "add"))
		return bad_argument("%s takes one RULE name", verb);
	if (!strcmp(verb, "del"))
		return policy_del(argv[1]);
	if (!strcmp(verb, "show"))
		return policy_print(o->json, argv[1]);
	if (!strcmp(verb, "revert"))
		return policy_revert(argv[1]);
	return bad_argument("unknown verb '%s' (add, del, list, show, revert)", verb);
}
