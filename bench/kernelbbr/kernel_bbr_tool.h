/* SPDX-License-Identifier: GPL-2.0 */
/* What the two test/benchmark-only tools that run the kernel's own BBR through struct_ops share
 * (bbrkit-lockstep, bbrkit-floor): their one-line errors, libbpf's log behind -v, and the check that
 * the kernel's BBR is callable from BPF at all. User space only. Define TOOL_NAME before including.
 * A helper of these two tools, not bbrkit's ABI: it lives in their common directory, and both builds
 * find it with -Ibench/kernelbbr (Makefile).
 */
#ifndef KERNEL_BBR_TOOL_H
#define KERNEL_BBR_TOOL_H

#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#ifndef TOOL_NAME
#error "define TOOL_NAME, the program's name for its messages, before including kernel_bbr_tool.h"
#endif

/* Exit status when this kernel's BBR is not callable from BPF: nothing to compare or measure. */
#define TOOL_EXIT_UNSUPPORTED 2

static bool tool_verbose;
static volatile sig_atomic_t tool_stop;

static void tool_on_signal(int sig)
{
	(void)sig;
	tool_stop = 1;
}

__attribute__((format(printf, 1, 2))) static void tool_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, TOOL_NAME ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int tool_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!tool_verbose && level != LIBBPF_WARN)
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

/* What both tools need before loading: 0, or the exit status after a one-line error. */
static int tool_preflight(void)
{
	if (geteuid() != 0) {
		tool_fail("needs root (it registers a congestion control)");
		return 1;
	}
	if (!kernel_bbr_callable()) {
		tool_fail("this kernel's BBR is not callable from BPF (no bbr_main kfunc in the BTF of the "
			  "kernel or a loaded tcp_bbr module)");
		return TOOL_EXIT_UNSUPPORTED;
	}
	return 0;
}

#endif /* KERNEL_BBR_TOOL_H */
