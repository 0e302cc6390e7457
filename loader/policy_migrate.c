// SPDX-License-Identifier: GPL-2.0
/* policy migrate: established connections follow the policy. A rule or a revert reaches new
 * connections only; this moves each established connection the policy gives to a rule now onto the
 * algorithm of the arm it hashes to, in every network namespace.
 *
 * The mover is the policy object's iter/tcp program (bpf/policy/policy.bpf.c), loaded for this run
 * on the pinned maps: the kernel runs it with each socket locked, where bpf_setsockopt(TCP_CONGESTION)
 * does what setsockopt(2) does on a live connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "policy.skel.h"
#include "policy_internal.h"

struct moves {
	int link_fd;
	char *buf;
	size_t used, cap;
};

static int read_here(void *ctx, const char *label)
{
	struct moves *m = ctx;
	int fd = bpf_iter_create(m->link_fd), err;

	(void)label;
	if (fd < 0)
		return -errno;
	err = read_all(fd, &m->buf, &m->cap, &m->used);
	close(fd);
	return err;
}

void policy_endpoint_text(const __u8 *a, __u16 port, char *buf, size_t size)
{
	struct bbrkit_policy_prefix p = { .prefixlen = 128 };
	char text[BBRCTL_MAX_PATH];

	memcpy(p.addr, a, sizeof(p.addr));
	policy_prefix_text(&p, text, sizeof(text));
	text[strcspn(text, "/")] = '\0';
	snprintf(buf, size, strchr(text, ':') ? "[%s]:%u" : "%s:%u", text, port);
}

/* One line per connection, then what happened: "moved 3 of rule web's connections, 1 refused". */
static int report(const char *name, const struct moves *m, bool dry_run)
{
	const struct bbrkit_migration *r = (const void *)m->buf;
	size_t n = m->used / sizeof(*r), moved = 0, locked = 0, refused = 0;

	for (size_t i = 0; i < n; i++, r++) {
		char from[BBRCTL_MAX_PATH], to[BBRCTL_MAX_PATH];

		policy_endpoint_text(r->saddr, r->sport, from, sizeof(from));
		policy_endpoint_text(r->daddr, r->dport, to, sizeof(to));
		printf("%s %s netns %u: %.*s -> %.*s%s%s\n", from, to, r->netns, BBRKIT_POLICY_NAME_MAX,
			r->from, BBRKIT_POLICY_NAME_MAX, r->to, r->err ? ": " : "",
			r->err ? strerror(-r->err) : "");
		moved += !r->err;
		locked += r->err == -EPERM;
		refused += r->err && r->err != -EPERM;
	}
	printf("rule %s: %zu connection%s %s", name, moved, moved == 1 ? "" : "s",
		dry_run ? "would move" : "moved");
	if (locked)
		printf(", %zu kept (the route locks its algorithm: ip route ... congctl lock)", locked);
	if (refused)
		printf(", %zu refused", refused);
	printf("\n");
	return refused ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* The pinned maps in place of the object's own: the iterator reads the live rules and counts into
 * the live counters.
 */
static int reuse_pinned(struct policy *skel)
{
	struct {
		struct bpf_map *map;
		const char *pin;
	} maps[] = { { skel->maps.rules, PIN_RULES }, { skel->maps.prefixes, PIN_PREFIXES },
		{ skel->maps.stats, PIN_STATS }, { skel->maps.storage, PIN_STORAGE } };

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		int fd = policy_open_map(maps[i].pin), err;

		if (fd < 0)
			return fail(-errno, "cannot open the policy's %s map", maps[i].pin);
		err = bpf_map__reuse_fd(maps[i].map, fd);
		close(fd);
		if (err)
			return fail(err, "cannot share the policy's %s map", maps[i].pin);
	}
	return EXIT_SUCCESS;
}

int policy_iterate(const char *prog, __u32 migrate_slot, bool dry_run, char **buf, size_t *used)
{
	struct moves m = {};
	struct bpf_program *p, *want = NULL;
	struct bpf_link *link = NULL;
	struct policy *skel = policy__open();
	int ret;

	if (!skel)
		return fail(-errno, "cannot open the policy's BPF object");
	bpf_object__for_each_program(p, skel->obj)
	{
		bool it = !strcmp(bpf_program__name(p), prog);

		bpf_program__set_autoload(p, it);
		want = it ? p : want;
	}
	skel->rodata->migrate_slot = migrate_slot;
	skel->rodata->migrate_dry_run = dry_run;
	ret = reuse_pinned(skel);
	if (ret)
		goto out;
	libbpf_log_reset();
	if (policy__load(skel)) {
		ret = fail(0, "the kernel refused the iter/tcp program %s (bbrctl features: iter-tcp): %s",
			prog, libbpf_last_message() ? libbpf_last_message() : "no reason given");
		goto out;
	}
	link = bpf_program__attach_iter(want, NULL);
	if (!link) {
		ret = fail(-errno, "cannot attach the iter/tcp program %s", prog);
		goto out;
	}
	m.link_fd = bpf_link__fd(link);
	ret = for_each_netns(read_here, &m);
	if (ret)
		ret = fail(ret, "cannot walk the connections");
out:
	bpf_link__destroy(link);
	policy__destroy(skel);
	if (ret) {
		free(m.buf);
		return ret;
	}
	*buf = m.buf;
	*used = m.used;
	return EXIT_SUCCESS;
}

int policy_migrate_slot(__u32 slot, const char *name, bool dry_run)
{
	struct moves m = {};
	int ret = policy_iterate("migrate_socks", slot, dry_run, &m.buf, &m.used);

	if (!ret)
		ret = report(name, &m, dry_run);
	free(m.buf);
	return ret;
}
