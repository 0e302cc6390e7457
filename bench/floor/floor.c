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

#include "bbr_floor.skel.h"

#define CC_NAME "bbr_floor"
#define EXIT_UNSUPPORTED 2

static volatile sig_atomic_t stop;
static bool verbose;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bbrkit-floor: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!verbose && level != LIBBPF_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* The kernel's BBR is callable when its kfunc is in the kernel's BTF, or in tcp_bbr's when BBR is a
 * loaded module; the load would fail otherwise.
 */
static bool kernel_bbr_callable(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf(), *module;
	bool found;

	if (!vmlinux)
		return false;
	found = btf__find_by_name_kind(vmlinux, "bbr_main", BTF_KIND_FUNC) >= 0;
	if (!found) {
		module = btf__load_module_btf("tcp_bbr", vmlinux);
		found = module && btf__find_by_name_kind(module, "bbr_main", BTF_KIND_FUNC) >= 0;
		btf__free(module);
	}
	btf__free(vmlinux);
	return found;
}

int main(int argc, char **argv)
{
	struct bbr_floor *skel = NULL;
	struct bpf_link *link = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;
	int ret = 1;

	if (argc == 2 && !strcmp(argv[1], "-v"))
		verbose = true;
	else if (argc != 1) {
		fprintf(stderr, "usage: bbrkit-floor [-v]\n");
		return 1;
	}
	libbpf_set_print(libbpf_print);
	if (geteuid() != 0) {
		fail("needs root (it registers a congestion control)");
		return 1;
	}
	if (!kernel_bbr_callable()) {
		fail("this kernel's BBR is not callable from BPF (no bbr_main kfunc in the BTF of the kernel or "
		     "a loaded tcp_bbr module)");
		return EXIT_UNSUPPORTED;
	}
	/* Signals stay blocked except inside sigsuspend(), so one that arrives before it is not lost. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	skel = bbr_floor__open_and_load();
	if (!skel) {
		fail("cannot load %s: %s (-v shows the verifier log)", CC_NAME, strerror(errno));
		goto out;
	}
	link = bpf_map__attach_struct_ops(skel->maps.floor_ops);
	if (!link) {
		/* EEXIST: the name is taken, i.e. another run's bbrkit-floor is active. */
		fail("cannot register %s: %s", CC_NAME, strerror(errno));
		goto out;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop)
		sigsuspend(&old);
	ret = 0;
out:
	bpf_link__destroy(link);
	bbr_floor__destroy(skel);
	return ret;
}
