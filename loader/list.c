// SPDX-License-Identifier: GPL-2.0
/* list: bbrctl's algorithms, which are attached, and the kernel's available congestion controls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"

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
		char dir[BBRCTL_MAX_PATH];

		json_object(&j);
		json_key(&j, "name");
		json_string(&j, a->name);
		json_key(&j, "attached");
		json_bool(&j, algo_attached(a));
		json_key(&j, "registered");
		json_bool(&j, kernel_has_cc(a->name));
		json_key(&j, "params");
		json_array(&j);
		for (size_t k = 0; k < a->nparams; k++)
			json_string(&j, a->params[k].name);
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

int cmd_list(const struct cmd_opts *o, int argc, char **argv)
{
	char available[1024];
	int err;

	(void)argc;
	(void)argv;
	set_context("list");
	if (check_root())
		return EXIT_FAILURE;
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
		char names[128] = "-", features[128] = "-";
		size_t used = 0;

		for (size_t j = 0; j < a->nparams && used < sizeof(names); j++)
			used += snprintf(names + used, sizeof(names) - used, "%s%s", j ? "," : "",
					 a->params[j].name);
		if (algo_attached(a))
			attachment_features(a, features, sizeof(features));
		printf("%-14s %-9s %-46s %s\n", a->name, algo_attached(a) ? "yes" : "no", names, features);
	}
	printf("\nkernel available: %s\n", available);
	return EXIT_SUCCESS;
}

