// SPDX-License-Identifier: GPL-2.0
/* bbrkit-floor: registers the benchmark-only congestion control bbr_floor (bbr_floor.bpf.c, the
 * kernel's BBR called through struct_ops) for as long as it runs.
 *
 *   bbrkit-floor [-v]
 *
 * Prints "ready" once bbr_floor is registered and waits for SIGINT or SIGTERM; it then
 * unregisters and exits 0. The registration is a struct_ops link owned by this process and never
 * pinned, so it also ends if the process is killed. Exit status: 1 on an error, 2 when this
 * kernel's BBR is not callable from BPF (no floor to measure).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define TOOL_NAME "bbrkit-floor"
#include "kernel_bbr_tool.h"
#include "struct_ops_link.h"

#include "bbr_floor.skel.h"

#define CC_NAME "bbr_floor"

int main(int argc, char **argv)
{
	struct bbr_floor *skel = NULL;
	struct sigaction sa = { .sa_handler = tool_on_signal };
	sigset_t block, old;
	int ret = 1, unavailable, link_fd = -1;

	if (argc == 2 && !strcmp(argv[1], "-v"))
		tool_verbose = true;
	else if (argc != 1) {
		fprintf(stderr, "usage: bbrkit-floor [-v]\n");
		return 1;
	}
	libbpf_set_print(tool_libbpf_print);
	if ((unavailable = tool_preflight()))
		return unavailable;
	/* Signals stay blocked except inside sigsuspend(), so one that arrives before it is not lost. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	skel = bbr_floor__open();
	if (!skel || struct_ops_want_link(skel->maps.floor_ops) || bbr_floor__load(skel)) {
		tool_fail("cannot load %s: %s (-v shows the verifier log)", CC_NAME, strerror(errno));
		goto out;
	}
	link_fd = struct_ops_register(skel->maps.floor_ops);
	if (link_fd < 0) {
		/* EEXIST: the name is taken, i.e. another run's bbrkit-floor is active. */
		tool_fail("cannot register %s: %s", CC_NAME, strerror(-link_fd));
		goto out;
	}
	printf("ready\n");
	fflush(stdout);
	while (!tool_stop)
		sigsuspend(&old);
	ret = 0;
out:
	if (link_fd >= 0)
		close(link_fd);
	bbr_floor__destroy(skel);
	return ret;
}
