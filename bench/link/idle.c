// SPDX-License-Identifier: GPL-2.0
/*
 * The data direction's idle path (idle.h). The program decides per frame; this side loads it, and the forward
 * thread tells it when the thread holds nothing: the count of frames the thread has settled (read, and seen
 * leave or be dropped) equals the count the program passed to it only then.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "idle.h"
#include "link_idle.skel.h"
#include "stages.h"

/* A frame the program passed reaches the thread's socket in the same softirq, microseconds later: a count
 * that has not moved for this long is frames that never will. */
#define IDLE_RESYNC_NS 5000000ULL

bool lp_idle_open(struct lp_idle *d, uint64_t rate_bps, unsigned int in_ifindex, unsigned int out_ifindex,
	uint64_t max_ser_ns, char *why, size_t why_len)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_SKB_MODE);
	struct link_idle *skel = link_idle__open();
	int fd, err;

	if (!skel) {
		snprintf(why, why_len, "cannot open its BPF object (%s)", strerror(errno));
		return false;
	}
	skel->rodata->rate_bps = rate_bps;
	/* The longest frame whose len * 8e9 / rate (service.c's serialisation, rounded down) is at most
	 * max_ser_ns: len * 8e9 < (max_ser_ns + 1) * rate. */
	skel->rodata->max_len = ((max_ser_ns + 1) * rate_bps - 1) / (LS_BITS_PER_BYTE * LS_NSEC_PER_SEC);
	skel->rodata->out_ifindex = out_ifindex;
	err = link_idle__load(skel);
	if (err) {
		snprintf(why, why_len, "cannot load its XDP program (%s)", strerror(-err));
		link_idle__destroy(skel);
		return false;
	}
	/* A BPF link: the kernel detaches the program when this process exits, however it exits. Generic mode
	 * leaves the veth's own receive path (no NAPI) as it was. */
	fd = bpf_link_create(bpf_program__fd(skel->progs.link_idle), (int)in_ifindex, BPF_XDP, &opts);
	if (fd < 0) {
		snprintf(why, why_len, "cannot attach its XDP program (%s)", strerror(errno));
		link_idle__destroy(skel);
		return false;
	}
	*d = (struct lp_idle){ .skel = skel,
		.link_fd = fd,
		.busy_until_ns = &skel->bss->busy_until_ns,
		.passed = &skel->bss->passed,
		.settled = &skel->bss->settled,
		.pkts = &skel->bss->idle_pkts,
		.bytes = &skel->bss->idle_bytes };
	return true;
}

void lp_idle_close(struct lp_idle *d)
{
	if (!d->skel)
		return;
	close(d->link_fd);
	link_idle__destroy(d->skel);
	d->skel = NULL;
}

void lp_idle_settle(struct lp_idle *d, uint64_t read_pkts, bool holding, uint64_t now)
{
	uint64_t passed, settled;

	if (holding)
		return;
	passed = __atomic_load_n(d->passed, __ATOMIC_ACQUIRE);
	settled = read_pkts + (uint64_t)d->offset;
	d->resync_due = settled != passed;
	if (d->resync_due) {
		if (passed != d->seen_passed) {
			d->seen_passed = passed;
			d->seen_ns = now;
			return;
		}
		if (now - d->seen_ns < IDLE_RESYNC_NS)
			return;
		d->offset += (int64_t)(passed - settled);
		settled = passed;
		d->resync_due = false;
	}
	if (__atomic_load_n(d->settled, __ATOMIC_RELAXED) != settled)
		__atomic_store_n(d->settled, settled, __ATOMIC_RELEASE);
}

uint64_t lp_idle_next_check(const struct lp_idle *d)
{
	return d->resync_due ? d->seen_ns + IDLE_RESYNC_NS : UINT64_MAX;
}

void lp_idle_counts(const struct lp_idle *d, uint64_t *pkts, uint64_t *bytes)
{
	*pkts = d->skel ? __atomic_load_n(d->pkts, __ATOMIC_RELAXED) : 0;
	*bytes = d->skel ? __atomic_load_n(d->bytes, __ATOMIC_RELAXED) : 0;
}
