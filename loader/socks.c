// SPDX-License-Identifier: GPL-2.0
/* socks: the kernel's side of every connected TCP socket, from the policy object's iter/tcp program
 * (struct tcp_sock, the fields tcp_info reports), loaded for each read only and read once in each
 * network namespace; ss and export both read it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "policy.skel.h"
#include "socks.h"

#define USEC_PER_SEC 1e6

struct socks {
	int link_fd;
	char *buf;
	size_t used, cap;
};

static int read_here(void *ctx, const char *label)
{
	struct socks *s = ctx;
	int fd = bpf_iter_create(s->link_fd), err;

	(void)label;
	if (fd < 0)
		return -errno;
	err = read_all(fd, &s->buf, &s->cap, &s->used);
	close(fd);
	return err;
}

/* Every connected TCP socket of every network namespace (iter/tcp, read in each), with the policy's
 * rule and arm where it placed the socket. The program is loaded for this read only, sharing the
 * pinned policy's storage map where there is one.
 */
int read_socks(char **buf, size_t *used)
{
	struct socks s = {};
	struct bpf_program *p;
	struct bpf_link *link = NULL;
	struct policy *skel = policy__open();
	int fd, err;

	if (!skel)
		return fail(-errno, "cannot open the policy's BPF object");
	bpf_object__for_each_program(p, skel->obj) bpf_program__set_autoload(p, p == skel->progs.dump_socks);
	fd = policy_exists() ? policy_open_map("storage") : -1;
	err = fd >= 0 && bpf_map__reuse_fd(skel->maps.storage, fd) ? -EINVAL : 0;
	if (fd >= 0)
		close(fd);
	if (err) {
		err = fail(0, "cannot share the policy's storage map");
		goto out;
	}
	libbpf_log_reset();
	if (policy__load(skel)) {
		err = fail(0, "the kernel refused the iter/tcp program (bbrctl features: iter-tcp): %s",
			libbpf_last_message() ? libbpf_last_message() : "no reason given");
		goto out;
	}
	link = bpf_program__attach_iter(skel->progs.dump_socks, NULL);
	if (!link) {
		err = fail(-errno, "cannot attach the iter/tcp program");
		goto out;
	}
	s.link_fd = bpf_link__fd(link);
	err = for_each_netns(read_here, &s);
	if (err)
		err = fail(err, "cannot read the sockets");
out:
	bpf_link__destroy(link);
	policy__destroy(skel);
	if (err) {
		free(s.buf);
		return EXIT_FAILURE;
	}
	*buf = s.buf;
	*used = s.used;
	return EXIT_SUCCESS;
}

double sock_delivery_rate_bytes(const struct bbrkit_sock *k)
{
	/* As tcp_info's tcpi_delivery_rate: the last rate sample's packets over its interval. */
	return k->rate_interval_us ? (double)k->rate_delivered * k->mss * USEC_PER_SEC / k->rate_interval_us
				   : 0;
}

bool sock_stalled(const struct bbrkit_sock *k, unsigned long stall_rtts)
{
	return k->packets_out && k->srtt_us && k->delivery_age_us > (__u64)stall_rtts * k->srtt_us;
}

void sock_endpoint_text(const __u8 *addr, __u16 port, char *buf, size_t size)
{
	struct bbrkit_policy_prefix p = { .prefixlen = 128 };
	char text[INET6_ADDRSTRLEN + 8];

	memcpy(p.addr, addr, 16);
	policy_prefix_text(&p, text, sizeof(text));
	text[strcspn(text, "/")] = '\0';
	snprintf(buf, size, "%s:%u", text, port);
}
