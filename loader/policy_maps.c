// SPDX-License-Identifier: GPL-2.0
/* The pinned policy: its BPF object loaded and attached to the cgroup2 root, its maps pinned under
 * BBRKIT_PIN_ROOT/BBRKIT_POLICY_DIR, and the reads and writes of its rules, prefixes and counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "policy_internal.h"
#include "policy.skel.h"

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

/* `bbrctl ss`, `policy migrate` and `policy explain` load their iter/tcp programs themselves, when they run. */
static void skip_on_demand_programs(struct policy *skel)
{
	bpf_program__set_autoload(skel->progs.dump_socks, false);
	bpf_program__set_autoload(skel->progs.migrate_socks, false);
	bpf_program__set_autoload(skel->progs.explain_socks, false);
}

/* Loads the program, attaches it to the cgroup2 root and pins link, maps and the exporter's
 * iterator under a temporary name renamed into place: a failure leaves nothing.
 */
int create_policy(const char *cgroot)
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
	skip_on_demand_programs(skel);
	libbpf_log_reset();
	err = policy__load(skel);
	if (err) {
		/* A kernel that refuses map iterators still gets the policy; export then reads iter/tcp. */
		policy__destroy(skel);
		skel = policy__open();
		if (!skel)
			return fail(-errno, "cannot open the policy's BPF object");
		skip_on_demand_programs(skel);
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
int remove_policy(void)
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

bool prefix_contains(const struct bbrkit_policy_prefix *outer, const struct bbrkit_policy_prefix *inner)
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
int rebuild_prefixes(const struct bbrkit_policy_rule *rules)
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
				if (prefix_contains(&rules[s].dst[d], &keys[k]))
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

int write_slot(__u32 slot, const struct bbrkit_policy_rule *r)
{
	int fd = policy_open_map(PIN_RULES), err = 0;

	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &slot, r, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}

int remap_stats(__u32 slot, const struct bbrkit_policy_rule *was, const struct bbrkit_policy_rule *now)
{
	int ncpu = libbpf_num_possible_cpus(), fd = policy_open_map(PIN_STATS), err = 0;
	struct bbrkit_policy_stats *per[BBRKIT_POLICY_ARMS + 1] = {}; /* the last one zero */

	if (fd < 0 || ncpu <= 0)
		return fd < 0 ? -errno : ncpu;
	for (__u32 a = 0; a <= BBRKIT_POLICY_ARMS && !err; a++) {
		__u32 key = slot * BBRKIT_POLICY_ARMS + a;

		per[a] = calloc((size_t)ncpu, sizeof(*per[a]));
		if (!per[a])
			err = -ENOMEM;
		else if (was && a < was->narms && bpf_map_lookup_elem(fd, &key, per[a]))
			err = -errno;
	}
	for (__u32 a = 0; a < BBRKIT_POLICY_ARMS && !err; a++) {
		__u32 key = slot * BBRKIT_POLICY_ARMS + a, from = BBRKIT_POLICY_ARMS;

		for (__u32 w = 0; was && now && a < now->narms && w < was->narms; w++)
			if (!strncmp(was->arms[w].cc, now->arms[a].cc, sizeof(was->arms[w].cc)))
				from = w;
		if (bpf_map_update_elem(fd, &key, per[from], BPF_ANY))
			err = -errno;
	}
	for (__u32 a = 0; a <= BBRKIT_POLICY_ARMS; a++)
		free(per[a]);
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

int find_slot(const struct bbrkit_policy_rule *rules, const char *name)
{
	for (int s = 0; s < BBRKIT_POLICY_RULES; s++)
		if (rules[s].narms && !strcmp(rules[s].name, name))
			return s;
	return -1;
}

int nrules(const struct bbrkit_policy_rule *rules)
{
	int n = 0;

	for (int s = 0; s < BBRKIT_POLICY_RULES; s++)
		n += rules[s].narms != 0;
	return n;
}
