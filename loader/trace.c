// SPDX-License-Identifier: GPL-2.0
/* trace: stream the per-flow records of the pinned ring buffers until SIGINT/SIGTERM.
 *
 * The BPF side emits records only while its ctl.tracers is above zero, so tracing costs nothing
 * when nobody traces. The counter is changed with atomic operations on the mmap()ed ctl map, so
 * that the BPF side, reading it on other CPUs, sees each change at once and whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

#define POLL_TIMEOUT_MS 100
#define MAX_TRACED CLI_MANY

static volatile sig_atomic_t stop;

struct output {
	FILE *out;
	enum record_format fmt;
	const struct algo *const *sel;
	size_t nsel;
	bool wrote;
};

struct tracer {
	const struct algo *a;
	struct output *o;
	int lock_fd;
	int events_fd;
	struct bbrkit_ctl *ctl; /* mmap()ed .data.ctl */
};

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct tracer *t = ctx;

	if (size < sizeof(struct bbrkit_flow))
		return 0;
	if (t->o->fmt == FMT_CSV)
		record_csv(t->o->out, t->a, data, t->o->sel, t->o->nsel);
	else
		record_json(t->o->out, t->a, data);
	t->o->wrote = true;
	return 0;
}

static int open_tracer(struct tracer *t)
{
	struct bpf_map_info info = {};
	char dir[BBRCTL_MAX_PATH];
	__u32 len = sizeof(info);
	void *mem;
	int fd, err;

	/* A ring buffer has one consumer position, shared by everyone who maps it: two readers
	 * would each get an arbitrary part of the records. The lock on the algorithm's pin
	 * directory lets one trace at a time read it (released when the process ends).
	 */
	pin_path(dir, t->a->name, NULL);
	t->lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->lock_fd < 0)
		return fail(errno, "cannot open %s", dir);
	if (flock(t->lock_fd, LOCK_EX | LOCK_NB))
		return fail(0, "another bbrctl trace is reading %s (one reader at a time)", t->a->name);
	if (!attachment_of(t->a).trace)
		return fail(0, "not available: %s was attached without a ring buffer (bbrctl features)",
			t->a->name);
	t->events_fd = open_pinned(t->a, BBRKIT_PIN_EVENTS, 0);
	if (t->events_fd < 0)
		return fail(t->events_fd, "cannot open %s's pinned ring buffer", t->a->name);
	fd = open_pinned(t->a, BBRKIT_PIN_CTL, 0);
	if (fd < 0)
		return fail(fd, "cannot open %s's pinned ctl map", t->a->name);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !(info.map_flags & BPF_F_MMAPABLE) ||
		info.value_size < sizeof(struct bbrkit_ctl)) {
		close(fd);
		return fail(0, "%s's ctl map is not an mmap()able struct bbrkit_ctl", t->a->name);
	}
	mem = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = -errno;
	close(fd);
	if (mem == MAP_FAILED)
		return fail(err, "cannot map %s's ctl map", t->a->name);
	t->ctl = mem;
	return EXIT_SUCCESS;
}

static int run(struct tracer *tr, size_t n, struct output *o)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct ring_buffer *rb = NULL;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		err = rb ? ring_buffer__add(rb, tr[i].events_fd, on_record, &tr[i]) : 0;
		if (!rb) {
			rb = ring_buffer__new(tr[i].events_fd, on_record, &tr[i], NULL);
			err = rb ? 0 : -errno;
		}
		if (err) {
			ring_buffer__free(rb);
			return fail(err, "cannot open %s's ring buffer", tr[i].a->name);
		}
	}
	/* No SA_RESTART: the signal must interrupt the poll. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o->fmt == FMT_CSV)
		record_csv_header(o->out, o->sel, o->nsel);
	/* Holding the reader lock, we are the only tracer: a count left above zero was left by a
	 * tracer killed before it could lower it, so it is reset rather than added to.
	 */
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&tr[i].ctl->tracers, 1, __ATOMIC_SEQ_CST);
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "bbrctl: tracing; Ctrl-C stops\n");
	while (!stop) {
		err = ring_buffer__poll(rb, POLL_TIMEOUT_MS);
		if (err < 0 && err != -EINTR)
			break;
		err = 0;
		if (o->wrote) {
			o->wrote = false;
			if (fflush(o->out))
				break;
		}
	}
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&tr[i].ctl->tracers, 0, __ATOMIC_SEQ_CST);
	/* What was emitted before the counters dropped is still wanted. */
	if (!err)
		ring_buffer__consume(rb);
	ring_buffer__free(rb);
	if (err)
		return fail(err, "reading the ring buffers failed");
	return EXIT_SUCCESS;
}

int cmd_trace(const struct cmd_opts *opts, int argc, char **argv)
{
	struct output o = { .out = stdout, .fmt = FMT_JSONL };
	struct tracer tr[MAX_TRACED] = {};
	const struct algo *sel[MAX_TRACED];
	const char *out_path = opts->out;
	size_t n = 0;
	int ret;

	if (opts->format && !strcmp(opts->format, "csv"))
		o.fmt = FMT_CSV;
	if (check_root())
		return EXIT_FAILURE;
	ret = select_algos(argc, argv, sel, &n);
	if (ret)
		return ret;
	if (n == 0)
		return fail(0, "no bbrkit algorithm is attached");
	o.sel = sel;
	o.nsel = n;
	for (size_t i = 0; i < n; i++) {
		tr[i].a = sel[i];
		tr[i].o = &o;
		tr[i].events_fd = -1;
		tr[i].lock_fd = -1;
	}
	ret = EXIT_SUCCESS;
	for (size_t i = 0; i < n && !ret; i++)
		ret = open_tracer(&tr[i]);
	if (!ret && out_path) {
		o.out = fopen(out_path, "w");
		if (!o.out)
			ret = fail(errno, "cannot open %s", out_path);
	}
	if (!ret)
		ret = run(tr, n, &o);
	if (o.out && (fflush(o.out) || ferror(o.out)) && !ret)
		ret = fail(errno, "writing %s failed", out_path ? out_path : "the output");
	if (o.out && o.out != stdout)
		fclose(o.out);
	for (size_t i = 0; i < n; i++) {
		if (tr[i].ctl)
			munmap(tr[i].ctl, (size_t)sysconf(_SC_PAGESIZE));
		if (tr[i].events_fd >= 0)
			close(tr[i].events_fd);
		if (tr[i].lock_fd >= 0)
			close(tr[i].lock_fd);
	}
	return ret;
}
