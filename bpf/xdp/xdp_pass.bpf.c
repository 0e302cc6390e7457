// SPDX-License-Identifier: GPL-2.0
/* An XDP program that passes every frame on unchanged: the harness's cpu_placement "napi" attaches it to
 * the veth that receives the link's departures for what attaching it does, not for what it does.
 *
 * Why: without it a veth's transmit hands each frame to the peer's stack at once (__netif_rx), and the
 * softirq that follows runs the receiver's TCP, its ACK and the ACK path in the sending thread, the link's
 * forward thread, while departures come due. With an XDP program on the receiving veth the kernel enables
 * NAPI on it (drivers/net/veth.c, veth_xdp_set -> veth_enable_xdp): the sender's veth_xmit only puts the
 * skb into the receiver's ptr_ring and schedules the poll, which threaded NAPI (/sys/class/net/DEV/threaded)
 * runs in a kthread the scheduler can put on another CPU. The harness keeps GRO off on that veth, and NAPI
 * stays on for the program: the poll passes each frame to the stack as it left the link (netif_elide_gro
 * skips GRO on a device without it).
 *
 * Not a congestion control: the Makefile keeps this file out of bbrctl's algorithm table.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
