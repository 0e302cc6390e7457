// SPDX-License-Identifier: GPL-2.0
/*
 * bbrkit-link: a bottleneck link between two interfaces of one network namespace, for kernels without
 * netem, codel, fq_codel, cake or pie. Frames from --left leave on --right at a constant rate or on a
 * Mahimahi delivery trace, through a tail-drop, CoDel, FQ-CoDel, PIE, CAKE-subset or step-marking queue
 * (queue.c), with optional Gilbert-Elliott loss. Frames from --right go back to --left at once: the ACK
 * path is not shaped.
 *
 * This file parses the command line into one struct link_args, checks it (bad input stops before any
 * socket, thread or file exists), builds each direction's configuration from it and starts the
 * directions' threads (path.c); trace.c loads traces.
 *
 * Queueing, marking and dropping are per packet, so the link needs wire-size frames: the wrapper turns
 * segmentation offloads off upstream, and a GSO frame that still arrives is dropped and counted
 * (drop_gso).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "afpacket.h"
#include "path.h"
#include "process.h"
#include "queue.h"
#include "trace.h"

#define PROG "bbrkit-link"
#define BITS_PER_BYTE 8ULL
/* Ethernet header plus one VLAN tag on top of the MTU. */
#define L2_OVERHEAD_BYTES 18
#define DEFAULT_MTU 1500
#define MAX_MTU 9000
#define MIN_RATE_BPS 8000ULL
#define MAX_RATE_BPS 100000000000ULL
#define MAX_LIMIT_PKTS 1000000
#define MAX_LIMIT_BYTES (1ULL << 32)
#define DEFAULT_SOCKBUF_BYTES (32 << 20)
#define DEFAULT_LOG_INTERVAL_US 10000ULL
#define MAX_PARAM_MS 10000ULL

static int stop_pipe[2] = { -1, -1 };
static atomic_int fatal_error;
static const char *tag = "";
static struct lpath fwd = { .name = "forward" }, rev = { .name = "reverse" };

void link_fail(const char *what, int err)
{
	fprintf(stderr, PROG ": %s: %s\n", what, strerror(err));
	atomic_store(&fatal_error, 1);
	kill(getpid(), SIGTERM);
}

static void __attribute__((noreturn)) die(const char *fmt, const char *arg)
{
	fputs(PROG ": ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	return wire_parse_u64(PROG, opt, s, min, max);
}

static double parse_prob(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.0 && v <= 1.0)) {
		fprintf(stderr, PROG ": %s: '%s' is not a probability in 0..1 (see --help)\n", opt, s);
		exit(2);
	}
	return v;
}

static void print_stats(const char *event)
{
	printf("{\"event\":\"%s\",\"tag\":\"%s\"", event, tag);
	lp_print_counters(&fwd);
	printf(",\"rev_pkts\":%" PRIu64 ",\"rev_drop_tx\":%" PRIu64 "}\n",
		(uint64_t)atomic_load(&rev.pub.out_pkts), (uint64_t)atomic_load(&rev.pub.drop_tx));
	fflush(stdout);
}

static void usage(void)
{
	printf("Usage: " PROG " --left IF --right IF --tag TAG (--rate-bps N | --trace FILE) [options]\n"
	       "Forward frames from --left to --right through an emulated bottleneck (rate or trace,\n"
	       "queue, AQM, loss); frames from --right go to --left unshaped.\n"
	       "\n"
	       "  --left IF              data input interface\n"
	       "  --right IF             data output interface\n"
	       "  --tag TAG              label for this instance ([A-Za-z0-9._-], at most %d chars)\n"
	       "  --rate-bps N           constant link rate in bit/s of Ethernet frames (%llu..%llu)\n"
	       "  --trace FILE           Mahimahi trace: one line per %d-byte delivery opportunity,\n"
	       "                         in ms; loops with the last line's time as its period\n"
	       "  --aqm KIND             fifo (default), codel, fq_codel, cake (a subset), pie or step\n"
	       "  --limit-pkts N         queue limit in packets (default: 1000, fq_codel 10240)\n"
	       "  --limit-bytes N        queue limit in bytes (fifo; replaces the packet limit)\n"
	       "  --target-us N          CoDel target (default 5000), PIE reference delay (15000)\n"
	       "  --interval-us N        CoDel interval (default 100000)\n"
	       "  --tupdate-us N         PIE probability update interval (default 15000)\n"
	       "  --quantum N            FQ-CoDel/CAKE DRR quantum in bytes (default: the MTU frame;\n"
	       "                         CAKE: rate/4096 within 300..MTU frame)\n"
	       "  --flows N              FQ-CoDel/CAKE queues (default 1024; CAKE: a multiple of 8)\n"
	       "  --ecn 0|1              CoDel/FQ-CoDel/PIE mark ECT packets instead of dropping\n"
	       "                         (default: codel 0, pie 0, fq_codel 1)\n"
	       "  --step-us N            CE on ECT packets whose sojourn exceeds N us (step's threshold;\n"
	       "                         with codel/fq_codel, their ce_threshold)\n"
	       "  --step-ect1-only       mark only ECT(1) packets (L4S)\n"
	       "  --ge P,R,LG,LB         Gilbert-Elliott loss: good->bad P, bad->good R per packet,\n"
	       "                         loss probability LG in good and LB in bad state\n"
	       "  --jitter-us N          after the link each frame waits a uniform 0..N us more, in order\n"
	       "  --seed N               seed for the flow hash salt and the loss model (default 1)\n"
	       "  --mtu N                largest IP packet (default %d)\n"
	       "  --log FILE             CSV time series of the queue every --log-interval-us, stamped\n"
	       "                         in CLOCK_MONOTONIC seconds\n"
	       "  --log-interval-us N    default %llu\n"
	       "  --sockbuf-bytes N      kernel socket buffer per socket (default %d)\n"
	       "  --rt-prio N            run the forwarding threads SCHED_FIFO at priority N (1..99)\n"
	       "  --help                 show this help\n"
	       "\n"
	       "Prints {\"event\":\"ready\",...} when forwarding, a {\"event\":\"stats\",...} line of\n"
	       "counters on SIGUSR1 and {\"event\":\"exit\",...} on SIGTERM/SIGINT.\n",
		WIRE_MAX_TAG_LEN, MIN_RATE_BPS, MAX_RATE_BPS, TRACE_OPPORTUNITY_BYTES, DEFAULT_MTU,
		DEFAULT_LOG_INTERVAL_US, DEFAULT_SOCKBUF_BYTES);
}

/* One direction's options as given (0: the queue's default). */
struct path_args {
	uint64_t rate_bps;
	const char *trace, *aqm;
	uint64_t limit_pkts, limit_bytes, target, interval, tupdate, quantum, flows, step, ecn, jitter_us;
	bool ect1, ge_on;
	double ge[4];
};

/* The command line as given; main checks it, then builds the link from it. */
struct link_args {
	const char *left, *right, *log_path;
	uint64_t mtu, prio, log_us, seed;
	int sockbuf;
	bool have_tag;
	struct path_args fwd;
};

/* Long options only, numbered past every character getopt could return. */
enum link_opt {
	O_LEFT = 256,
	O_RIGHT,
	O_TAG,
	O_RATE,
	O_TRACE,
	O_AQM,
	O_LPKTS,
	O_LBYTES,
	O_TARGET,
	O_INTERVAL,
	O_TUPDATE,
	O_QUANTUM,
	O_FLOWS,
	O_ECN,
	O_STEP,
	O_ECT1,
	O_GE,
	O_JITTER,
	O_SEED,
	O_MTU,
	O_LOG,
	O_LOGINT,
	O_SOCKBUF,
	O_PRIO,
	O_HELP
};
static const struct option link_opts[] = {
	{ "left", required_argument, NULL, O_LEFT },
	{ "right", required_argument, NULL, O_RIGHT },
	{ "tag", required_argument, NULL, O_TAG },
	{ "rate-bps", required_argument, NULL, O_RATE },
	{ "trace", required_argument, NULL, O_TRACE },
	{ "aqm", required_argument, NULL, O_AQM },
	{ "limit-pkts", required_argument, NULL, O_LPKTS },
	{ "limit-bytes", required_argument, NULL, O_LBYTES },
	{ "target-us", required_argument, NULL, O_TARGET },
	{ "interval-us", required_argument, NULL, O_INTERVAL },
	{ "tupdate-us", required_argument, NULL, O_TUPDATE },
	{ "quantum", required_argument, NULL, O_QUANTUM },
	{ "flows", required_argument, NULL, O_FLOWS },
	{ "ecn", required_argument, NULL, O_ECN },
	{ "step-us", required_argument, NULL, O_STEP },
	{ "step-ect1-only", no_argument, NULL, O_ECT1 },
	{ "ge", required_argument, NULL, O_GE },
	{ "jitter-us", required_argument, NULL, O_JITTER },
	{ "seed", required_argument, NULL, O_SEED },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "log", required_argument, NULL, O_LOG },
	{ "log-interval-us", required_argument, NULL, O_LOGINT },
	{ "sockbuf-bytes", required_argument, NULL, O_SOCKBUF },
	{ "rt-prio", required_argument, NULL, O_PRIO },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static void parse_ge(struct path_args *pa, const char *opt, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok = strtok_r(copy, ",", &save);
	int i;

	for (i = 0; tok && i < 4; i++, tok = strtok_r(NULL, ",", &save))
		pa->ge[i] = parse_prob(opt, tok);
	if (i != 4 || tok) {
		fprintf(stderr, PROG ": %s '%s': expected four probabilities P,R,LG,LB\n", opt, arg);
		exit(2);
	}
	free(copy);
	pa->ge_on = true;
}

static void parse_args(int argc, char **argv, struct link_args *a)
{
	struct path_args *pa = &a->fwd;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", link_opts, NULL)) != -1) {
		switch (opt) {
		case O_LEFT:
			a->left = optarg;
			break;
		case O_RIGHT:
			a->right = optarg;
			break;
		case O_TAG:
			tag = optarg;
			a->have_tag = true;
			break;
		case O_RATE:
			pa->rate_bps = parse_u64("--rate-bps", optarg, MIN_RATE_BPS, MAX_RATE_BPS);
			break;
		case O_TRACE:
			pa->trace = optarg;
			break;
		case O_AQM:
			pa->aqm = optarg;
			break;
		case O_LPKTS:
			pa->limit_pkts = parse_u64("--limit-pkts", optarg, 1, MAX_LIMIT_PKTS);
			break;
		case O_LBYTES:
			pa->limit_bytes = parse_u64("--limit-bytes", optarg, 1, MAX_LIMIT_BYTES);
			break;
		case O_TARGET:
			pa->target = parse_u64("--target-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_INTERVAL:
			pa->interval = parse_u64("--interval-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_TUPDATE:
			pa->tupdate = parse_u64("--tupdate-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_QUANTUM:
			pa->quantum = parse_u64("--quantum", optarg, 64, 1 << 20);
			break;
		case O_FLOWS:
			pa->flows = parse_u64("--flows", optarg, 1, LQ_MAX_FLOWS);
			break;
		case O_ECN:
			pa->ecn = parse_u64("--ecn", optarg, 0, 1);
			break;
		case O_STEP:
			pa->step = parse_u64("--step-us", optarg, 1, MAX_PARAM_MS * 1000);
			break;
		case O_ECT1:
			pa->ect1 = true;
			break;
		case O_GE:
			parse_ge(pa, "--ge", optarg);
			break;
		case O_JITTER:
			pa->jitter_us = parse_u64("--jitter-us", optarg, 0, MAX_PARAM_MS * 1000);
			break;
		case O_SEED:
			a->seed = parse_u64("--seed", optarg, 0, UINT32_MAX);
			break;
		case O_MTU:
			a->mtu = parse_u64("--mtu", optarg, 576, MAX_MTU);
			break;
		case O_LOG:
			a->log_path = optarg;
			break;
		case O_LOGINT:
			a->log_us = parse_u64("--log-interval-us", optarg, 100, 10000000);
			break;
		case O_SOCKBUF:
			a->sockbuf = (int)parse_u64("--sockbuf-bytes", optarg, 65536, INT_MAX / 2);
			break;
		case O_PRIO:
			a->prio = parse_u64("--rt-prio", optarg, 1, 99);
			break;
		case O_HELP:
			usage();
			exit(0);
		default:
			if (optopt)
				die("option '%s' needs a value (see --help)", argv[optind - 1]);
			die("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
}

static enum lq_kind check_aqm(const struct path_args *pa)
{
	enum lq_kind kind;

	if (!strcmp(pa->aqm, "fifo"))
		kind = LQ_FIFO;
	else if (!strcmp(pa->aqm, "codel"))
		kind = LQ_CODEL;
	else if (!strcmp(pa->aqm, "fq_codel"))
		kind = LQ_FQ_CODEL;
	else if (!strcmp(pa->aqm, "step"))
		kind = LQ_STEP;
	else if (!strcmp(pa->aqm, "pie"))
		kind = LQ_PIE;
	else if (!strcmp(pa->aqm, "cake"))
		kind = LQ_CAKE;
	else
		die("--aqm '%s': not one of fifo, codel, fq_codel, cake, pie, step", pa->aqm);
	if (pa->limit_bytes && kind != LQ_FIFO && kind != LQ_STEP)
		die("--limit-bytes: only for fifo and step (%s limits packets)", pa->aqm);
	if ((pa->target || pa->ecn != UINT64_MAX) && (kind == LQ_FIFO || kind == LQ_STEP))
		die("--target-us and --ecn apply to codel, fq_codel, cake and pie, not %s", pa->aqm);
	if (pa->interval && kind != LQ_CODEL && kind != LQ_FQ_CODEL && kind != LQ_CAKE)
		die("--interval-us applies to codel, fq_codel and cake, not %s", pa->aqm);
	if (pa->tupdate && kind != LQ_PIE)
		die("--tupdate-us applies to pie, not %s", pa->aqm);
	if ((pa->quantum || pa->flows) && kind != LQ_FQ_CODEL && kind != LQ_CAKE)
		die("--quantum and --flows apply to fq_codel and cake, not %s", pa->aqm);
	if (pa->flows % LQ_CAKE_WAYS && kind == LQ_CAKE)
		die("--flows: cake's queues come in sets of 8, not %s",
			"a count that is not a multiple of 8");
	if (kind == LQ_STEP && !pa->step)
		die("%s", "--aqm step needs --step-us");
	if (pa->ect1 && !pa->step)
		die("%s", "--step-ect1-only needs --step-us");
	return kind;
}

/* One direction's configuration from its checked options. */
static void path_config(
	const struct path_args *pa, enum lq_kind kind, uint32_t frame_max, struct lp_config *c)
{
	struct lq_params *prm = &c->queue;

	c->rate_bps = pa->rate_bps;
	c->jitter_ns = pa->jitter_us * LQ_NSEC_PER_USEC;
	c->ge_on = pa->ge_on;
	memcpy(c->ge, pa->ge, sizeof(c->ge));
	lq_defaults(prm, kind, frame_max - 4);
	if (pa->limit_pkts)
		prm->limit_pkts = (uint32_t)pa->limit_pkts;
	if (pa->limit_bytes) {
		prm->limit_bytes = pa->limit_bytes;
		prm->limit_pkts = pa->limit_pkts ? (uint32_t)pa->limit_pkts : 0;
	}
	if (pa->target)
		prm->target_ns = pa->target * LQ_NSEC_PER_USEC;
	if (pa->interval)
		prm->interval_ns = pa->interval * LQ_NSEC_PER_USEC;
	if (pa->tupdate)
		prm->tupdate_ns = pa->tupdate * LQ_NSEC_PER_USEC;
	if (pa->quantum)
		prm->quantum = (uint32_t)pa->quantum;
	if (pa->flows)
		prm->flows = (uint32_t)pa->flows;
	if (pa->ecn != UINT64_MAX)
		prm->ecn = pa->ecn;
	prm->step_ns = pa->step * LQ_NSEC_PER_USEC;
	prm->step_ect1_only = pa->ect1;
	/* CAKE sizes its MTU time and quantum from the link rate (a trace's mean rate). */
	prm->rate_bps = c->rate_bps ? c->rate_bps : trace_mean_bps(&c->trace);
	if (kind == LQ_CAKE && !pa->quantum) {
		uint64_t q = prm->rate_bps / BITS_PER_BYTE >> 12; /* sch_cake: rate/4096, within 300..MTU */

		prm->quantum = (uint32_t)(q < LQ_CAKE_MIN_QUANTUM ? LQ_CAKE_MIN_QUANTUM
				: q > prm->mtu_bytes		  ? prm->mtu_bytes
								  : q);
	}
}

/* Bad input stops here, before any socket, thread or file exists. */
static void check_args(const struct link_args *a)
{
	uint32_t frame_max = (uint32_t)a->mtu + L2_OVERHEAD_BYTES;
	enum lq_kind kind;

	if (!a->left || !a->right || !a->have_tag)
		die("%s are required (see --help)", "--left, --right and --tag");
	if (!wire_tag_ok(tag))
		die("--tag '%s': use 1-64 characters from [A-Za-z0-9._-]", tag);
	if (!a->fwd.rate_bps == !a->fwd.trace)
		die("%s", "give exactly one of --rate-bps and --trace");
	kind = check_aqm(&a->fwd);
	if (a->fwd.trace)
		trace_load(&fwd.cfg.trace, "--trace", a->fwd.trace);
	if (strcmp(a->left, a->right) == 0)
		die("--left and --right are both '%s'", a->left);
	if (!if_nametoindex(a->left))
		die("--left: no interface '%s' in this network namespace", a->left);
	if (!if_nametoindex(a->right))
		die("--right: no interface '%s' in this network namespace", a->right);
	path_config(&a->fwd, kind, frame_max, &fwd.cfg);
}

static void open_sockets(const struct link_args *a)
{
	unsigned int left = if_nametoindex(a->left), right = if_nametoindex(a->right);

	fwd.rx_fd = wire_open_socket(PROG, a->left, left, true, a->sockbuf);
	fwd.tx_fd = wire_open_socket(PROG, a->right, right, false, a->sockbuf);
	rev.rx_fd = wire_open_socket(PROG, a->right, right, true, a->sockbuf);
	rev.tx_fd = wire_open_socket(PROG, a->left, left, false, a->sockbuf);
	fwd.stop_fd = rev.stop_fd = stop_pipe[0];
}

static int start_threads(uint64_t prio, pthread_t *f, pthread_t *r)
{
	pthread_attr_t attr;

	wire_thread_attr(&attr, prio);
	if (pthread_create(f, &attr, lp_main, &fwd) || pthread_create(r, &attr, lp_passthrough_main, &rev)) {
		fprintf(stderr, PROG ": cannot start forwarding threads\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct link_args args = { .fwd = { .aqm = "fifo", .ecn = UINT64_MAX },
		.mtu = DEFAULT_MTU,
		.log_us = DEFAULT_LOG_INTERVAL_US,
		.seed = 1,
		.sockbuf = DEFAULT_SOCKBUF_BYTES };
	pthread_t f, r;
	sigset_t sigs;

	parse_args(argc, argv, &args);
	check_args(&args);
	lp_setup(&fwd, args.seed, (uint32_t)args.mtu + L2_OVERHEAD_BYTES, args.log_path,
		args.log_us * LQ_NSEC_PER_USEC);

	wire_block_signals(&sigs);
	if (pipe2(stop_pipe, O_CLOEXEC) < 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		return 1;
	}
	open_sockets(&args);
	if (start_threads(args.prio, &f, &r))
		return 1;
	printf("{\"event\":\"ready\",\"tag\":\"%s\",\"pid\":%d}\n", tag, (int)getpid());
	fflush(stdout);
	wire_wait_for_stop(&sigs, print_stats);
	if (write(stop_pipe[1], "x", 1) < 0)
		fprintf(stderr, PROG ": stop pipe: %s\n", strerror(errno));
	pthread_join(f, NULL);
	pthread_join(r, NULL);
	print_stats("exit");
	lp_close(&fwd);
	return atomic_load(&fatal_error) ? 1 : 0;
}
