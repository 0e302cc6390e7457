// SPDX-License-Identifier: GPL-2.0
/* The pin directories: BBRKIT_PIN_ROOT/<algo>/{link, abi, totals, flows or flows-tcp,
 * events, ctl, params}.
 * The link alone is the registration, the rest is there where the kernel allows it. attach builds a
 * directory under a temporary name and renames it into place, so a failed attach leaves nothing; the
 * root directory is flock()ed so that concurrent attach, detach and upgrade runs do not interleave.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

/* bpffs rejects names with dots; a dash cannot occur in an algorithm (C identifier) name. */
#define TMP_SUFFIX "-attaching"

bool bpffs_mounted(void)
{
	struct statfs st;

	return !statfs(BPFFS_DIR, &st) && st.f_type == BPF_FS_MAGIC;
}

/* The last detach removes the root while holding the lock, so a waiter may wake up holding a removed
 * directory: it then starts over.
 */
int lock_root(bool create)
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
		if (!fstat(fd, &locked) && !stat(BBRKIT_PIN_ROOT, &current) &&
			locked.st_ino == current.st_ino)
			return fd;
		close(fd);
		if (!create)
			return -ENOENT;
	}
}

int remove_pin_dir(const char *dir)
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

/* Called with the root locked, so no temporary directory can belong to a live run. */
int remove_stale(int rootfd)
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

static int pin_fd(int fd, const char *dir, const char *name)
{
	char path[BBRCTL_MAX_PATH * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_pin(fd, path) ? -errno : 0;
}

/* A map of the object to pin as name; its absence is an error, named. */
static int pin_map(const struct loaded *l, const char *map, const char *dir, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(l->obj, map);
	int err;

	if (!m)
		return fail(0, "the BPF object has no map '%s'", map);
	err = pin_fd(bpf_map__fd(m), dir, name);
	return err ? fail(err, "cannot pin '%s' into %s", map, dir) : EXIT_SUCCESS;
}

/* The link goes last, so that an interruption before it leaves no registration behind. */
static int pin_into(const struct algo *a, const struct loaded *l, const char *tmp)
{
	struct bpf_map *params = bpf_object__find_map_by_name(l->obj, ".data.params");
	int err;

	if (l->have.trace &&
		(pin_map(l, ".data.ctl", tmp, BBRKIT_PIN_CTL) ||
			pin_map(l, "events", tmp, BBRKIT_PIN_EVENTS)))
		return EXIT_FAILURE;
	if (a->params_size && (!params || bpf_map__value_size(params) != a->params_size))
		return fail(0, "the BPF object's '.data.params' does not match struct %s_params", a->name);
	if (params && pin_map(l, ".data.params", tmp, BBRKIT_PIN_PARAMS))
		return EXIT_FAILURE;
	if (l->flows.pin) {
		err = pin_fd(bpf_link__fd(l->flows.link), tmp, l->flows.pin);
		if (err)
			return fail(err, "cannot pin the flows iterator into %s", tmp);
	}
	for (int i = 0; l->pp.link[0] && i < PP_PROGS; i++) {
		err = pin_fd(bpf_link__fd(l->pp.link[i]), tmp, pp_pins[i]);
		if (err)
			return fail(err, "cannot pin the per-packet loss programs into %s", tmp);
	}
	if (pin_map(l, BBRKIT_ABI_SECTION, tmp, BBRKIT_PIN_ABI) ||
		pin_map(l, "closed_totals", tmp, BBRKIT_PIN_TOTALS))
		return EXIT_FAILURE;
	err = pin_fd(l->link_fd, tmp, BBRKIT_PIN_LINK);
	return err ? fail(err, "cannot pin the struct_ops link into %s", tmp) : EXIT_SUCCESS;
}

int pin_all(const struct algo *a, const struct loaded *l)
{
	char dir[BBRCTL_MAX_PATH], tmp[BBRCTL_MAX_PATH];
	int err;

	pin_path(dir, a->name, NULL);
	snprintf(tmp, sizeof(tmp), "%s/%s" TMP_SUFFIX, BBRKIT_PIN_ROOT, a->name);
	if (mkdir(tmp, 0700))
		return fail(errno, "cannot create %s", tmp);
	if (pin_into(a, l, tmp)) {
		remove_pin_dir(tmp);
		return EXIT_FAILURE;
	}
	if (rename(tmp, dir)) {
		err = -errno;
		remove_pin_dir(tmp);
		return fail(err, "cannot rename %s to %s", tmp, dir);
	}
	return EXIT_SUCCESS;
}
