// SPDX-License-Identifier: GPL-2.0
/* Which network namespaces use an algorithm as their default congestion control.
 *
 * A namespace's default holds a reference to the algorithm's struct_ops map, like a socket does:
 * after unregistering, new connections in that namespace would still get the old, unlisted
 * instance (measured on 6.18). detach therefore refuses while any default names the algorithm.
 * /proc/sys/net is per the reader's namespace, so each one is entered with setns() to read it.
 */
#define _GNU_SOURCE
#include <ctype.h>
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

struct scan {
	const char *algo;
	ino_t seen[MAX_NETNS];
	size_t nseen;
	int count;
	char *who;
	size_t size, used;
};

static bool default_is(const char *algo)
{
	char cc[64] = "";
	FILE *f = fopen(DEFAULT_CC, "r");

	if (!f)
		return false;
	if (!fgets(cc, sizeof(cc), f))
		cc[0] = '\0';
	fclose(f);
	cc[strcspn(cc, "\n")] = '\0';
	return !strcmp(cc, algo);
}

static void check(struct scan *s, int self, const char *path, const char *label)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st) || s->nseen == MAX_NETNS)
		goto out;
	for (size_t i = 0; i < s->nseen; i++)
		if (s->seen[i] == st.st_ino)
			goto out;
	s->seen[s->nseen++] = st.st_ino;
	if (setns(fd, CLONE_NEWNET))
		goto out;
	if (default_is(s->algo)) {
		if (s->used < s->size)
			s->used += snprintf(s->who + s->used, s->size - s->used, "%s%s",
					    s->count ? ", " : "", label);
		s->count++;
	}
	setns(self, CLONE_NEWNET);
out:
	close(fd);
}

int netns_defaults_using(const char *algo, char *who, size_t size)
{
	static struct scan s;
	/* room for a whole d_name plus the fixed parts */
	char path[BBRCTL_MAX_PATH + 32], label[BBRCTL_MAX_PATH + 32];
	struct dirent *de;
	DIR *d;
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	if (self < 0)
		return -1;
	memset(&s, 0, sizeof(s));
	s.algo = algo;
	s.who = who;
	s.size = size;
	who[0] = '\0';
	check(&s, self, "/proc/self/ns/net", "this network namespace");
	d = opendir(NAMED_NETNS_DIR);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), NAMED_NETNS_DIR "/%s", de->d_name);
		snprintf(label, sizeof(label), "netns %s", de->d_name);
		check(&s, self, path, label);
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
		check(&s, self, path, label);
	}
	if (d)
		closedir(d);
	close(self);
	return s.count;
}
