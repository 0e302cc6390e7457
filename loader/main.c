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

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "verbose", no_argument, NULL, 'v' },
					      { "version", no_argument, NULL, 'V' },
					      { "help", no_argument, NULL, 'h' }, {} };
	const struct cli_command *cmd;
	struct cmd_opts o = {};
	int c, first, ret;

	algos_init();
	libbpf_log_setup();
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose = true;
			break;
		case 'V':
			printf("bbrctl %s\nalgorithm objects sha256 %s\n", BBRKIT_VERSION,
			       BBRKIT_OBJECTS_SHA256);
			return EXIT_SUCCESS;
		case 'h':
			cli_main_help(stdout);
			return EXIT_SUCCESS;
		default:
			fprintf(stderr, "bbrctl: unknown option '%s' (bbrctl --help)\n", argv[optind - 1]);
			return EXIT_FAILURE;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "bbrctl: missing command (bbrctl --help lists them)\n");
		return EXIT_FAILURE;
	}
	cmd = cli_find(argv[optind]);
	if (!cmd) {
		fprintf(stderr, "bbrctl: unknown command '%s' (bbrctl --help lists them)\n", argv[optind]);
		return EXIT_FAILURE;
	}
	argc -= optind;
	argv += optind;
	set_context("%s", cmd->name);
	ret = cli_parse(cmd, argc, argv, &o, &first);
	if (ret)
		return ret < 0 ? EXIT_SUCCESS : ret;
	return cmd->run(&o, argc - first, argv + first);
}
