// SPDX-License-Identifier: GPL-2.0
/* The optional pieces of an attachment: trace (ring buffer), flow ids (sk_storage) and the flows
 * iterators. The congestion control registers without any of them.
 *
 * Map types are probed before the object loads; where one is missing, its map becomes a one-entry
 * array stand-in and the object's `features` flag is cleared, so the verifier drops the code that
 * would use it. Iterators are separate programs of the same object, each loaded on its own from a
 * second open of the ELF that shares the first one's maps: a kernel that refuses an iterator type
 * then refuses only that program.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

#define FEATURES_MAP ".rodata.features"
/* 1 where the kernel creates maps of this type, else negative errno (-EOPNOTSUPP when unknown). */
int probe_map_type(enum bpf_map_type type)
{
	int ret = libbpf_probe_bpf_map_type(type, NULL);

	return ret == 1 ? 1 : ret == 0 ? -EOPNOTSUPP : ret;
}

/* Turns a map the kernel cannot create into a one-entry array the cleared code never touches. */
static int stand_in(struct bpf_object *obj, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	if (!m)
		return -ENOENT;
	if (bpf_map__set_type(m, BPF_MAP_TYPE_ARRAY) || bpf_map__set_map_flags(m, 0) ||
		bpf_map__set_key_size(m, sizeof(__u32)) || bpf_map__set_max_entries(m, 1))
		return -EINVAL;
	return bpf_map__value_size(m) ? 0 : bpf_map__set_value_size(m, sizeof(__u32));
}

static void warn_missing(const char *piece, const char *why, int err)
{
	warn(err, "%s unavailable (%s); the congestion control works without it", piece, why);
}

int apply_features(struct bpf_object *obj, const struct bbrkit_features *have, const char **map)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, FEATURES_MAP);

	*map = "events";
	if (!have->trace && stand_in(obj, *map))
		return -EINVAL;
	*map = "flow_storage";
	if (!have->storage && stand_in(obj, *map))
		return -EINVAL;
	*map = FEATURES_MAP;
	if (!m || bpf_map__set_initial_value(m, have, sizeof(*have)))
		return -ENOENT;
	return 0;
}

int prepare_optional_maps(struct bpf_object *obj, struct bbrkit_features *have)
{
	const char *map;
	bool off;
	int err;

	*have = (struct bbrkit_features){ .trace = 1, .storage = 1 };
	off = feature_disabled(DISABLE_TRACE);
	err = off ? -EPERM : probe_map_type(BPF_MAP_TYPE_RINGBUF);
	if (err < 0) {
		warn_missing("bbrctl trace",
			off ? disable_keys[DISABLE_TRACE].reason : "the kernel has no BPF ring buffers",
			off ? 0 : err);
		have->trace = 0;
	}
	off = feature_disabled(DISABLE_STORAGE);
	err = off ? -EPERM : probe_map_type(BPF_MAP_TYPE_SK_STORAGE);
	if (err < 0) {
		warn_missing("flow ids",
			off ? disable_keys[DISABLE_STORAGE].reason : "the kernel has no BPF sk_storage maps",
			off ? 0 : err);
		have->storage = 0;
	}
	if (apply_features(obj, have, &map))
		return fail(0, "cannot ready the BPF object's map '%s' (struct bbrkit_features)", map);
	return EXIT_SUCCESS;
}

void skip_optional_programs(struct bpf_object *obj)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj) if (bpf_program__type(p) != BPF_PROG_TYPE_STRUCT_OPS)
		bpf_program__set_autoload(p, false);
}

/* Does a program name begin with one of the comma-separated prefixes? */
static bool name_in(const char *name, const char *prefixes)
{
	for (const char *p = prefixes; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		size_t n = strcspn(p, ",");

		if (!strncmp(name, p, n))
			return true;
	}
	return false;
}

/* Loads the programs of a's object whose names begin with one of the comma-separated prefixes in
 * `name` on their own, sharing main's maps (all maps new without main); NULL with errno set.
 */
static struct bpf_object *load_alone(
	const struct algo *a, struct bpf_object *main, const char *name, char *why, size_t why_size)
{
	struct bpf_object *obj = open_algo(a);
	struct bpf_program *p;
	struct bpf_map *m;
	int err;

	if (!obj) {
		snprintf(why, why_size, "cannot open the BPF object");
		return NULL;
	}
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, name_in(bpf_program__name(p), name));
	bpf_object__for_each_map(m, obj)
	{
		struct bpf_map *shared = main ? bpf_object__find_map_by_name(main, bpf_map__name(m)) : NULL;

		if (bpf_map__type(m) == BPF_MAP_TYPE_STRUCT_OPS)
			err = bpf_map__set_autocreate(m, false);
		else if (!main)
			err = 0;
		else
			err = shared ? bpf_map__reuse_fd(m, bpf_map__fd(shared)) : -ENOENT;
		if (err) {
			snprintf(why, why_size, "cannot share map '%s' with the loaded object",
				bpf_map__name(m));
			goto fail;
		}
	}
	libbpf_log_reset();
	err = bpf_object__load(obj);
	if (err) {
		const char *failed = libbpf_failed_prog() ? libbpf_failed_prog() : name;

		p = bpf_object__find_program_by_name(obj, failed);
		describe_load_failure(err, failed, p ? bpf_program__section_name(p) : "?", why, why_size);
		goto fail;
	}
	return obj;
fail:
	bpf_object__close(obj);
	errno = err < 0 ? -err : err;
	return NULL;
}

int load_flows_iterator(const struct algo *a, struct bpf_object *main, const struct bbrkit_features *have,
	struct flows_iter *out)
{
	union bpf_iter_link_info linfo = {};
	LIBBPF_OPTS(bpf_iter_attach_opts, iter_opts, .link_info = &linfo, .link_info_len = sizeof(linfo));
	char why[512] = "";
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!have->storage || feature_disabled(DISABLE_MAP_ITER)) {
		snprintf(why, sizeof(why), "%s",
			have->storage ? disable_keys[DISABLE_MAP_ITER].reason : "it needs sk_storage");
	} else {
		out->obj = load_alone(a, main, "dump_flows", why, sizeof(why));
		if (out->obj) {
			linfo.map.map_fd = bpf_map__fd(bpf_object__find_map_by_name(main, "flow_storage"));
			out->link = bpf_program__attach_iter(
				bpf_object__find_program_by_name(out->obj, "dump_flows"), &iter_opts);
			if (out->link) {
				out->pin = BBRKIT_PIN_FLOWS;
				return EXIT_SUCCESS;
			}
			err = -errno;
			snprintf(why, sizeof(why), "cannot attach iterator 'dump_flows'");
			bpf_object__close(out->obj);
			out->obj = NULL;
		} else {
			err = -errno;
		}
	}
	if (feature_disabled(DISABLE_TCP_ITER)) {
		warn(err, "bbrctl flows unavailable: no map iterator (%s) and %s", why,
			disable_keys[DISABLE_TCP_ITER].reason);
		return EXIT_SUCCESS;
	}
	if (verbose)
		warn(err,
			"no flows iterator over all namespaces: %s; bbrctl flows reads iter/tcp in "
			"each network namespace instead",
			why);
	out->obj = load_alone(a, main, "dump_tcp_flows", why, sizeof(why));
	if (!out->obj) {
		warn(-errno, "bbrctl flows unavailable: %s", why);
		return EXIT_SUCCESS;
	}
	out->link =
		bpf_program__attach_iter(bpf_object__find_program_by_name(out->obj, "dump_tcp_flows"), NULL);
	if (!out->link) {
		warn(-errno, "bbrctl flows unavailable: cannot attach iterator 'dump_tcp_flows'");
		bpf_object__close(out->obj);
		out->obj = NULL;
		return EXIT_SUCCESS;
	}
	out->pin = BBRKIT_PIN_FLOWS_TCP;
	return EXIT_SUCCESS;
}

void flows_iter_release(struct flows_iter *it)
{
	bpf_link__destroy(it->link);
	bpf_object__close(it->obj);
	memset(it, 0, sizeof(*it));
}

#define PP_LIVE_MAP ".data.pp"
#define KPROBE_PMU "/sys/bus/event_source/devices/kprobe/type" /* how libbpf attaches kprobes */

/* The per-packet path's ways to run (bbr3_pp.h, bbr3_pp_walk.h), tried in this order: the hooks on
 * the kernel's functions by fentry (cheapest) or kprobe, else the walk, which needs neither (a
 * tracepoint for the sends, the ACK's walk of the retransmit queue for the marks). Each has the
 * programs named bbr3_pp_<name>_<hook>, for the hooks it has, and the cleanup; BBRCTL_DISABLE=<name>
 * skips one, so a kernel that allows an earlier one can still run the later ones.
 */
struct pp_mechanism {
	enum disable_id off; /* its BBRCTL_DISABLE key, which is also its name */
	__u32 live;	     /* the value .data.pp tells new flows */
};
static const struct pp_mechanism pp_mechanisms[] = {
	{ DISABLE_FENTRY, BBRKIT_PP_HOOKS },
	{ DISABLE_KPROBE, BBRKIT_PP_HOOKS },
	{ DISABLE_WALK, BBRKIT_PP_WALK },
};
#define PP_MECHANISMS (sizeof(pp_mechanisms) / sizeof(pp_mechanisms[0]))

/* The mechanism's name (its program names' infix, as features and attach say it): its key. */
static const char *pp_name(const struct pp_mechanism *m)
{
	return disable_keys[m->off].key;
}
const char *const pp_progs[PP_PROGS] = { "sent", "lost", "bbr3_pp_destroy" };
const char *const pp_pins[PP_PROGS] = { BBRKIT_PIN_PP_SENT, BBRKIT_PIN_PP_LOST, BBRKIT_PIN_PP_DESTROY };

static void pp_prog_name(char *buf, size_t size, const struct pp_mechanism *m, int i)
{
	if (i == PP_PROGS - 1)
		snprintf(buf, size, "%s", pp_progs[i]);
	else
		snprintf(buf, size, "bbr3_pp_%s_%s", pp_name(m), pp_progs[i]);
}

/* Loads and attaches one mechanism's programs: 0, or -errno with why. */
static int pp_try(const struct algo *a, struct bpf_object *main, const struct pp_mechanism *m,
	struct pp_links *out, char *why, size_t size)
{
	char names[128], name[64];
	int err;

	if (feature_disabled(m->off)) {
		snprintf(why, size, "%s", disable_keys[m->off].reason);
		return -EPERM;
	}
	if (m->off == DISABLE_KPROBE && access(KPROBE_PMU, F_OK)) {
		snprintf(why, size, "the kernel has no kprobes (" KPROBE_PMU " missing: CONFIG_KPROBES)");
		return -EOPNOTSUPP;
	}
	snprintf(names, sizeof(names), "bbr3_pp_%s_,bbr3_pp_destroy", pp_name(m));
	out->obj = load_alone(a, main, names, why, size);
	err = out->obj ? 0 : -errno;
	for (int i = 0; !err && main && i < PP_PROGS; i++) {
		pp_prog_name(name, sizeof(name), m, i);
		out->link[i] = bpf_program__attach(bpf_object__find_program_by_name(out->obj, name));
		if (!out->link[i]) {
			err = -errno;
			snprintf(why, size, "cannot attach '%s'", name);
		}
	}
	if (err || !main)
		pp_links_release(out);
	else
		out->mechanism = pp_name(m);
	return err;
}

/* Tries the mechanisms in order: the index of the first that loads (and, with main, attaches), or
 * -errno with each one's refusal in why.
 */
static int pp_first(
	const struct algo *a, struct bpf_object *main, struct pp_links *out, char *why, size_t size)
{
	char one[256];
	size_t used = 0;
	int err = -ENOENT;

	why[0] = '\0';
	for (size_t m = 0; m < PP_MECHANISMS; m++) {
		err = pp_try(a, main, &pp_mechanisms[m], out, one, sizeof(one));
		if (!err)
			return (int)m;
		used += (size_t)snprintf(why + used, used < size ? size - used : 0, "%s%s: %s", m ? "; " : "",
			pp_name(&pp_mechanisms[m]), one);
		if (used >= size)
			used = size - 1;
	}
	return err;
}

int probe_per_packet_load(const struct algo *a, char *why, size_t size)
{
	struct pp_links pp = { 0 };
	char refused[512];
	int m = pp_first(a, NULL, &pp, refused, sizeof(refused));

	if (m < 0) {
		snprintf(why, size, "%s", refused);
		return m;
	}
	if (m)
		snprintf(why, size, "%s (%s)", pp_name(&pp_mechanisms[m]), refused);
	else
		snprintf(why, size, "%s", pp_name(&pp_mechanisms[m]));
	return 0;
}

int load_per_packet(const struct algo *a, struct bpf_object *main, struct pp_links *out)
{
	struct bpf_map *live = bpf_object__find_map_by_name(main, PP_LIVE_MAP);
	char why[512] = "";
	__u32 zero = 0;
	int m;

	memset(out, 0, sizeof(*out));
	if (!a->per_packet)
		return EXIT_SUCCESS;
	if (feature_disabled(DISABLE_PER_PACKET)) {
		warn(0, "per-packet loss decisions off (%s); %s judges losses at ACK time",
			disable_keys[DISABLE_PER_PACKET].reason, a->name);
		return EXIT_SUCCESS;
	}
	m = pp_first(a, main, out, why, sizeof(why));
	if (m >= 0 &&
		(!live || bpf_map_update_elem(bpf_map__fd(live), &zero, &pp_mechanisms[m].live, BPF_ANY))) {
		m = live ? -errno : -ENOENT;
		snprintf(why, sizeof(why), "cannot switch the flows to it (map '" PP_LIVE_MAP "')");
		pp_links_release(out);
	}
	if (m < 0)
		warn(m, "per-packet loss decisions unavailable (%s); %s judges losses at ACK time", why,
			a->name);
	else if (verbose)
		fprintf(stderr, "bbrctl: per-packet loss decisions by %s\n", pp_name(&pp_mechanisms[m]));
	return EXIT_SUCCESS;
}

void pp_links_release(struct pp_links *pp)
{
	for (int i = PP_PROGS - 1; i >= 0; i--)
		bpf_link__destroy(pp->link[i]);
	bpf_object__close(pp->obj);
	memset(pp, 0, sizeof(*pp));
}
