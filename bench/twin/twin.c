// SPDX-License-Identifier: GPL-2.0
/* bbrkit-twin: the command line. Reads the path and sender schedule, runs the chosen algorithm's
 * host build through it (twin_algo.c) and prints each trace record as one JSON line with the keys of
 * `bbrctl trace --format jsonl`, written by the same code (loader/record.c).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bbrctl.h"
#include "twin.h"

#define EXIT_USAGE_ERROR 2
#define US_PER_S 1e6
#define MAX_DURATION_US (3600ULL * 1000000) /* an hour: far beyond any test case */
#define MIN_RATE_BPS 8000ULL		    /* 1 kB/s: one packet every 1.4 s */

#define TWIN_MUTATION_HELP(name, help) "                             " #name ": " help "\n"

static const char usage_text[] =
	"usage: bbrkit-twin --algo ALGO --rate RATE[@TIME][,RATE@TIME...] --rtt TIME [options]\n"
	"\n"
	"Runs one TCP transfer of ALGO (bbr1, bbr2, bbr3, bbr_draft: the same C as the BPF programs)\n"
	"through a simulated path and sender schedule, deterministically, and prints its trace records\n"
	"as JSON lines with the keys of `bbrctl trace --format jsonl` (t_ns: time since the transfer\n"
	"began).\n"
	"\n"
	"  --algo ALGO              bbr1, bbr2, bbr3 or bbr_draft\n"
	"  --rate LIST              bottleneck rate from each time on, e.g. 10mbit@0,100mbit@10s\n"
	"                           (units bit, kbit, mbit, gbit; the first entry is at 0)\n"
	"  --rtt TIME               base round trip, e.g. 40ms (units us, ms, s)\n"
	"  --buffer SIZE            bottleneck FIFO: b, kb, mb (10^3) or p (packets of 1448 bytes);\n"
	"                           default one BDP at the highest rate\n"
	"  --app-limit LIST         the application writes RATE over a window: RATE@FROM-TO,...\n"
	"  --pause LIST             the application writes nothing: FROM-TO,...\n"
	"  --loss LIST              random drops at the bottleneck: PERCENT% or PERCENT%@FROM-TO,...\n"
	"  --spurious-loss LIST     TIME,...: the first packet sent then is reordered by half an RTT, so\n"
	"                           it is marked lost, retransmitted, and the recovery undone\n"
	"  --ack-aggregation TIME   ACKs leave the path in bursts, at multiples of TIME\n"
	"  --policer RATE/SIZE      a token bucket ahead of the FIFO, e.g. 10mbit/30000b: frames\n"
	"                           (1514 bytes) beyond RATE and a burst of SIZE are dropped\n"
	"  --ack-blackout LIST      FROM-TO,...: ACKs due in the window reach the sender at its end; one\n"
	"                           longer than the RTO (200ms + srtt) makes a spurious RTO, undone\n"
	"  --duration TIME          length of the transfer (default 10s)\n"
	"  --seed N                 seed of the random drops and the algorithm's random draws (default 1)\n"
	"  --mutate NAME            break one step of the algorithm a conformance case "
	"tests:\n" TWIN_MUTATIONS(TWIN_MUTATION_HELP) "  --help                   this text\n";

static const char *option_name;
static const char *option_value;

/* One line naming the option and what is wrong with it; exits. */
static __attribute__((noreturn, format(printf, 1, 2))) void bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bbrkit-twin: bad --%s '%s': ", option_name, option_value);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE_ERROR);
}

/* A whole-run problem, not one option's value; exits. */
static __attribute__((noreturn)) void refuse(const char *what)
{
	fprintf(stderr, "bbrkit-twin: %s (see --help)\n", what);
	exit(EXIT_USAGE_ERROR);
}

struct unit {
	const char *name;
	double scale;
};

static const struct unit time_units[] = { { "us", 1 }, { "ms", 1e3 }, { "s", 1e6 }, { NULL, 0 } };
static const struct unit rate_units[] = { { "bit", 1 }, { "kbit", 1e3 }, { "mbit", 1e6 }, { "gbit", 1e9 },
	{ NULL, 0 } };
static const struct unit size_units[] = { { "b", 1 }, { "kb", 1e3 }, { "mb", 1e6 }, { "p", TWIN_MSS },
	{ NULL, 0 } };

/* A non-negative number with one of `units`; a bare 0 needs none. */
static uint64_t quantity(const char *text, const struct unit *units, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (end == text || errno || !isfinite(v) || v < 0 || isspace((unsigned char)*text))
		bad("'%s' is not a %s", text, what);
	if (!*end && v == 0)
		return 0;
	for (const struct unit *u = units; u->name; u++)
		if (!strcasecmp(end, u->name))
			return (uint64_t)llround(v * u->scale);
	bad("'%s' needs a unit for a %s", text, what);
}

static uint64_t time_us(const char *text)
{
	return quantity(text, time_units, "time (us, ms, s)");
}

static uint64_t rate_bps(const char *text)
{
	uint64_t v = quantity(text, rate_units, "rate (bit, kbit, mbit, gbit)");

	if (v < MIN_RATE_BPS)
		bad("rate '%s' is below 8kbit", text);
	return v;
}

/* FROM-TO into w, FROM < TO. */
static void window(char *text, struct twin_window *w)
{
	char *dash = strchr(text, '-');

	if (!dash)
		bad("'%s' is not a window FROM-TO", text);
	*dash = '\0';
	w->from_us = time_us(text);
	w->to_us = time_us(dash + 1);
	if (w->from_us >= w->to_us)
		bad("the window ends before it starts");
}

/* Splits a comma list into at most TWIN_MAX_ITEMS items; returns how many. */
static int items(char *list, char **out)
{
	int n = 0;

	for (char *save = NULL, *it = strtok_r(list, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		if (n == TWIN_MAX_ITEMS)
			bad("more than %d entries", TWIN_MAX_ITEMS);
		out[n++] = it;
	}
	if (!n)
		bad("empty list");
	return n;
}

static void parse_rate(char *list, struct twin_cfg *c)
{
	char *it[TWIN_MAX_ITEMS];

	c->nrate = items(list, it);
	for (int i = 0; i < c->nrate; i++) {
		char *at = strchr(it[i], '@');

		if (at)
			*at = '\0';
		c->rate[i].value = rate_bps(it[i]);
		c->rate[i].at_us = at ? time_us(at + 1) : 0;
		if (i == 0 && c->rate[i].at_us)
			bad("the first rate must start at 0");
		if (i > 0 && c->rate[i].at_us <= c->rate[i - 1].at_us)
			bad("rate changes must come in time order");
	}
}

static void parse_app_limit(char *list, struct twin_cfg *c)
{
	char *it[TWIN_MAX_ITEMS];

	c->napp = items(list, it);
	for (int i = 0; i < c->napp; i++) {
		char *at = strchr(it[i], '@');

		if (!at)
			bad("'%s' is not RATE@FROM-TO", it[i]);
		*at = '\0';
		c->app[i].value = rate_bps(it[i]);
		window(at + 1, &c->app[i]);
	}
}

/* FROM-TO,... into w; returns how many. */
static int windows(char *list, struct twin_window *w)
{
	char *it[TWIN_MAX_ITEMS];
	int n = items(list, it);

	for (int i = 0; i < n; i++)
		window(it[i], &w[i]);
	return n;
}

static void parse_loss(char *list, struct twin_cfg *c)
{
	char *it[TWIN_MAX_ITEMS];

	c->nloss = items(list, it);
	for (int i = 0; i < c->nloss; i++) {
		char *at = strchr(it[i], '@'), *pct = strchr(it[i], '%'), *end;
		double v;

		if (!pct || (at ? pct + 1 != at : pct[1] != '\0'))
			bad("'%s' is not PERCENT%% or PERCENT%%@FROM-TO", it[i]);
		*pct = '\0';
		errno = 0;
		v = strtod(it[i], &end);
		if (end == it[i] || *end || errno || !(v >= 0 && v <= 100))
			bad("'%s' is not a percentage from 0 to 100", it[i]);
		c->loss[i].value = (uint64_t)llround(v * 1e4); /* per million */
		if (at)
			window(at + 1, &c->loss[i]);
		else
			c->loss[i].to_us = UINT64_MAX;
	}
}

static void parse_spurious(char *list, struct twin_cfg *c)
{
	char *it[TWIN_MAX_ITEMS];

	c->nspurious = items(list, it);
	for (int i = 0; i < c->nspurious; i++) {
		c->spurious_us[i] = time_us(it[i]);
		if (i > 0 && c->spurious_us[i] <= c->spurious_us[i - 1])
			bad("times must come in order");
	}
}

static void parse_policer(char *text, struct twin_cfg *c)
{
	char *slash = strchr(text, '/');

	if (!slash)
		bad("'%s' is not RATE/SIZE", option_value);
	*slash = '\0';
	c->policer_bps = rate_bps(text);
	c->policer_burst_bytes = quantity(slash + 1, size_units, "size (b, kb, mb, p)");
	if (c->policer_burst_bytes < TWIN_FRAME_BYTES)
		bad("the bucket holds less than one frame (1514 bytes)");
}

static void parse_seed(const char *text, struct twin_cfg *c)
{
	char *end;

	errno = 0;
	c->seed = strtoull(text, &end, 10);
	if (end == text || *end || errno || *text == '-')
		bad("not a whole number");
}

static void parse_buffer(const char *text, struct twin_cfg *c)
{
	c->buffer_bytes = quantity(text, size_units, "size (b, kb, mb, p)");
	if (c->buffer_bytes < TWIN_MSS)
		bad("the buffer holds less than one packet (1448 bytes)");
}

static void parse_mutation(const char *text, struct twin_cfg *c)
{
#define TWIN_MUTATION_NAME(name, help) #name,
	static const char *const names[] = { TWIN_MUTATIONS(TWIN_MUTATION_NAME) };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(text, names[i])) {
			c->mutation = (enum twin_mutation)(i + 1);
			return;
		}
	bad("no such mutation (see --help)");
}

static const struct algo *twin_algo;
static int (*twin_run)(const struct twin_cfg *, twin_emit_fn);

static void parse_algo(const char *name)
{
	static const struct {
		const char *name;
		int (*run)(const struct twin_cfg *, twin_emit_fn);
	} runners[] = { { "bbr1", twin_run_bbr1 }, { "bbr2", twin_run_bbr2 }, { "bbr3", twin_run_bbr3 },
		{ "bbr_draft", twin_run_bbr_draft } };

	for (size_t i = 0; i < sizeof(runners) / sizeof(runners[0]); i++)
		if (!strcmp(name, runners[i].name)) {
			twin_run = runners[i].run;
			twin_algo = algo_find(name);
			return;
		}
	bad("the twin runs bbr1, bbr2, bbr3 or bbr_draft");
}

static void print_record(const struct bbrkit_flow *f)
{
	record_json(stdout, twin_algo, f);
}

/* Rejects what a run cannot mean: missing options, a buffer or run too large to simulate. */
static void check(struct twin_cfg *c, bool have_buffer)
{
	if (!twin_run)
		refuse("--algo is required");
	if (!c->nrate)
		refuse("--rate is required");
	if (!c->rtt_us)
		refuse("--rtt is required, above 0");
	if (!c->duration_us || c->duration_us > MAX_DURATION_US)
		refuse("--duration must be above 0 and at most 3600s");
	if (!have_buffer) {
		uint64_t top = 0;

		for (int i = 0; i < c->nrate; i++)
			top = c->rate[i].value > top ? c->rate[i].value : top;
		c->buffer_bytes = top / 8 * c->rtt_us / 1000000;
		if (c->buffer_bytes < TWIN_MSS)
			c->buffer_bytes = TWIN_MSS;
	}
	if (twin_packet_cap(c) > TWIN_MAX_PACKETS)
		refuse("--duration is too long at the highest --rate: over 8000000 packets to simulate");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "algo", required_argument, NULL, 'a' },
		{ "rate", required_argument, NULL, 'r' },
		{ "rtt", required_argument, NULL, 't' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "app-limit", required_argument, NULL, 'l' },
		{ "pause", required_argument, NULL, 'p' },
		{ "loss", required_argument, NULL, 'o' },
		{ "spurious-loss", required_argument, NULL, 's' },
		{ "ack-aggregation", required_argument, NULL, 'g' },
		{ "ack-blackout", required_argument, NULL, 'k' },
		{ "policer", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'e' },
		{ "mutate", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct twin_cfg c = { .duration_us = 10000000, .seed = 1 };
	bool have_buffer = false;
	char *value = NULL;
	int opt, index;

	algos_init();
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", options, &index)) != -1) {
		if (opt == '?' || opt == ':') {
			fprintf(stderr, "bbrkit-twin: unknown option or missing value: %s (see --help)\n",
				argv[optind - 1]);
			return EXIT_USAGE_ERROR;
		}
		if (opt == 'h') {
			fputs(usage_text, stdout);
			return EXIT_SUCCESS;
		}
		option_name = options[index].name;
		option_value = optarg;
		/* The parsers cut their copy; errors quote the value as given. */
		free(value);
		value = optarg ? strdup(optarg) : NULL;
		if (optarg && !value)
			refuse("out of memory");
		switch (opt) {
		case 'a':
			parse_algo(value);
			break;
		case 'r':
			parse_rate(value, &c);
			break;
		case 't':
			c.rtt_us = (uint32_t)time_us(value);
			if (time_us(value) > 10 * US_PER_S)
				bad("at most 10s");
			break;
		case 'b':
			parse_buffer(value, &c);
			have_buffer = true;
			break;
		case 'l':
			parse_app_limit(value, &c);
			break;
		case 'p':
			c.npause = windows(value, c.pause);
			break;
		case 'o':
			parse_loss(value, &c);
			break;
		case 's':
			parse_spurious(value, &c);
			break;
		case 'g':
			c.ack_aggregation_us = (uint32_t)time_us(value);
			if (time_us(value) > 10 * US_PER_S)
				bad("at most 10s");
			break;
		case 'k':
			c.nblackout = windows(value, c.blackout);
			break;
		case 'c':
			parse_policer(value, &c);
			break;
		case 'd':
			c.duration_us = time_us(value);
			break;
		case 'e':
			parse_seed(value, &c);
			break;
		case 'm':
			parse_mutation(value, &c);
			break;
		}
	}
	free(value);
	if (optind < argc) {
		fprintf(stderr, "bbrkit-twin: unexpected argument '%s' (see --help)\n", argv[optind]);
		return EXIT_USAGE_ERROR;
	}
	check(&c, have_buffer);
	if (twin_run(&c, print_record)) {
		fprintf(stderr, "bbrkit-twin: out of memory for %llu packets\n",
			(unsigned long long)twin_packet_cap(&c));
		return EXIT_FAILURE;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "bbrkit-twin: cannot write the records: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}
