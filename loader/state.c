// SPDX-License-Identifier: GPL-2.0
/* What is attached: the pins under BBRKIT_PIN_ROOT and the kernel's list of congestion controls. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bbrctl.h"

int pin_path(char *buf, const char *algo, const char *name)
{
	int n = snprintf(
		buf, BBRCTL_MAX_PATH, "%s/%s%s%s", BBRKIT_PIN_ROOT, algo, name ? "/" : "", name ? name : "");

	return n < BBRCTL_MAX_PATH ? 0 : -ENAMETOOLONG;
}

/* Attached means registered through our pinned link. */
bool algo_attached(const struct algo *a)
{
	char path[BBRCTL_MAX_PATH];

	return !pin_path(path, a->name, BBRKIT_PIN_LINK) && !access(path, F_OK);
}

int attached_state(const struct algo *a)
{
	char path[BBRCTL_MAX_PATH];

	if (pin_path(path, a->name, BBRKIT_PIN_LINK))
		return 0;
	if (!access(path, F_OK))
		return 1;
	/* Only a registered name can be attached: an unregistered one is known to be detached. */
	return errno == EACCES && kernel_has_cc(a->name) ? -EACCES : 0;
}

int read_available_cc(char *buf, size_t size)
{
	FILE *f = fopen(BBRCTL_AVAILABLE_CC, "r");
	int err = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, size, f))
		err = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	if (!err)
		buf[strcspn(buf, "\n")] = '\0';
	return err;
}

bool kernel_has_cc(const char *name)
{
	char list[1024], *save = NULL;

	if (read_available_cc(list, sizeof(list)))
		return false;
	for (char *tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (!strcmp(tok, name))
			return true;
	return false;
}

/* A pinned map or link of an attached algorithm, as an fd (negative errno on failure). */
int open_pinned(const struct algo *a, const char *name, int flags)
{
	char path[BBRCTL_MAX_PATH];
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = flags);
	int fd, err = pin_path(path, a->name, name);

	if (err)
		return err;
	fd = bpf_obj_get_opts(path, &opts);
	return fd < 0 ? -errno : fd;
}

static bool pinned(const struct algo *a, const char *name)
{
	char path[BBRCTL_MAX_PATH];

	return !pin_path(path, a->name, name) && !access(path, F_OK);
}

struct attachment attachment_of(const struct algo *a)
{
	return (struct attachment){
		.params = pinned(a, BBRKIT_PIN_PARAMS),
		.trace = pinned(a, BBRKIT_PIN_EVENTS) && pinned(a, BBRKIT_PIN_CTL),
		.per_packet = pinned(a, BBRKIT_PIN_PP_SENT) && pinned(a, BBRKIT_PIN_PP_LOST) &&
			pinned(a, BBRKIT_PIN_PP_DESTROY),
		.flows = pinned(a, BBRKIT_PIN_FLOWS)	  ? "map-iterator"
			: pinned(a, BBRKIT_PIN_FLOWS_TCP) ? "iter-tcp"
							  : NULL,
	};
}

void attachment_features(const struct algo *a, char *buf, size_t size)
{
	struct attachment at = attachment_of(a);

	snprintf(buf, size, "params %s, trace %s, flows %s%s%s",
		!a->params_size	    ? "none"
			: at.params ? "yes"
				    : "no",
		at.trace ? "yes" : "no", at.flows ? at.flows : "no", a->per_packet ? ", loss decisions " : "",
		!a->per_packet		? ""
			: at.per_packet ? "per-packet"
					: "ack-time");
}

void attachment_json(struct json *j, const struct algo *a)
{
	struct attachment at = attachment_of(a);

	if (!algo_attached(a))
		return;
	json_key(j, "features");
	json_object(j);
	json_key(j, "params");
	json_bool(j, at.params);
	json_key(j, "trace");
	json_bool(j, at.trace);
	json_key(j, "flows");
	json_string(j, at.flows);
	if (a->per_packet) {
		json_key(j, "loss_decisions");
		json_string(j, at.per_packet ? "per-packet" : "ack-time");
	}
	json_object_end(j);
}
