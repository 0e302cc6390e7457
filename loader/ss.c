// SPDX-License-Identifier: GPL-2.0
/* ss: every connected TCP socket, like `ss -ti`, with what ss cannot show for a BPF congestion
 * control (it has no get_info): the algorithm's own state, joined by network namespace and 4-tuple
 * from the attached algorithms' flows iterators, and the policy rule and arm that chose it.
 *
 * The kernel's side comes from the policy object's iter/tcp program (struct tcp_sock, the fields
 * tcp_info reports), loaded for this run only and read once in each network namespace.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "policy.skel.h"

#define USEC_PER_MSEC 1e3
#define BPS_PER_MBPS 1e6

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

/* A record's addresses as the policy writes them (IPv4-mapped). */
static void mapped(const struct bbrkit_flow *f, const __u8 *addr, __u8 *out)
{
	memset(out, 0, 16);
	if (f->flags & BBRKIT_F_IPV6) {
		memcpy(out, addr, 16);
	} else {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, addr, 4);
	}
}

struct state {
	const struct algo *algo;
	const struct bbrkit_flow *flow;
};

static struct state find_state(const struct bbrkit_sock *k, const struct algo *const *sel,
	struct bbrkit_flow *const *flows, const size_t *nflows, size_t nsel)
{
	for (size_t i = 0; i < nsel; i++) {
		if (strncmp(sel[i]->name, k->cc, sizeof(k->cc)))
			continue;
		for (size_t n = 0; n < nflows[i]; n++) {
			const struct bbrkit_flow *f = &flows[i][n];
			__u8 s[16], d[16];

			if (f->netns != k->netns || f->sport != k->sport || f->dport != k->dport)
				continue;
			mapped(f, f->saddr, s);
			mapped(f, f->daddr, d);
			if (!memcmp(s, k->saddr, 16) && !memcmp(d, k->daddr, 16))
				return (struct state){ sel[i], f };
		}
	}
	return (struct state){ NULL, NULL };
}

static void addr(const __u8 *a, __u16 port, char *buf, size_t size)
{
	struct bbrkit_policy_prefix p = { .prefixlen = 128 };
	char text[INET6_ADDRSTRLEN + 8];

	memcpy(p.addr, a, 16);
	policy_prefix_text(&p, text, sizeof(text));
	text[strcspn(text, "/")] = '\0';
	snprintf(buf, size, "%s:%u", text, port);
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

int cmd_ss(const struct cmd_opts *o, int argc, char **argv)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES] = {};
	const struct algo *sel[CLI_MANY];
	struct bbrkit_flow *flows[CLI_MANY] = {};
	size_t nflows[CLI_MANY] = {}, nsel = 0;
	struct socks s = {};
	struct json j;

	(void)argc, (void)argv;
	if (check_root() || read_socks(&s.buf, &s.used))
		return EXIT_FAILURE;
	if (policy_exists())
		policy_read_rules(rules);
	for (size_t i = 0; i < nalgos && nsel < CLI_MANY; i++)
		if (algo_attached(algo_at(i)) && !check_attached_abi(algo_at(i)) &&
			!read_flows(algo_at(i), &flows[nsel], &nflows[nsel]))
			sel[nsel++] = algo_at(i);
	json_init(&j, stdout);
	if (o->json) {
		json_object(&j);
		json_key(&j, "sockets");
		json_array(&j);
	} else {
		printf("%-10s %-40s %-40s %-12s %-16s %8s %8s %6s %9s %5s %5s %-9s %5s %8s\n", "NETNS",
			"LOCAL", "PEER", "ALGO", "RULE/ARM", "SRTT_MS", "MINRTTMS", "CWND", "RATE_MBPS",
			"RETR", "LOST", "MODE", "PGAIN", "BW_MBPS");
	}
	for (const struct bbrkit_sock *k = (const void *)s.buf; (const char *)(k + 1) <= s.buf + s.used;
		k++) {
		struct state st = find_state(k, sel, flows, nflows, nsel);
		const struct bbrkit_policy_rule *r =
			k->slot < BBRKIT_POLICY_RULES && rules[k->slot].narms ? &rules[k->slot] : NULL;
		char local[INET6_ADDRSTRLEN + 16], peer[INET6_ADDRSTRLEN + 16],
			cc[BBRKIT_POLICY_NAME_MAX + 1] = "";

		memcpy(cc, k->cc, sizeof(k->cc));
		addr(k->saddr, k->sport, local, sizeof(local));
		addr(k->daddr, k->dport, peer, sizeof(peer));
		if (o->json) {
			json_object(&j);
			json_key(&j, "netns");
			json_uint(&j, k->netns);
			json_key(&j, "local");
			json_string(&j, local);
			json_key(&j, "peer");
			json_string(&j, peer);
			json_key(&j, "algo");
			json_string(&j, cc);
			json_key(&j, "rule");
			json_string(&j, r ? r->name : NULL);
			json_key(&j, "arm");
			json_string(&j, r && k->arm < r->narms ? r->arms[k->arm].cc : NULL);
			json_key(&j, "srtt_us");
			json_uint(&j, k->srtt_us);
			json_key(&j, "min_rtt_us");
			json_uint(&j, k->min_rtt_us);
			json_key(&j, "cwnd");
			json_uint(&j, k->cwnd);
			json_key(&j, "delivery_rate_bps");
			json_uint(&j, (unsigned long long)sock_delivery_rate_bps(k));
			json_key(&j, "bytes_acked");
			json_uint(&j, k->bytes_acked);
			json_key(&j, "retrans");
			json_uint(&j, k->total_retrans);
			json_key(&j, "lost");
			json_uint(&j, k->lost);
			json_key(&j, "delivered_ce");
			json_uint(&j, k->delivered_ce);
			json_key(&j, "state");
			if (st.flow)
				record_json_object(&j, st.algo, st.flow);
			else
				json_null(&j);
			json_object_end(&j);
		} else {
			char arm[40] = "-";

			if (r && k->arm < r->narms)
				snprintf(arm, sizeof(arm), "%s/%s", r->name, r->arms[k->arm].cc);
			printf("%-10u %-40s %-40s %-12s %-16s %8.3f %8.3f %6u %9.2f %5u %5u ", k->netns,
				local, peer, cc, arm, k->srtt_us / USEC_PER_MSEC,
				k->min_rtt_us / USEC_PER_MSEC, k->cwnd,
				sock_delivery_rate_bps(k) / BPS_PER_MBPS, k->total_retrans, k->lost);
			if (st.flow)
				printf("%-9s %5.2f %8.2f\n", record_mode_name(st.flow->mode),
					(double)st.flow->pacing_gain / BBR_UNIT,
					record_bw_bps(st.flow->bw, st.flow->mss) / BPS_PER_MBPS);
			else
				printf("%-9s %5s %8s\n", "-", "-", "-");
		}
	}
	if (o->json) {
		json_array_end(&j);
		json_object_end(&j);
	}
	for (size_t i = 0; i < nsel; i++)
		free(flows[i]);
	free(s.buf);
	return EXIT_SUCCESS;
}
