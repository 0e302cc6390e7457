/* SPDX-License-Identifier: GPL-2.0 */
/* A struct_ops registration through a link, on libbpf 1.1 as on later ones: bbrctl pins it, the
 * test and benchmark tools keep it in the process, so that closing it, or the process dying,
 * unregisters. User space only.
 */
#ifndef STRUCT_OPS_LINK_H
#define STRUCT_OPS_LINK_H

#include <errno.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* Debian's uapi headers predate struct_ops links; these are the kernel's values. */
#ifndef BPF_F_LINK
#define BPF_F_LINK (1U << 13)
#endif
#define ATTACH_TYPE_STRUCT_OPS ((enum bpf_attach_type)44)

/* Marks the struct_ops map for a link registration; call between open and load. */
static inline int struct_ops_want_link(struct bpf_map *ops)
{
	return bpf_map__set_map_flags(ops, bpf_map__map_flags(ops) | BPF_F_LINK);
}

/* Registers `ops` (loaded with struct_ops_want_link) and returns the link fd, or -errno. libbpf 1.1
 * only writes the program fds into the map value through a pseudo-link (with BPF_F_LINK the kernel
 * does not register on update), so the link is made by hand there. The pseudo-link would delete the
 * map element when destroyed, hence disconnect; with a real link, disconnecting hands its fd over.
 */
static inline int struct_ops_register(struct bpf_map *ops)
{
	struct bpf_link *link = bpf_map__attach_struct_ops(ops);
	int fd;

	if (!link)
		return -errno;
#if LIBBPF_MAJOR_VERSION > 1 || LIBBPF_MINOR_VERSION >= 2
	fd = bpf_link__fd(link);
#else
	fd = bpf_link_create(bpf_map__fd(ops), 0, ATTACH_TYPE_STRUCT_OPS, NULL);
	fd = fd < 0 ? -errno : fd;
#endif
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	return fd;
}

#endif /* STRUCT_OPS_LINK_H */
