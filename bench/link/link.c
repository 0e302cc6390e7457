// SPDX-License-Identifier: GPL-2.0
/*
 * bbrkit-link: a bottleneck link between two interfaces of one network namespace, for kernels without
 * netem, codel, fq_codel, cake or pie. Frames from --left leave on --right at a constant rate or on a
 * Mahimahi delivery trace, through a tail-drop, CoDel, FQ-CoDel, PIE, CAKE-subset or step-marking queue
 * (queue.c), with optional Gilbert-Elliott loss. Frames from --right go back to --left at once unless a
 * --rev- option gives that direction (the ACK path) conditions of its own.
 *
 * This file parses the command line into one struct link_args (the options both wire tools take through
 * bench/wire/options.c, each direction's through path_args.c), checks it (bad input stops before any
 * socket, thread or file exists), builds each direction's configuration from it, opens the sockets and
 * starts the directions' threads (forward.c), then prints the stats lines until it is told to stop.
 *
 * Queueing, marking and dropping are per packet, so the link needs wire-size frames: the wrapper turns
 * segmentation offloads off upstream, and a GSO frame that still arrives is dropped and counted
 * (drop_gso).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "afpacket.h"
#include "forward.h"
#include "options.h"
#include "path.h"
#include "path_args.h"
#include "process.h"
#include "queue.h"
#include "trace.h"

#define PROG "bbrkit-link"
/* Ethernet header plus one VLAN tag on top of the MTU. */
#define L2_OVERHEAD_BYTES 18
#define DEFAULT_MTU 1500
#define MAX_MTU 9000
/* The receive socket is a FIFO the AQM cannot see: big enough for a burst over a wake-up gap (about 1800
 * full-size frames at ~2.3 KB of truesize each, 15 ms at the link's top speed here), small enough that a
 * forwarder falling behind shows as kernel drops instead of seconds of hidden delay (32 MiB held ~2 s at
 * 100 Mbit/s). What waits there is counted (sockbuf_max_bytes, rx_wait_max_us, rx_waited_pkts). */
#define DEFAULT_SOCKBUF_BYTES (4 << 20)
#define DEFAULT_LOG_INTERVAL_US 10000ULL
/* Frames 40 us apart (a 300 Mbit/s stream of full-size frames) keep a 100 us busy-poll awake, so a loaded
 * link never pays a wake-up; an idle one stops spinning within 100 us. */
#define DEFAULT_BUSY_POLL_US 100ULL
#define MAX_BUSY_POLL_US 1000000ULL
/* --cpu not given: the forward thread runs wherever the scheduler puts it. */
#define CPU_UNPINNED UINT64_MAX

enum { DIR_FWD, DIR_REV, DIRS };
static const char *tag = "";
static struct lpath fwd = { .name = "forward" }, rev = { .name = "reverse" };

static bool rev_shaped;
static pthread_t fwd_thread, rev_thread;
static bool rev_running; /* false with --rev-kernel: the kernel forwards the ACKs */
/* Each forwarding thread's CPU time and the wall time since they started, taken before they stop. */
static uint64_t cpu_ns[DIRS], start_ns, wall_ns;

static uint64_t thread_cpu_ns(pthread_t t)
{
	clockid_t clock;
	struct timespec ts;

	if (pthread_getcpuclockid(t, &clock) || clock_gettime(clock, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sample_cpu(void)
{
	cpu_ns[DIR_FWD] = thread_cpu_ns(fwd_thread);
	cpu_ns[DIR_REV] = rev_running ? thread_cpu_ns(rev_thread) : 0;
	wall_ns = wire_now_ns() - start_ns;
}

/* What the fast paths got: each shaping direction's receive ring and send socket's qdisc bypass (the
 * ready and stats lines report them; a refusal falls back to recvmmsg or the qdisc, with one line on stderr). */
static bool rx_ring_on[DIRS], qdisc_bypass_on[DIRS];
/* The idle path's --xdp-idle-us while attached, -1 without it (the ready and stats lines report it). */
static long long xdp_idle_us = -1;

static void print_stats(const char *event)
{
	printf("{\"event\":\"%s\",\"tag\":\"%s\"", event, tag);
	lp_print_counters(&fwd, "");
	/* The ACK direction's counters carry rev_; unshaped, it counts only what it passed and failed to send. */
	if (rev_shaped)
		lp_print_counters(&rev, "rev_");
	else
		printf(",\"rev_drop_tx\":%" PRIu64, (uint64_t)atomic_load(&rev.pub.drop_tx));
	if (!strcmp(event, "stats"))
		sample_cpu();
	printf(",\"cpu_fwd_us\":%" PRIu64 ",\"cpu_rev_us\":%" PRIu64 ",\"wall_us\":%" PRIu64,
		cpu_ns[DIR_FWD] / 1000, cpu_ns[DIR_REV] / 1000, wall_ns / 1000);
	printf(",\"rev_kernel\":%d,\"rx_ring\":%d,\"rx_ring_frames\":%" PRIu32
	       ",\"qdisc_bypass\":%d,\"busy_poll_us\":%" PRIu64,
		!rev_running, rx_ring_on[DIR_FWD], fwd.ring.frames, qdisc_bypass_on[DIR_FWD],
		(uint64_t)(fwd.busy_poll_ns / LQ_NSEC_PER_USEC));
	printf(",\"xdp_idle_us\":%lld,\"rev_shaped\":%d,\"rev_pkts\":%" PRIu64 "}\n", xdp_idle_us, rev_shaped,
		(uint64_t)atomic_load(&rev.pub.out_pkts));
	fflush(stdout);
}

static void usage(void)
{
	printf("Usage: " PROG " --left IF --right IF --tag TAG (--rate-bps N | --trace FILE) [options]\n"
	       "Forward frames from --left to --right through an emulated bottleneck (rate or trace,\n"
	       "queue, AQM, loss); frames from --right go to --left unshaped unless a --rev- option\n"
	       "gives that direction (the ACK path) its own.\n"
	       "\n"
	       "  --left IF              data input interface\n"
	       "  --right IF             data output interface\n"
	       "  --tag TAG              label for this instance ([A-Za-z0-9._-], at most %d chars)\n"
	       "  --rate-bps N           constant link rate in bit/s of Ethernet frames (%llu..%llu)\n"
	       "  --trace FILE           Mahimahi trace: one line per delivery opportunity of %d bytes\n"
	       "                         (IP packet + 4, as mm-link), in ms; loops with the last line's\n"
	       "                         time as its period\n"
	       "  --aqm KIND             one of: %s (default fifo; cake is a subset)\n"
	       "  --limit-pkts N         queue limit in packets (default: 1000, fq_codel 10240; cake:\n"
	       "                         N MTU frames cap its truesize buffer, default 10240)\n"
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
	       "  --ge 'P [R [1-H [1-K]]]' Gilbert-Elliott loss as netem's gemodel, in percent: good->bad\n"
	       "                         P, bad->good R per packet, loss 1-H in the bad state and 1-K in\n"
	       "                         the good one (defaults R = 100 - P, 1-H = 100, 1-K = 0)\n"
	       "  --loss P               independent loss with probability P (instead of --ge)\n"
	       "  --delay-us N           after the link each frame waits N us more\n"
	       "  --jitter-us N          ...and a uniform 0..N us on top, in order\n"
	       "  --src-delay ADDR,US    frames from IPv4 source ADDR wait US us more after the link,\n"
	       "                         in a line per distinct delay (repeat per source; at most %d\n"
	       "                         sources and %d delays): senders' path delays in the link\n"
	       "  --police RATE,BURST    token-bucket policer before the queue: RATE bit/s, BURST bytes;\n"
	       "                         what the bucket does not cover is dropped (RFC 2697, no EBS)\n"
	       "  --reorder P,GAP        netem's reorder: after GAP-1 packets in order, each skips the\n"
	       "                         --delay-us with probability P (needs --delay-us)\n"
	       "  --duplicate P          netem's duplicate: a second copy with probability P\n"
	       "  --aggregate SPEC       hold frames after the link and release them in bursts:\n"
	       "                         slot,MIN_US[,MAX_US[,PKTS]] (netem's slot), count,K,TIMEOUT_US\n"
	       "                         or onoff,ON_US,OFF_US\n"
	       "  --stall PCT,US         before PCT%% of departures (drawn, seeded) the thread stops for\n"
	       "                         US us (1..1000000), as a preempted thread would (stalls_injected)\n"
	       "  --mm-log FILE          a line per packet in Mahimahi mm-link's log format (+ arrival,\n"
	       "                         # opportunity, - departure with its delay), for "
	       "mm-throughput-graph\n"
	       "                         and mm-delay-graph\n"
	       "  --rev-OPTION           each option above from --rate-bps to here, for the ACK direction\n"
	       "                         (--right to --left); without --rev-rate-bps or --rev-trace it has\n"
	       "                         no rate limit\n"
	       "  --seed N               seed for the flow hash salt and the loss model (default 1)\n"
	       "  --mtu N                largest IP packet (default %d)\n"
	       "  --log FILE             CSV time series of the queue every --log-interval-us, stamped\n"
	       "                         in CLOCK_MONOTONIC seconds\n"
	       "  --log-interval-us N    default %llu\n"
	       "  --sockbuf-bytes N      kernel socket buffer per socket (default %d); the receive ring\n"
	       "                         holds this or 20 ms at the rate in full-size frames, up to 64 MiB\n"
	       "  --rt-prio N            run the forwarding threads SCHED_FIFO at priority N (1..99);\n"
	       "                         past 80%% of each 100 ms a thread polls as SCHED_OTHER\n"
	       "                         (no real-time throttling)\n"
	       "  --rev-kernel           no ACK-direction sockets or thread: the caller has the kernel\n"
	       "                         redirect --right's ingress to --left (tc mirred)\n"
	       "  --busy-poll-us N       a shaping thread polls instead of sleeping for N us after its\n"
	       "                         last frame (default %llu; 0: always sleep); the time is spin_us\n"
	       "  --cpu N                pin the forward thread to CPU N (one this process may use)\n"
	       "  --cpu-latency-us N     hold a PM QoS CPU latency request of N us while running (0: idle\n"
	       "                         CPUs poll instead of halting, so a wake-up waits for no\n"
	       "                         hypervisor; machine-wide; a refusal is reported and ignored)\n"
	       "  --xdp-idle-us N        a frame that finds the link idle and takes at most N us to\n"
	       "                         serialise leaves at once from an XDP program (default %d, at\n"
	       "                         most %d; 0: every frame through the thread); only with a rate\n"
	       "                         and a tail-drop queue and nothing else on the path\n"
	       "  --help                 show this help\n"
	       "\n"
	       "Prints {\"event\":\"ready\",...} when forwarding, a {\"event\":\"stats\",...} line of\n"
	       "counters on SIGUSR1 and {\"event\":\"exit\",...} on SIGTERM/SIGINT.\n",
		WIRE_MAX_TAG_LEN, MIN_RATE_BPS, MAX_RATE_BPS, TRACE_OPPORTUNITY_BYTES, aqm_names(),
		LS_MAX_SRC_ADDRS, LS_MAX_SRC_LINES, DEFAULT_MTU, DEFAULT_LOG_INTERVAL_US,
		DEFAULT_SOCKBUF_BYTES, DEFAULT_BUSY_POLL_US, LP_IDLE_DEFAULT_US, LP_IDLE_MAX_US);
}

/* What a direction's options are called: --NAME for the data direction, --rev-NAME for the ACKs. */
static const char *const dir_prefix[DIRS] = { "", "rev-" };

/* The command line as given; main checks it, then builds the link from it. */
struct link_args {
	struct wire_args wire; /* the interfaces, tag, socket buffers and priority (bench/wire) */
	const char *log_path;
	uint64_t mtu, log_us, seed, busy_poll_us, cpu, xdp_idle_us;
	bool rev_kernel;
	struct path_args path[DIRS];
};

/* The link's options beside the shared ones (bench/wire/options.h): its own, then each direction's under
 * its prefix, which come back to parse_dir_opt with the direction's id base. */
#define N_GLOBAL 8
static struct wire_opt link_opts[N_GLOBAL + DIRS * PATH_OPT_COUNT];
static char opt_names[DIRS][PATH_OPT_COUNT][PATH_OPT_NAME_BYTES];

static void build_options(struct link_args *a)
{
	const struct wire_opt global[N_GLOBAL] = {
		{ .name = "seed", .has_arg = required_argument, .value = &a->seed, .max = UINT32_MAX },
		{ .name = "mtu", .has_arg = required_argument, .value = &a->mtu, .min = 576, .max = MAX_MTU },
		{ .name = "log", .has_arg = required_argument, .text = &a->log_path },
		{ .name = "log-interval-us",
			.has_arg = required_argument,
			.value = &a->log_us,
			.min = 100,
			.max = 10000000 },
		{ .name = "rev-kernel", .has_arg = no_argument, .flag = &a->rev_kernel },
		{ .name = "busy-poll-us",
			.has_arg = required_argument,
			.value = &a->busy_poll_us,
			.max = MAX_BUSY_POLL_US },
		{ .name = "cpu", .has_arg = required_argument, .value = &a->cpu, .max = CPU_SETSIZE - 1 },
		{ .name = "xdp-idle-us",
			.has_arg = required_argument,
			.value = &a->xdp_idle_us,
			.max = LP_IDLE_MAX_US },
	};
	size_t n = 0;

	for (size_t i = 0; i < N_GLOBAL; i++)
		link_opts[n++] = global[i];
	for (int d = 0; d < DIRS; d++)
		path_options(&a->path[d], dir_prefix[d], d * P_IDS, opt_names[d],
			link_opts + N_GLOBAL + d * PATH_OPT_COUNT);
}

/* A direction's option that is no plain number, text or flag (@id: the direction times P_IDS plus its
 * enum path_opt), given as @opt with @arg. */
static void parse_dir_opt(void *ctx, int id, const char *opt, const char *arg)
{
	struct link_args *a = ctx;

	parse_path_opt(&a->path[id / P_IDS], id % P_IDS, opt, arg);
}

/* Bad input stops here, before any socket, thread or file exists. */
static void check_args(struct link_args *a)
{
	uint32_t frame_max = (uint32_t)a->mtu + L2_OVERHEAD_BYTES;
	struct lpath *dirs[DIRS] = { &fwd, &rev };

	wire_check_required(&a->wire);
	if (a->cpu != CPU_UNPINNED) {
		cpu_set_t allowed;

		if (sched_getaffinity(0, sizeof(allowed), &allowed) || !CPU_ISSET((int)a->cpu, &allowed))
			wire_die("--cpu %" PRIu64 ": not a CPU this process may run on", a->cpu);
	}
	if (!a->path[DIR_FWD].rate_bps == !a->path[DIR_FWD].trace)
		wire_die("give exactly one of --rate-bps and --trace");
	if (a->rev_kernel && a->path[DIR_REV].given)
		wire_die("--rev-kernel: the kernel passes the ACK direction unshaped, so no --rev- option "
			 "applies");
	/* The ACK direction: no rate or trace is no rate limit, but both is a contradiction. */
	if (a->path[DIR_REV].rate_bps && a->path[DIR_REV].trace)
		wire_die("give at most one of --rev-rate-bps and --rev-trace");
	for (int d = 0; d < DIRS; d++) {
		const struct path_args *pa = &a->path[d];
		enum lq_kind kind;
		char opt[32];

		if (!pa->given)
			continue;
		kind = check_aqm(pa, dir_prefix[d]);
		snprintf(opt, sizeof(opt), "--%strace", dir_prefix[d]);
		if (pa->trace)
			trace_load(&dirs[d]->cfg.trace, opt, pa->trace);
		path_config(pa, kind, frame_max, &dirs[d]->cfg);
	}
	wire_check_interfaces(&a->wire);
}

/* The "# command line:" and "# queue:" lines of each direction's mm-link log. */
static void mm_headers(int argc, char **argv, const struct link_args *a)
{
	static char text[DIRS][8192];
	struct lpath *dirs[DIRS] = { &fwd, &rev };

	for (int d = 0; d < DIRS; d++) {
		const struct lq_params *q = &dirs[d]->cfg.queue;
		size_t n = 0;

		if (!a->path[d].mm_log)
			continue;
		n += (size_t)snprintf(text[d] + n, sizeof(text[d]) - n, "# command line:");
		for (int i = 0; i < argc && n < sizeof(text[d]); i++)
			n += (size_t)snprintf(text[d] + n, sizeof(text[d]) - n, " %s", argv[i]);
		if (n < sizeof(text[d]))
			snprintf(text[d] + n, sizeof(text[d]) - n,
				"\n# queue: %s [packets=%u, bytes=%" PRIu64 "]\n", a->path[d].aqm,
				q->limit_pkts, q->limit_bytes);
		dirs[d]->cfg.mm_header = text[d];
	}
}

/* A shaping direction's sockets: a TPACKET_V2 receive ring and a send socket past the qdisc layer
 * (PACKET_QDISC_BYPASS: the link is the only queue the frames should meet). */
static void open_shaping(struct lpath *p, int d, const char *in, const char *out, const struct link_args *a)
{
	uint32_t frame_max = (uint32_t)a->mtu + L2_OVERHEAD_BYTES;
	int one = 1, err = 0;

	int sockbuf = (int)a->wire.sockbuf_bytes;

	p->rx_fd = wire_open_socket(in, if_nametoindex(in), true, sockbuf, &p->ring, frame_max,
		ls_ring_bytes(
			(uint64_t)sockbuf, p->cfg.queue.rate_bps, frame_max, wire_rx_ring_slot(frame_max)),
		&err);
	if (err)
		fprintf(stderr, PROG ": %s receive ring refused (%s): reading with recvmmsg\n", p->name,
			strerror(err));
	rx_ring_on[d] = !err;
	p->tx_fd = wire_open_socket(out, if_nametoindex(out), false, sockbuf, NULL, 0, 0, NULL);
	qdisc_bypass_on[d] = setsockopt(p->tx_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) == 0;
	if (!qdisc_bypass_on[d])
		fprintf(stderr, PROG ": %s PACKET_QDISC_BYPASS refused (%s): sending through the qdisc\n",
			p->name, strerror(errno));
	p->busy_poll_ns = a->busy_poll_us * LQ_NSEC_PER_USEC;
}

static void open_sockets(const struct link_args *a)
{
	const struct wire_args *w = &a->wire;

	open_shaping(&fwd, DIR_FWD, w->left, w->right, a);
	if (rev_shaped) {
		open_shaping(&rev, DIR_REV, w->right, w->left, a);
	} else if (!a->rev_kernel) {
		rev.rx_fd = wire_open_socket(
			w->right, w->right_ifindex, true, (int)w->sockbuf_bytes, NULL, 0, 0, NULL);
		rev.tx_fd = wire_open_socket(
			w->left, w->left_ifindex, false, (int)w->sockbuf_bytes, NULL, 0, 0, NULL);
	}
	fwd.stop_fd = rev.stop_fd = wire_stop_fd();
}

/* The data direction's idle path, where its options allow one and the kernel takes the program; NULL when
 * attached, else why not (a refusal also gets one line on stderr). */
static const char *open_idle_path(const struct link_args *a)
{
	static char why[160];
	const char *unfit = path_idle_unfit(&fwd.cfg, (uint32_t)a->mtu + L2_OVERHEAD_BYTES);

	if (!a->xdp_idle_us)
		return "--xdp-idle-us 0";
	if (unfit)
		return unfit;
	if (lp_idle_open(&fwd.idle, fwd.cfg.rate_bps, a->wire.left_ifindex, a->wire.right_ifindex,
		    a->xdp_idle_us * LQ_NSEC_PER_USEC, why, sizeof(why)))
		return NULL;
	fprintf(stderr, PROG ": idle path off: %s\n", why);
	return why;
}

/* The forward thread's attributes carry its CPU (@cpu, unless CPU_UNPINNED) from its first instruction on. */
static int start_threads(uint64_t prio, uint64_t cpu, bool rev_thread_on, pthread_t *f, pthread_t *r)
{
	pthread_attr_t attr, fwd_attr;
	cpu_set_t set;

	wire_thread_attr(&attr, prio);
	wire_thread_attr(&fwd_attr, prio);
	CPU_ZERO(&set);
	if (cpu != CPU_UNPINNED) {
		CPU_SET((int)cpu, &set);
		pthread_attr_setaffinity_np(&fwd_attr, sizeof(set), &set);
	}
	if (pthread_create(f, &fwd_attr, lp_main, &fwd) ||
		(rev_thread_on &&
			pthread_create(r, &attr, rev_shaped ? lp_main : lp_passthrough_main, &rev))) {
		fprintf(stderr, PROG ": cannot start forwarding threads\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct link_args args = { .wire.sockbuf_bytes = DEFAULT_SOCKBUF_BYTES,
		.wire.cpu_latency_us = WIRE_NO_CPU_LATENCY,
		.path = { { .aqm = "fifo", .ecn = UINT64_MAX }, { .aqm = "fifo", .ecn = UINT64_MAX } },
		.mtu = DEFAULT_MTU,
		.log_us = DEFAULT_LOG_INTERVAL_US,
		.seed = 1,
		.busy_poll_us = DEFAULT_BUSY_POLL_US,
		.cpu = CPU_UNPINNED,
		.xdp_idle_us = LP_IDLE_DEFAULT_US };
	pthread_t f, r;
	sigset_t sigs;
	bool cpu_latency;
	const char *idle_off;

	wire_init(PROG);
	build_options(&args);
	wire_parse_args(argc, argv, link_opts, sizeof(link_opts) / sizeof(link_opts[0]), parse_dir_opt, &args,
		usage, &args.wire);
	check_args(&args);
	tag = args.wire.tag;
	mm_headers(argc, argv, &args);
	lp_setup(&fwd, args.seed, (uint32_t)args.mtu + L2_OVERHEAD_BYTES, args.log_path,
		args.log_us * LQ_NSEC_PER_USEC);
	rev_shaped = args.path[DIR_REV].given;
	if (rev_shaped)
		lp_setup(&rev, args.seed + 1, (uint32_t)args.mtu + L2_OVERHEAD_BYTES, NULL, 0);

	wire_start(&sigs);
	cpu_latency = wire_hold_cpu_latency(args.wire.cpu_latency_us);
	open_sockets(&args);
	idle_off = open_idle_path(&args);
	if (!idle_off)
		xdp_idle_us = (long long)args.xdp_idle_us;
	start_ns = wire_now_ns();
	rev_running = !args.rev_kernel;
	if (start_threads(args.wire.rt_prio, args.cpu, rev_running, &f, &r))
		return 1;
	fwd_thread = f;
	rev_thread = r;
	printf("{\"event\":\"ready\",\"tag\":\"%s\",\"pid\":%d,\"rx_ring\":%d,\"qdisc_bypass\":%d,"
	       "\"busy_poll_us\":%" PRIu64 ",\"cpu\":%d,\"cpu_latency_us\":%lld,\"xdp_idle_us\":%lld,"
	       "\"xdp_idle_off\":\"%s\"}\n",
		tag, (int)getpid(), rx_ring_on[DIR_FWD], qdisc_bypass_on[DIR_FWD], args.busy_poll_us,
		args.cpu == CPU_UNPINNED ? -1 : (int)args.cpu,
		cpu_latency ? (long long)args.wire.cpu_latency_us : -1LL, xdp_idle_us,
		idle_off ? idle_off : "");
	fflush(stdout);
	wire_wait_for_stop(&sigs, print_stats);
	sample_cpu();
	atomic_store(&fwd.stopping, true);
	atomic_store(&rev.stopping, true);
	wire_stop();
	pthread_join(f, NULL);
	if (rev_running)
		pthread_join(r, NULL);
	print_stats("exit");
	lp_close(&fwd);
	if (args.path[DIR_REV].given)
		lp_close(&rev);
	return wire_exit_status();
}
