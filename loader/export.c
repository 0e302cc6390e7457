// SPDX-License-Identifier: GPL-2.0
/* export: Prometheus metrics of the attached algorithms and the policy's arms at /metrics.
 *
 * Each scrape reads, in one pass each, the flows iterator of every attached algorithm (their own
 * state) and the policy's iterator over the connections it placed (the kernel's TCP state), plus
 * the policy's per-arm counters, and writes the text exposition format (version 0.0.4, which
 * Prometheus and OpenMetrics parsers both read). C, not a Python client library: Debian packages no
 * C exposition library, and a scrape of 10,000 flows must stay far below 1% of a CPU (docs/
 * operations.md has the measurement); the tests hold the output to Prometheus' own parser (promtool
 * and a real scrape). HTTP comes from libmicrohttpd, one thread, so scrapes never overlap.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "bbrctl.h"

#define DEFAULT_LISTEN "127.0.0.1:9563" /* bbrkit's pick in the range Prometheus exporters use */
#define DEFAULT_STALL_RTTS 4 /* BBR's probes take about 1 RTT each: 4 without delivery is not pacing */
#define MAX_STALL_RTTS 1000
#define MAX_FLOW_LIMIT 100000 /* per-flow series: past this a scrape is a dump, not a metric */
#define USEC_PER_SEC 1e6
#define NSEC_PER_SEC 1e9
#define PERCENT 100.0
#define PERMILLE 1000.0
#define TCP_ESTABLISHED 1
#define NMODES 4  /* enum bbrkit_mode */
#define NPHASES 4 /* enum bbrkit_v3_phase without NONE */
#define NCA_STATES 5

struct exporter {
	unsigned long flow_limit;
	unsigned long stall_rtts;
	double last_scrape_s;
};

static void family(FILE *o, const char *name, const char *type, const char *help)
{
	fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- per algorithm, from the algorithms' own records ---- */

struct algo_sums {
	unsigned long flows, modes[NMODES], phases[NPHASES], ca[NCA_STATES], hi_n, lo_n, v3_n;
	double bw, pacing, min_rtt, srtt, pgain, cgain, retrans, lost, delivered_bytes, hi, lo, loss, ecn;
};

static bool has_variant(const struct algo *a, enum variant_kind kind)
{
	for (size_t i = 0; i < a->nvariants; i++)
		if (a->variants[i].kind == kind)
			return true;
	return false;
}

static void sum_algo(const struct algo *a, const struct bbrkit_flow *f, size_t n, struct algo_sums *s)
{
	bool v3 = has_variant(a, VAR_V3_PHASE);

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++, f++) {
		s->flows++;
		s->bw += (double)record_bw_bps(f->bw, f->mss);
		s->pacing += (double)f->pacing_rate * 8;
		s->min_rtt += f->min_rtt_us / USEC_PER_SEC;
		s->srtt += f->srtt_us / USEC_PER_SEC;
		s->pgain += (double)f->pacing_gain / BBR_UNIT;
		s->cgain += (double)f->cwnd_gain / BBR_UNIT;
		s->retrans += f->retrans;
		s->lost += f->lost;
		s->delivered_bytes += (double)f->delivered * f->mss;
		if (f->mode < NMODES)
			s->modes[f->mode]++;
		if (f->ca_state < NCA_STATES)
			s->ca[f->ca_state]++;
		if (!v3)
			continue;
		s->v3_n++;
		if (f->variant[BBRKIT_VAR_V3_PHASE] < NPHASES)
			s->phases[f->variant[BBRKIT_VAR_V3_PHASE]]++;
		if (f->inflight_longterm != BBRKIT_VAR_NONE)
			s->hi += f->inflight_longterm, s->hi_n++;
		if (f->inflight_shortterm != BBRKIT_VAR_NONE)
			s->lo += f->inflight_shortterm, s->lo_n++;
		s->loss += f->variant[BBRKIT_VAR_V3_LOSS_RATE] / PERMILLE;
		s->ecn += f->variant[BBRKIT_VAR_V3_ECN_RATE] / PERMILLE;
	}
}

static double mean(double sum, unsigned long n)
{
	return n ? sum / (double)n : 0;
}

/* One gauge family over all algorithms; the value of algorithm i is v(&s[i]). */
#define ALGO_GAUGE(o, metric, help, expr) \
	do { \
		family(o, "bbrkit_algo_" metric, "gauge", help); \
		for (size_t i = 0; i < nsel; i++) { \
			const struct algo_sums *s = &sums[i]; \
			fprintf(o, "bbrkit_algo_" metric "{algo=\"%s\"} %.9g\n", sel[i]->name, \
				(double)(expr)); \
		} \
	} while (0)

static void write_algos(FILE *o)
{
	const struct algo *sel[CLI_MANY];
	struct algo_sums sums[CLI_MANY];
	size_t nsel = 0;

	for (size_t i = 0; i < nalgos && nsel < CLI_MANY; i++) {
		const struct algo *a = algo_at(i);
		struct bbrkit_flow *f = NULL;
		size_t n = 0;

		if (!algo_attached(a) || check_attached_abi(a) || read_flows(a, &f, &n))
			continue;
		sum_algo(a, f, n, &sums[nsel]);
		sel[nsel++] = a;
		free(f);
	}
	ALGO_GAUGE(o, "flows", "live connections using the algorithm", s->flows);
	ALGO_GAUGE(o, "bw_estimate_bps", "mean bandwidth estimate (max-filtered delivery rate), bit/s",
		mean(s->bw, s->flows));
	ALGO_GAUGE(o, "pacing_rate_bps", "mean pacing rate, bit/s", mean(s->pacing, s->flows));
	ALGO_GAUGE(o, "min_rtt_seconds", "mean windowed minimum RTT", mean(s->min_rtt, s->flows));
	ALGO_GAUGE(o, "srtt_seconds", "mean smoothed RTT", mean(s->srtt, s->flows));
	ALGO_GAUGE(o, "pacing_gain", "mean pacing gain applied", mean(s->pgain, s->flows));
	ALGO_GAUGE(o, "cwnd_gain", "mean cwnd gain", mean(s->cgain, s->flows));
	ALGO_GAUGE(o, "retrans_segments", "segments retransmitted by the live flows", s->retrans);
	ALGO_GAUGE(o, "lost_packets", "packets lost by the live flows", s->lost);
	ALGO_GAUGE(o, "delivered_bytes", "bytes delivered by the live flows", s->delivered_bytes);
	family(o, "bbrkit_algo_mode_share", "gauge",
		"share of flows in each mode at the scrape (averaged over scrapes: the time share)");
	for (size_t i = 0; i < nsel; i++)
		for (unsigned int m = 0; m < NMODES; m++)
			fprintf(o, "bbrkit_algo_mode_share{algo=\"%s\",mode=\"%s\"} %.6g\n", sel[i]->name,
				record_mode_name(m), mean(sums[i].modes[m], sums[i].flows));
	family(o, "bbrkit_algo_phase_share", "gauge",
		"bbr2/bbr3: share of flows in each PROBE_BW phase at the scrape (averaged: the time share)");
	for (size_t i = 0; i < nsel; i++)
		for (unsigned int p = 0; has_variant(sel[i], VAR_V3_PHASE) && p < NPHASES; p++)
			fprintf(o, "bbrkit_algo_phase_share{algo=\"%s\",phase=\"%s\"} %.6g\n", sel[i]->name,
				record_phase_name(p), mean(sums[i].phases[p], sums[i].flows));
	family(o, "bbrkit_algo_ca_state_flows", "gauge",
		"flows in each TCP congestion state (recovery, loss: the loss signal)");
	for (size_t i = 0; i < nsel; i++)
		for (unsigned int c = 0; c < NCA_STATES; c++)
			fprintf(o, "bbrkit_algo_ca_state_flows{algo=\"%s\",state=\"%s\"} %lu\n", sel[i]->name,
				record_ca_state_name(c), sums[i].ca[c]);
	family(o, "bbrkit_algo_inflight_bound_packets", "gauge",
		"bbr2/bbr3: mean inflight_hi and inflight_lo over the flows where the bound is set");
	family(o, "bbrkit_algo_inflight_bound_flows", "gauge", "bbr2/bbr3: flows where the bound is set");
	for (size_t i = 0; i < nsel; i++) {
		if (!has_variant(sel[i], VAR_V3_PHASE))
			continue;
		fprintf(o, "bbrkit_algo_inflight_bound_packets{algo=\"%s\",bound=\"hi\"} %.6g\n",
			sel[i]->name, mean(sums[i].hi, sums[i].hi_n));
		fprintf(o, "bbrkit_algo_inflight_bound_packets{algo=\"%s\",bound=\"lo\"} %.6g\n",
			sel[i]->name, mean(sums[i].lo, sums[i].lo_n));
		fprintf(o, "bbrkit_algo_inflight_bound_flows{algo=\"%s\",bound=\"hi\"} %lu\n", sel[i]->name,
			sums[i].hi_n);
		fprintf(o, "bbrkit_algo_inflight_bound_flows{algo=\"%s\",bound=\"lo\"} %lu\n", sel[i]->name,
			sums[i].lo_n);
	}
	family(o, "bbrkit_algo_loss_rate", "gauge",
		"bbr2/bbr3: mean loss rate of the flows' last loss round");
	family(o, "bbrkit_algo_ecn_rate", "gauge",
		"bbr2/bbr3: mean CE-marked share of the flows' last round");
	for (size_t i = 0; i < nsel; i++) {
		if (!has_variant(sel[i], VAR_V3_PHASE))
			continue;
		fprintf(o, "bbrkit_algo_loss_rate{algo=\"%s\"} %.6g\n", sel[i]->name,
			mean(sums[i].loss, sums[i].v3_n));
		fprintf(o, "bbrkit_algo_ecn_rate{algo=\"%s\"} %.6g\n", sel[i]->name,
			mean(sums[i].ecn, sums[i].v3_n));
	}
}

/* ---- per policy arm, from the kernel's TCP state of the connections it placed ---- */

struct arm_sums {
	unsigned long flows, busy, stalled;
	double bytes_acked, bytes_received, segs_out, retrans, delivered, delivered_ce, lost;
	double rate, srtt, min_rtt;
};

double sock_delivery_rate_bps(const struct bbrkit_sock *k)
{
	/* As tcp_info's tcpi_delivery_rate: the last rate sample's packets over its interval. */
	return k->rate_interval_us
		? (double)k->rate_delivered * k->mss * 8 * USEC_PER_SEC / k->rate_interval_us
		: 0;
}

bool sock_stalled(const struct bbrkit_sock *k, unsigned long stall_rtts)
{
	return k->packets_out && k->srtt_us && k->delivery_age_us > (__u64)stall_rtts * k->srtt_us;
}

static void label_arm(FILE *o, const struct bbrkit_policy_rule *r, unsigned int arm)
{
	fprintf(o, "rule=\"%s\",arm=\"%s\",holdback=\"%s\"", r->name, r->arms[arm].cc,
		arm == r->holdback ? "true" : "false");
}

static void write_flow(
	FILE *o, const struct exporter *x, const struct bbrkit_policy_rule *r, const struct bbrkit_sock *k)
{
	char src[INET6_ADDRSTRLEN + 8], dst[INET6_ADDRSTRLEN + 8];
	struct bbrkit_policy_prefix p = { .prefixlen = 128 };
	char labels[512];
	FILE *l = fmemopen(labels, sizeof(labels), "w");

	memcpy(p.addr, k->saddr, 16);
	policy_prefix_text(&p, src, sizeof(src));
	src[strcspn(src, "/")] = '\0';
	memcpy(p.addr, k->daddr, 16);
	policy_prefix_text(&p, dst, sizeof(dst));
	dst[strcspn(dst, "/")] = '\0';
	if (!l)
		return;
	label_arm(l, r, k->arm);
	fprintf(l, ",netns=\"%u\",src=\"%s:%u\",dst=\"%s:%u\"", k->netns, src, k->sport, dst, k->dport);
	fclose(l);
	fprintf(o, "bbrkit_flow_srtt_seconds{%s} %.6g\n", labels, k->srtt_us / USEC_PER_SEC);
	fprintf(o, "bbrkit_flow_min_rtt_seconds{%s} %.6g\n", labels, k->min_rtt_us / USEC_PER_SEC);
	fprintf(o, "bbrkit_flow_delivery_rate_bps{%s} %.6g\n", labels, sock_delivery_rate_bps(k));
	fprintf(o, "bbrkit_flow_bytes_acked{%s} %llu\n", labels, (unsigned long long)k->bytes_acked);
	fprintf(o, "bbrkit_flow_retrans_segments{%s} %u\n", labels, k->total_retrans);
	fprintf(o, "bbrkit_flow_cwnd_packets{%s} %u\n", labels, k->cwnd);
	fprintf(o, "bbrkit_flow_stalled{%s} %d\n", labels, sock_stalled(k, x->stall_rtts));
}

static void write_policy(FILE *o, struct exporter *x)
{
	static struct bbrkit_policy_rule rules[BBRKIT_POLICY_RULES];
	static struct arm_sums sums[BBRKIT_POLICY_RULES][BBRKIT_POLICY_ARMS];
	static struct bbrkit_policy_stats st[BBRKIT_POLICY_RULES][BBRKIT_POLICY_ARMS];
	char path[BBRCTL_MAX_PATH], *buf = NULL;
	size_t used = 0, nflows = 0, dropped = 0;
	const struct bbrkit_sock *k;

	memset(sums, 0, sizeof(sums));
	if (!policy_exists() || policy_read_rules(rules))
		return;
	/* The map iterator where the kernel allows one; else iter/tcp in each network namespace. */
	pin_path(path, BBRKIT_POLICY_DIR, BBRKIT_POLICY_PIN_FLOWS);
	if (access(path, F_OK) ? read_socks(&buf, &used) : read_iterator(path, &buf, &used))
		used = 0;
	for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++)
		for (__u32 a = 0; a < rules[s].narms; a++)
			policy_read_stats(s, a, &st[s][a]);
	for (k = (const void *)buf; (const char *)(k + 1) <= buf + used; k++) {
		struct arm_sums *m;

		/* Connections of a rule since replaced or deleted are no arm's any more. */
		if (k->slot >= BBRKIT_POLICY_RULES || k->arm >= rules[k->slot].narms ||
			rules[k->slot].generation != k->generation)
			continue;
		m = &sums[k->slot][k->arm];
		m->flows++;
		m->bytes_acked += (double)k->bytes_acked;
		m->bytes_received += (double)k->bytes_received;
		m->segs_out += k->segs_out;
		m->retrans += k->total_retrans;
		m->delivered += k->delivered;
		m->delivered_ce += k->delivered_ce;
		m->lost += k->lost;
		m->rate += sock_delivery_rate_bps(k);
		m->srtt += k->srtt_us / USEC_PER_SEC;
		m->min_rtt += k->min_rtt_us / USEC_PER_SEC;
		m->busy += k->packets_out != 0;
		m->stalled += sock_stalled(k, x->stall_rtts);
	}
#define ARMS(metric, type, help, expr) \
	do { \
		family(o, \
			!strcmp(type, "counter") ? "bbrkit_policy_" metric "_total" \
						 : "bbrkit_policy_" metric, \
			type, help); \
		for (__u32 s = 0; s < BBRKIT_POLICY_RULES; s++) \
			for (__u32 a = 0; a < rules[s].narms; a++) { \
				const struct arm_sums *m = &sums[s][a]; \
				const struct bbrkit_policy_stats *c = &st[s][a]; \
				(void)m, (void)c; \
				fprintf(o, "bbrkit_policy_" metric "%s{", \
					!strcmp(type, "counter") ? "_total" : ""); \
				label_arm(o, &rules[s], a); \
				fprintf(o, "} %.17g\n", (double)(expr)); \
			} \
	} while (0)
	ARMS("weight_ratio", "gauge", "share of new connections the arm gets", rules[s].arms[a].weight / 1e4);
	ARMS("connections", "counter", "connections placed in the arm", c->connections);
	ARMS("fallbacks", "counter", "connections whose arm algorithm could not be set (kept the default)",
		c->fallbacks);
	ARMS("closed", "counter", "placed connections closed since", c->closed);
	ARMS("flows", "gauge", "live placed connections", m->flows);
	ARMS("busy_flows", "gauge", "live placed connections with data in flight", m->busy);
	ARMS("stalled_flows", "gauge", "busy connections with no delivery for --stall-rtts smoothed RTTs",
		m->stalled);
	ARMS("bytes_acked", "counter", "bytes sent and acknowledged (tcpi_bytes_acked), closed and live",
		c->closed_bytes_acked + m->bytes_acked);
	ARMS("bytes_received", "counter", "bytes received (tcpi_bytes_received)",
		c->closed_bytes_received + m->bytes_received);
	ARMS("segs_out", "counter", "segments sent (tcpi_segs_out)", c->closed_segs_out + m->segs_out);
	ARMS("retrans_segs", "counter", "segments retransmitted (tcpi_total_retrans)",
		c->closed_retrans + m->retrans);
	ARMS("delivered_packets", "counter", "packets delivered (tcpi_delivered)",
		c->closed_delivered + m->delivered);
	ARMS("delivered_ce_packets", "counter", "packets delivered with an ECN CE echo (tcpi_delivered_ce)",
		c->closed_delivered_ce + m->delivered_ce);
	ARMS("lost_packets", "counter", "packets lost (tp->lost)", c->closed_lost + m->lost);
	ARMS("delivery_rate_bps", "gauge",
		"mean last delivery rate sample of live flows (tcpi_delivery_rate), bit/s",
		mean(m->rate, m->flows));
	ARMS("srtt_seconds", "gauge", "mean smoothed RTT of live flows", mean(m->srtt, m->flows));
	ARMS("min_rtt_seconds", "gauge", "mean minimum RTT of live flows (tcpi_min_rtt)",
		mean(m->min_rtt, m->flows));
#undef ARMS
	if (x->flow_limit) {
		static const char *const names[][2] = {
			{ "srtt_seconds", "smoothed RTT" },
			{ "min_rtt_seconds", "minimum RTT" },
			{ "delivery_rate_bps", "last delivery rate sample, bit/s" },
			{ "bytes_acked", "bytes acknowledged so far" },
			{ "retrans_segments", "segments retransmitted so far" },
			{ "cwnd_packets", "congestion window" },
			{ "stalled", "1: data in flight and no delivery for --stall-rtts smoothed RTTs" },
		};

		/* Families are written whole: the samples of one flow go under each family in turn. */
		for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
			char name[64];

			snprintf(name, sizeof(name), "bbrkit_flow_%s", names[f][0]);
			family(o, name, "gauge", names[f][1]);
		}
	}
	for (k = (const void *)buf; x->flow_limit && (const char *)(k + 1) <= buf + used; k++) {
		if (k->slot >= BBRKIT_POLICY_RULES || rules[k->slot].generation != k->generation ||
			k->arm >= rules[k->slot].narms)
			continue;
		if (nflows++ >= x->flow_limit) {
			dropped++;
			continue;
		}
		write_flow(o, x, &rules[k->slot], k);
	}
	family(o, "bbrkit_exporter_flows_dropped", "gauge",
		"placed flows left out of the per-flow series by --flows");
	fprintf(o, "bbrkit_exporter_flows_dropped %zu\n", dropped);
	free(buf);
}

static char *render(struct exporter *x, size_t *len)
{
	struct timespec t0, t1;
	char *body = NULL;
	FILE *o = open_memstream(&body, len);

	if (!o)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	write_algos(o);
	write_policy(o, x);
	family(o, "bbrkit_exporter_scrape_duration_seconds", "gauge", "how long the previous scrape took");
	fprintf(o, "bbrkit_exporter_scrape_duration_seconds %.6g\n", x->last_scrape_s);
	fclose(o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	x->last_scrape_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / NSEC_PER_SEC;
	return body;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
	const char *version, const char *upload, size_t *upload_size, void **state)
{
	static const char not_found[] = "bbrctl export serves /metrics only\n";
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len = 0;
	char *body;

	(void)version, (void)upload, (void)upload_size, (void)state;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_NO;
	if (strcmp(url, "/metrics")) {
		r = MHD_create_response_from_buffer(
			sizeof(not_found) - 1, (void *)not_found, MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(c, MHD_HTTP_NOT_FOUND, r);
		MHD_destroy_response(r);
		return ret;
	}
	body = render(cls, &len);
	if (!body)
		return MHD_NO;
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* HOST:PORT or [V6]:PORT into sa. */
static int parse_listen(const char *text, struct sockaddr_storage *sa, bool *v6)
{
	char host[INET6_ADDRSTRLEN + 2], *end;
	const char *colon = strrchr(text, ':');
	long port;
	size_t hl;

	if (!colon)
		return bad_argument("--listen '%s' is not HOST:PORT", text);
	port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || port < 1 || port > 65535)
		return bad_argument("--listen '%s': port must be 1-65535", text);
	hl = (size_t)(colon - text);
	if (hl >= sizeof(host))
		return bad_argument("--listen '%s' is not HOST:PORT", text);
	memcpy(host, text, hl);
	host[hl] = '\0';
	memset(sa, 0, sizeof(*sa));
	*v6 = host[0] == '[';
	if (*v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		if (hl < 2 || host[hl - 1] != ']')
			return bad_argument("--listen '%s': an IPv6 address goes in brackets", text);
		host[hl - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return bad_argument("--listen '%s': '%s' is not an IPv6 address", text, host + 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return bad_argument("--listen '%s': '%s' is not an IPv4 address", text, host);
	}
	return EXIT_SUCCESS;
}

static int parse_count(const char *opt, const char *text, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (!*text || *end || errno || v > max || text[0] == '-')
		return bad_argument("--%s '%s' is not a number 0-%lu", opt, text, max);
	*out = v;
	return EXIT_SUCCESS;
}

int cmd_export(const struct cmd_opts *o, int argc, char **argv)
{
	struct exporter x = { .stall_rtts = DEFAULT_STALL_RTTS };
	const char *listen = o->listen ? o->listen : DEFAULT_LISTEN;
	struct sockaddr_storage sa;
	struct MHD_Daemon *d;
	sigset_t set;
	bool v6 = false;
	int sig;

	(void)argc, (void)argv;
	if (parse_listen(listen, &sa, &v6) ||
		(o->flow_limit && parse_count("flows", o->flow_limit, MAX_FLOW_LIMIT, &x.flow_limit)) ||
		(o->stall_rtts && parse_count("stall-rtts", o->stall_rtts, MAX_STALL_RTTS, &x.stall_rtts)))
		return EXIT_USAGE;
	if (!x.stall_rtts)
		return bad_argument("--stall-rtts must be at least 1");
	if (check_root())
		return EXIT_FAILURE;
	if (!policy_exists())
		warn(0, "no policy: only the algorithms' series (bbrkit_algo_*) until bbrctl policy add");
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the HTTP thread starts: it inherits the mask */
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, handle,
		&x, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	if (!d)
		return fail(0, "cannot listen on %s (in use, or not an address of this host)", listen);
	fprintf(stderr, "bbrctl: export: serving http://%s/metrics\n", listen);
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	return EXIT_SUCCESS;
}
