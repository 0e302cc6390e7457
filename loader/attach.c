// SPDX-License-Identifier: GPL-2.0
/* attach and detach: register an algorithm through a pinned struct_ops link, and undo it.
 *
 * Layout: BBRKIT_PIN_ROOT/<algo>/{link, flows or flows-tcp, events, ctl, params}; the link alone
 * is the registration, the rest is there where the kernel allows it. attach builds the directory
 * under a temporary name and renames it into place, so a failed attach leaves nothing; the root
 * directory is flock()ed so that concurrent attach/detach runs do not interleave.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "struct_ops_link.h"


#define BPFFS_DIR "/sys/fs/bpf"
#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"
#define TCP_CA_STRUCT_OPS_BTF "bpf_struct_ops_tcp_congestion_ops"
/* bpffs rejects names with dots; a dash cannot occur in an algorithm (C identifier) name. */
#define TMP_SUFFIX "-attaching"
/* Unregistration by unpinning alone is deferred work in the kernel; give it this long. */
#define UNREGISTER_WAIT_MS 2000
#define UNREGISTER_POLL_MS 10


static bool bpffs_mounted(void)
{
	struct statfs st;

	return !statfs(BPFFS_DIR, &st) && st.f_type == BPF_FS_MAGIC;
}

/* Everything attach needs from the kernel, each with what is missing. */
static int check_features(void)
{
	struct btf *btf;
	int id;

	if (check_root())
		return EXIT_FAILURE;
	if (access(VMLINUX_BTF, R_OK))
		return fail(errno, "kernel BTF missing (" VMLINUX_BTF
			    "; the kernel needs CONFIG_DEBUG_INFO_BTF=y)");
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return fail(errno, "cannot read kernel BTF from " VMLINUX_BTF);
	id = btf__find_by_name_kind(btf, TCP_CA_STRUCT_OPS_BTF, BTF_KIND_STRUCT);
	btf__free(btf);
	if (id < 0)
		return fail(0, "the kernel has no BPF struct_ops for TCP congestion control (BTF type "
			    TCP_CA_STRUCT_OPS_BTF " missing; needs CONFIG_BPF_JIT, CONFIG_BPF_SYSCALL)");
	if (!bpffs_mounted() && mount("bpf", BPFFS_DIR, "bpf", 0, "mode=0700"))
		return fail(errno, "bpffs is not mounted at " BPFFS_DIR " and mounting it failed");
	return EXIT_SUCCESS;
}

/* Returns a locked fd of the pin root, or negative errno (-ENOENT when !create and it is absent).
 * The last detach removes the root while holding the lock, so a waiter may wake up holding a removed
 * directory: it then starts over.
 */
static int lock_root(bool create)
{
	struct stat locked, current;
	int fd, err;

	for (;;) {
		if (create && mkdir(BBRKIT_PIN_ROOT, 0700) && errno != EEXIST)
			return -errno;
		fd = open(BBRKIT_PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX)) {
			err = -errno;
			close(fd);
			return err;
		}
		if (!fstat(fd, &locked) && !stat(BBRKIT_PIN_ROOT, &current) && locked.st_ino == current.st_ino)
			return fd;
		close(fd);
		if (!create)
			return -ENOENT;
	}
}

/* Removes a pin directory; unpinning the link first unregisters before anything else goes. */
static int remove_pin_dir(const char *dir)
{
	char path[BBRCTL_MAX_PATH * 2];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, BBRKIT_PIN_LINK);
	if (unlink(path) && errno != ENOENT)
		return -errno;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) && !err)
			err = -errno;
	}
	closedir(d);
	if (rmdir(dir) && !err)
		err = -errno;
	return err;
}

/* Leftovers of an interrupted attach (temporary directories) or detach (a directory without its
 * link). Called with the root locked, so no temporary directory can belong to a live run.
 */
static int remove_stale(int rootfd)
{
	char path[BBRCTL_MAX_PATH * 2], link[BBRCTL_MAX_PATH * 2 + 8];
	struct dirent *de;
	int err = 0, dfd = dup(rootfd);
	DIR *d;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		bool tmp = len > strlen(TMP_SUFFIX) &&
			   !strcmp(de->d_name + len - strlen(TMP_SUFFIX), TMP_SUFFIX);

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", BBRKIT_PIN_ROOT, de->d_name);
		snprintf(link, sizeof(link), "%s/%s", path, BBRKIT_PIN_LINK);
		if (tmp || access(link, F_OK)) {
			int e = remove_pin_dir(path);

			if (e && !err)
				err = e;
		}
	}
	closedir(d);
	return err;
}

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

static int load_error(int err, struct bpf_object *obj)
{
	const char *prog = libbpf_failed_prog();
	struct bpf_program *p = prog ? bpf_object__find_program_by_name(obj, prog) : NULL;
	char why[512];

	describe_load_failure(err, prog, p ? bpf_program__section_name(p) : "?", why, sizeof(why));
	return fail(err, "%s%s", why, prog && !verbose ? " (-v shows libbpf's log)" : "");
}

static int pin_fd(int fd, const char *dir, const char *name)
{
	char path[BBRCTL_MAX_PATH * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_pin(fd, path) ? -errno : 0;
}

static int find_map_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	if (!m)
		return fail(0, "the BPF object has no map '%s'", name), -1;
	return bpf_map__fd(m);
}

struct loaded {
	struct bpf_object *obj;
	int link_fd;		   /* struct_ops link: the registration */
	struct bbrkit_features have;
	struct flows_iter flows;
};

/* Load the struct_ops programs and register; then the optional pieces, whose failure is a warning.
 * Leaves what it made in *l for the caller to release.
 */
static int load_and_register(const struct algo *a, struct loaded *l)
{
	struct bpf_map *ops;
	int err;

	l->obj = open_algo(a);
	if (!l->obj)
		return fail(errno, "cannot open the BPF object");
	if (check_object_abi(l->obj, "the embedded BPF object"))
		return EXIT_FAILURE;
	ops = bpf_object__find_map_by_name(l->obj, "ops");
	if (!ops || bpf_map__type(ops) != BPF_MAP_TYPE_STRUCT_OPS)
		return fail(0, "the BPF object has no struct_ops map 'ops'");
	/* A link-based registration can be pinned, and goes away when the last link does. */
	err = struct_ops_want_link(ops);
	if (err)
		return fail(err, "cannot set BPF_F_LINK on 'ops'");
	skip_optional_programs(l->obj);
	if (prepare_optional_maps(l->obj, &l->have))
		return EXIT_FAILURE;
	libbpf_log_reset();
	err = bpf_object__load(l->obj);
	if (err)
		return load_error(err, l->obj);

	l->link_fd = struct_ops_register(ops);
	if (l->link_fd < 0) {
		err = l->link_fd;
		if (err == -EEXIST)
			return fail(0, "the kernel already has a congestion control named '%s'", a->name);
		return fail(err, "cannot register the congestion control");
	}
	return load_flows_iterator(a, l->obj, &l->have, &l->flows);
}

/* Pins into a fresh temporary directory, the link last so that an interruption before it leaves
 * no registration behind, then renames the directory into place. Only what loaded is pinned.
 */
static int pin_all(const struct algo *a, const struct loaded *l)
{
	char dir[BBRCTL_MAX_PATH], tmp[BBRCTL_MAX_PATH];
	struct bpf_map *params;
	int err, fd;

	pin_path(dir, a->name, NULL);
	snprintf(tmp, sizeof(tmp), "%s/%s" TMP_SUFFIX, BBRKIT_PIN_ROOT, a->name);
	if (mkdir(tmp, 0700))
		return fail(errno, "cannot create %s", tmp);

	if (l->have.trace) {
		fd = find_map_fd(l->obj, ".data.ctl");
		if (fd < 0)
			goto out_err;
		err = pin_fd(fd, tmp, BBRKIT_PIN_CTL);
		if (err)
			goto out_pin;
		fd = find_map_fd(l->obj, "events");
		if (fd < 0)
			goto out_err;
		err = pin_fd(fd, tmp, BBRKIT_PIN_EVENTS);
		if (err)
			goto out_pin;
	}
	params = bpf_object__find_map_by_name(l->obj, ".data.params");
	if (a->params_size && (!params || bpf_map__value_size(params) != a->params_size)) {
		fail(0, "the BPF object's '.data.params' does not match struct %s_params", a->name);
		goto out_err;
	}
	if (params) {
		err = pin_fd(bpf_map__fd(params), tmp, BBRKIT_PIN_PARAMS);
		if (err)
			goto out_pin;
	}
	if (l->flows.pin) {
		err = pin_fd(bpf_link__fd(l->flows.link), tmp, l->flows.pin);
		if (err)
			goto out_pin;
	}
	fd = find_map_fd(l->obj, BBRKIT_ABI_SECTION);
	if (fd < 0)
		goto out_err;
	err = pin_fd(fd, tmp, BBRKIT_PIN_ABI);
	if (err)
		goto out_pin;
	err = pin_fd(l->link_fd, tmp, BBRKIT_PIN_LINK);
	if (err)
		goto out_pin;
	if (rename(tmp, dir)) {
		err = -errno;
		remove_pin_dir(tmp);
		return fail(err, "cannot rename %s to %s", tmp, dir);
	}
	return EXIT_SUCCESS;

out_pin:
	fail(err, "cannot pin into %s", tmp);
out_err:
	remove_pin_dir(tmp);
	return EXIT_FAILURE;
}

int cmd_attach(const struct cmd_opts *o, int argc, char **argv)
{
	struct loaded l = { .link_fd = -1 };
	const struct algo *a;
	int rootfd, ret, err;

	(void)o;
	(void)argc;
	a = find_algo_or_fail(argv[0]);
	if (!a)
		return EXIT_USAGE;
	set_context("attach %s", a->name);
	if (check_features())
		return EXIT_FAILURE;
	rootfd = lock_root(true);
	if (rootfd < 0)
		return fail(rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	err = remove_stale(rootfd);
	if (err) {
		close(rootfd);
		return fail(err, "cannot remove stale pins under " BBRKIT_PIN_ROOT);
	}
	if (algo_attached(a) && kernel_has_cc(a->name)) {
		printf("%s is already attached\n", a->name);
		close(rootfd);
		return EXIT_SUCCESS;
	}
	if (algo_attached(a)) {
		/* Pinned link whose registration is gone (e.g. bpftool link detach): start over. */
		char dir[BBRCTL_MAX_PATH];

		pin_path(dir, a->name, NULL);
		err = remove_pin_dir(dir);
		if (err) {
			close(rootfd);
			return fail(err, "cannot remove the dead registration's pins %s", dir);
		}
	}
	if (kernel_has_cc(a->name)) {
		close(rootfd);
		return fail(0, "the kernel already has a congestion control named '%s' that bbrctl "
			    "did not attach (see bpftool struct_ops list)", a->name);
	}

	ret = load_and_register(a, &l);
	if (!ret)
		ret = pin_all(a, &l);
	if (!ret) {
		char features[128];

		attachment_features(a, features, sizeof(features));
		printf("%s attached (pinned at %s/%s; %s)\n", a->name, BBRKIT_PIN_ROOT, a->name, features);
	}
	/* Pins now hold what must stay; closing our references unregisters on failure. */
	flows_iter_release(&l.flows);
	if (l.link_fd >= 0)
		close(l.link_fd);
	bpf_object__close(l.obj);
	close(rootfd);
	return ret;
}

int cmd_detach(const struct cmd_opts *o, int argc, char **argv)
{
	char dir[BBRCTL_MAX_PATH], link[BBRCTL_MAX_PATH], who[512];
	const struct algo *a;
	int rootfd, fd, err, live;

	(void)o;
	(void)argc;
	a = find_algo_or_fail(argv[0]);
	if (!a)
		return EXIT_USAGE;
	set_context("detach %s", a->name);
	if (check_root())
		return EXIT_FAILURE;
	pin_path(dir, a->name, NULL);
	pin_path(link, a->name, BBRKIT_PIN_LINK);
	rootfd = bpffs_mounted() ? lock_root(false) : -ENOENT;
	if (rootfd == -ENOENT || (rootfd >= 0 && access(dir, F_OK) && errno == ENOENT)) {
		if (rootfd >= 0)
			close(rootfd);
		return fail(0, "not attached");
	}
	if (rootfd < 0)
		return fail(rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	if (access(link, F_OK)) {
		err = remove_pin_dir(dir);
		rmdir(BBRKIT_PIN_ROOT);
		close(rootfd);
		if (err)
			return fail(err, "cannot remove leftover pins in %s", dir);
		printf("%s was not attached; removed leftover pins in %s\n", a->name, dir);
		return EXIT_SUCCESS;
	}

	if (netns_defaults_using(a->name, who, sizeof(who)) > 0) {
		close(rootfd);
		return fail(0, "%s is the default congestion control in %s; new connections there "
			    "would keep using it after detach: set another net.ipv4.tcp_congestion_control "
			    "there first", a->name, who);
	}
	live = count_flows(a);
	/* Detaching the link unregisters at once, even if some other process holds the link
	 * open; kernels without struct_ops link detach unregister when the pin goes.
	 */
	fd = open_pinned(a, BBRKIT_PIN_LINK, 0);
	if (fd >= 0) {
		if (bpf_link_detach(fd) && errno != EOPNOTSUPP && errno != EINVAL) {
			err = -errno;
			close(fd);
			close(rootfd);
			return fail(err, "cannot detach the struct_ops link %s", link);
		}
		close(fd);
	}
	err = remove_pin_dir(dir);
	if (err) {
		close(rootfd);
		return fail(err, "cannot remove %s", dir);
	}
	/* The last detach leaves nothing in bpffs; with other algorithms attached this fails, as it should. */
	rmdir(BBRKIT_PIN_ROOT);
	close(rootfd);
	if (!wait_unregistered(a->name))
		return fail(0, "pins removed but the kernel still lists %s after %d ms "
			    "(is another process holding its link?)", a->name, UNREGISTER_WAIT_MS);
	if (live > 0)
		printf("%s detached; %d open connection%s keep%s using it until closed\n", a->name,
		       live, live == 1 ? "" : "s", live == 1 ? "s" : "");
	else
		printf("%s detached\n", a->name);
	return EXIT_SUCCESS;
}

/* The sk_storage map of the attached instance, found through its pinned flows iterator (the
 * iterator program, or the map iterator's link, references it): new connections must store their
 * flow ids where the pinned iterator reads them. -ENOENT when there is none to share.
 */
static int attached_storage_fd(const struct algo *a)
{
	const char *pin = attachment_of(a).flows;
	struct bpf_link_info link = {};
	struct bpf_prog_info prog = {};
	__u32 ids[8], n = 0, len;
	int fd, err;

	if (!pin)
		return -ENOENT;
	fd = open_pinned(a, !strcmp(pin, "map-iterator") ? BBRKIT_PIN_FLOWS : BBRKIT_PIN_FLOWS_TCP, 0);
	if (fd < 0)
		return fd;
	len = sizeof(link);
	err = bpf_obj_get_info_by_fd(fd, &link, &len) ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if (link.type == BPF_LINK_TYPE_ITER && link.iter.map.map_id)
		ids[n++] = link.iter.map.map_id;
	fd = bpf_prog_get_fd_by_id(link.prog_id);
	if (fd < 0)
		return -errno;
	prog.nr_map_ids = sizeof(ids) / sizeof(ids[0]) - n;
	prog.map_ids = (__u64)(unsigned long)(ids + n);
	len = sizeof(prog);
	err = bpf_obj_get_info_by_fd(fd, &prog, &len) ? -errno : 0;
	close(fd);
	if (err)
		return err;
	n += prog.nr_map_ids < sizeof(ids) / sizeof(ids[0]) - n ? prog.nr_map_ids : 0;
	for (__u32 i = 0; i < n; i++) {
		struct bpf_map_info map = {};

		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		len = sizeof(map);
		if (!bpf_obj_get_info_by_fd(fd, &map, &len) && map.type == BPF_MAP_TYPE_SK_STORAGE)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* Makes the new object use the attached instance's map instead of creating its own. */
static int reuse_map(struct bpf_object *obj, const char *name, int fd, const char *what)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);
	int err;

	if (fd < 0)
		return fail(fd, "cannot open the attached %s", what);
	err = m ? bpf_map__reuse_fd(m, fd) : -ENOENT;
	close(fd);
	if (err)
		return fail(err, "the new object cannot share the attached %s (map '%s')", what, name);
	return EXIT_SUCCESS;
}

/* The new object shares the attached instance's parameters (so they carry over, and `set` keeps
 * reaching old and new connections alike), trace maps and flow storage.
 */
static int share_maps(const struct algo *a, struct bpf_object *obj)
{
	struct attachment at = attachment_of(a);
	int fd;

	if (at.params && reuse_map(obj, ".data.params", open_pinned(a, BBRKIT_PIN_PARAMS, 0), "params map"))
		return EXIT_FAILURE;
	if (at.trace && (reuse_map(obj, ".data.ctl", open_pinned(a, BBRKIT_PIN_CTL, 0), "ctl map") ||
			 reuse_map(obj, "events", open_pinned(a, BBRKIT_PIN_EVENTS, 0), "ring buffer")))
		return EXIT_FAILURE;
	fd = attached_storage_fd(a);
	if (fd == -ENOENT)
		return EXIT_SUCCESS;
	return reuse_map(obj, "flow_storage", fd, "flow storage");
}

static struct bpf_object *open_object(const struct algo *a, const char *path)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = a->name);

	return path ? bpf_object__open_file(path, &opts) : open_algo(a);
}

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

/* Loads the new object as attach does, then swaps its struct_ops map into the pinned link. */
static int upgrade(const struct algo *a, const char *path)
{
	struct bbrkit_features have;
	struct bpf_object *obj;
	struct bpf_map *ops;
	int link_fd, err, ret = EXIT_FAILURE;

	obj = open_object(a, path);
	if (!obj)
		return fail(errno, "cannot open %s", path ? path : "the embedded BPF object");
	/* The new object writes into the attached one's ring buffer, ctl and params: one layout for all. */
	if (check_object_abi(obj, path ? path : "the embedded BPF object") || check_attached_abi(a))
		goto out;
	ops = bpf_object__find_map_by_name(obj, "ops");
	if (!ops || bpf_map__type(ops) != BPF_MAP_TYPE_STRUCT_OPS) {
		fail(0, "%s has no struct_ops map 'ops'", path ? path : "the embedded BPF object");
		goto out;
	}
	err = struct_ops_want_link(ops);
	if (err) {
		fail(err, "cannot set BPF_F_LINK on 'ops'");
		goto out;
	}
	skip_optional_programs(obj);
	if (prepare_optional_maps(obj, &have) || share_maps(a, obj))
		goto out;
	libbpf_log_reset();
	err = bpf_object__load(obj);
	if (err) {
		load_error(err, obj);
		goto out;
	}
	err = fill_struct_ops(ops);
	if (err) {
		fail(err, "cannot fill the struct_ops map");
		goto out;
	}
	link_fd = open_pinned(a, BBRKIT_PIN_LINK, 0);
	if (link_fd < 0) {
		fail(link_fd, "cannot open the pinned struct_ops link");
		goto out;
	}
	err = bpf_link_update(link_fd, bpf_map__fd(ops), NULL) ? -errno : 0;
	close(link_fd);
	if (err == -EINVAL)
		fail(err, "the kernel refused the new object (its congestion control must be named '%s')",
		     a->name);
	else if (err)
		fail(err, "cannot update the struct_ops link");
	else
		ret = EXIT_SUCCESS;
out:
	/* The link now holds the new map; our references go. */
	bpf_object__close(obj);
	return ret;
}

int cmd_upgrade(const struct cmd_opts *o, int argc, char **argv)
{
	const char *path = o->object;
	const struct algo *a;
	int rootfd, err, ret;

	(void)argc;
	a = find_algo_or_fail(argv[0]);
	if (!a)
		return EXIT_USAGE;
	set_context("upgrade %s", a->name);
	if (path && access(path, R_OK))
		return fail(errno, "cannot read %s", path);
	if (check_features())
		return EXIT_FAILURE;
	if (feature_disabled("link-update"))
		return fail(0, "the kernel cannot update a struct_ops link (BBRCTL_DISABLE has "
			    "'link-update'); detach and attach instead");
	err = kernel_link_update();
	if (err)
		return fail(err, "the kernel cannot update a struct_ops link (bbrctl features: link-update); "
			    "detach and attach instead");
	rootfd = lock_root(false);
	if (rootfd == -ENOENT || (rootfd >= 0 && !algo_attached(a))) {
		if (rootfd >= 0)
			close(rootfd);
		return fail(0, "not attached (bbrctl attach %s)", a->name);
	}
	if (rootfd < 0)
		return fail(rootfd, "cannot lock " BBRKIT_PIN_ROOT);
	if (!kernel_has_cc(a->name)) {
		close(rootfd);
		return fail(0, "the pinned link's registration is gone (bbrctl attach %s starts over)", a->name);
	}
	ret = upgrade(a, path);
	close(rootfd);
	if (!ret)
		printf("%s upgraded: new connections use %s; running ones keep their version\n", a->name,
		       path ? path : "the object built into bbrctl");
	return ret;
}
