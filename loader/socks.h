/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel's TCP state of every connected socket (struct bbrkit_sock records from the policy
 * object's iter/tcp program) and what bbrctl derives from one: read by ss and export alike.
 */
#ifndef BBRCTL_SOCKS_H
#define BBRCTL_SOCKS_H

#include <stdbool.h>
#include <stddef.h>

#include "bbrkit_policy.h"

/* Every connected TCP socket of every network namespace as struct bbrkit_sock records, malloc()ed;
 * EXIT_FAILURE after a one-line error.
 */
int read_socks(char **buf, size_t *used);
/* The socket's last delivery rate sample as tcpi_delivery_rate, bytes per second. */
double sock_delivery_rate_bytes(const struct bbrkit_sock *k);
/* Data in flight and no delivery for stall_rtts smoothed RTTs. */
bool sock_stalled(const struct bbrkit_sock *k, unsigned long stall_rtts);
/* ADDRESS:PORT of an IPv4-mapped or IPv6 address as the policy records it (IPv4 dotted). */
void sock_endpoint_text(const __u8 *addr, __u16 port, char *buf, size_t size);

#endif
