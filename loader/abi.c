// SPDX-License-Identifier: GPL-2.0
/* The ABI version (include/bbrkit.h): what this bbrctl and a BPF object, or an attachment, agree on
 * before one reads or shares the other's records and maps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

int check_object_abi(struct bpf_object *obj, const char *what)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, BBRKIT_ABI_SECTION);
	const void *value = NULL;
	size_t size = 0;
	__u32 version;

	if (m)
		value = bpf_map__initial_value(m, &size);
	if (!value || size != sizeof(version))
		return fail(0,
			"%s has no ABI version (section " BBRKIT_ABI_SECTION "): built from an older "
			"bbrkit, rebuild it from this one",
			what);
	memcpy(&version, value, sizeof(version));
	if (version != BBRKIT_ABI_VERSION)
		return fail(0, "%s has ABI version %u, this bbrctl reads %u: rebuild it from the same bbrkit",
			what, version, BBRKIT_ABI_VERSION);
	return EXIT_SUCCESS;
}

int check_attached_abi(const struct algo *a)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), key = 0, version;
	int fd = open_pinned(a, BBRKIT_PIN_ABI, BPF_F_RDONLY), err;

	if (fd == -ENOENT)
		return fail(0,
			"%s was attached by a bbrctl without ABI versions (no pin '" BBRKIT_PIN_ABI
			"'): detach and attach it with this bbrctl",
			a->name);
	if (fd < 0)
		return fail(fd, "cannot open %s's pinned ABI version", a->name);
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (!err && info.value_size != sizeof(version))
		err = -EPROTO;
	if (!err && bpf_map_lookup_elem(fd, &key, &version))
		err = -errno;
	close(fd);
	if (err)
		return fail(err, "cannot read %s's pinned ABI version", a->name);
	if (version != BBRKIT_ABI_VERSION)
		return fail(0,
			"%s was attached with ABI version %u, this bbrctl reads %u: detach and attach it "
			"with this bbrctl",
			a->name, version, BBRKIT_ABI_VERSION);
	return EXIT_SUCCESS;
}
