/* SPDX-License-Identifier: GPL-2.0 */
/* Bounded string building for bbrctl's messages, dependency-free so host unit tests include it. */
#ifndef STRBUF_H
#define STRBUF_H

#include <stddef.h>
#include <string.h>

/* Appends sep and s to the NUL-terminated buf[0..used), truncating at size - 1 bytes; returns the new
 * length, which never passes size - 1 (snprintf's return value would, and the next call's
 * `size - used` would then wrap).
 */
static inline size_t str_append(char *buf, size_t size, size_t used, const char *sep, const char *s)
{
	const char *parts[] = { sep, s };

	for (size_t p = 0; p < 2; p++) {
		size_t room = used + 1 < size ? size - 1 - used : 0, n = strlen(parts[p]);

		if (n > room)
			n = room;
		memcpy(buf + used, parts[p], n);
		used += n;
	}
	if (size)
		buf[used] = '\0';
	return used;
}

#endif /* STRBUF_H */
