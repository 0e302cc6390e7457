// SPDX-License-Identifier: GPL-2.0
/* bbr_floor: the kernel's own BBR behind BPF struct_ops, and nothing else.
 *
 * Every callback calls the kfunc of the same name (bbr_init, bbr_main, ... from
 * net/ipv4/tcp_bbr.c, which the kernel exports to BPF congestion controls; the pattern of the
 * kernel's selftest tcp_ca_kfunc.c). It behaves exactly like the built-in bbr and costs what bbr
 * costs plus what the struct_ops trampolines cost: the floor no BPF congestion control goes under.
 * `bbrbench overhead` splits bbr1's cost against it into trampoline (floor - bbr) and bbrkit's own
 * logic (bbr1 - floor).
 *
 * Benchmark-only: it lives outside bpf/ so that bbrctl's algorithm table never sees it, and only
 * bench/kernelbbr/floor/floor.c registers it, through a link that dies with that process. Programs and table
 * come from bpf/cc_struct_ops.h, as bbr1's do, so that each of bbr1's programs has its counterpart
 * here under the same name.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cc_struct_ops.h"
#include "kernel_bbr_kfuncs.h"

char _license[] SEC("license") = "GPL";

/* The callbacks are the kfuncs of the same name: bbr_init, bbr_main, ... */
#define FLOOR_CB(fn) bbr_##fn

CC_STRUCT_OPS(floor_ops, "bbr_floor", FLOOR_CB);
