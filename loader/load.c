// SPDX-License-Identifier: GPL-2.0
/* One load of an algorithm's BPF object, shared by attach and upgrade: the kernel checks, the open
 * (embedded or a file), the ABI check, link registration flags, the optional pieces the kernel lacks,
 * for upgrade the attached instance's maps, and the load with a readable verifier failure. What follows the load differs (register and pin, or
 * swap into the pinned link); the release is one for both.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "struct_ops_link.h"

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"
#define TCP_CA_STRUCT_OPS_BTF "bpf_struct_ops_tcp_congestion_ops"

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

static int share_maps(const struct algo *a, struct bpf_object *obj)
{
	struct attachment at = attachment_of(a);
	int fd;

	if (at.params && reuse_map(obj, ".data.params", open_pinned(a, BBRKIT_PIN_PARAMS, 0), "params map"))
		return EXIT_FAILURE;
	if (at.trace &&
		(reuse_map(obj, ".data.ctl", open_pinned(a, BBRKIT_PIN_CTL, 0), "ctl map") ||
			reuse_map(obj, "events", open_pinned(a, BBRKIT_PIN_EVENTS, 0), "ring buffer")))
		return EXIT_FAILURE;
	/* An upgrade keeps the closed connections' totals; an attachment made before they existed has none. */
	fd = open_pinned(a, BBRKIT_PIN_TOTALS, 0);
	if (fd != -ENOENT && reuse_map(obj, "closed_totals", fd, "closed totals"))
		return EXIT_FAILURE;
	fd = attached_storage_fd(a);
	if (fd == -ENOENT)
		return EXIT_SUCCESS;
	return reuse_map(obj, "flow_storage", fd, "flow storage");
}

int check_kernel(void)
{
	struct btf *btf;
	int id;

	if (check_root())
		return EXIT_FAILURE;
	if (access(VMLINUX_BTF, R_OK))
		return fail(errno,
			"kernel BTF missing (" VMLINUX_BTF "; the kernel needs CONFIG_DEBUG_INFO_BTF=y)");
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return fail(errno, "cannot read kernel BTF from " VMLINUX_BTF);
	id = btf__find_by_name_kind(btf, TCP_CA_STRUCT_OPS_BTF, BTF_KIND_STRUCT);
	btf__free(btf);
	if (id < 0)
		return fail(0,
			"the kernel has no BPF struct_ops for TCP congestion control (BTF "
			"type " TCP_CA_STRUCT_OPS_BTF " missing; needs CONFIG_BPF_JIT, CONFIG_BPF_SYSCALL)");
	if (!bpffs_mounted() && mount("bpf", BPFFS_DIR, "bpf", 0, "mode=0700"))
		return fail(errno, "bpffs is not mounted at " BPFFS_DIR " and mounting it failed");
	return EXIT_SUCCESS;
}

static int load_error(int err, struct bpf_object *obj)
{
	const char *prog = libbpf_failed_prog();
	struct bpf_program *p = prog ? bpf_object__find_program_by_name(obj, prog) : NULL;
	char why[512];

	describe_load_failure(err, prog, p ? bpf_program__section_name(p) : "?", why, sizeof(why));
	return fail(err, "%s%s", why, prog && !verbose ? " (-v shows libbpf's log)" : "");
}

int load_algo(const struct algo *a, const char *path, bool share, struct loaded *l)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = a->name);
	const char *what = path ? path : "the embedded BPF object";
	int err;

	l->obj = path ? bpf_object__open_file(path, &opts) : open_algo(a);
	if (!l->obj)
		return fail(errno, "cannot open %s", what);
	if (check_object_abi(l->obj, what))
		return EXIT_FAILURE;
	l->ops = bpf_object__find_map_by_name(l->obj, "ops");
	if (!l->ops || bpf_map__type(l->ops) != BPF_MAP_TYPE_STRUCT_OPS)
		return fail(0, "%s has no struct_ops map 'ops'", what);
	/* A link-based registration can be pinned, and goes away when the last link does. */
	err = struct_ops_want_link(l->ops);
	if (err)
		return fail(err, "cannot set BPF_F_LINK on 'ops'");
	skip_optional_programs(l->obj);
	if (prepare_optional_maps(l->obj, &l->have) || (share && share_maps(a, l->obj)))
		return EXIT_FAILURE;
	libbpf_log_reset();
	err = bpf_object__load(l->obj);
	if (err)
		return load_error(err, l->obj);
	return EXIT_SUCCESS;
}

void loaded_release(struct loaded *l)
{
	flows_iter_release(&l->flows);
	pp_links_release(&l->pp);
	if (l->link_fd >= 0)
		close(l->link_fd);
	bpf_object__close(l->obj);
}
