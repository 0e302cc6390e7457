// SPDX-License-Identifier: GPL-2.0
/* One struct bbrkit_flow as a JSON object, a CSV row or a table row (flows and trace share it). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "bbrctl.h"

#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000.0
#define BITS_PER_BYTE 8ULL
#define BPS_PER_MBPS 1e6
#define ADDR_TEXT (INET6_ADDRSTRLEN + 8)

static const char *const mode_names[] = { "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT" };
static const char *const event_names[] = { "snapshot", "init", "round", "mode" };
/* TCP_CA_Open .. TCP_CA_Loss */
static const char *const ca_state_names[] = { "open", "disorder", "cwr", "recovery", "loss" };

static const char *name_of(const char *const *names, size_t n, unsigned int v)
{
	return v < n ? names[v] : "unknown";
}

#define NAME_OF(names, v) name_of(names, sizeof(names) / sizeof(names[0]), v)

/* BBR's bandwidths are packets per microsecond << BW_SCALE. */
static unsigned long long bw_to_bps(__u64 bw, __u32 mss)
{
	unsigned __int128 bits = (unsigned __int128)bw * mss * BITS_PER_BYTE * USEC_PER_SEC;

	return (unsigned long long)(bits >> BW_SCALE);
}

static unsigned long long bw_bps(const struct bbrkit_flow *f)
{
	return bw_to_bps(f->bw, f->mss);
}

static unsigned long long pacing_bps(const struct bbrkit_flow *f)
{
	return f->pacing_rate * BITS_PER_BYTE;
}

static const __u8 v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* IPv4 connections on dual-stack sockets carry v4-mapped addresses; show them as the IPv4 they
 * are on the wire, so that one flow looks the same from both ends.
 */
static void addr_text(char *buf, const struct bbrkit_flow *f, const __u8 *addr)
{
	bool v6 = f->flags & BBRKIT_F_IPV6;

	if (v6 && !memcmp(addr, v4_mapped_prefix, sizeof(v4_mapped_prefix)))
		v6 = false, addr += sizeof(v4_mapped_prefix);
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, addr, buf, INET6_ADDRSTRLEN))
		buf[0] = '\0';
}

static void addrs(const struct bbrkit_flow *f, char *s, char *d)
{
	addr_text(s, f, f->saddr);
	addr_text(d, f, f->daddr);
}

static double gain(__u32 v)
{
	return (double)v / BBR_UNIT;
}

void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static const char *const v3_phase_names[] = { "UP", "DOWN", "CRUISE", "REFILL", "-" };

static void variant_value(FILE *out, const struct variant_desc *v, const struct bbrkit_flow *f,
			  enum record_format fmt)
{
	__u32 x = f->variant[v->slot];

	if (x == BBRKIT_VAR_NONE && (v->kind == VAR_UINT || v->kind == VAR_BW)) {
		fputs(fmt == FMT_JSONL ? "null" : fmt == FMT_TABLE ? "-" : "", out);
		return;
	}
	switch (v->kind) {
	case VAR_GAIN:
		fprintf(out, "%.4g", gain(x));
		break;
	case VAR_BW:
		fprintf(out, "%llu", bw_to_bps(x, f->mss));
		break;
	case VAR_PERMILLE:
		fprintf(out, "%.3f", (double)x / BBRKIT_PERMILLE);
		break;
	case VAR_V3_PHASE:
		if (fmt == FMT_JSONL)
			json_string(out, NAME_OF(v3_phase_names, x));
		else
			fputs(NAME_OF(v3_phase_names, x), out);
		break;
	default: /* VAR_UINT */
		fprintf(out, "%u", x);
		break;
	}
}

void record_json(FILE *out, const struct algo *a, const struct bbrkit_flow *f)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	addrs(f, s, d);
	fprintf(out,
		"{\"t_ns\": %llu, \"algo\": \"%s\", \"event\": \"%s\", \"cookie\": %llu, "
		"\"netns\": %u, \"saddr\": \"%s\", \"sport\": %u, \"daddr\": \"%s\", \"dport\": %u, "
		"\"mode\": \"%s\", \"pacing_gain\": %.4g, \"cwnd_gain\": %.4g, \"bw_bps\": %llu, "
		"\"pacing_rate_bps\": %llu, \"min_rtt_us\": %u, \"rtt_us\": %u, \"srtt_us\": %u, "
		"\"cwnd\": %u, \"inflight\": %u, \"round\": %u, \"ca_state\": \"%s\", \"lost\": %u, "
		"\"retrans\": %u, \"delivered\": %u, \"mss\": %u",
		(unsigned long long)f->t_ns, a->name, NAME_OF(event_names, f->event),
		(unsigned long long)f->cookie, f->netns, s, f->sport, d, f->dport,
		NAME_OF(mode_names, f->mode), gain(f->pacing_gain), gain(f->cwnd_gain), bw_bps(f),
		pacing_bps(f), f->min_rtt_us, f->rtt_us, f->srtt_us, f->cwnd, f->inflight, f->round,
		NAME_OF(ca_state_names, f->ca_state), f->lost, f->retrans, f->delivered, f->mss);
	for (size_t i = 0; i < a->nvariants; i++) {
		fprintf(out, ", \"%s\": ", a->variants[i].key);
		variant_value(out, &a->variants[i], f, FMT_JSONL);
	}
	fputs("}\n", out);
}

static const char csv_columns[] =
	"t_ns,algo,event,cookie,netns,saddr,sport,daddr,dport,mode,pacing_gain,cwnd_gain,bw_bps,"
	"pacing_rate_bps,min_rtt_us,rtt_us,srtt_us,cwnd,inflight,round,ca_state,lost,retrans,"
	"delivered,mss";

/* The variant columns of all selected algorithms, each once, in table order. */
static bool first_with_key(const struct algo *const *sel, size_t ai, size_t vi)
{
	const char *key = sel[ai]->variants[vi].key;

	for (size_t i = 0; i <= ai; i++)
		for (size_t j = 0; j < sel[i]->nvariants && (i < ai || j < vi); j++)
			if (!strcmp(sel[i]->variants[j].key, key))
				return false;
	return true;
}

void record_csv_header(FILE *out, const struct algo *const *sel, size_t n)
{
	fputs(csv_columns, out);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < sel[i]->nvariants; j++)
			if (first_with_key(sel, i, j))
				fprintf(out, ",%s", sel[i]->variants[j].key);
	fputc('\n', out);
}

void record_csv(FILE *out, const struct algo *a, const struct bbrkit_flow *f,
		const struct algo *const *sel, size_t n)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	addrs(f, s, d);
	fprintf(out, "%llu,%s,%s,%llu,%u,%s,%u,%s,%u,%s,%.4g,%.4g,%llu,%llu,%u,%u,%u,%u,%u,%u,%s,%u,"
		     "%u,%u,%u",
		(unsigned long long)f->t_ns, a->name, NAME_OF(event_names, f->event),
		(unsigned long long)f->cookie, f->netns, s, f->sport, d, f->dport,
		NAME_OF(mode_names, f->mode), gain(f->pacing_gain), gain(f->cwnd_gain), bw_bps(f),
		pacing_bps(f), f->min_rtt_us, f->rtt_us, f->srtt_us, f->cwnd, f->inflight, f->round,
		NAME_OF(ca_state_names, f->ca_state), f->lost, f->retrans, f->delivered, f->mss);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < sel[i]->nvariants; j++) {
			const struct variant_desc *v = &sel[i]->variants[j];
			const struct variant_desc *mine = NULL;

			if (!first_with_key(sel, i, j))
				continue;
			for (size_t k = 0; k < a->nvariants; k++)
				if (!strcmp(a->variants[k].key, v->key))
					mine = &a->variants[k];
			fputc(',', out);
			if (mine)
				variant_value(out, mine, f, FMT_CSV);
		}
	}
	fputc('\n', out);
}

void record_table_header(FILE *out)
{
	fprintf(out, "%-12s %-21s %-21s %-9s %5s %5s %9s %8s %8s %6s %6s %9s %6s %-8s %5s %5s %s\n",
		"ALGO", "SOURCE", "DESTINATION", "MODE", "PGAIN", "CGAIN", "BW_MBPS", "MINRTTMS",
		"RTT_MS", "CWND", "INFLT", "PACE_MBPS", "ROUND", "CA", "LOST", "RETR", "VARIANT");
}

void record_table_row(FILE *out, const struct algo *a, const struct bbrkit_flow *f)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], src[ADDR_TEXT], dst[ADDR_TEXT];
	bool v6;

	addrs(f, s, d);
	v6 = strchr(s, ':') != NULL;
	snprintf(src, sizeof(src), v6 ? "[%s]:%u" : "%s:%u", s, f->sport);
	snprintf(dst, sizeof(dst), v6 ? "[%s]:%u" : "%s:%u", d, f->dport);
	fprintf(out, "%-12s %-21s %-21s %-9s %5.2f %5.2f %9.2f %8.3f %8.3f %6u %6u %9.2f %6u %-8s "
		     "%5u %5u ",
		a->name, src, dst, NAME_OF(mode_names, f->mode), gain(f->pacing_gain),
		gain(f->cwnd_gain), bw_bps(f) / BPS_PER_MBPS, f->min_rtt_us / USEC_PER_MSEC,
		f->rtt_us / USEC_PER_MSEC, f->cwnd, f->inflight, pacing_bps(f) / BPS_PER_MBPS,
		f->round, NAME_OF(ca_state_names, f->ca_state), f->lost, f->retrans);
	for (size_t i = 0; i < a->nvariants; i++) {
		fprintf(out, "%s%s=", i ? " " : "", a->variants[i].key);
		variant_value(out, &a->variants[i], f, FMT_TABLE);
	}
	if (!a->nvariants)
		fputc('-', out);
	fputc('\n', out);
}
