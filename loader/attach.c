// SPDX-License-Identifier: GPL-2.0
/* attach and detach: register an algorithm through a pinned struct_ops link (pins.c), and undo it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "struct_ops_link.h"

/* Unregistration by unpinning alone is deferred work in the kernel; give it this long. */
#define UNREGISTER_WAIT_MS 2000
#define UNREGISTER_POLL_MS 10

static bool wait_unregistered(const char *name)
{
	struct timespec pause = { 0, UNREGISTER_POLL_MS * 1000000L };

	for (int waited = 0; kernel_has_cc(name); waited += UNREGISTER_POLL_MS) {
		if (waited >= UNREGISTER_WAIT_MS)
			return false;
		nanosleep(&pause, NULL);
	}
	return true;
}

/* Register, then the optional pieces, whose failure is a warning. */
static int register_algo(const struct algo *a, struct loaded *l)
{
	l->link_fd = struct_ops_register(l->ops);
	if (l->link_fd == -EEXIST)
		return fail(0, "the kernel already has a congestion control named '%s'", a->name);
	if (l->link_fd < 0)
		return fail(l->link_fd, "cannot register the congestion control");
	return load_flows_iterator(a, l->obj, &l->have, &l->flows) || load_per_packet(a, l->obj, &l->pp);
}

/* With the root locked: EXIT_SUCCESS with *done set when there is nothing to attach. */
static int clear_the_way(const struct algo *a, int rootfd, bool *done)
{
	char dir[BBRCTL_MAX_PATH];
	int err = remove_stale(rootfd);

	if (err)
		return fail(err, "cannot remove stale pins under " BBRKIT_PIN_ROOT);
	if (algo_attached(a) && kernel_has_cc(a->name)) {
		printf("%s is already attached\n", a->name);
		*done = true;
		return EXIT_SUCCESS;
	}
	if (algo_attached(a)) {
		/* Pinned link whose registration is gone (e.g. bpftool link detach): start over. */
		pin_path(dir, a->name, NULL);
		err = remove_pin_dir(dir);
		if (err)
			return fail(err, "cannot remove the dead registration's pins %s", dir);
	}
	if (kernel_has_cc(a->name))
		return fail(0,
			"the kernel already has a congestion control named '%s' that bbrctl "
			"did not attach (see bpftool struct_ops list)",
			a->name);
	return EXIT_SUCCESS;
}

int cmd_attach(const struct cmd_opts *o, int argc, char **argv)
{
	struct loaded l = { .link_fd = -1 };
	const struct algo *a = o->algo;
	bool done = false;
	int rootfd, ret;

	(void)argc;
	(void)argv; /* ALGO only: o->algo */
	if (check_kernel())
		return EXIT_FAILURE;
	rootfd = lock_root(true);
	if (rootfd < 0)
		return fail(rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	ret = clear_the_way(a, rootfd, &done);
	if (!ret && !done)
		ret = load_algo(a, NULL, false, &l) || register_algo(a, &l) || pin_all(a, &l);
	if (!ret && !done) {
		char features[128];

		attachment_features(a, features, sizeof(features));
		printf("%s attached (pinned at %s/%s; %s)\n", a->name, BBRKIT_PIN_ROOT, a->name, features);
	}
	/* Pins now hold what must stay; closing our references unregisters on failure. */
	loaded_release(&l);
	close(rootfd);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* With the root locked and the link pinned: unregister, then remove the pins. */
static int unregister(const struct algo *a, const char *dir)
{
	char who[512];
	int fd, err, live;

	if (netns_defaults_using(a->name, who, sizeof(who)) > 0) {
		/* Outside the root namespace the kernel takes only an allowed algorithm as the
		 * default (tcp_set_default_congestion_control(): EPERM otherwise).
		 */
		char allowed[256] = "";
		FILE *f = fopen(BBRCTL_ALLOWED_CC, "re");

		if (f && !fgets(allowed, sizeof(allowed), f))
			allowed[0] = '\0';
		if (f)
			fclose(f);
		allowed[strcspn(allowed, "\n")] = '\0';
		return fail(0,
			"%s is the default congestion control in %s; new connections there "
			"would keep using it after detach: set another net.ipv4.tcp_congestion_control "
			"there first (outside the root network namespace one of "
			"net.ipv4.tcp_allowed_congestion_control: %s)",
			a->name, who, allowed[0] ? allowed : "none");
	}
	if (policy_blocks_detach(a->name, who, sizeof(who)) > 0)
		return fail(0,
			"policy rule %s names %s: new connections there would lose their arm; delete or "
			"change the rule first, or give it fallback=yes",
			who, a->name);
	live = count_flows(a);
	/* Detaching the link unregisters at once, even if some other process holds the link
	 * open; kernels without struct_ops link detach unregister when the pin goes.
	 */
	fd = open_pinned(a, BBRKIT_PIN_LINK, 0);
	if (fd >= 0) {
		err = bpf_link_detach(fd) && errno != EOPNOTSUPP && errno != EINVAL ? -errno : 0;
		close(fd);
		if (err)
			return fail(err, "cannot detach the struct_ops link %s/%s", dir, BBRKIT_PIN_LINK);
	}
	err = remove_pin_dir(dir);
	if (err)
		return fail(err, "cannot remove %s", dir);
	/* The last detach leaves nothing in bpffs; with other algorithms attached this fails, as it should. */
	rmdir(BBRKIT_PIN_ROOT);
	if (!wait_unregistered(a->name))
		return fail(0,
			"pins removed but the kernel still lists %s after %d ms "
			"(is another process holding its link?)",
			a->name, UNREGISTER_WAIT_MS);
	if (live > 0)
		printf("%s detached; %d open connection%s keep%s using it until closed\n", a->name, live,
			live == 1 ? "" : "s", live == 1 ? "s" : "");
	else
		printf("%s detached\n", a->name);
	return EXIT_SUCCESS;
}

int cmd_detach(const struct cmd_opts *o, int argc, char **argv)
{
	char dir[BBRCTL_MAX_PATH], link[BBRCTL_MAX_PATH];
	const struct algo *a = o->algo;
	int rootfd, err, ret;

	(void)argc;
	(void)argv; /* ALGO only: o->algo */
	if (check_root())
		return EXIT_FAILURE;
	pin_path(dir, a->name, NULL);
	pin_path(link, a->name, BBRKIT_PIN_LINK);
	rootfd = bpffs_mounted() ? lock_root(false) : -ENOENT;
	if (rootfd == -ENOENT)
		return fail(0, "not attached");
	if (rootfd < 0)
		return fail(rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	if (access(dir, F_OK) && errno == ENOENT) {
		ret = fail(0, "not attached");
	} else if (access(link, F_OK)) {
		err = remove_pin_dir(dir);
		rmdir(BBRKIT_PIN_ROOT);
		ret = err ? fail(err, "cannot remove leftover pins in %s", dir) : EXIT_SUCCESS;
		if (!err)
			printf("%s was not attached; removed leftover pins in %s\n", a->name, dir);
	} else {
		ret = unregister(a, dir);
	}
	close(rootfd);
	return ret;
}
