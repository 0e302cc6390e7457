// SPDX-License-Identifier: GPL-2.0
/* bbrkit-lockstep: registers the test-only congestion control bbr_lockstep (bbr_lockstep.bpf.c)
 * for as long as it runs, and reports how often bbrkit's BBR core decided differently from the
 * kernel's BBR on the connections that used it.
 *
 *   bbrkit-lockstep [--records FILE] [-v]
 *
 * Prints "ready" once bbr_lockstep is registered, then writes every mismatch record to FILE (one
 * JSON object per line) until SIGINT or SIGTERM; it then unregisters and prints one JSON summary
 * line. The registration is a struct_ops link owned by this process and never pinned, so it also
 * ends if the process is killed. Exit status: 0 after a run, 1 on an error, 2 when this kernel's
 * BBR is not callable from BPF (the check cannot run).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define TOOL_NAME "bbrkit-lockstep"
#include "kernel_bbr_tool.h"
#include "struct_ops_link.h"

#include "lockstep.h"
#include "bbr_lockstep.skel.h"

#define CC_NAME "bbr_lockstep"
#define POLL_MS 100 /* how long a poll waits for records before checking for a signal */

#define LS_NAME(id, name) name,
static const char *const callback_names[LS_CB_COUNT] = { LS_CALLBACKS(LS_NAME) };
static const char *const field_names[LS_F_COUNT] = { LS_FIELDS(LS_NAME) };
static const char *const coverage_names[LS_COV_COUNT] = { LS_COVERAGE(LS_NAME) };
#undef LS_NAME

static const char *const mode_names[LS_MODES] = { "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT" };

static FILE *records_out;
static unsigned long long records_written;

static bool already_registered(void)
{
	char line[4096], *tok, *save;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");
	bool found = false;

	if (!f)
		return false;
	if (fgets(line, sizeof(line), f))
		for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
			found |= !strcmp(tok, CC_NAME);
	fclose(f);
	return found;
}

static void print_state(FILE *f, const char *key, const struct ls_state *s)
{
	fprintf(f, "\"%s\":{\"min_rtt_stamp_us\":%lld,\"probe_rtt_armed\":%u,\"probe_rtt_done_us\":%lld", key,
		(long long)s->min_rtt_stamp_us, s->probe_rtt_armed, (long long)s->probe_rtt_done_us);
#define LS_PRINT(type, member, ...) fprintf(f, ",\"" #member "\":%llu", (unsigned long long)s->member);
	LS_OUTPUTS(LS_PRINT)
	LS_MODEL(LS_PRINT)
#undef LS_PRINT
	fprintf(f, ",\"min_tso_segs\":%u,\"sndbuf_expand\":%u}", s->min_tso_segs, s->sndbuf_expand);
}

static int on_record(void *ctx, void *data, size_t size)
{
	const struct ls_record *r = data;
	const char *sep = "";
	int i;

	(void)ctx;
	if (!records_out || size < sizeof(*r))
		return 0;
	fprintf(records_out,
		"{\"t_ns\":%llu,\"seq\":%llu,\"sport\":%u,\"dport\":%u,\"callback\":\"%s\",\"arg\":%u,"
		"\"ca_state\":%u,\"mode_before\":%u,\"delivered\":%u,\"srtt_us\":%u,\"jiffy_us\":%u,"
		"\"fields\":[",
		(unsigned long long)r->t_ns, (unsigned long long)r->seq, r->sport, r->dport,
		r->callback < LS_CB_COUNT ? callback_names[r->callback] : "?", r->arg, r->ca_state,
		r->mode_before, r->delivered, r->srtt_us, r->jiffy_us);
	for (i = 0; i < LS_F_COUNT; i++) {
		if (r->fields & (1U << i)) {
			fprintf(records_out, "%s\"%s\"", sep, field_names[i]);
			sep = ",";
		}
	}
	fputs("],", records_out);
	print_state(records_out, "kernel", &r->kernel);
	fputc(',', records_out);
	print_state(records_out, "shadow", &r->shadow);
	fputs("}\n", records_out);
	records_written++;
	return 0;
}

static void print_counts(const char *key, const __u64 *v, const char *const *names, int n, bool last)
{
	int i;

	printf("\"%s\":{", key);
	for (i = 0; i < n; i++)
		printf("%s\"%s\":%llu", i ? "," : "", names[i], (unsigned long long)v[i]);
	printf("}%s", last ? "" : ",");
}

static void print_summary(const struct ls_counters *c)
{
	printf("{");
	print_counts("compared", c->compared, callback_names, LS_CB_COUNT, false);
	print_counts("mismatched", c->mismatched, callback_names, LS_CB_COUNT, false);
	print_counts("fields", c->field, field_names, LS_F_COUNT, false);
	print_counts("acks_by_mode", c->acks_by_mode, mode_names, LS_MODES, false);
	print_counts("mismatched_acks_by_mode", c->mismatched_acks_by_mode, mode_names, LS_MODES, false);
	print_counts("covered_acks", c->covered, coverage_names, LS_COV_COUNT, false);
	printf("\"resyncs\":%llu,\"stamp_gap_us\":%llu,\"no_shadow\":%llu,\"lost_records\":%llu,"
	       "\"records_written\":%llu,",
		(unsigned long long)c->resyncs, (unsigned long long)c->stamp_gap_us,
		(unsigned long long)c->no_shadow, (unsigned long long)c->lost_records, records_written);
	printf("\"window_ns\":{\"first_ack\":%llu,\"min_rtt_lowered\":%llu,\"probe_rtt_entered\":%llu}}\n",
		(unsigned long long)c->first_ack_ns, (unsigned long long)c->min_rtt_lowered_ns,
		(unsigned long long)c->probe_rtt_entered_ns);
	fflush(stdout);
}

static int usage(void)
{
	fprintf(stderr, "usage: bbrkit-lockstep [--records FILE] [-v]\n");
	return 1;
}

int main(int argc, char **argv)
{
	struct bbr_lockstep *skel = NULL;
	struct ring_buffer *rb = NULL;
	const char *records_path = NULL;
	struct sigaction sa = { .sa_handler = tool_on_signal };
	int i, err, ret = 1, unavailable, link_fd = -1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			tool_verbose = true;
		else if (!strcmp(argv[i], "--records") && i + 1 < argc)
			records_path = argv[++i];
		else
			return usage();
	}
	libbpf_set_print(tool_libbpf_print);

	if ((unavailable = tool_preflight()))
		return unavailable;
	if (already_registered()) {
		tool_fail("%s is already registered: another lockstep run is active", CC_NAME);
		return 1;
	}
	if (records_path) {
		records_out = fopen(records_path, "w");
		if (!records_out) {
			tool_fail("cannot write %s: %s", records_path, strerror(errno));
			return 1;
		}
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	skel = bbr_lockstep__open();
	if (!skel || struct_ops_want_link(skel->maps.lockstep) || bbr_lockstep__load(skel)) {
		tool_fail("cannot load %s: %s (-v shows the verifier log)", CC_NAME, strerror(errno));
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.records), on_record, NULL, NULL);
	if (!rb) {
		tool_fail("cannot open the record ring buffer: %s", strerror(errno));
		goto out;
	}
	link_fd = struct_ops_register(skel->maps.lockstep);
	if (link_fd < 0) {
		tool_fail("cannot register %s: %s", CC_NAME, strerror(-link_fd));
		goto out;
	}
	printf("ready\n");
	fflush(stdout);

	while (!tool_stop) {
		err = ring_buffer__poll(rb, POLL_MS);
		if (err < 0 && err != -EINTR) {
			tool_fail("reading records: %s", strerror(-err));
			goto out;
		}
	}
	/* Unregister first, then take what the last ACKs recorded. */
	close(link_fd);
	link_fd = -1;
	ring_buffer__consume(rb);
	print_summary(&skel->bss->counters);
	ret = 0;
out:
	if (link_fd >= 0)
		close(link_fd);
	ring_buffer__free(rb);
	bbr_lockstep__destroy(skel);
	if (records_out && fclose(records_out)) {
		tool_fail("writing %s: %s", records_path, strerror(errno));
		ret = 1;
	}
	return ret;
}
