// SPDX-License-Identifier: GPL-2.0
/* flows: the live flows of attached algorithms, read from their pinned flows iterators. Each read
 * of a pinned iterator runs it once, one record per socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bbrctl.h"

struct records {
	char *buf;
	size_t cap, used;
	const char *path;
};

int read_all(int fd, char **buf, size_t *cap, size_t *used)
{
	for (;;) {
		ssize_t got;

		if (*cap - *used < sizeof(struct bbrkit_flow) * 16) {
			size_t grow = *cap ? *cap * 2 : sizeof(struct bbrkit_flow) * 64;
			char *grown = realloc(*buf, grow);

			if (!grown)
				return -ENOMEM;
			*buf = grown;
			*cap = grow;
		}
		got = read(fd, *buf + *used, *cap - *used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : 0;
		*used += (size_t)got;
	}
}

/* Appends everything one read of the pinned iterator at r->path yields. */
static int read_records(struct records *r)
{
	int fd = open(r->path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = read_all(fd, &r->buf, &r->cap, &r->used);
	close(fd);
	return err;
}

int read_iterator(const char *path, char **buf, size_t *used)
{
	struct records r = { .path = path };
	int err = read_records(&r);

	if (err) {
		free(r.buf);
		return err;
	}
	*buf = r.buf;
	*used = r.used;
	return 0;
}

static int read_records_here(void *ctx, const char *label)
{
	(void)label;
	return read_records(ctx);
}

/* The map iterator sees every namespace at once; iter/tcp sees the reader's, so it is read in each. */
int read_flows(const struct algo *a, struct bbrkit_flow **out, size_t *n)
{
	char map_iter[BBRCTL_MAX_PATH], tcp_iter[BBRCTL_MAX_PATH];
	struct records r = { .path = map_iter };
	int err;

	pin_path(map_iter, a->name, BBRKIT_PIN_FLOWS);
	pin_path(tcp_iter, a->name, BBRKIT_PIN_FLOWS_TCP);
	if (!access(map_iter, F_OK)) {
		err = read_records(&r);
	} else if (!access(tcp_iter, F_OK)) {
		r.path = tcp_iter;
		err = for_each_netns(read_records_here, &r);
	} else {
		return -EOPNOTSUPP;
	}
	if (!err && r.used % sizeof(struct bbrkit_flow))
		err = -EPROTO; /* the BPF side writes whole records only */
	if (err) {
		free(r.buf);
		return err;
	}
	*out = (struct bbrkit_flow *)r.buf;
	*n = r.used / sizeof(struct bbrkit_flow);
	return 0;
}

int count_flows(const struct algo *a)
{
	struct bbrkit_flow *f = NULL;
	size_t n = 0;
	int err = read_flows(a, &f, &n);

	free(f);
	return err ? err : (int)n;
}

int cmd_flows(const struct cmd_opts *o, int argc, char **argv)
{
	const struct algo *sel[CLI_MANY];
	struct bbrkit_flow *flows[CLI_MANY] = {};
	size_t nflows[CLI_MANY] = {}, nsel;
	bool json = o->json;
	struct json j;
	int ret;

	if (check_root())
		return EXIT_FAILURE;
	ret = select_algos(argc, argv, sel, &nsel);
	if (ret)
		return ret;
	/* Everything is read before anything is printed: a failure leaves stdout empty (under --json,
	 * its one document is the error).
	 */
	for (size_t i = 0; i < nsel; i++) {
		int err = read_flows(sel[i], &flows[i], &nflows[i]);

		if (err) {
			for (size_t k = 0; k < i; k++)
				free(flows[k]);
			set_context("flows %s", sel[i]->name);
			if (err == -EOPNOTSUPP)
				return fail(0,
					"not available: the kernel refused both flows iterators when "
					"%s was attached (bbrctl features)",
					sel[i]->name);
			return fail(err, "cannot read the flows iterator");
		}
	}
	/* With nothing attached there are no flows: an empty table or list (as ss shows none). */
	if (!nsel)
		warn(0, "no bbrkit algorithm is attached");
	json_init(&j, stdout);
	if (json) {
		json_object(&j);
		json_key(&j, "flows");
		json_array(&j);
	} else {
		record_table_header(stdout);
	}
	for (size_t i = 0; i < nsel; i++) {
		for (size_t k = 0; k < nflows[i]; k++) {
			if (json)
				record_json_object(&j, sel[i], &flows[i][k]);
			else
				record_table_row(stdout, sel[i], &flows[i][k]);
		}
		free(flows[i]);
	}
	if (json) {
		json_array_end(&j);
		json_object_end(&j);
	}
	return EXIT_SUCCESS;
}
