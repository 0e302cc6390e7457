// SPDX-License-Identifier: GPL-2.0
/* BBRCTL_DISABLE: the keys (bbrctl.h's BBRCTL_DISABLE_KEYS), the test of one, and the check that refuses
 * a key bbrctl does not know: a typo would otherwise leave the piece on while the user or a test believes
 * it off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"
#include "strbuf.h"

#define DISABLE_ROW(id, k, w) \
	[DISABLE_##id] = { .key = k, .what = w, .reason = BBRCTL_DISABLE_ENV " has '" k "'" },
const struct disable_key disable_keys[DISABLE_KEYS] = { BBRCTL_DISABLE_KEYS(DISABLE_ROW) };
#undef DISABLE_ROW

/* The table's index of the key item[0..len), or -1. */
static int disable_lookup(const char *item, size_t len)
{
	for (int id = 0; id < DISABLE_KEYS; id++)
		if (strlen(disable_keys[id].key) == len && !strncmp(disable_keys[id].key, item, len))
			return id;
	return -1;
}

/* The first non-empty item of the list at p: its start, with its length in *len; NULL after the last.
 * Empty items, as in "a,,b" or "a,", mean nothing.
 */
static const char *next_item(const char *p, size_t *len)
{
	while (p && *p == ',')
		p++;
	if (!p || !*p)
		return NULL;
	*len = strcspn(p, ",");
	return p;
}

bool feature_disabled(enum disable_id id)
{
	size_t len;

	for (const char *p = next_item(getenv(BBRCTL_DISABLE_ENV), &len); p; p = next_item(p + len, &len))
		if (disable_lookup(p, len) == (int)id)
			return true;
	return false;
}

int check_disable_env(void)
{
	char known[256] = "";
	size_t len, used = 0;
	const char *bad = next_item(getenv(BBRCTL_DISABLE_ENV), &len);

	while (bad && disable_lookup(bad, len) >= 0)
		bad = next_item(bad + len, &len);
	if (!bad)
		return EXIT_SUCCESS;
	for (int id = 0; id < DISABLE_KEYS; id++)
		used = str_append(known, sizeof(known), used, id ? ", " : "", disable_keys[id].key);
	return bad_argument(BBRCTL_DISABLE_ENV ": unknown key '%.*s' (known: %s)", (int)len, bad, known);
}

void disable_keys_help(FILE *out)
{
	fprintf(out,
		BBRCTL_DISABLE_ENV " keys (comma-separated; each as if the kernel lacked that piece):\n");
	for (int id = 0; id < DISABLE_KEYS; id++)
		fprintf(out, "  %-14s %s\n", disable_keys[id].key, disable_keys[id].what);
}
