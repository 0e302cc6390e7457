// SPDX-License-Identifier: GPL-2.0
/* Error reporting and libbpf's log. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bbrctl.h"

bool verbose;
bool json_output;

static char context[128];
static const char WARNING[] = "";

void set_context(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(context, sizeof(context), fmt, ap);
	va_end(ap);
}

/* Under --json the first error is also stdout's one document; a command that fails has written
 * nothing there before (each prints its document only once it has everything).
 */
static void json_error(const char *message, int status)
{
	static bool written;
	struct json j;

	if (!json_output || written)
		return;
	written = true;
	json_init(&j, stdout);
	json_object(&j);
	json_key(&j, "error");
	json_string(&j, message);
	json_key(&j, "command");
	json_string(&j, context[0] ? context : NULL);
	json_key(&j, "exit_status");
	json_uint(&j, (unsigned long long)status);
	json_object_end(&j);
	fflush(stdout);
}

static void vreport(int err, const char *usage, int status, const char *fmt, va_list ap)
{
	char message[512];
	size_t used;

	vsnprintf(message, sizeof(message), fmt, ap);
	used = strlen(message);
	if (err)
		snprintf(message + used, sizeof(message) - used, ": %s", strerror(err < 0 ? -err : err));
	/* Before a command is known (bbrctl -x) there is no context: "bbrctl: unknown option '-x'". */
	fprintf(stderr, "bbrctl: %s%s%s%s", context, context[0] ? ": " : "",
		usage == WARNING ? "warning: " : "", message);
	if (usage && usage != WARNING)
		fprintf(stderr, " (usage: %s)", usage);
	fputc('\n', stderr);
	if (usage != WARNING)
		json_error(message, status);
}

int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(err, NULL, EXIT_FAILURE, fmt, ap);
	va_end(ap);
	return EXIT_FAILURE;
}

/* A command line naming something that does not exist, or a malformed value: a usage error. */
int bad_argument(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(0, NULL, EXIT_USAGE, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

void warn(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(err, WARNING, 0, fmt, ap);
	va_end(ap);
}

int usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(0, usage, EXIT_USAGE, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

/* libbpf's messages reach stderr only with -v; either way the useful bits are kept for our own
 * error: which program the verifier rejected and the log line that says why (the line before
 * "processed N insns").
 */
static char failed_prog[64];
static char last_message[256];

static void remember_verifier_reason(const char *log)
{
	const char *end = strstr(log, "-- END PROG LOAD LOG --");
	const char *stop = strstr(log, "\nprocessed ");
	const char *line_end, *line;

	if (stop && (!end || stop < end))
		line_end = stop;
	else if (end)
		line_end = end - 1;
	else
		return;
	while (line_end > log && line_end[-1] == '\n')
		line_end--;
	for (line = line_end; line > log && line[-1] != '\n'; line--)
		;
	/* An empty log (the kernel refused before verifying) leaves only libbpf's header line. */
	if (memmem(line, (size_t)(line_end - line), "-- BEGIN PROG LOAD LOG --", 25)) {
		last_message[0] = '\0';
		return;
	}
	snprintf(last_message, sizeof(last_message), "%.*s", (int)(line_end - line), line);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	const char *p;
	int n;

	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	n = vasprintf(&msg, fmt, ap);
	if (n < 0)
		return n;
	if (verbose)
		fputs(msg, stderr);
	p = strstr(msg, "prog '");
	if (p && (strstr(p, "BPF program load failed") || strstr(p, "failed to load"))) {
		p += strlen("prog '");
		snprintf(failed_prog, sizeof(failed_prog), "%.*s", (int)strcspn(p, "'"), p);
	}
	if (strstr(msg, "-- BEGIN PROG LOAD LOG --")) {
		remember_verifier_reason(msg);
	} else if (!strstr(msg, "failed to load") && !failed_prog[0]) {
		size_t len = strcspn(msg, "\n");

		/* Drop libbpf's "libbpf: " prefix: the message gets our own. */
		p = strncmp(msg, "libbpf: ", 8) ? msg : msg + 8;
		snprintf(last_message, sizeof(last_message), "%.*s", (int)(len - (p - msg)), p);
	}
	free(msg);
	return n;
}

void libbpf_log_reset(void)
{
	failed_prog[0] = '\0';
	last_message[0] = '\0';
}

void libbpf_log_setup(void)
{
	libbpf_set_print(libbpf_print);
}

const char *libbpf_failed_prog(void)
{
	return failed_prog[0] ? failed_prog : NULL;
}

const char *libbpf_last_message(void)
{
	return last_message[0] ? last_message : NULL;
}

/* What a failed program load means: an EPERM/EACCES with no verifier message is the kernel
 * refusing the program type, not a verdict on the code.
 */
void describe_load_failure(int err, const char *prog, const char *sec, char *buf, size_t size)
{
	const char *why = libbpf_last_message();

	if (prog && !why && (err == -EPERM || err == -EACCES))
		snprintf(buf, size,
			"the kernel refused to load program '%s' (%s): a security policy or "
			"the kernel build forbids this program type",
			prog, sec);
	else if (prog)
		snprintf(buf, size, "the verifier rejected program '%s' (%s)%s%s", prog, sec, why ? ": " : "",
			why ? why : "");
	else
		snprintf(buf, size, "loading the BPF object failed%s%s", why ? ": " : "", why ? why : "");
}

int check_root(void)
{
	if (geteuid() != 0)
		return fail(0, "must be run as root (needs CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN)");
	return EXIT_SUCCESS;
}
