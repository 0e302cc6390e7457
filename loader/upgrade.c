// SPDX-License-Identifier: GPL-2.0
/* upgrade: another build of an attached algorithm, loaded as attach loads (load.c) but sharing the
 * attached instance's maps, swapped into the pinned struct_ops link with bpf_link_update; bbr2/bbr3's
 * per-packet loss programs are attached again for the new object and pinned in place of the old.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

/* Writes the program fds into the map value without registering, for bpf_link_update. libbpf 1.1
 * does only that (a pseudo-link, disconnected so that it does not delete the element). libbpf >= 1.2
 * writes the value and then creates a link, which the kernel refuses with EEXIST: the name is
 * registered already, through the pinned link this map is about to go into.
 */
static int fill_struct_ops(struct bpf_map *ops)
{
	struct bpf_link *link = bpf_map__attach_struct_ops(ops);

	if (!link)
#if LIBBPF_MAJOR_VERSION > 1 || LIBBPF_MINOR_VERSION >= 2
		return errno == EEXIST ? 0 : -errno;
#else
		return -errno;
#endif
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	return 0;
}

/* Swaps the loaded object's struct_ops map into the pinned link. */
static int swap_in(const struct algo *a, const struct loaded *l)
{
	int link_fd, err = fill_struct_ops(l->ops);

	if (err)
		return fail(err, "cannot fill the struct_ops map");
	link_fd = open_pinned(a, BBRKIT_PIN_LINK, 0);
	if (link_fd < 0)
		return fail(link_fd, "cannot open the pinned struct_ops link");
	err = bpf_link_update(link_fd, bpf_map__fd(l->ops), NULL) ? -errno : 0;
	close(link_fd);
	if (err == -EINVAL)
		return fail(err,
			"the kernel refused the new object (its congestion control must be named '%s')",
			a->name);
	return err ? fail(err, "cannot update the struct_ops link") : EXIT_SUCCESS;
}

/* The new object's per-packet programs in place of the attached ones' pins (each swapped by a
 * rename): flows that start after the upgrade run the new struct_ops, which records in its own
 * maps, so they need the programs that share them; running flows lose theirs and judge losses at
 * ACK time (their callbacks see the hooks' counts stop). Where the new object's programs do not
 * load, the old pins go, so that the attachment no longer claims the path.
 */
static int repin_per_packet(const struct algo *a, const struct loaded *l)
{
	char path[BBRCTL_MAX_PATH], tmp[BBRCTL_MAX_PATH + 16];
	int err = 0;

	for (int i = 0; a->per_packet && !err && i < PP_PROGS; i++) {
		err = pin_path(path, a->name, pp_pins[i]);
		if (err)
			break;
		if (!l->pp.link[i]) {
			err = unlink(path) && errno != ENOENT ? -errno : 0;
			continue;
		}
		snprintf(tmp, sizeof(tmp), "%s-upgrading", path); /* bpffs refuses names with dots */
		err = bpf_obj_pin(bpf_link__fd(l->pp.link[i]), tmp) || rename(tmp, path) ? -errno : 0;
		if (err)
			unlink(tmp);
	}
	return err ? fail(err, "cannot pin the new per-packet loss programs") : EXIT_SUCCESS;
}

/* With the root locked: what must hold before anything is loaded. */
static int check_attached(const struct algo *a)
{
	if (!algo_attached(a))
		return fail(0, "not attached (bbrctl attach %s)", a->name);
	if (!kernel_has_cc(a->name))
		return fail(
			0, "the pinned link's registration is gone (bbrctl attach %s starts over)", a->name);
	/* The new object writes into the attached one's ring buffer, ctl and params: one layout for all. */
	return check_attached_abi(a);
}

int cmd_upgrade(const struct cmd_opts *o, int argc, char **argv)
{
	struct loaded l = { .link_fd = -1 };
	const char *path = o->object;
	const struct algo *a = o->algo;
	int rootfd, err, ret;

	(void)argc;
	(void)argv; /* ALGO only: o->algo */
	if (path && access(path, R_OK))
		return fail(errno, "cannot read %s", path);
	if (check_kernel())
		return EXIT_FAILURE;
	if (feature_disabled(DISABLE_LINK_UPDATE))
		return fail(0, "the kernel cannot update a struct_ops link (%s); detach and attach instead",
			disable_keys[DISABLE_LINK_UPDATE].reason);
	err = kernel_link_update();
	if (err)
		return fail(err,
			"the kernel cannot update a struct_ops link (bbrctl features: link-update); "
			"detach and attach instead");
	rootfd = lock_root(false);
	if (rootfd == -ENOENT)
		return fail(0, "not attached (bbrctl attach %s)", a->name);
	if (rootfd < 0)
		return fail(rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	ret = check_attached(a) || load_algo(a, path, true, &l) || load_per_packet(a, l.obj, &l.pp) ||
		swap_in(a, &l) || repin_per_packet(a, &l);
	/* The link now holds the new map; our references go. */
	loaded_release(&l);
	close(rootfd);
	if (ret)
		return EXIT_FAILURE;
	printf("%s upgraded: new connections use %s; running ones keep their version\n", a->name,
		path ? path : "the object built into bbrctl");
	return EXIT_SUCCESS;
}
