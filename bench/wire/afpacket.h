/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the two bump-in-the-wire tools share, bbrkit-delay (bench/delayline) and bbrkit-link
 * (bench/link): the monotonic clock, AF_PACKET sockets with virtio-net headers (so offload metadata
 * crosses with each frame), their kernel drop counts and the age of a frame by its kernel receive stamp.
 * A socket the system refuses names the tool (process.h) and exits with status 1.
 */
#ifndef BBRKIT_WIRE_AFPACKET_H
#define BBRKIT_WIRE_AFPACKET_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

#include "process.h"

#define WIRE_NSEC_PER_SEC 1000000000ULL
/* A frame read later than this after its kernel timestamp means a clock step, not a slow reader. */
#define WIRE_MAX_RX_AGE_NS WIRE_NSEC_PER_SEC
#define WIRE_NO_STAMP (-1)
#define WIRE_BAD_STAMP (-2)

static inline uint64_t wire_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * WIRE_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * A TPACKET_V2 receive ring: the kernel writes each frame (its virtio-net header just before it) into
 * the next slot and flips the slot's status, so a reader that polls the status pays no system call per
 * batch; the frame is copied out and the slot handed back at once.
 */
struct wire_rx_ring {
	uint8_t *map; /* NULL: the ring was refused, frames come by recvmmsg */
	size_t map_bytes;
	uint32_t frame_bytes, frames, head;
};

/* A ring slot holds the TPACKET_V2 header, the kernel's alignment padding and the vnet header before the
 * frame: 128 bytes cover all three. */
#define WIRE_RING_FRAME_OVERHEAD 128
/* Blocks of 64 KiB: a multiple of the page and of every power-of-two slot up to it. */
#define WIRE_RING_BLOCK_BYTES (64U << 10)

/* The ring slot for frames of up to @frame_max bytes: a power of two, so that slots tile the blocks. */
static inline uint32_t wire_rx_ring_slot(uint32_t frame_max)
{
	uint32_t frame = 2048;

	while (frame < frame_max + WIRE_RING_FRAME_OVERHEAD)
		frame *= 2;
	return frame;
}

/* Asks for a receive ring of about @bytes with slots for frames of up to @frame_max bytes; on a refusal
 * leaves ring->map NULL and returns the errno (the caller reads with recvmmsg instead). */
static inline int wire_rx_ring_setup(int fd, struct wire_rx_ring *ring, uint32_t frame_max, size_t bytes)
{
	int version = TPACKET_V2;
	uint32_t frame = wire_rx_ring_slot(frame_max);
	struct tpacket_req req;
	void *map;

	req.tp_frame_size = frame;
	req.tp_block_size = frame > WIRE_RING_BLOCK_BYTES ? frame : WIRE_RING_BLOCK_BYTES;
	req.tp_block_nr = (unsigned int)((bytes + req.tp_block_size - 1) / req.tp_block_size);
	req.tp_frame_nr = req.tp_block_nr * (req.tp_block_size / frame);
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0 ||
		setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
		return errno;
	map = mmap(
		NULL, (size_t)req.tp_block_size * req.tp_block_nr, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return errno;
	*ring = (struct wire_rx_ring){ .map = map,
		.map_bytes = (size_t)req.tp_block_size * req.tp_block_nr,
		.frame_bytes = frame,
		.frames = req.tp_frame_nr };
	return 0;
}

/* The slot @ahead (below ring->frames) after the ring's head if the kernel has filled it, else NULL. The
 * ring's size is no power of two: the index wraps by a subtraction, not a division per frame. */
static inline struct tpacket2_hdr *wire_rx_ring_peek(const struct wire_rx_ring *ring, uint32_t ahead)
{
	uint32_t slot = ring->head + ahead;
	struct tpacket2_hdr *h;

	if (slot >= ring->frames)
		slot -= ring->frames;
	h = (struct tpacket2_hdr *)(ring->map + (size_t)slot * ring->frame_bytes);
	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER ? h : NULL;
}

/* Hands the head slot back to the kernel. */
static inline void wire_rx_ring_release(struct wire_rx_ring *ring, struct tpacket2_hdr *h)
{
	__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	if (++ring->head == ring->frames)
		ring->head = 0;
}

/*
 * A socket bound to one interface. A receive socket gets every frame but those sent from this host
 * (PACKET_IGNORE_OUTGOING) with its kernel timestamp; a send socket binds protocol 0, so it never
 * receives. With @ring (receive only) the socket gets a receive ring of about @ring_bytes before it is
 * bound, so no frame lands in its ordinary queue first; a refused ring is reported in *ring_err (0: it is
 * there).
 */
static inline int wire_open_socket(const char *ifname, unsigned int ifindex, bool rx, int bufbytes,
	struct wire_rx_ring *ring, uint32_t frame_max, size_t ring_bytes, int *ring_err)
{
	int one = 1;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = (int)ifindex };

	if (fd < 0) {
		fprintf(stderr, "%s: AF_PACKET socket: %s (needs CAP_NET_RAW)\n", wire_prog(),
			strerror(errno));
		exit(1);
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
		(rx && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0) ||
		setsockopt(fd, SOL_SOCKET, rx ? SO_RCVBUFFORCE : SO_SNDBUFFORCE, &bufbytes,
			sizeof(bufbytes)) < 0 ||
		(rx && setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0)) {
		fprintf(stderr, "%s: socket options on %s: %s\n", wire_prog(), ifname, strerror(errno));
		exit(1);
	}
	if (ring)
		*ring_err = wire_rx_ring_setup(fd, ring, frame_max, ring_bytes);
	sll.sll_protocol = rx ? htons(ETH_P_ALL) : 0;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		fprintf(stderr, "%s: bind to %s: %s\n", wire_prog(), ifname, strerror(errno));
		exit(1);
	}
	return fd;
}

/* Adds to *drops the frames a receive socket had no room for since the last call (PACKET_STATISTICS resets
 * on read); a refused read adds none. */
static inline void wire_count_kernel_drops(int fd, uint64_t *drops)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
		*drops += st.tp_drops;
}

/*
 * How long before @now (CLOCK_REALTIME) the kernel received a frame stamped @ts: waking a thread on a virtual
 * CPU can take hundreds of microseconds, so delays count from the kernel's receive. The stamp is
 * CLOCK_REALTIME: only its age against the realtime clock is used, and the caller turns it into a monotonic
 * arrival with a monotonic reading taken beside @now (one pair per batch of frames). WIRE_BAD_STAMP for an
 * implausible age (a clock step).
 */
static inline int64_t wire_stamp_age_at(const struct timespec *ts, const struct timespec *now)
{
	int64_t age = ((int64_t)now->tv_sec - ts->tv_sec) * (int64_t)WIRE_NSEC_PER_SEC +
		(now->tv_nsec - ts->tv_nsec);

	return age >= 0 && (uint64_t)age <= WIRE_MAX_RX_AGE_NS ? age : WIRE_BAD_STAMP;
}

/* The same against the realtime clock now. */
static inline int64_t wire_stamp_age_ns(const struct timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return wire_stamp_age_at(ts, &now);
}

/* The age of the frame of @msg by its SO_TIMESTAMPNS stamp against @now (CLOCK_REALTIME, NULL: the clock
 * now); WIRE_NO_STAMP without one. */
static inline int64_t wire_rx_age_at(struct msghdr *msg, const struct timespec *now)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			return now ? wire_stamp_age_at(&ts, now) : wire_stamp_age_ns(&ts);
		}
	}
	return WIRE_NO_STAMP;
}

static inline int64_t wire_rx_age_ns(struct msghdr *msg)
{
	return wire_rx_age_at(msg, NULL);
}

#endif
