// SPDX-License-Identifier: GPL-2.0
/* One load of an algorithm's BPF object, shared by attach and upgrade: the kernel checks, the open
 * (embedded or a file), the ABI check, link registration flags, the optional pieces the kernel lacks,
 * and the load with a readable verifier failure. What follows the load differs (register and pin, or
 * swap into the pinned link); the release is one for both.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "struct_ops_link.h"

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"
#define TCP_CA_STRUCT_OPS_BTF "bpf_struct_ops_tcp_congestion_ops"

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
