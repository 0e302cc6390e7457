// SPDX-License-Identifier: GPL-2.0
/*
 * bbrkit-link's idle path: an XDP program on the link's input interface that forwards a frame at once, in
 * the softirq that received it, when the link is idle, instead of waking the forward thread for it.
 *
 * Why: a sleeping thread's wake-up across vCPUs costs 64-92 us at the median here (p99 99-164 us, a halted
 * vCPU woken through the hypervisor), which an idle link added to every frame; the kernel's own qdisc layer
 * skips the queue for a frame that finds it empty for the same reason (TCQ_F_CAN_BYPASS). bbrkit-link loads
 * it only for a direction whose frames meet nothing but the rate and a tail-drop queue (bench/link/README.md,
 * "The idle path"), where an empty queue changes nothing a frame meets.
 *
 * Idle means every frame passed to the thread has been read and has left (the thread publishes how many it
 * has settled, `settled`, only while it holds none) and the link is not still serialising a frame this
 * program sent (`busy_until_ns`, which the thread also honours for the frames it schedules next). A frame
 * whose serialisation takes at most --xdp-idle-us (a frame of at most `max_len` bytes) then leaves at once,
 * that much earlier than the thread would send it; longer frames always go through the thread, so the early
 * departure is bounded.
 *
 * Not a congestion control: the Makefile keeps this file out of bbrctl's algorithm table.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

#define NSEC_PER_SEC 1000000000ULL
#define BITS_PER_BYTE 8

/* Set before loading. */
const volatile __u64 rate_bps = 1; /* the direction's rate, Ethernet frames (as service.c) */
const volatile __u64 max_len; /* the longest frame whose serialisation it may skip: no division per frame */
const volatile __u32 out_ifindex; /* the link's output interface */

/* Shared with the forward thread through the skeleton's mapped .bss. */
__u64 busy_until_ns; /* the link serialises a frame this program sent until then */
__u64 passed;	     /* frames handed to the thread (this program's only writer: atomic adds) */
__u64 settled;	     /* the thread's: how many of those it has read and seen leave, written while idle */
__u64 idle_pkts, idle_bytes;

SEC("xdp")
int link_idle(struct xdp_md *ctx)
{
	__u64 len = ctx->data_end - ctx->data;
	__u64 now, busy, ser_ns;

	if (len > max_len)
		goto to_thread;
	/* The thread's count first: a frame passed after this read makes them differ, never equal. */
	if (*(volatile __u64 *)&settled != *(volatile __u64 *)&passed)
		goto to_thread;
	now = bpf_ktime_get_ns();
	busy = *(volatile __u64 *)&busy_until_ns;
	if (busy > now)
		goto to_thread;
	ser_ns = len * BITS_PER_BYTE * NSEC_PER_SEC / rate_bps; /* as service.c serialises it */
	/* Claim the link: of two frames arriving together on two CPUs, one wins, the other queues behind it. */
	if (__sync_val_compare_and_swap(&busy_until_ns, busy, now + ser_ns) != busy)
		goto to_thread;
	__sync_fetch_and_add(&idle_pkts, 1);
	__sync_fetch_and_add(&idle_bytes, len);
	return bpf_redirect(out_ifindex, 0);
to_thread:
	__sync_fetch_and_add(&passed, 1);
	return XDP_PASS;
}
