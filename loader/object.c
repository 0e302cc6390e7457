// SPDX-License-Identifier: GPL-2.0
/* The BPF objects built into bbrctl, opened for an algorithm: below both the load of an algorithm's
 * object (load.c) and the loads of its optional programs on their own (telemetry.c).
 */
#include <bpf/libbpf.h>

#include "bbrctl.h"

/* bpf_object__open_mem() of the object built into bbrctl, named for the algorithm. */
struct bpf_object *open_algo(const struct algo *a)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .object_name = a->name);
	size_t size;
	const void *bytes = a->elf_bytes(&size);

	return bpf_object__open_mem(bytes, size, &open_opts);
}
