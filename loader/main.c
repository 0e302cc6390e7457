// SPDX-License-Identifier: GPL-2.0
/* bbrctl: attach, inspect and tune bbrkit's BPF congestion controls. Subcommand dispatch and
 * `list`.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"

static const char list_usage[] = "bbrctl list [--json]";

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "list", cmd_list, "algorithms of this package, which are attached, the kernel's list" },
	{ "attach", cmd_attach, "register an algorithm (stays after bbrctl exits)" },
	{ "detach", cmd_detach, "unregister an algorithm and remove its pins" },
	{ "upgrade", cmd_upgrade, "swap a rebuilt object into an attached algorithm's registration" },
	{ "show", cmd_show, "print an algorithm's parameters" },
	{ "set", cmd_set, "change an algorithm's parameters (KEY=VALUE...)" },
	{ "flows", cmd_flows, "print the live flows of attached algorithms" },
	{ "trace", cmd_trace, "record per-flow state over time (JSON lines or CSV)" },
	{ "features", cmd_features, "what this kernel allows bbrkit to do" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(void)
{
	printf("usage: bbrctl [-v] COMMAND [ARGS]\n\n"
		     "  -v, --verbose   show libbpf's log (and the verifier's) on stderr\n\n"
		     "commands (each has --help):\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("  %-8s %s\n", commands[i].name, commands[i].summary);
	printf("\nalgorithms:");
	for (size_t i = 0; i < nalgos; i++)
		printf(" %s", algo_at(i)->name);
	printf("\n");
}

static void list_json(const char *available)
{
	char buf[1024], *save = NULL;
	struct json j;

	json_init(&j, stdout);
	json_object(&j);
	json_key(&j, "algorithms");
	json_array(&j);
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);
		char dir[BBRCTL_MAX_PATH];

		json_object(&j);
		json_key(&j, "name");
		json_string(&j, a->name);
		json_key(&j, "attached");
		json_bool(&j, algo_attached(a));
		json_key(&j, "registered");
		json_bool(&j, kernel_has_cc(a->name));
		json_key(&j, "params");
		json_array(&j);
		for (size_t k = 0; k < a->nparams; k++)
			json_string(&j, a->params[k].name);
		json_array_end(&j);
		json_key(&j, "pin_dir");
		pin_path(dir, a->name, NULL);
		json_string(&j, dir);
		attachment_json(&j, a);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "kernel_available");
	json_array(&j);
	snprintf(buf, sizeof(buf), "%s", available);
	for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		json_string(&j, tok);
	json_array_end(&j);
	json_object_end(&j);
}

int cmd_list(int argc, char **argv)
{
	char available[1024];
	bool json = false;
	int c, err;

	if (want_help(argc, argv)) {
		printf("usage: %s\n\n"
		       "Print bbrkit's algorithms, whether each is attached (registered through\n"
		       "its pinned link) and its parameters, then the kernel's available congestion\n"
		       "controls (" BBRCTL_AVAILABLE_CC ").\n"
		       "FEATURES says what an attachment has besides the registration: the params\n"
		       "map, trace's ring buffer, and how `flows` reads state (map-iterator: one pass\n"
		       "over all namespaces; iter-tcp: one pass per network namespace).\n"
		       "  --json   {\"algorithms\": [{\"name\", \"attached\", \"registered\", \"params\",\n"
		       "           \"pin_dir\", \"features\" (attached only: {\"params\", \"trace\",\n"
		       "           \"flows\"})}], \"kernel_available\": [...]}\n",
		       list_usage);
		return EXIT_SUCCESS;
	}
	set_context("list");
	c = parse_json_option(argc, argv, list_usage, &json);
	if (c)
		return c;
	if (optind != argc)
		return usage_error(list_usage, "unexpected argument '%s'", argv[optind]);
	if (check_root())
		return EXIT_FAILURE;
	err = read_available_cc(available, sizeof(available));
	if (err)
		return fail(err, "cannot read " BBRCTL_AVAILABLE_CC);
	if (json) {
		list_json(available);
		return EXIT_SUCCESS;
	}
	printf("%-14s %-9s %-46s %s\n", "ALGORITHM", "ATTACHED", "PARAMETERS", "FEATURES");
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);
		char names[128] = "-", features[128] = "-";
		size_t used = 0;

		for (size_t j = 0; j < a->nparams && used < sizeof(names); j++)
			used += snprintf(names + used, sizeof(names) - used, "%s%s", j ? "," : "",
					 a->params[j].name);
		if (algo_attached(a))
			attachment_features(a, features, sizeof(features));
		printf("%-14s %-9s %-46s %s\n", a->name, algo_attached(a) ? "yes" : "no", names, features);
	}
	printf("\nkernel available: %s\n", available);
	return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "verbose", no_argument, NULL, 'v' },
					      { "help", no_argument, NULL, 'h' }, {} };
	int c;

	algos_init();
	libbpf_log_setup();
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage();
			return EXIT_SUCCESS;
		default:
			fprintf(stderr, "bbrctl: unknown option '%s' (bbrctl --help)\n",
				argv[optind - 1]);
			return EXIT_FAILURE;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "bbrctl: missing command (bbrctl --help lists them)\n");
		return EXIT_FAILURE;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (!strcmp(argv[optind], commands[i].name)) {
			argc -= optind;
			argv += optind;
			optind = 0; /* reset getopt for the subcommand's own options */
			return commands[i].run(argc, argv);
		}
	}
	fprintf(stderr, "bbrctl: unknown command '%s' (bbrctl --help lists them)\n", argv[optind]);
	return EXIT_FAILURE;
}
