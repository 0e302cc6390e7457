// SPDX-License-Identifier: GPL-2.0
/* Walking every network namespace, and which ones use an algorithm as their default congestion
 * control.
 *
 * A namespace's default holds a reference to the algorithm's struct_ops map, like a socket does:
 * after unregistering, new connections in that namespace would still get the old, unlisted
 * instance (measured on 6.18). detach therefore refuses while any default names the algorithm.
 * /proc/sys/net and iter/tcp are per the reader's namespace, so each one is entered with setns().
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bbrctl.h"

#define DEFAULT_CC "/proc/sys/net/ipv4/tcp_congestion_control"
#define NAMED_NETNS_DIR "/run/netns"
#define MAX_NETNS 4096

struct walk {
	ino_t seen[MAX_NETNS];
	size_t nseen;
	int self;
	int (*fn)(void *ctx, const char *label);
	void *ctx;
	int err;
};

/* Enters the namespace at path unless already visited, runs fn there, and comes back. */
static void visit(struct walk *w, const char *path, const char *label)
{
	struct stat st;
	int fd;

	if (w->err)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || w->nseen == MAX_NETNS)
		goto out;
	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i] == st.st_ino)
			goto out;
	w->seen[w->nseen++] = st.st_ino;
	if (setns(fd, CLONE_NEWNET))
		goto out;
	w->err = w->fn(w->ctx, label);
	if (setns(w->self, CLONE_NEWNET) && !w->err)
		w->err = -errno;
out:
	close(fd);
}

int for_each_netns(int (*fn)(void *ctx, const char *label), void *ctx)
{
	static struct walk w;
	/* room for a whole d_name plus the fixed parts */
	char path[BBRCTL_MAX_PATH + 32], label[BBRCTL_MAX_PATH + 32];
	struct dirent *de;
	DIR *d;

	memset(&w, 0, sizeof(w));
	w.self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (w.self < 0)
		return -errno;
	w.fn = fn;
	w.ctx = ctx;
	visit(&w, "/proc/self/ns/net", "this network namespace");
	d = opendir(NAMED_NETNS_DIR);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), NAMED_NETNS_DIR "/%s", de->d_name);
		snprintf(label, sizeof(label), "netns %s", de->d_name);
		visit(&w, path, label);
	}
	if (d)
		closedir(d);
	/* Namespaces without a name are reachable only through their processes. */
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/net", de->d_name);
		snprintf(label, sizeof(label), "the netns of pid %s", de->d_name);
		visit(&w, path, label);
	}
	if (d)
		closedir(d);
	close(w.self);
	return w.err;
}

struct defaults {
	const char *algo;
	int count;
	char *who;
	size_t size, used;
};

static int default_check(void *ctx, const char *label)
{
	struct defaults *s = ctx;
	char cc[64] = "";
	FILE *f = fopen(DEFAULT_CC, "r");

	if (!f)
		return 0;
	if (!fgets(cc, sizeof(cc), f))
		cc[0] = '\0';
	fclose(f);
	cc[strcspn(cc, "\n")] = '\0';
	if (strcmp(cc, s->algo))
		return 0;
	if (s->used < s->size)
		s->used += snprintf(s->who + s->used, s->size - s->used, "%s%s", s->count ? ", " : "", label);
	s->count++;
	return 0;
}

int netns_defaults_using(const char *algo, char *who, size_t size)
{
	struct defaults s = { .algo = algo, .who = who, .size = size };
	int err;

	who[0] = '\0';
	err = for_each_netns(default_check, &s);
	return err ? err : s.count;
}
