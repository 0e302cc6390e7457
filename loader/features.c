// SPDX-License-Identifier: GPL-2.0
/* features: what this kernel lets bbrkit do, each capability probed the way bbrctl uses it, in
 * the spirit of `bpftool feature probe`. Nothing is registered, pinned or mounted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"
#define BPFFS_DIR "/sys/fs/bpf"
#define BPF_STATS_SYSCTL "/proc/sys/kernel/bpf_stats_enabled"
#define STATUS_TEXT 512 /* per-packet names each mechanism refused, with its reason */

struct probe {
	const char *key;
	const char *what;
	int (*run)(struct btf *btf, char *note, size_t size); /* 0, or negative errno */
};

static int probe_btf(struct btf *btf, char *note, size_t size)
{
	(void)note;
	(void)size;
	return btf ? 0 : -ENOENT;
}

static int btf_has(struct btf *btf, const char *name, __u32 kind)
{
	if (!btf)
		return -ENOENT;
	return btf__find_by_name_kind(btf, name, kind) < 0 ? -EOPNOTSUPP : 0;
}

/* Loads a's struct_ops programs without registering (trace off; sk_storage as asked): 0 or -errno. */
static int probe_cc_load(const struct algo *a, bool storage)
{
	struct bbrkit_features have = { .storage = storage };
	struct bpf_object *obj = open_algo(a);
	const char *map;
	int err;

	if (!obj)
		return -errno;
	skip_optional_programs(obj);
	err = apply_features(obj, &have, &map);
	if (!err) {
		libbpf_log_reset();
		err = bpf_object__load(obj);
	}
	bpf_object__close(obj);
	return err;
}

static int probe_struct_ops_tcp(struct btf *btf, char *note, size_t size)
{
	int err = btf_has(btf, "bpf_struct_ops_tcp_congestion_ops", BTF_KIND_STRUCT);

	if (err)
		return err;
	snprintf(note, size, "%s's programs load", algo_at(0)->name);
	return probe_cc_load(algo_at(0), false);
}

static int probe_links(struct btf *btf, char *note, size_t size)
{
	snprintf(note, size, "kernel BTF has struct bpf_struct_ops_link");
	return btf_has(btf, "bpf_struct_ops_link", BTF_KIND_STRUCT);
}

static int probe_link_update(struct btf *btf, char *note, size_t size)
{
	snprintf(note, size, "kernel BTF has bpf_struct_ops_map_link_update()");
	return btf_has(btf, "bpf_struct_ops_map_link_update", BTF_KIND_FUNC);
}

int kernel_link_update(void)
{
	struct btf *btf = access(VMLINUX_BTF, R_OK) ? NULL : btf__load_vmlinux_btf();
	char note[STATUS_TEXT];
	int err = probe_link_update(btf, note, sizeof(note));

	btf__free(btf);
	return err;
}

/* Loads a program that only returns 0 for the iterator target: what the kernel allows. */
static int probe_iter(struct btf *btf, const char *target)
{
	const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	char func[64];
	int id, fd;

	if (!btf)
		return -ENOENT;
	snprintf(func, sizeof(func), "bpf_iter_%s", target);
	id = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);
	if (id < 0)
		return -EOPNOTSUPP;
	LIBBPF_OPTS(
		bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_ITER, .attach_btf_id = (__u32)id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", ret0, 2, &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int probe_map_iters(struct btf *btf, char *note, size_t size)
{
	int err = probe_iter(btf, "bpf_sk_storage_map");

	snprintf(note, size, "iter/bpf_sk_storage_map and iter/bpf_map_elem");
	return err ? err : probe_iter(btf, "bpf_map_elem");
}

static int probe_iter_tcp(struct btf *btf, char *note, size_t size)
{
	(void)note;
	(void)size;
	return probe_iter(btf, "tcp");
}

static int probe_ringbuf(struct btf *btf, char *note, size_t size)
{
	(void)btf;
	(void)note;
	(void)size;
	return probe_map_type(BPF_MAP_TYPE_RINGBUF) < 0 ? -EOPNOTSUPP : 0;
}

static int probe_sk_storage(struct btf *btf, char *note, size_t size)
{
	(void)btf;
	snprintf(note, size, "%s's programs load with it", algo_at(0)->name);
	if (probe_map_type(BPF_MAP_TYPE_SK_STORAGE) < 0)
		return -EOPNOTSUPP;
	return probe_cc_load(algo_at(0), true);
}

/* The per-packet loss path's programs load, attached to nothing, by the first mechanism the kernel
 * allows (fentry, kprobe, walk): the note names it, and why those before it did not load.
 */
static int probe_per_packet(struct btf *btf, char *note, size_t size)
{
	const struct algo *a = algo_find("bbr3");

	(void)btf;
	if (!a)
		return -ENOENT;
	return probe_per_packet_load(a, note, size);
}

static int probe_bpffs(struct btf *btf, char *note, size_t size)
{
	struct statfs st;

	(void)btf;
	if (!statfs(BPFFS_DIR, &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	snprintf(note, size, "not mounted at " BPFFS_DIR "; bbrctl attach mounts it");
	return -ENOENT;
}

static int probe_stats(struct btf *btf, char *note, size_t size)
{
	FILE *f = fopen(BPF_STATS_SYSCTL, "r");
	int on = -1;

	(void)btf;
	if (!f)
		return -errno;
	if (fscanf(f, "%d", &on) != 1)
		on = -1;
	fclose(f);
	snprintf(note, size, "kernel.bpf_stats_enabled = %d", on);
	return on < 0 ? -EIO : 0;
}

static const struct probe probes[] = {
	{ "btf", "kernel BTF (" VMLINUX_BTF ")", probe_btf },
	{ "struct-ops-tcp-cc", "struct_ops for TCP congestion control", probe_struct_ops_tcp },
	{ "struct-ops-link", "struct_ops links (pinned registration)", probe_links },
	{ "link-update", "struct_ops link update (live upgrade)", probe_link_update },
	{ "map-iter", "map-element iterators (flows, one pass)", probe_map_iters },
	{ "iter-tcp", "iter/tcp (flows, one pass per netns)", probe_iter_tcp },
	{ "ringbuf", "BPF ring buffer (trace)", probe_ringbuf },
	{ "sk-storage", "sk_storage from struct_ops (flow ids)", probe_sk_storage },
	{ "per-packet", "per-packet loss decisions (bbr2, bbr3)", probe_per_packet },
	{ "bpffs", "bpffs at " BPFFS_DIR " (pins)", probe_bpffs },
	{ "bpf-stats", "kernel BPF run-time stats", probe_stats },
};

#define NPROBES (sizeof(probes) / sizeof(probes[0]))

int cmd_features(const struct cmd_opts *o, int argc, char **argv)
{
	bool json = o->json;
	struct json j;
	struct btf *btf;

	(void)argc;
	(void)argv;
	if (check_root())
		return EXIT_FAILURE;
	btf = access(VMLINUX_BTF, R_OK) ? NULL : btf__load_vmlinux_btf();
	json_init(&j, stdout);
	if (json) {
		json_object(&j);
		json_key(&j, "features");
		json_array(&j);
	}
	for (size_t i = 0; i < NPROBES; i++) {
		char note[STATUS_TEXT] = "";
		int err = probes[i].run(btf, note, sizeof(note));

		if (json) {
			json_object(&j);
			json_key(&j, "key");
			json_string(&j, probes[i].key);
			json_key(&j, "what");
			json_string(&j, probes[i].what);
			json_key(&j, "available");
			json_bool(&j, !err);
			json_key(&j, "reason");
			json_string(&j, err ? strerror(-err) : NULL);
			json_key(&j, "note");
			json_string(&j, note);
			json_object_end(&j);
		} else {
			printf("%-18s %-42s %s%s%s%s\n", probes[i].key, probes[i].what, err ? "no: " : "yes",
				err ? strerror(-err) : "", note[0] ? " -- " : "", note);
		}
	}
	if (json) {
		json_array_end(&j);
		json_object_end(&j);
	}
	btf__free(btf);
	return EXIT_SUCCESS;
}
