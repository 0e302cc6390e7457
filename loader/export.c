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
#include <math.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <bpf/bpf.h>

#include "bbrctl.h"
#include "bbrkit_version.h"
#include "exposition.h"
#include "socks.h"

#define DEFAULT_LISTEN "127.0.0.1:9563" /* bbrkit's pick in the range Prometheus exporters use */
#define DEFAULT_STALL_RTTS 4 /* BBR's probes take about 1 RTT each: 4 without delivery is not pacing */
#define MAX_STALL_RTTS 1000
#define MAX_FLOW_LIMIT 100000 /* per-flow series: past this a scrape is a dump, not a metric */
#define NSEC_PER_SEC 1e9
#define BITS_PER_BYTE 8
#define PERMILLE 1000.0
#define NMODES 4  /* enum bbrkit_mode */
#define NPHASES 4 /* enum bbrkit_v3_phase without NONE */
#define NCA_STATES 5

struct exporter {
	unsigned long flow_limit;
	unsigned long stall_rtts;
	double last_scrape_s;
};

/* ---- per algorithm, from the algorithms' own records ---- */

struct algo_sums {
	unsigned long flows, modes[NMODES], phases[NPHASES], ca[NCA_STATES], hi_n, lo_n, v3_n;
	double pgain, cgain, hi, lo, loss, ecn;
	struct hist bw, pacing, min_rtt, srtt;
	bool has_totals;		  /* attached with the closed totals' pin */
	struct bbrkit_closed_totals done; /* its closed connections */
	double acked, retrans;		  /* done plus its live connections */
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
		hist_observe(
			&s->bw, HIST_BYTES_PER_SECOND, (double)record_bw_bps(f->bw, f->mss) / BITS_PER_BYTE);
		hist_observe(&s->pacing, HIST_BYTES_PER_SECOND, (double)f->pacing_rate);
		hist_observe(&s->min_rtt, HIST_SECONDS, f->min_rtt_us / USEC_PER_SEC);
		hist_observe(&s->srtt, HIST_SECONDS, f->srtt_us / USEC_PER_SEC);
		s->pgain += (double)f->pacing_gain / BBR_UNIT;
		s->cgain += (double)f->cwnd_gain / BBR_UNIT;
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

/* One gauge family over all algorithms; the value of algorithm i is expr over s = &sums[i]. */
#define ALGO_GAUGE(o, metric, help, expr) \
	do { \
		family(o, "bbrkit_algo_" metric, "gauge", help); \
		for (size_t i = 0; i < nsel; i++) { \
			const struct algo_sums *s = &sums[i]; \
			fprintf(o, "bbrkit_algo_" metric "{algo=\"%s\"} %.9g\n", sel[i]->name, \
				(double)(expr)); \
		} \
	} while (0)

#define ALGO_HIST(o, metric, kind, help, field) \
	do { \
		family(o, "bbrkit_algo_" metric, "histogram", help); \
		for (size_t i = 0; i < nsel; i++) { \
			char labels[BBRKIT_POLICY_NAME_MAX + 16]; \
			snprintf(labels, sizeof(labels), "algo=\"%s\"", sel[i]->name); \
			hist_write(o, "bbrkit_algo_" metric, labels, kind, &sums[i].field); \
		} \
	} while (0)

/* Flows per value of a label: counts, which sum across hosts where shares do not. */
struct count_family {
	const char *name, *label, *help;
	size_t offset; /* of the counts in struct algo_sums */
	unsigned int n;
	const char *(*value_name)(unsigned int);
	bool v3_only;
};

static const struct count_family count_families[] = {
	{ "bbrkit_algo_mode_flows", "mode",
		"flows in each mode at the scrape (over bbrkit_algo_flows, averaged over time: the time "
		"share)",
		offsetof(struct algo_sums, modes), NMODES, record_mode_name, false },
	{ "bbrkit_algo_phase_flows", "phase", "bbr2/bbr3: flows in each PROBE_BW phase at the scrape",
		offsetof(struct algo_sums, phases), NPHASES, record_phase_name, true },
	{ "bbrkit_algo_ca_state_flows", "state",
		"flows in each TCP congestion state (recovery, loss: the loss signal)",
		offsetof(struct algo_sums, ca), NCA_STATES, record_ca_state_name, false },
};

static void write_counts(FILE *o, const struct algo *const *sel, const struct algo_sums *sums, size_t nsel)
{
	for (size_t f = 0; f < sizeof(count_families) / sizeof(count_families[0]); f++) {
		const struct count_family *c = &count_families[f];

		family(o, c->name, "gauge", c->help);
		for (size_t i = 0; i < nsel; i++) {
			const unsigned long *counts = (const void *)((const char *)&sums[i] + c->offset);

			if (c->v3_only && !has_variant(sel[i], VAR_V3_PHASE))
				continue;
			for (unsigned int v = 0; v < c->n; v++)
				fprintf(o, "%s{algo=\"%s\",%s=\"%s\"} %lu\n", c->name, sel[i]->name, c->label,
					c->value_name(v), counts[v]);
		}
	}
}

/* The closed totals of an attached algorithm and the id of their map (a new one at each attach); false
 * where it has none pinned (attached by a bbrctl that predates them).
 */
static bool read_closed_totals(const struct algo *a, struct bbrkit_closed_totals *t, __u32 *map_id)
{
	int fd = open_pinned(a, BBRKIT_PIN_TOTALS, 0), err;
	struct bpf_map_info info = {};
	__u32 zero = 0, len = sizeof(info);

	if (fd < 0)
		return false;
	err = bpf_map_lookup_elem(fd, &zero, t) || bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	*map_id = info.id;
	return !err;
}

/* The highest counters exported for an algorithm's totals map (one per attachment), indexed as
 * algo_at(): the floor that keeps them from dropping (sum_totals).
 */
static struct totals_floor {
	__u32 map_id;
	double acked, retrans;
} floors[CLI_MANY];

/* The attached algorithms as one scrape reads them. */
struct algo_scrape {
	const struct algo *sel[CLI_MANY];
	size_t index[CLI_MANY], nsel; /* sel[i] is algo_at(index[i]) */
	struct algo_sums sums[CLI_MANY];
	__u32 map_ids[CLI_MANY]; /* of each one's closed totals */
};

/* The algorithms' own records and their closed connections' totals: read before the sockets. */
static void read_algos(struct algo_scrape *g)
{
	g->nsel = 0;
	for (size_t i = 0; i < nalgos && i < CLI_MANY; i++) { /* i < CLI_MANY: floors[] */
		const struct algo *a = algo_at(i);
		struct algo_sums *s = &g->sums[g->nsel];
		struct bbrkit_flow *f = NULL;
		size_t n = 0;

		if (!algo_attached(a) || check_attached_abi(a) || read_flows(a, &f, &n))
			continue;
		sum_algo(a, f, n, s);
		free(f);
		s->has_totals = read_closed_totals(a, &s->done, &g->map_ids[g->nsel]);
		s->acked = (double)s->done.bytes_acked;
		s->retrans = (double)s->done.total_retrans;
		g->index[g->nsel] = i;
		g->sel[g->nsel++] = a;
	}
}

/* Cumulative counters over every connection of each algorithm, however it chose the algorithm:
 * the closed ones' totals (the release callback's), then the live ones' own counters (iter/tcp).
 * The closed totals are read first, so that no connection is counted twice: one that closes after
 * that read is in neither, or in the live walk only. Each read is thus at most the true count, but
 * it can fall short for a while: a connection leaves the kernel's hash table (what iter/tcp walks)
 * when it reaches TIME_WAIT or CLOSE, and its release runs only at close(2), which its owner may
 * call later. The exported value is therefore the highest read so far for this attachment, which
 * never exceeds the true count either; it catches up once the owner closes the socket.
 */
static void sum_totals(struct algo_scrape *g, const struct scrape_socks *all)
{
	struct algo_sums *sums = g->sums;

	for (size_t i = 0; !all->ok && i < g->nsel; i++)
		sums[i].has_totals = false; /* without the live ones the sum is no count */
	for (const struct bbrkit_sock *k = (const void *)all->buf;
		all->ok && (const char *)(k + 1) <= all->buf + all->used; k++)
		for (size_t i = 0; i < g->nsel; i++)
			if (!strncmp(k->cc, g->sel[i]->name, sizeof(k->cc))) {
				sums[i].acked += (double)k->bytes_acked;
				sums[i].retrans += k->total_retrans;
			}
	for (size_t i = 0; i < g->nsel; i++) {
		struct totals_floor *f = &floors[g->index[i]];

		if (!sums[i].has_totals)
			continue;
		if (f->map_id != g->map_ids[i]) /* attached anew: a counter reset */
			*f = (struct totals_floor){ .map_id = g->map_ids[i] };
		f->acked = sums[i].acked = fmax(f->acked, sums[i].acked);
		f->retrans = sums[i].retrans = fmax(f->retrans, sums[i].retrans);
	}
}

static void write_totals(FILE *o, const struct algo *const *sel, const struct algo_sums *sums, size_t nsel)
{
	family(o, "bbrkit_algo_acked_bytes_total", "counter",
		"bytes sent and acknowledged (tcpi_bytes_acked) on every connection of the algorithm, "
		"closed and live");
	for (size_t i = 0; i < nsel; i++)
		if (sums[i].has_totals)
			fprintf(o, "bbrkit_algo_acked_bytes_total{algo=\"%s\"} %.17g\n", sel[i]->name,
				sums[i].acked);
	family(o, "bbrkit_algo_retransmitted_segments_total", "counter",
		"segments retransmitted (tcpi_total_retrans) on every connection of the algorithm, closed "
		"and live");
	for (size_t i = 0; i < nsel; i++)
		if (sums[i].has_totals)
			fprintf(o, "bbrkit_algo_retransmitted_segments_total{algo=\"%s\"} %.17g\n",
				sel[i]->name, sums[i].retrans);
}

static void write_algos(FILE *o, struct algo_scrape *g, const struct scrape_socks *all)
{
	const struct algo *const *sel = g->sel;
	const struct algo_sums *sums = g->sums;
	size_t nsel = g->nsel;

	sum_totals(g, all);
	write_totals(o, sel, sums, nsel);
	ALGO_GAUGE(o, "flows", "live connections using the algorithm", s->flows);
	ALGO_HIST(o, "bandwidth_estimate_bytes_per_second", HIST_BYTES_PER_SECOND,
		"bandwidth estimate (max-filtered delivery rate) of the live flows at the scrape", bw);
	ALGO_HIST(o, "pacing_rate_bytes_per_second", HIST_BYTES_PER_SECOND,
		"pacing rate of the live flows at the scrape", pacing);
	ALGO_HIST(o, "min_rtt_seconds", HIST_SECONDS, "windowed minimum RTT of the live flows at the scrape",
		min_rtt);
	ALGO_HIST(o, "srtt_seconds", HIST_SECONDS, "smoothed RTT of the live flows at the scrape", srtt);
	ALGO_GAUGE(o, "pacing_gain_ratio", "mean pacing gain applied", mean(s->pgain, s->flows));
	ALGO_GAUGE(o, "cwnd_gain_ratio", "mean cwnd gain", mean(s->cgain, s->flows));
	write_counts(o, sel, sums, nsel);
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
	family(o, "bbrkit_algo_loss_ratio", "gauge",
		"bbr2/bbr3: mean loss rate of the flows' last loss round");
	family(o, "bbrkit_algo_ecn_ce_ratio", "gauge",
		"bbr2/bbr3: mean CE-marked share of the flows' last round");
	for (size_t i = 0; i < nsel; i++) {
		if (!has_variant(sel[i], VAR_V3_PHASE))
			continue;
		fprintf(o, "bbrkit_algo_loss_ratio{algo=\"%s\"} %.6g\n", sel[i]->name,
			mean(sums[i].loss, sums[i].v3_n));
		fprintf(o, "bbrkit_algo_ecn_ce_ratio{algo=\"%s\"} %.6g\n", sel[i]->name,
			mean(sums[i].ecn, sums[i].v3_n));
	}
}

static char *render(struct exporter *x, size_t *len)
{
	static struct algo_scrape algos;
	struct scrape_socks all = {};
	bool policy;
	struct timespec t0, t1;
	char *body = NULL;
	FILE *o = open_memstream(&body, len);

	if (!o)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	family(o, "bbrkit_build_info", "gauge",
		"1, labelled with the bbrctl build and its algorithm objects");
	fprintf(o, "bbrkit_build_info{version=\"%s\",objects_sha256=\"%s\"} 1\n", BBRKIT_VERSION,
		BBRKIT_OBJECTS_SHA256);
	/* Both parts' closed connections before the live ones (sum_totals, write_policy). */
	policy = read_policy_counters();
	read_algos(&algos);
	all.ok = (algos.nsel || policy) && !read_socks(&all.buf, &all.used);
	write_algos(o, &algos, &all);
	if (policy)
		write_policy(o, &all, x->flow_limit, x->stall_rtts);
	free(all.buf);
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
	static const char not_allowed[] = "bbrctl export answers GET and HEAD only\n";
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len = 0;
	char *body;
	bool readonly = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	(void)version, (void)upload;
	/* A request with a body comes here once per chunk: consume it, answer at its end. */
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (!readonly && !*state) {
		*state = c; /* any non-NULL: the headers are in, the body (if any) comes next */
		return MHD_YES;
	}
	if (!readonly || strcmp(url, "/metrics")) {
		r = MHD_create_response_from_buffer(
			readonly ? sizeof(not_found) - 1 : sizeof(not_allowed) - 1,
			(void *)(readonly ? not_found : not_allowed), MHD_RESPMEM_PERSISTENT);
		if (!readonly)
			MHD_add_response_header(r, "Allow", "GET, HEAD");
		ret = MHD_queue_response(c, readonly ? MHD_HTTP_NOT_FOUND : MHD_HTTP_METHOD_NOT_ALLOWED, r);
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
