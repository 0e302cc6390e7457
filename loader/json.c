// SPDX-License-Identifier: GPL-2.0
/* A streaming JSON writer: commas, nesting and string escapes are kept here, so that no command
 * builds JSON with format strings. One line per document, `{"key": value, ...}`.
 */
#include <math.h>
#include <stdio.h>

#include "bbrctl.h"

static void separate(struct json *j)
{
	if (j->pending_key) {
		j->pending_key = false;
		return;
	}
	if (j->depth && j->depth <= JSON_MAX_DEPTH && j->count[j->depth - 1]++)
		fputs(", ", j->out);
}

static void open_scope(struct json *j, char c)
{
	separate(j);
	fputc(c, j->out);
	if (j->depth < JSON_MAX_DEPTH)
		j->count[j->depth] = 0;
	j->depth++;
}

static void close_scope(struct json *j, char c)
{
	fputc(c, j->out);
	if (j->depth && !--j->depth)
		fputc('\n', j->out);
}

void json_init(struct json *j, FILE *out)
{
	*j = (struct json){ .out = out };
}

void json_object(struct json *j)
{
	open_scope(j, '{');
}

void json_object_end(struct json *j)
{
	close_scope(j, '}');
}

void json_array(struct json *j)
{
	open_scope(j, '[');
}

void json_array_end(struct json *j)
{
	close_scope(j, ']');
}

static void quoted(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

void json_key(struct json *j, const char *key)
{
	separate(j);
	quoted(j->out, key);
	fputs(": ", j->out);
	j->pending_key = true;
}

void json_string(struct json *j, const char *s)
{
	separate(j);
	if (s)
		quoted(j->out, s);
	else
		fputs("null", j->out);
}

void json_uint(struct json *j, unsigned long long v)
{
	separate(j);
	fprintf(j->out, "%llu", v);
}

void json_bool(struct json *j, bool v)
{
	separate(j);
	fputs(v ? "true" : "false", j->out);
}

void json_null(struct json *j)
{
	separate(j);
	fputs("null", j->out);
}

/* Numbers JSON cannot hold (NaN, infinities) become null. */
void json_double(struct json *j, double v, int digits)
{
	separate(j);
	if (isfinite(v))
		fprintf(j->out, "%.*g", digits, v);
	else
		fputs("null", j->out);
}

/* A number already formatted as JSON allows (digits and at most one '.'), e.g. a ratio "0.75". */
void json_number_text(struct json *j, const char *text)
{
	separate(j);
	fputs(text, j->out);
}
