// SPDX-License-Identifier: GPL-2.0
/* bbrctl: attach, inspect and tune bbrkit's BPF congestion controls. Global options and dispatch
 * through the command table (cli.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"
#include "bbrkit_version.h"

#define MAIN_USAGE "bbrctl [-v] [-j] COMMAND [ARGS]"

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' }, { "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' }, {} };
	const struct cli_command *cmd;
	struct cmd_opts o = {};
	int c, first, ret;

	algos_init();
	libbpf_log_setup();
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+vjVh", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose = true;
			break;
		case 'j':
			json_output = true;
			break;
		case 'V':
			printf("bbrctl %s\nalgorithm objects sha256 %s\n", BBRKIT_VERSION,
				BBRKIT_OBJECTS_SHA256);
			return EXIT_SUCCESS;
		case 'h':
			cli_main_help(stdout);
			return EXIT_SUCCESS;
		default:
			return usage_error(
				MAIN_USAGE, "unknown option '%s' (bbrctl --help)", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return usage_error(MAIN_USAGE, "missing command (bbrctl --help lists them)");
	cmd = cli_find(argv[optind]);
	if (!cmd)
		return usage_error(
			MAIN_USAGE, "unknown command '%s' (bbrctl --help lists them)", argv[optind]);
	argc -= optind;
	argv += optind;
	set_context("%s", cmd->name);
	/* -j is --json for every command that prints a document; the others would put text on a
	 * stdout that promises JSON.
	 */
	if (json_output && !cli_has_json(cmd))
		return usage_error(MAIN_USAGE,
			"-j: %s prints no JSON document (-j: list, show, flows, "
			"features; trace writes JSON lines by default)",
			cmd->name);
	ret = cli_parse(cmd, argc, argv, &o, &first);
	if (ret)
		return ret < 0 ? EXIT_SUCCESS : ret;
	o.json |= json_output;
	json_output = o.json;
	if (cmd->takes_algo) {
		o.algo = find_algo_or_fail(argv[first]);
		if (!o.algo)
			return EXIT_USAGE;
		set_context("%s %s", cmd->name, o.algo->name);
	}
	/* Checked with the command line: a typo in it is refused before the command does anything. */
	ret = check_disable_env();
	if (ret)
		return ret;
	ret = cmd->run(&o, argc - first, argv + first);
	if (cmd->audit)
		audit_command(argc, argv, ret);
	return ret;
}
