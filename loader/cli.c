// SPDX-License-Identifier: GPL-2.0
/* The command table: every subcommand's options, arguments and help. Parsing, --help, the man page
 * and bash completion all come from it (the last two through build/bbrctl-gen).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"

#define MAX_OPTS 8
#define HELP_COLUMN 24

/* Options every subcommand takes. */
static const struct cli_opt common_opts[] = {
	{ .name = "verbose", .short_name = 'v', .help = "show libbpf's log (and the verifier's) on stderr" },
	{ .name = "help", .short_name = 'h', .help = "print this help" },
};

#define OPT_AT(field) offsetof(struct cmd_opts, field)

static const struct cli_opt json_opt[] = {
	{ .name = "json",
		.short_name = 'j',
		.help = "print one JSON document instead of a table (failing: {\"error\", ...})",
		.offset = OPT_AT(json) },
	{},
};

static const struct cli_opt policy_opts[] = {
	{ .name = "json",
		.short_name = 'j',
		.help = "list, show: print one JSON document",
		.offset = OPT_AT(json) },
	{ .name = "dry-run",
		.short_name = 'n',
		.help = "migrate: list the connections that would move, move none",
		.offset = OPT_AT(dry_run) },
	{ .name = "migrate",
		.short_name = 'm',
		.help = "revert: also move the rule's established connections (see migrate)",
		.offset = OPT_AT(migrate) },
	{},
};

static const struct cli_opt apply_opts[] = {
	{ .name = "dry-run",
		.short_name = 'n',
		.help = "print the changes the file asks for, make none",
		.offset = OPT_AT(dry_run) },
	{},
};

static const char *const trace_formats[] = { "jsonl", "csv", NULL };

static const struct cli_opt trace_opts[] = {
	{ .name = "out",
		.short_name = 'o',
		.metavar = "FILE",
		.help = "write records to FILE instead of stdout",
		.offset = OPT_AT(out) },
	{ .name = "format",
		.short_name = 'f',
		.metavar = "FORMAT",
		.help = "jsonl (default) or csv",
		.offset = OPT_AT(format),
		.choices = trace_formats },
	{},
};

static const struct cli_opt upgrade_opts[] = {
	{ .name = "object",
		.short_name = 'o',
		.metavar = "FILE",
		.help = "the build to swap in (default: the one built into bbrctl)",
		.offset = OPT_AT(object) },
	{},
};

static const struct cli_opt export_opts[] = {
	{ .name = "listen",
		.short_name = 'l',
		.metavar = "ADDR",
		.help = "serve /metrics on ADDR (HOST:PORT, [V6]:PORT; default 127.0.0.1:9563)",
		.offset = OPT_AT(listen) },
	{ .name = "flows",
		.short_name = 'F',
		.metavar = "N",
		.help = "also export per-flow series, at most N flows (default 0: none)",
		.offset = OPT_AT(flow_limit) },
	{ .name = "stall-rtts",
		.short_name = 's',
		.metavar = "N",
		.help = "a flow with data in flight and no delivery for N smoothed RTTs is stalled "
			"(default 4)",
		.offset = OPT_AT(stall_rtts) },
	{},
};

/* Left as written: each help text keeps one source line per printed line, as --help shows it. */
/* clang-format off */
const struct cli_command cli_commands[] = {
	{ .name = "list",
	  .run = cmd_list,
	  .summary = "algorithms of this package, which are attached, the kernel's list",
	  .args = "",
	  .min_args = 0,
	  .max_args = 0,
	  .opts = json_opt,
	  .doc =
	  "Print bbrkit's algorithms, whether each is attached (registered through its pinned link) and its\n"
	  "parameters, then the kernel's available congestion controls (" BBRCTL_AVAILABLE_CC ").\n"
	  "FEATURES says what an attachment has besides the registration: the params map, trace's ring\n"
	  "buffer, and how `flows` reads state (map-iterator: one pass over all namespaces; iter-tcp: one\n"
	  "pass per network namespace). Needs no root: the parameters come from the tables compiled\n"
	  "into bbrctl; without root, ATTACHED is ? for a registered name (only root can read the pins).\n"
	  "JSON: {\"algorithms\": [{\"name\", \"attached\" (null: only root can tell), \"registered\",\n"
	  "\"params\": [{\"name\", \"field\", \"kind\" (ratio, uint, bool), \"unit\", \"default\", \"min\",\n"
	  "\"max\", \"usual_min\", \"usual_max\" (null: no band), \"help\"}], \"pin_dir\", \"features\"\n"
	  "(attached only: {\"params\", \"trace\", \"flows\"})}], \"kernel_available\": [...]}\n" },
	{ .name = "attach",
	  .audit = true,
	  .run = cmd_attach,
	  .summary = "register an algorithm (stays after bbrctl exits)",
	  .args = "ALGO",
	  .min_args = 1,
	  .max_args = 1,
	  .doc =
	  "Load ALGO, register it as a TCP congestion control and pin it under " BBRKIT_PIN_ROOT "/ALGO so\n"
	  "that it stays registered after bbrctl exits. Mounts bpffs at /sys/fs/bpf when missing.\n"
	  "Attaching an attached algorithm changes nothing. Optional pieces the kernel refuses (trace,\n"
	  "flow ids, the flows iterators) are a warning each, not a failure.\n",
	  .takes_algo = true },
	{ .name = "detach",
	  .audit = true,
	  .run = cmd_detach,
	  .summary = "unregister an algorithm and remove its pins",
	  .args = "ALGO",
	  .min_args = 1,
	  .max_args = 1,
	  .doc =
	  "Unregister ALGO and remove its pins. Connections already using it keep it until they close\n"
	  "(the kernel holds a reference per socket); new ones can no longer select it. Its flows no\n"
	  "longer show in `bbrctl flows` or `trace`. Refused while a network namespace has ALGO as its\n"
	  "default congestion control: that default would keep handing the unregistered ALGO to new\n"
	  "connections.\n",
	  .takes_algo = true },
	{ .name = "upgrade",
	  .audit = true,
	  .run = cmd_upgrade,
	  .summary = "swap another build into an attached algorithm's registration",
	  .args = "ALGO",
	  .min_args = 1,
	  .max_args = 1,
	  .opts = upgrade_opts,
	  .doc =
	  "Swap another build of ALGO into its registration through the pinned struct_ops link\n"
	  "(bpf_link_update): new connections get the new version, running ones keep the one they\n"
	  "started with, and the name never leaves the kernel's list. The new object shares the attached\n"
	  "one's params map (values carry over), trace maps and flow storage. Refused where the kernel\n"
	  "cannot update struct_ops links (bbrctl features: link-update; BBRCTL_DISABLE=link-update\n"
	  "acts as if it could not).\n",
	  .takes_algo = true },
	{ .name = "show",
	  .run = cmd_show,
	  .summary = "print an algorithm's parameters",
	  .args = "ALGO",
	  .min_args = 1,
	  .max_args = 1,
	  .opts = json_opt,
	  .doc =
	  "Print ALGO's parameters: the value flows act on, unit, default and allowed range.\n"
	  "A stored value outside the range (a raw write, e.g. with bpftool) acts as the default; a\n"
	  "warning names the raw value. Values in range but far from the paper's get a warning too\n"
	  "(a typo such as 0.075 for 0.75).\n"
	  "JSON: {\"algo\", \"attached\", \"params\": [{the keys of `bbrctl list --json`, and while\n"
	  "attached \"value\" (acted on), \"raw\" (stored), \"status\" (ok, out-of-range, unusual),\n"
	  "\"note\"}]}; ratios are plain numbers (0.75). For a detached ALGO, --json needs no root and\n"
	  "describes the parameters from the tables compiled into bbrctl.\n",
	  .extra_help = help_params,
	  .takes_algo = true },
	{ .name = "set",
	  .audit = true,
	  .run = cmd_set,
	  .summary = "change an algorithm's parameters",
	  .args = "ALGO KEY=VALUE...",
	  .min_args = 2,
	  .max_args = CLI_MANY,
	  .doc =
	  "Set ALGO's parameters in its pinned params map, in human units (e.g. bbrctl set bbr_rttgain\n"
	  "alpha=0.75 probe_exit=1.25). All keys are checked first and written together in one map\n"
	  "update, or none is. Running flows use the new values from their next ACK. Values far from\n"
	  "the paper's are written with a warning.\n",
	  .extra_help = help_params,
	  .takes_algo = true },
	{ .name = "flows",
	  .run = cmd_flows,
	  .summary = "print the live flows of attached algorithms",
	  .args = "[ALGO...]",
	  .min_args = 0,
	  .max_args = CLI_MANY,
	  .opts = json_opt,
	  .doc =
	  "Print the live flows (all network namespaces) of the named attached algorithms, or of all\n"
	  "attached ones. The table shows gains as multiples, rates in Mbit/s, RTTs in ms, cwnd and\n"
	  "inflight in packets; VARIANT is the variant's own state. JSON: {\"flows\": [...]}, each flow\n"
	  "with the record keys below.\n",
	  .extra_help = record_keys_help },
	{ .name = "trace",
	  .run = cmd_trace,
	  .summary = "record per-flow state over time (JSON lines or CSV)",
	  .args = "[ALGO...]",
	  .min_args = 0,
	  .max_args = CLI_MANY,
	  .opts = trace_opts,
	  .doc =
	  "Record the per-flow state of the named attached algorithms (all attached ones by default), one\n"
	  "record per flow per round trip and on every mode change, until SIGINT or SIGTERM. Output: JSON\n"
	  "lines (default) or CSV with a header. One trace at a time may read an algorithm.\n",
	  .extra_help = record_keys_help },
	{ .name = "policy",
	  .audit = true,
	  .run = cmd_policy,
	  .summary = "choose each new connection's algorithm by rules",
	  .args = "VERB [RULE] [KEY=VALUE...]",
	  .min_args = 1,
	  .max_args = CLI_MANY,
	  .opts = policy_opts,
	  .doc =
	  "Rules choose the congestion control of new TCP connections, both accepted and opened, when\n"
	  "they are established (before the algorithm's init, so it runs the whole connection):\n"
	  "  add RULE KEY=VALUE...  add a rule (replace=yes changes an existing one)\n"
	  "  del RULE               delete it; the last one detaches the program\n"
	  "  list, show RULE        print rules, per arm its weight and connections\n"
	  "  revert RULE            give the holdback arm 100% (the arms stay, at 0%)\n"
	  "  migrate RULE           move the established connections the policy gives to RULE now\n"
	  "                         to their arm's algorithm (revert --migrate: to the holdback)\n"
	  "  explain [ADDR:]PORT    for each established connection with that end: the rule and arm\n"
	  "                         it got, the ones it would get now, and every rule's verdict\n"
	  "Keys: arms=ALGO[:PERCENT],... (weights in percent, adding up to 100; the arm of a\n"
	  "connection is a hash of its 4-tuple), holdback=ALGO (default: the last arm),\n"
	  "cgroup=PATH (below the cgroup2 root: that cgroup and its descendants; matched by path, also\n"
	  "after it is made again), netns=NAME|PATH|INODE (a network namespace), lport=N, rport=N,\n"
	  "dst=PREFIX[,PREFIX] (IPv4 or IPv6, remote address), priority=N (lower first, default 100;\n"
	  "of equal priorities the older rule wins; replace=yes keeps its age and counters),\n"
	  "fallback=yes (if an arm's algorithm is detached, its connections keep the namespace\n"
	  "default; without it, detaching that algorithm is refused).\n"
	  "Changes apply to new connections; migrate moves established ones. The program sits on\n"
	  "the cgroup v2 root; where none is mounted, bbrctl mounts one at /run/bbrkit/cgroup2 and\n"
	  "unmounts it with the last rule. add warns about a rule that matches every connection or\n"
	  "that an earlier rule shadows.\n"
	  "JSON (list, show): {\"attached\", \"cgroup2\", \"rules\": [{\"name\", \"slot\", \"priority\",\n"
	  "\"cgroup\", \"netns\" (as given), \"lport\", \"rport\", \"dst\", \"fallback\",\n"
	  "\"holdback\", \"arms\": [{\"algo\", \"weight\" (percent), \"connections\", \"fallbacks\",\n"
	  "\"locked\", \"migrated\"}]}]}\n" },
	{ .name = "apply",
	  .audit = true,
	  .run = cmd_apply,
	  .summary = "make the host what a file declares: attachments, parameters, rules",
	  .args = "FILE",
	  .min_args = 1,
	  .max_args = 1,
	  .opts = apply_opts,
	  .doc =
	  "FILE is lines of 'attach ALGO [KEY=VALUE...]' (parameters as set takes them) and\n"
	  "'rule NAME KEY=VALUE...' (keys as policy add takes them, replace aside); '#' starts a\n"
	  "comment. What FILE does not declare goes: other rules are deleted, other bbrkit algorithms\n"
	  "detached. The whole file is checked first (a bad line: one error naming FILE:LINE, exit 2,\n"
	  "no change); then the changes are printed, one a line (+ added, ~ changed, - removed), and\n"
	  "made in that order unless --dry-run. Each change made is a line of the audit log\n"
	  "(/var/log/bbrkit/audit.log; BBRKIT_AUDIT_LOG names another). The shipped bbrkit.service\n"
	  "runs apply /etc/bbrkit/bbrkit.conf at boot.\n" },
	{ .name = "export",
	  .run = cmd_export,
	  .summary = "serve Prometheus metrics of algorithms and policy arms",
	  .args = "",
	  .min_args = 0,
	  .max_args = 0,
	  .opts = export_opts,
	  .doc =
	  "Serve the Prometheus text format at http://ADDR/metrics until SIGINT or SIGTERM: per\n"
	  "attached algorithm (bbrkit_algo_*) and per policy arm (bbrkit_policy_*), read on each scrape\n"
	  "from the flows iterators, the closed connections' totals, the policy's maps and every TCP\n"
	  "socket's counters; per flow (bbrkit_flow_*) only with --flows.\n"
	  "The metric list is in docs/operations.md.\n" },
	{ .name = "ss",
	  .run = cmd_ss,
	  .summary = "sockets: the kernel's TCP state joined with the algorithm's own",
	  .args = "",
	  .min_args = 0,
	  .max_args = 0,
	  .opts = json_opt,
	  .doc =
	  "One line per connected TCP socket in every network namespace, like ss -ti: the kernel's\n"
	  "state (the fields tcp_info reports, read from struct tcp_sock), the policy rule and arm that\n"
	  "chose its algorithm, and for bbrkit's algorithms their own state (mode, gains, bandwidth).\n",
	  .extra_help = ss_keys_help },
	{ .name = "features",
	  .run = cmd_features,
	  .summary = "what this kernel allows bbrkit to do",
	  .args = "",
	  .min_args = 0,
	  .max_args = 0,
	  .opts = json_opt,
	  .doc =
	  "Probe each kernel capability bbrkit uses and print one line per capability: yes, or no with\n"
	  "the reason. Probes load small BPF programs and bbrkit's own struct_ops programs without\n"
	  "registering anything; nothing is changed. Only the first two are needed to attach.\n"
	  "JSON: {\"features\": [{\"key\", \"what\", \"available\", \"reason\", \"note\"}]}\n" },
	{},
};
/* clang-format on */

bool cli_has_json(const struct cli_command *c)
{
	for (const struct cli_opt *o = c->opts; o && o->name; o++)
		if (!strcmp(o->name, "json"))
			return true;
	return false;
}

const struct cli_command *cli_find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* "bbrctl trace [-v] [--out FILE] [--format FORMAT] [ALGO...]" */
void cli_usage(const struct cli_command *c, char *buf, size_t size)
{
	size_t used = (size_t)snprintf(buf, size, "bbrctl %s [-v]", c->name);

	for (const struct cli_opt *o = c->opts; o && o->name && used < size; o++) {
		used += (size_t)snprintf(buf + used, size - used, " [--%s%s", o->name, o->metavar ? " " : "");
		for (const char *const *ch = o->choices; ch && *ch && used < size; ch++)
			used += (size_t)snprintf(buf + used, size - used, "%s%s", *ch, ch[1] ? "|" : "");
		if (used < size)
			used += (size_t)snprintf(
				buf + used, size - used, "%s]", o->metavar && !o->choices ? o->metavar : "");
	}
	if (c->args[0] && used < size)
		snprintf(buf + used, size - used, " %s", c->args);
}

static void option_help(FILE *out, const struct cli_opt *o)
{
	char left[64];

	snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name, o->metavar ? " " : "",
		o->metavar ? o->metavar : "");
	fprintf(out, "  %-*s%s\n", HELP_COLUMN - 2, left, o->help);
}

void cli_help(FILE *out, const struct cli_command *c)
{
	char usage[256];

	cli_usage(c, usage, sizeof(usage));
	fprintf(out, "usage: %s\n\n%s\noptions:\n", usage, c->doc);
	for (const struct cli_opt *o = c->opts; o && o->name; o++)
		option_help(out, o);
	for (size_t i = 0; i < sizeof(common_opts) / sizeof(common_opts[0]); i++)
		option_help(out, &common_opts[i]);
	if (c->extra_help) {
		fputc('\n', out);
		c->extra_help(out);
	}
}

void cli_main_help(FILE *out)
{
	fprintf(out,
		"usage: bbrctl [-v] [-j] COMMAND [ARGS]\n\n"
		"  -v, --verbose         show libbpf's log (and the verifier's) on stderr\n"
		"  -j, --json            the command's --json (list, show, flows, features)\n"
		"  -V, --version         print bbrctl's version (git describe at build time)\n"
		"  -h, --help            print this help\n\n"
		"commands (each has --help):\n");
	for (const struct cli_command *c = cli_commands; c->name; c++)
		fprintf(out, "  %-9s %s\n", c->name, c->summary);
	fprintf(out,
		"\nexit status: 0 done, 1 failed, 2 usage error (an unknown option, command,\n"
		"algorithm or parameter, a malformed value)\n");
	fprintf(out, "\nalgorithms:");
	for (size_t i = 0; i < nalgos; i++)
		fprintf(out, " %s", algo_at(i)->name);
	fputc('\n', out);
}

/* The word of c->args for positional n, without brackets or dots: what "missing %s" names. */
static void arg_name(const struct cli_command *c, int n, char *buf, size_t size)
{
	const char *p = c->args;

	for (; n > 0 && *p; n--) {
		p = strchr(p, ' ');
		if (!p)
			p = c->args + strlen(c->args);
		else
			p++;
	}
	snprintf(buf, size, "%.*s", (int)strcspn(p, " "), p);
	buf[strcspn(buf, ".]")] = '\0';
	if (buf[0] == '[')
		memmove(buf, buf + 1, strlen(buf));
}

static bool set_option(const struct cli_opt *o, const char *value, struct cmd_opts *out, const char *usage)
{
	char *field = (char *)out + o->offset;

	if (!o->metavar) {
		*(bool *)field = true;
		return true;
	}
	if (o->choices) {
		bool known = false;

		for (const char *const *ch = o->choices; *ch; ch++)
			known |= !strcmp(*ch, value);
		if (!known) {
			usage_error(usage, "unknown %s '%s'", o->name, value);
			return false;
		}
	}
	*(const char **)field = value;
	return true;
}

int cli_parse(const struct cli_command *c, int argc, char **argv, struct cmd_opts *out, int *first_arg)
{
	struct option longopts[MAX_OPTS + 3] = {};
	char shorts[2 * MAX_OPTS + 8] = ":vh", usage[256];
	size_t n = 0, s = strlen(shorts);
	int ch, nargs;

	cli_usage(c, usage, sizeof(usage));
	/* --json anywhere on the line makes even an error in an earlier option a JSON document. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		json_output |= cli_has_json(c) && (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"));
	for (const struct cli_opt *o = c->opts; o && o->name; o++, n++) {
		if (n == MAX_OPTS) { /* a table edit: fail every test of the command, never drop the option */
			fprintf(stderr, "bbrctl: internal error: %s has more than %d options\n", c->name,
				MAX_OPTS);
			exit(EXIT_FAILURE);
		}
		longopts[n] = (struct option){ o->name, o->metavar ? required_argument : no_argument, NULL,
			o->short_name };
		shorts[s++] = o->short_name;
		if (o->metavar)
			shorts[s++] = ':';
	}
	longopts[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		const struct cli_opt *o = NULL;

		if (ch == 'v') {
			verbose = true;
			continue;
		}
		if (ch == 'h') {
			cli_help(stdout, c);
			return -1;
		}
		if (ch == ':')
			return usage_error(usage, "option '%s' needs a value", argv[optind - 1]);
		for (const struct cli_opt *p = c->opts; p && p->name; p++)
			if (p->short_name == ch)
				o = p;
		if (!o)
			return usage_error(usage, "unknown option '%s'", argv[optind - 1]);
		if (!set_option(o, optarg, out, usage))
			return EXIT_USAGE;
	}
	nargs = argc - optind;
	if (nargs < c->min_args) {
		char name[32];

		arg_name(c, nargs, name, sizeof(name));
		return usage_error(usage, "missing %s", name);
	}
	if (nargs > c->max_args) {
		char name[32];

		arg_name(c, 0, name, sizeof(name));
		if (c->max_args == 0)
			return usage_error(usage, "unexpected argument '%s'", argv[optind]);
		if (c->max_args == 1)
			return usage_error(usage, "expected one %s", name);
		return usage_error(usage, "at most %d %s arguments", c->max_args, name);
	}
	*first_arg = optind;
	return EXIT_SUCCESS;
}
