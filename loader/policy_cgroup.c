// SPDX-License-Identifier: GPL-2.0
/* The cgroup2 hierarchy the policy's program attaches to, bbrctl's own mount where the host has none,
 * and the ids of the cgroups rules name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbrctl.h"
#include "policy_internal.h"

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
			(strcmp(mnt, OWN_CGROUP2) && feature_disabled(DISABLE_HOST_CGROUP2)))
			continue;
		snprintf(out, size, "%s", mnt);
		found = true;
	}
	fclose(f);
	return found;
}

bool find_cgroup2(char *out, size_t size)
{
	/* bbrctl's own first: the one it attached to when it made one. */
	return cgroup2_mount(OWN_CGROUP2, out, size) || cgroup2_mount(NULL, out, size);
}

static bool own_cgroup2_mounted(void)
{
	char mnt[BBRCTL_MAX_PATH];

	return cgroup2_mount(OWN_CGROUP2, mnt, sizeof(mnt));
}

int mount_cgroup2(char *out, size_t size)
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
void unmount_own_cgroup2(void)
{
	if (own_cgroup2_mounted() && umount2(OWN_CGROUP2, 0))
		warn(-errno, "cannot unmount " OWN_CGROUP2);
	rmdir(OWN_CGROUP2);
	rmdir(OWN_CGROUP2_PARENT);
}

/* The cgroup v2 id (what bpf_get_current_cgroup_id() and the kernel's kn->id say) and depth. */
int cgroup_id_of(const char *root, const char *rel, __u64 *id, __u32 *level)
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
