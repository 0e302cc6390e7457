// SPDX-License-Identifier: GPL-2.0
/* The per-flow record (struct bbrkit_flow) as flows and trace print it. RECORD_FIELDS is the one
 * definition of its keys, units and formats: JSON, CSV, the flows table and the key list of --help
 * (and through it the README's) all come from it.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "bbrctl.h"

#define USEC_PER_SEC 1000000ULL
#define BITS_PER_BYTE 8ULL
#define GAIN_DIGITS 4 /* 1/256 steps need no more than 4 significant digits */
#define CELL_TEXT (INET6_ADDRSTRLEN + 8)

static const char *const mode_names[] = { "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT" };
static const char *const event_names[] = { "snapshot", "init", "round", "mode", "phase", "idle", "undo" };
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

unsigned long long record_bw_bps(__u64 bw, __u32 mss)
{
	return bw_to_bps(bw, mss);
}

const char *record_mode_name(unsigned int mode)
{
	return NAME_OF(mode_names, mode);
}

const char *record_ca_state_name(unsigned int state)
{
	return NAME_OF(ca_state_names, state);
}

static unsigned long long bw_bps(const struct bbrkit_flow *f)
{
	return bw_to_bps(f->bw, f->mss);
}

static const __u8 v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* IPv4 connections on dual-stack sockets carry v4-mapped addresses; show them as the IPv4 they
 * are on the wire, so that one flow looks the same from both ends.
 */
static const char *addr_text(char *buf, const struct bbrkit_flow *f, const __u8 *addr)
{
	bool v6 = f->flags & BBRKIT_F_IPV6;

	if (v6 && !memcmp(addr, v4_mapped_prefix, sizeof(v4_mapped_prefix)))
		v6 = false, addr += sizeof(v4_mapped_prefix);
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, addr, buf, INET6_ADDRSTRLEN))
		buf[0] = '\0';
	return buf;
}

/* A record flag as 0 or 1. */
static unsigned int flag(const struct bbrkit_flow *f, __u32 bit)
{
	return !!(f->flags & bit);
}

/* A bound of the record: -1 when unset (BBRKIT_VAR_NONE). */
static long long bound(__u32 v)
{
	return v == BBRKIT_VAR_NONE ? -1 : (long long)v;
}

static long long bound_bps(const struct bbrkit_flow *f, __u32 bw)
{
	return bw == BBRKIT_VAR_NONE ? -1 : (long long)bw_to_bps(bw, f->mss);
}

static double gain(__u32 v)
{
	return (double)v / BBR_UNIT;
}

/* Kinds of value: how each is written in JSON and CSV. */
enum field_kind {
	KIND_UINT, /* unsigned integer */
	KIND_GAIN, /* a gain or a fraction, written as a decimal number */
	KIND_TEXT, /* a name or an address, a JSON string */
	KIND_NULL, /* not set: JSON null, an empty CSV cell */
};
/* A bound: KIND_UINT, or KIND_NULL when unset (value < 0). */
#define KIND_BOUND KIND_UINT

struct field_value {
	enum field_kind kind;
	unsigned long long u;
	double g;
	const char *s;
};

/* key, kind, unit, value (from a: the algorithm, f: the record, text: a buffer), flows table
 * column (NULL: not shown there), column width (negative: left-aligned), divisor and decimals of
 * the table's value, meaning.
 */
#define RECORD_FIELDS(X) \
	X(t_ns, UINT, "ns", f->t_ns, NULL, 0, 1, 0, "CLOCK_MONOTONIC time (Python's time.monotonic_ns())") \
	X(algo, TEXT, "", a->name, "ALGO", -12, 1, 0, "congestion control") \
	X(event, TEXT, "", NAME_OF(event_names, f->event), NULL, 0, 1, 0, \
		"why the record was made: snapshot, init, round, mode, phase, idle, undo") \
	X(cookie, UINT, "", f->cookie, NULL, 0, 1, 0, \
		"flow id: when the flow started using the algorithm, CLOCK_MONOTONIC ns") \
	X(netns, UINT, "", f->netns, NULL, 0, 1, 0, "network namespace inode") \
	X(saddr, TEXT, "", addr_text(text, f, f->saddr), "SOURCE", -21, 1, 0, "source address") \
	X(sport, UINT, "", f->sport, NULL, 0, 1, 0, "source port") \
	X(daddr, TEXT, "", addr_text(text, f, f->daddr), "DESTINATION", -21, 1, 0, "destination address") \
	X(dport, UINT, "", f->dport, NULL, 0, 1, 0, "destination port") \
	X(mode, TEXT, "", NAME_OF(mode_names, f->mode), "MODE", -9, 1, 0, \
		"STARTUP, DRAIN, PROBE_BW, PROBE_RTT") \
	X(pacing_gain, GAIN, "x", f->pacing_gain, "PGAIN", 5, 1, 2, "pacing gain actually applied") \
	X(cwnd_gain, GAIN, "x", f->cwnd_gain, "CGAIN", 5, 1, 2, "cwnd gain") \
	X(bw_bps, UINT, "bit/s", bw_bps(f), "BW_MBPS", 9, 1e6, 2, "bandwidth estimate") \
	X(pacing_rate_bps, UINT, "bit/s", f->pacing_rate *BITS_PER_BYTE, "PACE_MBPS", 9, 1e6, 2, \
		"pacing rate") \
	X(min_rtt_us, UINT, "us", f->min_rtt_us, "MINRTTMS", 8, 1e3, 3, "windowed minimum RTT") \
	X(rtt_us, UINT, "us", f->rtt_us, "RTT_MS", 8, 1e3, 3, "latest RTT sample") \
	X(srtt_us, UINT, "us", f->srtt_us, NULL, 0, 1, 0, "smoothed RTT") \
	X(cwnd, UINT, "packets", f->cwnd, "CWND", 6, 1, 0, "congestion window") \
	X(inflight, UINT, "packets", f->inflight, "INFLT", 6, 1, 0, "packets in flight") \
	X(round, UINT, "", f->round, "ROUND", 6, 1, 0, "packet-timed round trips so far") \
	X(ca_state, TEXT, "", NAME_OF(ca_state_names, f->ca_state), "CA", -8, 1, 0, \
		"open, disorder, cwr, recovery, loss") \
	X(lost, UINT, "packets", f->lost, "LOST", 5, 1, 0, "lost so far") \
	X(retrans, UINT, "packets", f->retrans, "RETR", 5, 1, 0, "retransmitted so far") \
	X(delivered, UINT, "packets", f->delivered, NULL, 0, 1, 0, "delivered so far") \
	X(mss, UINT, "bytes", f->mss, NULL, 0, 1, 0, "maximum segment size") \
	X(cycle_idx, UINT, "", f->cycle_idx, NULL, 0, 1, 0, \
		"PROBE_BW gain cycle phase: bbr1 family 0-7 (0 probes, 1 drains); bbr2/bbr3 0 UP, 1 DOWN, " \
		"2 CRUISE, 3 REFILL") \
	X(full_bw_reached, UINT, "", flag(f, BBRKIT_F_FULL_BW_REACHED), NULL, 0, 1, 0, \
		"1 once STARTUP found the pipe full") \
	X(full_bw_now, UINT, "", flag(f, BBRKIT_F_FULL_BW_NOW), NULL, 0, 1, 0, \
		"1 while the delivery rate has plateaued, which ends STARTUP and UP (bbr3; 0 for the " \
		"others)") \
	X(full_bw_bps, UINT, "bit/s", bw_to_bps(f->full_bw, f->mss), NULL, 0, 1, 0, \
		"the plateau check's baseline: growth is measured against it") \
	X(full_bw_cnt, UINT, "rounds", f->full_bw_cnt, NULL, 0, 1, 0, \
		"rounds without 25% growth over full_bw") \
	X(max_bw_bps, UINT, "bit/s", bw_to_bps(f->max_bw, f->mss), NULL, 0, 1, 0, \
		"max filter: bbr1 family over 10 rounds; bbr2/bbr3 over 2 probe cycles (bw_hi)") \
	X(max_bw_last_cycle_bps, UINT, "bit/s", bw_to_bps(f->max_bw_cycle[0], f->mss), NULL, 0, 1, 0, \
		"max_bw's slot of the last probe cycle (bbr2/bbr3; 0 for the others)") \
	X(max_bw_this_cycle_bps, UINT, "bit/s", bw_to_bps(f->max_bw_cycle[1], f->mss), NULL, 0, 1, 0, \
		"max_bw's slot of this probe cycle (bbr2/bbr3; 0 for the others)") \
	X(bw_shortterm_bps, BOUND, "bit/s", bound_bps(f, f->bw_shortterm), NULL, 0, 1, 0, \
		"short-term bandwidth bound, bw_lo (bbr2/bbr3, null: unset; 0 for the others)") \
	X(inflight_longterm, BOUND, "packets", bound(f->inflight_longterm), NULL, 0, 1, 0, \
		"long-term inflight bound, inflight_hi (bbr2/bbr3, null: unset; 0 for the others)") \
	X(inflight_shortterm, BOUND, "packets", bound(f->inflight_shortterm), NULL, 0, 1, 0, \
		"short-term inflight bound, inflight_lo (bbr2/bbr3, null: unset; 0 for the others)") \
	X(undo_bw_shortterm_bps, BOUND, "bit/s", bound_bps(f, f->undo_bw_shortterm), NULL, 0, 1, 0, \
		"bw_shortterm saved on entering recovery, restored by undo (bbr2/bbr3; 0 for the others)") \
	X(undo_inflight_shortterm, BOUND, "packets", bound(f->undo_inflight_shortterm), NULL, 0, 1, 0, \
		"inflight_shortterm saved likewise (bbr2/bbr3; 0 for the others)") \
	X(undo_inflight_longterm, BOUND, "packets", bound(f->undo_inflight_longterm), NULL, 0, 1, 0, \
		"inflight_longterm saved likewise (bbr2/bbr3; 0 for the others)") \
	X(prior_cwnd, UINT, "packets", f->prior_cwnd, NULL, 0, 1, 0, \
		"cwnd saved on entering recovery or PROBE_RTT, restored after") \
	X(drain_start_round, UINT, "", f->drain_start_round, NULL, 0, 1, 0, \
		"round of the last entry to DRAIN (bbr2/bbr3; 0 for the others)") \
	X(extra_acked, UINT, "packets", f->extra_acked, NULL, 0, 1, 0, \
		"ACK aggregation estimate (windowed max)") \
	X(idle_restart, UINT, "", flag(f, BBRKIT_F_IDLE_RESTART), NULL, 0, 1, 0, \
		"1 from a restart after idle until the next ACK of data") \
	X(is_app_limited, UINT, "", flag(f, BBRKIT_F_RS_APP_LIMITED), NULL, 0, 1, 0, \
		"1 when the rate sample of the ACK behind the record was app-limited (0 without an ACK)") \
	X(app_limited, UINT, "", flag(f, BBRKIT_F_APP_LIMITED), NULL, 0, 1, 0, \
		"1 while the sender is marked app-limited (tp->app_limited)")

enum field_id {
#define FIELD_ID(key, ...) FIELD_##key,
	RECORD_FIELDS(FIELD_ID)
#undef FIELD_ID
		NFIELDS
};

static const struct field_desc {
	const char *key, *unit, *column, *meaning;
	enum field_kind kind;
	int width;
	double divisor;
	int decimals;
} fields[] = {
#define FIELD_DESC(key, kind, unit, value, column, width, divisor, decimals, meaning) \
	{ #key, unit, column, meaning, KIND_##kind, width, divisor, decimals },
	RECORD_FIELDS(FIELD_DESC)
#undef FIELD_DESC
};

#define SET_UINT(v, x) ((v)->u = (x))
#define SET_GAIN(v, x) ((v)->g = gain(x))
#define SET_TEXT(v, x) ((v)->s = (x))
#define SET_BOUND(v, x) set_bound(v, x)

static void set_bound(struct field_value *v, long long x)
{
	if (x < 0)
		v->kind = KIND_NULL;
	else
		v->u = (unsigned long long)x;
}

/* text: at least INET6_ADDRSTRLEN bytes, for addresses. */
static void field_value(enum field_id id, const struct algo *a, const struct bbrkit_flow *f, char *text,
	struct field_value *v)
{
	v->kind = fields[id].kind;
	switch (id) {
#define FIELD_CASE(key, kind, unit, value, ...) \
	case FIELD_##key: \
		SET_##kind(v, value); \
		break;
		RECORD_FIELDS(FIELD_CASE)
#undef FIELD_CASE
	case NFIELDS:
		break;
	}
}

static const char *const variant_units[] = {
	[VAR_UINT] = "",
	[VAR_GAIN] = "x",
	[VAR_BW] = "bit/s",
	[VAR_PERMILLE] = "ratio",
	[VAR_V3_PHASE] = "",
	[VAR_USEC] = "us",
};

static const char *const v3_phase_names[] = { "UP", "DOWN", "CRUISE", "REFILL", "-" };

const char *record_phase_name(unsigned int phase)
{
	return NAME_OF(v3_phase_names, phase);
}

/* BBRKIT_VAR_NONE in a count, a bandwidth or a time means "not set": JSON null, an empty CSV cell, "-". */
static void variant_value(const struct variant_desc *d, const struct bbrkit_flow *f, struct field_value *v)
{
	__u32 x = f->variant[d->slot];

	if (x == BBRKIT_VAR_NONE && (d->kind == VAR_UINT || d->kind == VAR_BW || d->kind == VAR_USEC)) {
		v->kind = KIND_NULL;
		return;
	}
	switch (d->kind) {
	case VAR_GAIN:
		v->kind = KIND_GAIN;
		v->g = gain(x);
		break;
	case VAR_PERMILLE:
		v->kind = KIND_GAIN;
		v->g = (double)x / BBRKIT_PERMILLE;
		break;
	case VAR_BW:
		v->kind = KIND_UINT;
		v->u = bw_to_bps(x, f->mss);
		break;
	case VAR_V3_PHASE:
		v->kind = KIND_TEXT;
		v->s = NAME_OF(v3_phase_names, x);
		break;
	default: /* VAR_UINT, VAR_USEC */
		v->kind = KIND_UINT;
		v->u = x;
	}
}

static void json_value(struct json *j, const struct field_value *v)
{
	switch (v->kind) {
	case KIND_UINT:
		json_uint(j, v->u);
		break;
	case KIND_GAIN:
		json_double(j, v->g, GAIN_DIGITS);
		break;
	case KIND_TEXT:
		json_string(j, v->s);
		break;
	case KIND_NULL:
		json_null(j);
		break;
	}
}

/* CSV cells need no quoting: names and addresses contain no comma, quote or newline. */
static void csv_value(FILE *out, const struct field_value *v)
{
	switch (v->kind) {
	case KIND_UINT:
		fprintf(out, "%llu", v->u);
		break;
	case KIND_GAIN:
		fprintf(out, "%.*g", GAIN_DIGITS, v->g);
		break;
	case KIND_TEXT:
		fputs(v->s, out);
		break;
	case KIND_NULL:
		break;
	}
}

void record_json(FILE *out, const struct algo *a, const struct bbrkit_flow *f)
{
	struct json j;

	json_init(&j, out);
	record_json_object(&j, a, f);
}

void record_json_object(struct json *j, const struct algo *a, const struct bbrkit_flow *f)
{
	char text[INET6_ADDRSTRLEN];
	struct field_value v;

	json_object(j);
	for (int id = 0; id < NFIELDS; id++) {
		field_value(id, a, f, text, &v);
		json_key(j, fields[id].key);
		json_value(j, &v);
	}
	for (size_t i = 0; i < a->nvariants; i++) {
		variant_value(&a->variants[i], f, &v);
		json_key(j, a->variants[i].key);
		json_value(j, &v);
	}
	json_object_end(j);
}

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
	for (int id = 0; id < NFIELDS; id++)
		fprintf(out, "%s%s", id ? "," : "", fields[id].key);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < sel[i]->nvariants; j++)
			if (first_with_key(sel, i, j))
				fprintf(out, ",%s", sel[i]->variants[j].key);
	fputc('\n', out);
}

void record_csv(
	FILE *out, const struct algo *a, const struct bbrkit_flow *f, const struct algo *const *sel, size_t n)
{
	char text[INET6_ADDRSTRLEN];
	struct field_value v;

	for (int id = 0; id < NFIELDS; id++) {
		field_value(id, a, f, text, &v);
		if (id)
			fputc(',', out);
		csv_value(out, &v);
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < sel[i]->nvariants; j++) {
			const char *key = sel[i]->variants[j].key;

			if (!first_with_key(sel, i, j))
				continue;
			fputc(',', out);
			for (size_t k = 0; k < a->nvariants; k++) {
				if (!strcmp(a->variants[k].key, key)) {
					variant_value(&a->variants[k], f, &v);
					csv_value(out, &v);
				}
			}
		}
	}
	fputc('\n', out);
}

void record_table_header(FILE *out)
{
	for (int id = 0; id < NFIELDS; id++)
		if (fields[id].column)
			fprintf(out, "%*s ", fields[id].width, fields[id].column);
	fputs("VARIANT\n", out);
}

/* A table cell: addresses with their port, numbers scaled to the column's unit. */
static void table_cell(FILE *out, enum field_id id, const struct field_value *v, const struct bbrkit_flow *f)
{
	const struct field_desc *d = &fields[id];
	char cell[CELL_TEXT];

	switch (v->kind) {
	case KIND_UINT:
		fprintf(out, "%*.*f ", d->width, d->decimals, (double)v->u / d->divisor);
		return;
	case KIND_GAIN:
		fprintf(out, "%*.*f ", d->width, d->decimals, v->g);
		return;
	case KIND_NULL:
		fprintf(out, "%*s ", d->width, "-");
		return;
	case KIND_TEXT:
		break;
	}
	if (id == FIELD_saddr || id == FIELD_daddr) {
		bool v6 = strchr(v->s, ':') != NULL;

		snprintf(cell, sizeof(cell), v6 ? "[%s]:%u" : "%s:%u", v->s,
			id == FIELD_saddr ? f->sport : f->dport);
		fprintf(out, "%*s ", d->width, cell);
	} else {
		fprintf(out, "%*s ", d->width, v->s);
	}
}

void record_table_row(FILE *out, const struct algo *a, const struct bbrkit_flow *f)
{
	char text[INET6_ADDRSTRLEN];
	struct field_value v;

	for (int id = 0; id < NFIELDS; id++) {
		if (!fields[id].column)
			continue;
		field_value(id, a, f, text, &v);
		table_cell(out, id, &v, f);
	}
	for (size_t i = 0; i < a->nvariants; i++) {
		variant_value(&a->variants[i], f, &v);
		fprintf(out, "%s%s=", i ? " " : "", a->variants[i].key);
		if (v.kind == KIND_NULL)
			fputc('-', out);
		else
			csv_value(out, &v);
	}
	if (!a->nvariants)
		fputc('-', out);
	fputc('\n', out);
}

/* The key list of `trace --help` and `flows --help`, which the README's list is checked against. */
void record_keys_help(FILE *out)
{
	fprintf(out, "record keys (JSON and CSV; the flows table shows some, scaled):\n");
	for (int id = 0; id < NFIELDS; id++)
		fprintf(out, "  %-23s %-8s %s\n", fields[id].key, fields[id].unit, fields[id].meaning);
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);

		for (size_t j = 0; j < a->nvariants; j++) {
			const struct variant_desc *v = &a->variants[j];
			char owners[128];
			size_t used = 0;
			bool first = true;

			for (size_t k = 0; k < nalgos && first; k++)
				for (size_t m = 0; k < i && m < algo_at(k)->nvariants; m++)
					first &= !!strcmp(algo_at(k)->variants[m].key, v->key);
			if (!first)
				continue;
			owners[0] = '\0';
			for (size_t k = i; k < nalgos; k++)
				for (size_t m = 0; m < algo_at(k)->nvariants; m++)
					if (!strcmp(algo_at(k)->variants[m].key, v->key) &&
						used < sizeof(owners))
						used += snprintf(owners + used, sizeof(owners) - used, "%s%s",
							used ? ", " : "", algo_at(k)->name);
			fprintf(out, "  %-23s %-8s %s: %s\n", v->key, variant_units[v->kind], owners,
				v->help ? v->help : "variant state");
		}
	}
}
