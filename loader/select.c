// SPDX-License-Identifier: GPL-2.0
/* The algorithms a command names on its command line: unknown, unattached and other-ABI names are
 * errors with one line each. Apart from algos.c, which is only the table (the host twin links it).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"

static void list_known(char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nalgos && used < size; i++)
		used += snprintf(buf + used, size - used, "%s%s", i ? ", " : "", algo_at(i)->name);
}

const struct algo *find_algo_or_fail(const char *name)
{
	const struct algo *a = algo_find(name);
	char known[256];

	if (!a) {
		list_known(known, sizeof(known));
		bad_argument("unknown algorithm '%s' (known: %s)", name, known);
	}
	return a;
}

/* The algorithms named in argv (all attached ones, maybe none, when none is named): unknown and
 * unattached names are errors, so that `flows`/`trace` never silently show less than asked for, and so
 * is an attachment of another ABI version, whose records this bbrctl would misread.
 */
int select_algos(int argc, char **argv, const struct algo **out, size_t *n)
{
	*n = 0;
	if (argc == 0) {
		for (size_t i = 0; i < nalgos; i++)
			if (algo_attached(algo_at(i)))
				out[(*n)++] = algo_at(i);
		for (size_t i = 0; i < *n; i++)
			if (check_attached_abi(out[i]))
				return EXIT_FAILURE;
		return EXIT_SUCCESS;
	}
	for (int i = 0; i < argc; i++) {
		const struct algo *a = find_algo_or_fail(argv[i]);
		bool dup = false;

		if (!a)
			return EXIT_USAGE;
		if (!algo_attached(a))
			return fail(0, "%s is not attached", a->name);
		if (check_attached_abi(a))
			return EXIT_FAILURE;
		for (size_t j = 0; j < *n; j++)
			dup |= out[j] == a;
		if (!dup)
			out[(*n)++] = a;
	}
	return EXIT_SUCCESS;
}
