// SPDX-License-Identifier: GPL-2.0
/* ss: every connected TCP socket, like `ss -ti`, with what ss cannot show for a BPF congestion
 * control (it has no get_info): the algorithm's own state, joined by network namespace and 4-tuple
 * from the attached algorithms' flows iterators, and the policy rule and arm that chose it.
 *
 * The kernel's side comes from socks.c. The JSON keys are one table (ss_keys): the writer and the help
 * (--help, the man page) both read it, so neither can name a key the other lacks.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "bbrctl.h"
#include "socks.h"

#define USEC_PER_MSEC 1e3
#define BPS_PER_MBPS 1e6
#define BITS_PER_BYTE 8

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

/* One socket's values under its JSON keys. */
struct ss_row {
	unsigned long long netns, srtt_us, min_rtt_us, cwnd, delivery_rate_bps, bytes_acked, retrans, lost,
		delivered_ce;
	const char *local, *peer, *algo, *rule, *arm;
	struct state state;
};

enum ss_kind { SS_UINT, SS_TEXT, SS_STATE };

struct ss_key {
	const char *name;
	enum ss_kind kind;
	size_t offset; /* in struct ss_row */
	const char *what;
};

/* clang-format off */
static const struct ss_key ss_keys[] = {
	{ "netns", SS_UINT, offsetof(struct ss_row, netns), "network namespace (inode number)" },
	{ "local", SS_TEXT, offsetof(struct ss_row, local), "local ADDRESS:PORT (IPv4 dotted, IPv6 without brackets)" },
	{ "peer", SS_TEXT, offsetof(struct ss_row, peer), "remote ADDRESS:PORT" },
	{ "algo", SS_TEXT, offsetof(struct ss_row, algo), "the socket's congestion control" },
	{ "rule", SS_TEXT, offsetof(struct ss_row, rule), "the policy rule that placed it, or null" },
	{ "arm", SS_TEXT, offsetof(struct ss_row, arm), "the rule's arm (its algorithm), or null" },
	{ "srtt_us", SS_UINT, offsetof(struct ss_row, srtt_us), "smoothed RTT, microseconds" },
	{ "min_rtt_us", SS_UINT, offsetof(struct ss_row, min_rtt_us), "minimum RTT (tcpi_min_rtt), microseconds" },
	{ "cwnd", SS_UINT, offsetof(struct ss_row, cwnd), "congestion window, packets" },
	{ "delivery_rate_bps", SS_UINT, offsetof(struct ss_row, delivery_rate_bps), "last delivery rate sample (tcpi_delivery_rate), bit/s" },
	{ "bytes_acked", SS_UINT, offsetof(struct ss_row, bytes_acked), "bytes sent and acknowledged (tcpi_bytes_acked)" },
	{ "retrans", SS_UINT, offsetof(struct ss_row, retrans), "segments retransmitted (tcpi_total_retrans)" },
	{ "lost", SS_UINT, offsetof(struct ss_row, lost), "packets marked lost" },
	{ "delivered_ce", SS_UINT, offsetof(struct ss_row, delivered_ce), "packets delivered with an ECN CE echo" },
	{ "state", SS_STATE, offsetof(struct ss_row, state), "null where the algorithm is not bbrkit's, else its record (the keys of bbrctl flows)" },
};
/* clang-format on */

void ss_keys_help(FILE *out)
{
	fputs("JSON: {\"sockets\": [one object per socket]}, each with the keys:\n", out);
	for (size_t i = 0; i < sizeof(ss_keys) / sizeof(ss_keys[0]); i++)
		fprintf(out, "  %-18s %s\n", ss_keys[i].name, ss_keys[i].what);
}

static void ss_json(struct json *j, const struct ss_row *row)
{
	json_object(j);
	for (size_t i = 0; i < sizeof(ss_keys) / sizeof(ss_keys[0]); i++) {
		const void *field = (const char *)row + ss_keys[i].offset;

		json_key(j, ss_keys[i].name);
		if (ss_keys[i].kind == SS_UINT)
			json_uint(j, *(const unsigned long long *)field);
		else if (ss_keys[i].kind == SS_TEXT)
			json_string(j, *(const char *const *)field);
		else if (row->state.flow)
			record_json_object(j, row->state.algo, row->state.flow);
		else
			json_null(j);
	}
	json_object_end(j);
}

int cmd_ss(const struct cmd_opts *o, int argc, char **argv)
{
	struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES] = {};
	const struct algo *sel[CLI_MANY];
	struct bbrkit_flow *flows[CLI_MANY] = {};
	size_t nflows[CLI_MANY] = {}, nsel = 0;
	char *buf = NULL;
	size_t used = 0;
	struct json j;

	(void)argc, (void)argv;
	if (check_root() || read_socks(&buf, &used))
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
	for (const struct bbrkit_sock *k = (const void *)buf; (const char *)(k + 1) <= buf + used; k++) {
		struct state st = find_state(k, sel, flows, nflows, nsel);
		const struct bbrkit_policy_rule *r =
			k->slot < BBRKIT_POLICY_RULES && rules[k->slot].narms ? &rules[k->slot] : NULL;
		char local[INET6_ADDRSTRLEN + 16], peer[INET6_ADDRSTRLEN + 16],
			cc[BBRKIT_POLICY_NAME_MAX + 1] = "";

		memcpy(cc, k->cc, sizeof(k->cc));
		sock_endpoint_text(k->saddr, k->sport, local, sizeof(local));
		sock_endpoint_text(k->daddr, k->dport, peer, sizeof(peer));
		if (o->json) {
			struct ss_row row = {
				.netns = k->netns,
				.srtt_us = k->srtt_us,
				.min_rtt_us = k->min_rtt_us,
				.cwnd = k->cwnd,
				.delivery_rate_bps =
					(unsigned long long)(sock_delivery_rate_bytes(k) * BITS_PER_BYTE),
				.bytes_acked = k->bytes_acked,
				.retrans = k->total_retrans,
				.lost = k->lost,
				.delivered_ce = k->delivered_ce,
				.local = local,
				.peer = peer,
				.algo = cc,
				.rule = r ? r->name : NULL,
				.arm = r && k->arm < r->narms ? r->arms[k->arm].cc : NULL,
				.state = st,
			};

			ss_json(&j, &row);
		} else {
			char arm[40] = "-";

			if (r && k->arm < r->narms)
				snprintf(arm, sizeof(arm), "%s/%s", r->name, r->arms[k->arm].cc);
			printf("%-10u %-40s %-40s %-12s %-16s %8.3f %8.3f %6u %9.2f %5u %5u ", k->netns,
				local, peer, cc, arm, k->srtt_us / USEC_PER_MSEC,
				k->min_rtt_us / USEC_PER_MSEC, k->cwnd,
				sock_delivery_rate_bytes(k) * BITS_PER_BYTE / BPS_PER_MBPS, k->total_retrans,
				k->lost);
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
	free(buf);
	return EXIT_SUCCESS;
}
