// SPDX-License-Identifier: GPL-2.0
/* list: bbrctl's algorithms, which are attached, and the kernel's available congestion controls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"
#include "strbuf.h"

static void list_json(const char *available)
{
	char buf[1024], *save = NULL;
	struct json j;

	json_init(&j, stdout);
	json_object(&j);
	json_key(&j, "algorithms");
	json_array(&j);
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);
		int state = attached_state(a);
		char dir[BBRCTL_MAX_PATH];

		json_object(&j);
		json_key(&j, "name");
		json_string(&j, a->name);
		json_key(&j, "attached");
		if (state < 0)
			json_null(&j);
		else
			json_bool(&j, state);
		json_key(&j, "registered");
		json_bool(&j, kernel_has_cc(a->name));
		json_key(&j, "params");
		json_array(&j);
		for (size_t k = 0; k < a->nparams; k++) {
			json_object(&j);
			param_json(&j, &a->params[k]);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_key(&j, "pin_dir");
		pin_path(dir, a->name, NULL);
		json_string(&j, dir);
		attachment_json(&j, a);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "kernel_available");
	json_array(&j);
	snprintf(buf, sizeof(buf), "%s", available);
	for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		json_string(&j, tok);
	json_array_end(&j);
	json_object_end(&j);
}

/* No root needed: the parameters come from the compiled-in tables and the kernel's list is world
 * readable; only whether a registered name is ours needs root (bpffs is root's), and says so.
 */
int cmd_list(const struct cmd_opts *o, int argc, char **argv)
{
	char available[1024];
	bool unknown = false;
	int err;

	(void)argc;
	(void)argv;
	set_context("list");
	err = read_available_cc(available, sizeof(available));
	if (err)
		return fail(err, "cannot read " BBRCTL_AVAILABLE_CC);
	if (o->json) {
		list_json(available);
		return EXIT_SUCCESS;
	}
	printf("%-14s %-9s %-46s %s\n", "ALGORITHM", "ATTACHED", "PARAMETERS", "FEATURES");
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);
		int state = attached_state(a);
		char names[128] = "-", features[128] = "-";
		size_t used = 0;

		for (size_t j = 0; j < a->nparams; j++)
			used = str_append(names, sizeof(names), used, j ? "," : "", a->params[j].name);
		if (state > 0)
			attachment_features(a, features, sizeof(features));
		unknown |= state < 0;
		printf("%-14s %-9s %-46s %s\n", a->name,
			state > 0	? "yes"
				: state ? "?"
					: "no",
			names, features);
	}
	printf("\nkernel available: %s\n", available);
	if (unknown)
		printf("?: registered, but only root can read the pins under %s that say whether bbrctl "
		       "attached it\n",
			BBRKIT_PIN_ROOT);
	return EXIT_SUCCESS;
}
