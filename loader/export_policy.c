// SPDX-License-Identifier: GPL-2.0
/* export_policy: bbrctl export's series per policy arm (labels rule, arm, holdback) and per placed
 * flow, from the kernel's TCP state of the connections the policy placed and the policy's per-arm
 * counters (closed connections' totals are added when they close), and the same totals summed per
 * algorithm.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bbrctl.h"
#include "exposition.h"
#include "socks.h"

#define WEIGHT_SCALE 1e4 /* struct bbrkit_policy_arm's weight: hundredths of a percent */
#define ARM_LABELS_MAX 256

struct arm_sums {
	unsigned long flows, busy, stalled;
	double bytes_acked, bytes_received, segs_out, retrans, delivered, delivered_ce, lost;
	struct hist srtt, min_rtt, rate;
};

static void label_arm(char *buf, size_t size, const struct bbrkit_policy_rule *r, unsigned int arm)
{
	snprintf(buf, size, "rule=\"%.*s\",arm=\"%.*s\",holdback=\"%s\"", BBRKIT_POLICY_NAME_MAX, r->name,
		BBRKIT_POLICY_NAME_MAX, r->arms[arm].cc, arm == r->holdback ? "true" : "false");
}

/* Per-flow families: the samples of one flow go under each family in turn. */
static const char *const flow_families[][3] = {
	{ "bbrkit_flow_srtt_seconds", "gauge", "smoothed RTT" },
	{ "bbrkit_flow_min_rtt_seconds", "gauge", "minimum RTT (tcpi_min_rtt)" },
	{ "bbrkit_flow_delivery_rate_bytes_per_second", "gauge",
		"last delivery rate sample (tcpi_delivery_rate)" },
	{ "bbrkit_flow_acked_bytes_total", "counter", "bytes sent and acknowledged (tcpi_bytes_acked)" },
	{ "bbrkit_flow_retransmitted_segments_total", "counter",
		"segments retransmitted (tcpi_total_retrans)" },
	{ "bbrkit_flow_cwnd_packets", "gauge", "congestion window" },
	{ "bbrkit_flow_stalled", "gauge",
		"1: data in flight and no delivery for --stall-rtts smoothed RTTs" },
};

static void write_flows(FILE *o, const struct bbrkit_policy_rule *rules, const struct bbrkit_sock *socks,
	size_t n, unsigned long stall_rtts)
{
	for (size_t f = 0; f < sizeof(flow_families) / sizeof(flow_families[0]); f++) {
		family(o, flow_families[f][0], flow_families[f][1], flow_families[f][2]);
		for (size_t i = 0; i < n; i++) {
			const struct bbrkit_sock *k = &socks[i];
			const double values[] = { k->srtt_us / USEC_PER_SEC, k->min_rtt_us / USEC_PER_SEC,
				sock_delivery_rate_bytes(k), (double)k->bytes_acked, k->total_retrans,
				k->cwnd, sock_stalled(k, stall_rtts) };
			char arm[ARM_LABELS_MAX], src[INET6_ADDRSTRLEN + 16], dst[INET6_ADDRSTRLEN + 16];

			_Static_assert(sizeof(values) / sizeof(values[0]) ==
					sizeof(flow_families) / sizeof(flow_families[0]),
				"a value per flow family");
			label_arm(arm, sizeof(arm), &rules[k->slot], k->arm);
			sock_endpoint_text(k->saddr, k->sport, src, sizeof(src));
			sock_endpoint_text(k->daddr, k->dport, dst, sizeof(dst));
			fprintf(o, "%s{%s,netns=\"%u\",src=\"%s\",dst=\"%s\"} %.15g\n", flow_families[f][0],
				arm, k->netns, src, dst, values[f]);
		}
	}
}

static bool placed(const struct bbrkit_sock *k, const struct bbrkit_policy_rule *rules)
{
	/* Connections of a rule since replaced or deleted are no arm's any more. */
	return k->slot < BBRKIT_POLICY_RULES && k->arm < rules[k->slot].narms &&
		rules[k->slot].generation == k->generation;
}

/* The arms' acked bytes and retransmissions summed per algorithm (an algorithm can be the arm of
 * several rules): the placed connections' totals per algorithm.
 */
static void write_per_algo(FILE *o, const struct bbrkit_policy_rule *rules,
	struct arm_sums (*sums)[BBRKIT_POLICY_ARMS], struct bbrkit_policy_stats (*st)[BBRKIT_POLICY_ARMS])
{
	char names[BBRKIT_POLICY_RULES * BBRKIT_POLICY_ARMS][BBRKIT_POLICY_NAME_MAX + 1];
	double acked[BBRKIT_POLICY_RULES * BBRKIT_POLICY_ARMS],
		retrans[BBRKIT_POLICY_RULES * BBRKIT_POLICY_ARMS];
	size_t n = 0;

	for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++)
		for (__u32 a = 0; a < rules[s].narms; a++) {
			size_t i = 0;

			while (i < n && strcmp(names[i], rules[s].arms[a].cc))
				i++;
			if (i == n) {
				snprintf(names[n], sizeof(names[n]), "%s", rules[s].arms[a].cc);
				acked[n] = retrans[n] = 0;
				n++;
			}
			acked[i] += st[s][a].closed_bytes_acked + sums[s][a].bytes_acked;
			retrans[i] += st[s][a].closed_retrans + sums[s][a].retrans;
		}
	family(o, "bbrkit_algo_placed_acked_bytes_total", "counter",
		"bytes acknowledged on the connections the policy placed on the algorithm, closed and live");
	for (size_t i = 0; i < n; i++)
		fprintf(o, "bbrkit_algo_placed_acked_bytes_total{algo=\"%s\"} %.17g\n", names[i], acked[i]);
	family(o, "bbrkit_algo_placed_retransmitted_segments_total", "counter",
		"segments retransmitted on the connections the policy placed on the algorithm");
	for (size_t i = 0; i < n; i++)
		fprintf(o, "bbrkit_algo_placed_retransmitted_segments_total{algo=\"%s\"} %.17g\n", names[i],
			retrans[i]);
}

static struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
static struct bbrkit_policy_stats st[BBRKIT_POLICY_RULES][BBRKIT_POLICY_ARMS];

bool read_policy_counters(void)
{
	if (!policy_exists() || policy_read_rules(rules))
		return false;
	for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++)
		for (__u32 a = 0; a < rules[s].narms; a++)
			policy_read_stats(s, a, &st[s][a]);
	return true;
}

void write_policy(FILE *o, struct scrape_socks *all, unsigned long flow_limit, unsigned long stall_rtts)
{
	static struct arm_sums sums[BBRKIT_POLICY_RULES][BBRKIT_POLICY_ARMS];
	char path[BBRCTL_MAX_PATH], *own = NULL, *buf = all->ok ? all->buf : NULL;
	size_t used = all->ok ? all->used : 0, nplaced = 0;
	struct bbrkit_sock *k, *socks;

	memset(sums, 0, sizeof(sums));
	/* The placed connections alone from the policy's map iterator, where the kernel allows one. */
	pin_path(path, BBRKIT_POLICY_DIR, BBRKIT_POLICY_PIN_FLOWS);
	if (!access(path, F_OK)) {
		used = 0;
		if (!read_iterator(path, &own, &used))
			buf = own;
	}
	/* The placed connections, moved to the front of buf in their order. */
	socks = (void *)buf;
	for (k = socks; (const char *)(k + 1) <= buf + used; k++) {
		struct arm_sums *m;

		if (!placed(k, rules))
			continue;
		socks[nplaced++] = *k;
		m = &sums[k->slot][k->arm];
		m->flows++;
		m->bytes_acked += (double)k->bytes_acked;
		m->bytes_received += (double)k->bytes_received;
		m->segs_out += k->segs_out;
		m->retrans += k->total_retrans;
		m->delivered += k->delivered;
		m->delivered_ce += k->delivered_ce;
		m->lost += k->lost;
		m->busy += k->packets_out != 0;
		m->stalled += sock_stalled(k, stall_rtts);
		hist_observe(&m->srtt, HIST_SECONDS, k->srtt_us / USEC_PER_SEC);
		hist_observe(&m->min_rtt, HIST_SECONDS, k->min_rtt_us / USEC_PER_SEC);
		hist_observe(&m->rate, HIST_BYTES_PER_SECOND, sock_delivery_rate_bytes(k));
	}
#define ARMS(name, type, help, expr) \
	do { \
		family(o, "bbrkit_policy_" name, type, help); \
		for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++) \
			for (__u32 a = 0; a < rules[s].narms; a++) { \
				const struct arm_sums *m = &sums[s][a]; \
				const struct bbrkit_policy_stats *c = &st[s][a]; \
				char labels[ARM_LABELS_MAX]; \
				(void)m, (void)c; \
				label_arm(labels, sizeof(labels), &rules[s], a); \
				fprintf(o, "bbrkit_policy_" name "{%s} %.17g\n", labels, (double)(expr)); \
			} \
	} while (0)
#define ARM_HIST(name, kind, help, field) \
	do { \
		family(o, "bbrkit_policy_" name, "histogram", help); \
		for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++) \
			for (__u32 a = 0; a < rules[s].narms; a++) { \
				char labels[ARM_LABELS_MAX]; \
				label_arm(labels, sizeof(labels), &rules[s], a); \
				hist_write(o, "bbrkit_policy_" name, labels, kind, &sums[s][a].field); \
			} \
	} while (0)
	ARMS("weight_ratio", "gauge", "share of new connections the arm gets",
		rules[s].arms[a].weight / WEIGHT_SCALE);
	ARMS("connections_total", "counter", "connections placed in the arm", c->connections);
	ARMS("fallback_connections_total", "counter",
		"connections whose arm algorithm could not be set (kept the default)", c->fallbacks);
	ARMS("closed_connections_total", "counter", "placed connections closed since", c->closed);
	ARMS("flows", "gauge", "live placed connections", m->flows);
	ARMS("busy_flows", "gauge", "live placed connections with data in flight", m->busy);
	ARMS("stalled_flows", "gauge", "busy connections with no delivery for --stall-rtts smoothed RTTs",
		m->stalled);
	ARMS("acked_bytes_total", "counter",
		"bytes sent and acknowledged (tcpi_bytes_acked), closed and live",
		c->closed_bytes_acked + m->bytes_acked);
	ARMS("received_bytes_total", "counter", "bytes received (tcpi_bytes_received)",
		c->closed_bytes_received + m->bytes_received);
	ARMS("sent_segments_total", "counter", "segments sent (tcpi_segs_out)",
		c->closed_segs_out + m->segs_out);
	ARMS("retransmitted_segments_total", "counter", "segments retransmitted (tcpi_total_retrans)",
		c->closed_retrans + m->retrans);
	ARMS("delivered_packets_total", "counter", "packets delivered (tcpi_delivered)",
		c->closed_delivered + m->delivered);
	ARMS("delivered_ce_packets_total", "counter",
		"packets delivered with an ECN CE echo (tcpi_delivered_ce)",
		c->closed_delivered_ce + m->delivered_ce);
	ARMS("lost_packets_total", "counter", "packets lost (tp->lost)", c->closed_lost + m->lost);
	ARM_HIST("srtt_seconds", HIST_SECONDS, "smoothed RTT of the live flows at the scrape", srtt);
	ARM_HIST("min_rtt_seconds", HIST_SECONDS,
		"minimum RTT (tcpi_min_rtt) of the live flows at the scrape", min_rtt);
	ARM_HIST("delivery_rate_bytes_per_second", HIST_BYTES_PER_SECOND,
		"last delivery rate sample (tcpi_delivery_rate) of the live flows at the scrape", rate);
#undef ARMS
#undef ARM_HIST
	write_per_algo(o, rules, sums, st);
	if (flow_limit)
		write_flows(o, rules, socks, nplaced < flow_limit ? nplaced : flow_limit, stall_rtts);
	family(o, "bbrkit_exporter_omitted_flows", "gauge",
		"placed flows left out of the per-flow series by --flows");
	fprintf(o, "bbrkit_exporter_omitted_flows %zu\n",
		flow_limit && nplaced > flow_limit ? nplaced - flow_limit : 0);
	free(own);
}
