/* SPDX-License-Identifier: GPL-2.0 */
/* bbrctl internals shared by the subcommand files. */
#ifndef BBRCTL_H
#define BBRCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <linux/bpf.h>

#include "bbrkit.h"

#define BBRCTL_MAX_PATH 256
/* params.c keeps a params value in a buffer of this size; algos.c asserts each struct fits. */
#define MAX_PARAMS_SIZE 256
#define BBRCTL_AVAILABLE_CC "/proc/sys/net/ipv4/tcp_available_congestion_control"
#define BBRCTL_ALLOWED_CC "/proc/sys/net/ipv4/tcp_allowed_congestion_control"

/* How a parameter's human value maps to its stored integer. */
enum param_kind {
	PARAM_RATIO, /* decimal with up to three places, stored in thousandths */
	PARAM_UINT,  /* plain unsigned integer */
	PARAM_BOOL,  /* 0/1, also on/off */
};

struct param_desc {
	const char *name;  /* key of `bbrctl set`, e.g. "alpha" */
	const char *field; /* field of the params struct, e.g. "alpha_permille" */
	size_t offset;
	enum param_kind kind;
	const char *unit;
	__u32 def, min, max; /* stored values, include/bbrkit_params.h; outside [min, max] acts as def */
	const char *help;
	__u32 usual_min, usual_max; /* `show` warns outside this band; 0, 0: no band */
};

/* How a variant slot is shown. BBRKIT_VAR_NONE in a VAR_UINT, VAR_BW or VAR_USEC slot means "not set":
 * JSON null, an empty CSV cell, "-" in the table.
 */
enum variant_kind {
	VAR_UINT,     /* plain count */
	VAR_GAIN,     /* BBR_UNIT fixed point, printed as a float */
	VAR_BW,	      /* packets/us << BW_SCALE, printed in bit/s */
	VAR_PERMILLE, /* thousandths, printed as a fraction */
	VAR_V3_PHASE, /* enum bbrkit_v3_phase, printed by name */
	VAR_USEC,     /* microseconds */
};

/* One slot of bbrkit_flow.variant as shown by flows and trace. */
struct variant_desc {
	const char *key; /* JSON/CSV key, e.g. "acd_steady" */
	unsigned int slot;
	enum variant_kind kind;
	const char *help;
};

struct algo {
	const char *name;
	const void *(*elf_bytes)(size_t *sz);
	const struct param_desc *params;
	size_t nparams;
	size_t params_size; /* size of the params struct; 0 when there are no parameters */
	const struct variant_desc *variants;
	size_t nvariants;
	bool per_packet; /* has the per-packet loss programs (bbr3_core.h) */
};

/* algos.c */
extern const size_t nalgos;
void algos_init(void);
const struct algo *algo_at(size_t i);
const struct algo *algo_find(const char *name);
/* algo_find(), or NULL after a usage error that lists the known names. */
const struct algo *find_algo_or_fail(const char *name);
/* The algorithms named in argv, or all attached ones when none is named (see algos.c). */
int select_algos(int argc, char **argv, const struct algo **out, size_t *n);
/* object.c: a's BPF object, opened (not loaded) under a's name; NULL with errno set. */
struct bpf_object;
struct bpf_object *open_algo(const struct algo *a);

/* util.c: "bbrctl: <context>: message[: strerror]" on stderr. */
extern bool verbose;
/* -j before the command or --json after it: stdout carries exactly one JSON document, the command's
 * or, when it fails, {"error": ..., "command": ..., "exit_status": ...}.
 */
extern bool json_output;
/* Exit statuses (bbrctl(8)): EXIT_SUCCESS, EXIT_FAILURE when the command failed, EXIT_USAGE for a
 * bad command line (an unknown option, command, algorithm or parameter, a malformed value) or an
 * unknown BBRCTL_DISABLE key.
 */
#define EXIT_USAGE 2
void set_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int bad_argument(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "bbrctl: <context>: warning: message[: strerror]"; changes nothing, returns nothing. */
void warn(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void libbpf_log_setup(void);
/* Forgets the failed program and message of an earlier load. */
void libbpf_log_reset(void);
const char *libbpf_failed_prog(void);
const char *libbpf_last_message(void);
/* What a failed program load means (prog: libbpf_failed_prog(), or NULL), as one line of text. */
void describe_load_failure(int err, const char *prog, const char *sec, char *buf, size_t size);
/* EXIT_FAILURE after a one-line error unless bbrctl runs as root. */
int check_root(void);

/* state.c: what is attached: pins, registration, what an attachment has */
int pin_path(char *buf, const char *algo, const char *name);
bool algo_attached(const struct algo *a);
/* 1 attached, 0 detached, -EACCES where only root can tell (bpffs is root's and the name is
 * registered): what list and show need without root.
 */
int attached_state(const struct algo *a);
bool kernel_has_cc(const char *name);
int read_available_cc(char *buf, size_t size);
int open_pinned(const struct algo *a, const char *name, int flags);
/* What an attachment has, from its pins. flows: "map-iterator", "iter-tcp" or NULL. */
struct attachment {
	bool params, trace, per_packet;
	const char *flows;
};
struct attachment attachment_of(const struct algo *a);
/* The same as one line of text: "params yes, trace yes, flows map-iterator". */
void attachment_features(const struct algo *a, char *buf, size_t size);
/* The same as a "features" member ({"params", "trace", "flows"}); nothing when a is not attached. */
struct json;
void attachment_json(struct json *j, const struct algo *a);

/* flows.c: how many connections use a's attachment (detach reports them). */
int count_flows(const struct algo *a);
/* All records of a's flows iterator in a malloc()ed array; negative errno on failure. */
int read_flows(const struct algo *a, struct bbrkit_flow **out, size_t *n);
/* Everything one read of the pinned iterator at path yields, malloc()ed. */
int read_iterator(const char *path, char **buf, size_t *used);
/* Appends all that fd yields to *buf (of *cap bytes, *used used), growing it with realloc(). */
int read_all(int fd, char **buf, size_t *cap, size_t *used);

/* policy_parse.c: the rules (include/bbrkit_policy.h) from the command line. */
#include "bbrkit_policy.h"
struct policy_spec {
	struct bbrkit_policy_rule rule;
	bool replace;
};
/* NAME KEY=VALUE... into s; EXIT_USAGE after one line naming the problem. Needs no system state. */
int policy_parse(const char *name, int argc, char **argv, struct policy_spec *s);
int policy_parse_prefix(const char *text, struct bbrkit_policy_prefix *p);

/* policy_maps.c: the pinned policy's maps. */
bool policy_exists(void);
int policy_open_map(const char *name);
int policy_read_rules(struct bbrkit_policy_rule *rules); /* BBRKIT_POLICY_RULES slots */
int policy_read_stats(__u32 slot, __u32 arm, struct bbrkit_policy_stats *sum);

/* policy_print.c */
void policy_prefix_text(const struct bbrkit_policy_prefix *p, char *buf, size_t size);
/* How many rules name algo without fallback=yes (their names in out): detach is refused then. */
int policy_blocks_detach(const char *algo, char *out, size_t size);
/* The policy's pinned iterator over placed connections, under BBRKIT_POLICY_DIR. */
#define BBRKIT_POLICY_PIN_FLOWS "flows"

/* abi.c: the ABI version against this bbrctl's BBRKIT_ABI_VERSION; EXIT_FAILURE after a one-line
 * error. An object before it is loaded (what names it in the error), or an attachment's pinned one.
 */
struct bpf_object;
int check_object_abi(struct bpf_object *obj, const char *what);
int check_attached_abi(const struct algo *a);

/* netns.c: fn runs once inside each network namespace (by name or through a process); a
 * non-zero return stops the walk and is returned. The caller is back in its own namespace after.
 */
int for_each_netns(int (*fn)(void *ctx, const char *label), void *ctx);
int netns_defaults_using(const char *algo, char *who, size_t size);

/* disable.c: BBRCTL_DISABLE, a comma-separated list of these keys, makes bbrctl act as if the kernel
 * lacked each piece named, so that one kernel can run the fallbacks an older one would take. This list
 * is the only one: the enum callers name a key by, bbrctl's check of the variable, the man page's
 * ENVIRONMENT and docs/reference.md's list (bbrctl-gen disable-keys, make check-readme).
 * X(id, key, what): DISABLE_<id>, the key in BBRCTL_DISABLE, what it does (one line).
 */
#define BBRCTL_DISABLE_ENV "BBRCTL_DISABLE"
#define BBRCTL_DISABLE_KEYS(X) \
	X(TRACE, "trace", "attach, upgrade: no trace ring buffer (trace has nothing to read)") \
	X(STORAGE, "storage", "attach, upgrade: no sk_storage (no flow ids; flows reads iter/tcp)") \
	X(MAP_ITER, "map-iter", "attach: no map iterator (flows reads iter/tcp in each namespace)") \
	X(TCP_ITER, "tcp-iter", "attach: no iter/tcp (with map-iter too, flows has nothing to read)") \
	X(PER_PACKET, "per-packet", "attach, upgrade: bbr2, bbr3 and bbr_draft judge losses at ACK time") \
	X(FENTRY, "fentry", "attach, upgrade, features: the per-packet path skips its fentry hooks") \
	X(KPROBE, "kprobe", "attach, upgrade, features: the per-packet path skips its kprobe hooks") \
	X(WALK, "walk", "attach, upgrade, features: the per-packet path skips its retransmit-queue walk") \
	X(LINK_UPDATE, "link-update", "upgrade: refused, as by a kernel without struct_ops link update") \
	X(HOST_CGROUP2, "host-cgroup2", "policy: ignores the host's cgroup2 mounts and mounts bbrctl's own")
#define DISABLE_ID(id, key, what) DISABLE_##id,
enum disable_id { BBRCTL_DISABLE_KEYS(DISABLE_ID) DISABLE_KEYS };
#undef DISABLE_ID
struct disable_key {
	const char *key;
	const char *what;
	const char *reason; /* for a message: "BBRCTL_DISABLE has 'key'" */
};
extern const struct disable_key disable_keys[DISABLE_KEYS];
/* Callers name a key by its enum, so a key outside the list cannot be asked for. */
bool feature_disabled(enum disable_id id);
/* EXIT_USAGE after one line naming BBRCTL_DISABLE's first unknown key, else EXIT_SUCCESS. */
int check_disable_env(void);
/* The keys with their meaning, for the man page and docs/reference.md. */
void disable_keys_help(FILE *out);

/* telemetry.c: the optional pieces of an attachment (see the file's header). */
struct bpf_object;
struct bpf_link;
struct flows_iter {
	struct bpf_object *obj; /* the iterator program's own load */
	struct bpf_link *link;
	const char *pin; /* BBRKIT_PIN_FLOWS or BBRKIT_PIN_FLOWS_TCP; NULL when unavailable */
};
int probe_map_type(enum bpf_map_type type);
/* Readies obj for what have lacks (its maps become stand-ins) and sets the object's feature flags:
 * 0, or negative errno with the map at fault in *map.
 */
int apply_features(struct bpf_object *obj, const struct bbrkit_features *have, const char **map);
/* Probes the kernel (and BBRCTL_DISABLE) for the optional maps, warns about each missing one and
 * applies the result: EXIT_FAILURE after a one-line error.
 */
int prepare_optional_maps(struct bpf_object *obj, struct bbrkit_features *have);
void skip_optional_programs(struct bpf_object *obj);
int load_flows_iterator(const struct algo *a, struct bpf_object *main, const struct bbrkit_features *have,
	struct flows_iter *out);
void flows_iter_release(struct flows_iter *it);
/* bbr2/bbr3's per-packet loss path: its programs (hooks on the kernel's transmit and loss marking, or
 * a tracepoint on the device queue; a tracepoint on socket destruction), loaded beside main and
 * sharing its maps.
 */
#define PP_PROGS 3
struct pp_links {
	struct bpf_object *obj;
	struct bpf_link *link[PP_PROGS]; /* NULL when the path does not run */
	const char *mechanism;		 /* "fentry", "kprobe" or "walk" once attached */
};
/* Their program names (the hooks' after the mechanism's prefix) and pin names, in link[] order. */
extern const char *const pp_progs[PP_PROGS];
extern const char *const pp_pins[PP_PROGS];
/* Loads and attaches them, then tells main's new flows to use them; a refusal is a one-line warning. */
int load_per_packet(const struct algo *a, struct bpf_object *main, struct pp_links *out);
void pp_links_release(struct pp_links *pp);
/* Loads a's per-packet programs on their own (nothing attached), by the first mechanism that loads
 * (fentry, kprobe, walk): 0 with the mechanism (and why the ones before it did not) in why, or -errno
 * with why not.
 */
int probe_per_packet_load(const struct algo *a, char *why, size_t size);
/* load.c: one load of an algorithm's object, shared by attach and upgrade. */
struct bpf_map;
struct loaded {
	struct bpf_object *obj;
	struct bpf_map *ops; /* the struct_ops map */
	int link_fd;	     /* attach: the struct_ops link, the registration; -1 before it */
	struct bbrkit_features have;
	struct flows_iter flows;
	struct pp_links pp;
};
/* Root, kernel BTF, struct_ops for TCP, bpffs (mounted when missing): each with what is missing. */
int check_kernel(void);
/* Opens the object at path (NULL: the one built in), checks its ABI version, readies the optional
 * pieces and, with share (upgrade), reuses the attached instance's params, trace maps and flow
 * storage, and loads it. What it made is
 * in *l, for loaded_release() also after a failure.
 */
int load_algo(const struct algo *a, const char *path, bool share, struct loaded *l);
void loaded_release(struct loaded *l);

/* pins.c: the pin directories under BBRKIT_PIN_ROOT and their lock. */
#define BPFFS_DIR "/sys/fs/bpf"
bool bpffs_mounted(void);
/* A locked fd of the pin root, or negative errno (-ENOENT when !create and it is absent). */
int lock_root(bool create);
/* Removes a pin directory; unpinning the link first unregisters before anything else goes. */
int remove_pin_dir(const char *dir);
/* Leftovers of an interrupted attach (temporary directories) or detach (a directory without its link). */
int remove_stale(int rootfd);
/* Pins what l loaded into a temporary directory, the link last, and renames it into place. */
int pin_all(const struct algo *a, const struct loaded *l);

/* audit.c: the append-only log of changes (docs/operations.md). */
const char *audit_path(void);
/* One timestamped line. */
void audit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The command line of a command that changed state (.audit in the table), after it succeeded. */
void audit_command(int argc, char **argv, int status);
/* This run of an audited command changed nothing (a listing, a dry run): audit_command skips it. */
void audit_skip(void);

/* json.c: a streaming writer; each top-level value ends its line. */
#define JSON_MAX_DEPTH 8
struct json {
	FILE *out;
	unsigned int depth;
	unsigned int count[JSON_MAX_DEPTH]; /* values so far in each open scope */
	bool pending_key;		    /* a key was written; its value needs no comma */
};
void json_init(struct json *j, FILE *out);
void json_object(struct json *j);
void json_object_end(struct json *j);
void json_array(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s); /* NULL: null */
void json_uint(struct json *j, unsigned long long v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
void json_double(struct json *j, double v, int digits);
void json_number_text(struct json *j, const char *text);

/* cli.c: the command table. Options of all subcommands land in one struct cmd_opts. */
#define CLI_MANY 64 /* most positional arguments a command takes */
struct algo;
struct cmd_opts {
	bool json;
	const char *out, *format, *object;
	const char *listen, *flow_limit, *stall_rtts; /* export */
	bool dry_run, migrate;			      /* policy, apply */
	const struct algo *algo; /* the command's ALGO, resolved by the parser (takes_algo) */
};
struct cli_opt {
	const char *name;
	char short_name;
	const char *metavar; /* NULL: a flag (bool field) */
	const char *help;
	size_t offset;		    /* of the field in struct cmd_opts */
	const char *const *choices; /* NULL-terminated allowed values, or NULL: any */
};
struct cli_command {
	const char *name;
	/* argv holds the positional arguments only. EXIT_SUCCESS or EXIT_FAILURE. */
	int (*run)(const struct cmd_opts *o, int argc, char **argv);
	const char *summary;
	const char *args; /* positional arguments as in the usage line, e.g. "ALGO KEY=VALUE..." */
	int min_args, max_args;
	const struct cli_opt *opts; /* terminated by an empty entry; -v and -h come with every command */
	const char *doc;
	void (*extra_help)(FILE *out);
	/* The first positional is ALGO: the parser resolves it (an unknown name is the usage error) into
	 * cmd_opts.algo and names it in the error context, "attach bbr1: ...".
	 */
	bool takes_algo;
	bool audit; /* changes state: each successful run is a line of the audit log */
};
extern const struct cli_command cli_commands[];
const struct cli_command *cli_find(const char *name);
bool cli_has_json(const struct cli_command *c);
void cli_usage(const struct cli_command *c, char *buf, size_t size);
void cli_help(FILE *out, const struct cli_command *c);
void cli_main_help(FILE *out);
/* EXIT_SUCCESS with *first_arg set, -1 when --help was printed, or EXIT_FAILURE after a one-line error. */
int cli_parse(const struct cli_command *c, int argc, char **argv, struct cmd_opts *out, int *first_arg);

/* Subcommands. */
int cmd_list(const struct cmd_opts *o, int argc, char **argv);
int cmd_attach(const struct cmd_opts *o, int argc, char **argv);
int cmd_detach(const struct cmd_opts *o, int argc, char **argv);
int cmd_show(const struct cmd_opts *o, int argc, char **argv);
int cmd_set(const struct cmd_opts *o, int argc, char **argv);
int cmd_flows(const struct cmd_opts *o, int argc, char **argv);
int cmd_trace(const struct cmd_opts *o, int argc, char **argv);
int cmd_features(const struct cmd_opts *o, int argc, char **argv);
int cmd_upgrade(const struct cmd_opts *o, int argc, char **argv);
int cmd_policy(const struct cmd_opts *o, int argc, char **argv);
int cmd_export(const struct cmd_opts *o, int argc, char **argv);
int cmd_ss(const struct cmd_opts *o, int argc, char **argv);
int cmd_apply(const struct cmd_opts *o, int argc, char **argv);
/* ss.c: the keys of ss --json with their meaning, for --help and the man page. */
void ss_keys_help(FILE *out);
/* params.c: every algorithm's parameters, for show's and set's --help. */
void help_params(FILE *out);
/* The compiled-in description of one parameter as members of an open JSON object (name, field, kind,
 * unit, default, min, max, usual_min, usual_max, help): list and show write the same keys.
 */
void param_json(struct json *j, const struct param_desc *p);
/* params.c: the parameter table of docs/reference.md, in markdown. */
void params_markdown(FILE *out);
/* params.c: for apply, the KEY=VALUE... that differ from a's live values, as "key=value (now x)"
 * in out: their count, or minus the exit status after a one-line error.
 */
int params_diff(const struct algo *a, int argc, char **argv, char *out, size_t size);
/* features.c: 0 when the kernel can swap a struct_ops link's map (bpf_link_update), or -errno. */
int kernel_link_update(void);

/* record.c: formatting of struct bbrkit_flow shared by flows and trace */
enum record_format { FMT_JSONL, FMT_CSV };
struct json;
/* One JSON line; record_json_object() writes the same object into an open document. */
void record_json(FILE *out, const struct algo *a, const struct bbrkit_flow *f);
void record_json_object(struct json *j, const struct algo *a, const struct bbrkit_flow *f);
void record_keys_help(FILE *out);
void record_csv_header(FILE *out, const struct algo *const *sel, size_t n);
void record_csv(FILE *out, const struct algo *a, const struct bbrkit_flow *f, const struct algo *const *sel,
	size_t n);
void record_table_header(FILE *out);
void record_table_row(FILE *out, const struct algo *a, const struct bbrkit_flow *f);
/* Units and names as the records show them, for export and ss. */
unsigned long long record_bw_bps(__u64 bw, __u32 mss);
const char *record_mode_name(unsigned int mode);
const char *record_ca_state_name(unsigned int state);
const char *record_phase_name(unsigned int phase);

#endif /* BBRCTL_H */
