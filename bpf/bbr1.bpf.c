// SPDX-License-Identifier: GPL-2.0
/* bbr1: BBRv1, the kernel's net/ipv4/tcp_bbr.c, as a BPF struct_ops congestion control.
 *
 * The whole algorithm lives in bbr_core.h (on bbr_substrate.h); bbr1_hooks.h supplies BBRv1's own
 * behaviour at the points where the variants differ. It registers as "bbr1" so that the kernel's
 * built-in "bbr" stays available as the reference it is measured against. Deviations from the kernel
 * are listed at the top of bbr_core.h (time stamps in 1024 us ticks instead of jiffies, 32-bit
 * microsecond stamps).
 */
#include "bbr1_hooks.h"

#define BBRKIT_ALGO "bbr1"
#include "bbr_ops.h"
