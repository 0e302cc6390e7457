// SPDX-License-Identifier: GPL-2.0
/* The audit log: one line per change bbrctl made, appended to BBRCTL_AUDIT_LOG (BBRKIT_AUDIT_LOG in
 * the environment names another file), e.g.
 *   2026-11-29T03:40:00.123Z uid=0 pid=4242 policy add web arms=bbr3:90,cubic:10 lport=8080
 * Each line is one write(2) to a file opened O_APPEND, so lines of concurrent bbrctl runs never mix.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bbrctl.h"

#define BBRCTL_AUDIT_DIR "/var/log/bbrkit"
#define BBRCTL_AUDIT_LOG BBRCTL_AUDIT_DIR "/audit.log"
#define AUDIT_LINE_MAX 2048
#define NSEC_PER_MSEC 1000000

static bool nothing_changed;

void audit_skip(void)
{
	nothing_changed = true;
}

const char *audit_path(void)
{
	const char *env = getenv("BBRKIT_AUDIT_LOG");

	return env && *env ? env : BBRCTL_AUDIT_LOG;
}

void audit(const char *fmt, ...)
{
	char line[AUDIT_LINE_MAX];
	struct timespec now;
	struct tm tm;
	size_t used;
	va_list ap;
	int fd;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	used = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	used += (size_t)snprintf(line + used, sizeof(line) - used, ".%03ldZ uid=%u pid=%d ",
		now.tv_nsec / NSEC_PER_MSEC, (unsigned int)getuid(), (int)getpid());
	va_start(ap, fmt);
	if (used < sizeof(line))
		used += (size_t)vsnprintf(line + used, sizeof(line) - used, fmt, ap);
	va_end(ap);
	if (used >= sizeof(line) - 1)
		used = sizeof(line) - 2; /* cut, still one line */
	line[used++] = '\n';
	if (!getenv("BBRKIT_AUDIT_LOG"))
		mkdir(BBRCTL_AUDIT_DIR, 0750);
	fd = open(audit_path(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0 || write(fd, line, used) != (ssize_t)used)
		warn(-errno, "cannot append to the audit log %s", audit_path());
	if (fd >= 0)
		close(fd);
}

void audit_command(int argc, char **argv, int status)
{
	char text[AUDIT_LINE_MAX];
	size_t used = 0;

	if (status != EXIT_SUCCESS || nothing_changed)
		return;
	text[0] = '\0';
	for (int i = 0; i < argc && used < sizeof(text); i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%s", i ? " " : "", argv[i]);
	audit("%s", text);
}
