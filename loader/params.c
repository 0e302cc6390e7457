// SPDX-License-Identifier: GPL-2.0
/* show and set: an algorithm's live parameters, in human units, in its pinned params map. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bbrctl.h"
#include "strbuf.h"

#define RATIO_DECIMALS 3
#define VALUE_TEXT 32
#define NOTE_TEXT 192

/* Human text of a stored value: ratios with one decimal at least (750 -> "0.75", 1000 -> "1.0"). */
static void format_value(char *buf, const struct param_desc *p, __u32 raw)
{
	int len;

	if (p->kind != PARAM_RATIO) {
		snprintf(buf, VALUE_TEXT, "%u", raw);
		return;
	}
	len = snprintf(buf, VALUE_TEXT, "%u.%03u", raw / BBRKIT_PERMILLE, raw % BBRKIT_PERMILLE);
	while (buf[len - 1] == '0' && buf[len - 2] != '.')
		buf[--len] = '\0';
}

/* Strict parsing: digits only (and one decimal point for ratios), no signs or exponents, so
 * that "1e3" or "-1" is rejected instead of silently becoming something else.
 */
static int parse_value(const struct param_desc *p, const char *s, __u64 *raw)
{
	static const char *const truths[] = { "1", "on", "true", "yes" };
	static const char *const falsehoods[] = { "0", "off", "false", "no" };
	__u64 whole = 0, frac = 0;
	int places = 0;

	if (p->kind == PARAM_BOOL) {
		for (size_t i = 0; i < 4; i++) {
			if (!strcasecmp(s, truths[i]) || !strcasecmp(s, falsehoods[i])) {
				*raw = !strcasecmp(s, truths[i]);
				return 0;
			}
		}
		return -EINVAL;
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		whole = whole * 10 + (__u64)(*s - '0');
		if (whole > UINT32_MAX)
			return -ERANGE;
	}
	if (*s == '.' && p->kind == PARAM_RATIO) {
		for (s++; isdigit((unsigned char)*s); s++, places++)
			if (places < RATIO_DECIMALS)
				frac = frac * 10 + (__u64)(*s - '0');
			else if (*s != '0')
				return -EDOM;
		if (places == 0)
			return -EINVAL;
		for (; places < RATIO_DECIMALS; places++)
			frac *= 10;
	}
	if (*s)
		return -EINVAL;
	*raw = p->kind == PARAM_RATIO ? whole * BBRKIT_PERMILLE + frac : whole;
	return 0;
}

static const char *kind_text(const struct param_desc *p)
{
	switch (p->kind) {
	case PARAM_RATIO:
		return "a decimal number with at most 3 places";
	case PARAM_BOOL:
		return "0, 1, on or off";
	default:
		return "a non-negative integer";
	}
}

/* Units that read well after a number ("1000 us", "2 x min_rtt"); "ratio" and "bool" do not. */
static bool unit_suffix(const struct param_desc *p)
{
	return strcmp(p->unit, "ratio") && strcmp(p->unit, "bool");
}

static const struct param_desc *find_param(const struct algo *a, const char *name, size_t len)
{
	for (size_t i = 0; i < a->nparams; i++)
		if (strlen(a->params[i].name) == len && !strncmp(a->params[i].name, name, len))
			return &a->params[i];
	return NULL;
}

static __u32 get_field(const void *value, const struct param_desc *p)
{
	__u32 v;

	memcpy(&v, (const char *)value + p->offset, sizeof(v));
	return v;
}

static void put_field(void *value, const struct param_desc *p, __u32 v)
{
	memcpy((char *)value + p->offset, &v, sizeof(v));
}

/* The pinned params map's fd, checked against the struct the descriptors describe. */
static int open_params(const struct algo *a, int flags)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd, err;

	if (!algo_attached(a))
		return fail(0, "not attached (bbrctl attach %s)", a->name), -1;
	fd = open_pinned(a, BBRKIT_PIN_PARAMS, flags);
	if (fd < 0)
		return fail(fd, "cannot open the pinned params map"), -1;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		close(fd);
		return fail(err, "cannot inspect the params map"), -1;
	}
	if (info.value_size != a->params_size || info.max_entries != 1) {
		close(fd);
		return fail(0, "the params map (value size %u) does not match struct %s_params (%zu)",
			       info.value_size, a->name, a->params_size),
		       -1;
	}
	return fd;
}

static void show_features(const struct algo *a)
{
	char features[128];

	if (!algo_attached(a))
		return;
	attachment_features(a, features, sizeof(features));
	printf("\nattached with: %s\n", features);
}

/* What a flow acts on: the rule of the BPF side (bbrkit_param(), include/bbrkit_params.h). */
static __u32 effective_value(const struct param_desc *p, __u32 raw)
{
	return bbrkit_param(raw, p->min, p->max, p->def);
}

enum param_status { PARAM_OK, PARAM_OUT_OF_RANGE, PARAM_UNUSUAL };

static const char *const status_names[] = { "ok", "out-of-range", "unusual" };

/* A stored value's status and, unless it is ok, a note that says what a flow makes of it. */
static enum param_status param_status(const struct param_desc *p, __u32 raw, char *note, size_t size)
{
	char v[VALUE_TEXT], d[VALUE_TEXT], lo[VALUE_TEXT], hi[VALUE_TEXT];

	format_value(d, p, p->def);
	if (raw < p->min || raw > p->max) {
		snprintf(note, size, "raw %u: out of range, acting as %s", raw, d);
		return PARAM_OUT_OF_RANGE;
	}
	if ((p->usual_min || p->usual_max) && (raw < p->usual_min || raw > p->usual_max)) {
		format_value(v, p, raw);
		format_value(lo, p, p->usual_min);
		format_value(hi, p, p->usual_max);
		snprintf(note, size, "%s is outside the usual %s to %s (default %s): a typo?", v, lo, hi, d);
		return PARAM_UNUSUAL;
	}
	note[0] = '\0';
	return PARAM_OK;
}

static void json_param_value(struct json *j, const char *key, const struct param_desc *p, __u32 raw)
{
	char text[VALUE_TEXT];

	format_value(text, p, raw);
	json_key(j, key);
	json_number_text(j, text);
}

static const char *const kind_names[] = {
	[PARAM_RATIO] = "ratio",
	[PARAM_UINT] = "uint",
	[PARAM_BOOL] = "bool",
};

void param_json(struct json *j, const struct param_desc *p)
{
	bool band = p->usual_min || p->usual_max;

	json_key(j, "name");
	json_string(j, p->name);
	json_key(j, "field");
	json_string(j, p->field);
	json_key(j, "kind");
	json_string(j, kind_names[p->kind]);
	json_key(j, "unit");
	json_string(j, p->unit);
	json_param_value(j, "default", p, p->def);
	json_param_value(j, "min", p, p->min);
	json_param_value(j, "max", p, p->max);
	if (band) {
		json_param_value(j, "usual_min", p, p->usual_min);
		json_param_value(j, "usual_max", p, p->usual_max);
	} else {
		json_key(j, "usual_min");
		json_null(j);
		json_key(j, "usual_max");
		json_null(j);
	}
	json_key(j, "help");
	json_string(j, p->help);
}

/* value NULL: a detached algorithm, described from the compiled-in table alone. */
static void show_json(const struct algo *a, const void *value)
{
	struct json j;

	json_init(&j, stdout);
	json_object(&j);
	json_key(&j, "algo");
	json_string(&j, a->name);
	json_key(&j, "attached");
	json_bool(&j, value != NULL || algo_attached(a));
	attachment_json(&j, a);
	json_key(&j, "params");
	json_array(&j);
	for (size_t i = 0; i < a->nparams; i++) {
		const struct param_desc *p = &a->params[i];
		__u32 raw = value ? get_field(value, p) : 0;
		char note[NOTE_TEXT];
		enum param_status st = value ? param_status(p, raw, note, sizeof(note)) : PARAM_OK;

		json_object(&j);
		param_json(&j, p);
		if (value) {
			json_param_value(&j, "value", p, effective_value(p, raw));
			json_key(&j, "raw");
			json_uint(&j, raw);
			json_key(&j, "status");
			json_string(&j, status_names[st]);
			json_key(&j, "note");
			json_string(&j, st == PARAM_OK ? NULL : note);
		}
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
}

static void show_table(const struct algo *a, const void *value)
{
	char v[VALUE_TEXT], d[VALUE_TEXT], lo[VALUE_TEXT], hi[VALUE_TEXT], note[NOTE_TEXT];
	int w = (int)strlen("PARAMETER");

	for (size_t i = 0; i < a->nparams; i++) /* the name column fits the longest name */
		w = (int)strlen(a->params[i].name) > w ? (int)strlen(a->params[i].name) : w;
	printf("%-*s %-9s %-10s %-9s %-16s %s\n", w, "PARAMETER", "VALUE", "UNIT", "DEFAULT", "RANGE",
		"MEANING");
	for (size_t i = 0; i < a->nparams; i++) {
		const struct param_desc *p = &a->params[i];
		char range[2 * VALUE_TEXT + 4];

		format_value(v, p, effective_value(p, get_field(value, p)));
		format_value(d, p, p->def);
		format_value(lo, p, p->min);
		format_value(hi, p, p->max);
		snprintf(range, sizeof(range), "%s..%s", lo, hi);
		printf("%-*s %-9s %-10s %-9s %-16s %s\n", w, p->name, v, p->unit, d, range, p->help);
	}
	/* After the table, so that the table itself stays one line per parameter. */
	for (size_t i = 0; i < a->nparams; i++)
		if (param_status(&a->params[i], get_field(value, &a->params[i]), note, sizeof(note)))
			warn(0, "%s: %s", a->params[i].name, note);
}

int cmd_show(const struct cmd_opts *o, int argc, char **argv)
{
	unsigned char value[MAX_PARAMS_SIZE];
	const struct algo *a = o->algo;
	bool json = o->json;
	__u32 key = 0;
	int fd, err;

	(void)argc;
	(void)argv; /* ALGO only: o->algo */
	/* A detached algorithm's parameters are the compiled-in table: no root, nothing to read. */
	if (json && attached_state(a) == 0) {
		show_json(a, NULL);
		return EXIT_SUCCESS;
	}
	if (check_root())
		return EXIT_FAILURE;
	if (!a->nparams) {
		if (json) {
			show_json(a, NULL);
		} else {
			printf("%s has no parameters\n", a->name);
			show_features(a);
		}
		return EXIT_SUCCESS;
	}
	fd = open_params(a, BPF_F_RDONLY);
	if (fd < 0)
		return EXIT_FAILURE;
	err = bpf_map_lookup_elem(fd, &key, value) ? -errno : 0;
	close(fd);
	if (err)
		return fail(err, "cannot read the params map");
	if (json) {
		show_json(a, value);
	} else {
		show_table(a, value);
		show_features(a);
	}
	return EXIT_SUCCESS;
}

/* Checks every KEY=VALUE against the descriptors and applies them to value; nothing is written
 * here, so one bad key leaves the map untouched.
 */
static int apply_args(const struct algo *a, int argc, char **argv, void *value)
{
	bool seen[MAX_PARAMS_SIZE / sizeof(__u32)] = {};
	char lo[VALUE_TEXT], hi[VALUE_TEXT], names[256];
	size_t used = 0;

	names[0] = '\0';
	for (size_t i = 0; i < a->nparams; i++)
		used = str_append(names, sizeof(names), used, i ? ", " : "", a->params[i].name);
	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		const struct param_desc *p;
		__u64 raw;
		int err;

		if (!eq || eq == argv[i])
			return bad_argument("'%s' is not KEY=VALUE", argv[i]);
		p = find_param(a, argv[i], (size_t)(eq - argv[i]));
		if (!p)
			return bad_argument(
				"unknown parameter '%.*s' (known: %s)", (int)(eq - argv[i]), argv[i], names);
		if (seen[p - a->params])
			return bad_argument("%s given more than once", p->name);
		seen[p - a->params] = true;
		format_value(lo, p, p->min);
		format_value(hi, p, p->max);
		err = parse_value(p, eq + 1, &raw);
		if (err == -EINVAL)
			return bad_argument("%s: '%s' is not %s", p->name, eq + 1, kind_text(p));
		if (err == -EDOM)
			return bad_argument("%s: '%s' has more than 3 decimal places", p->name, eq + 1);
		if (err || raw < p->min || raw > p->max)
			return bad_argument("%s: %s is out of range (allowed %s to %s%s%s)", p->name, eq + 1,
				lo, hi, unit_suffix(p) ? " " : "", unit_suffix(p) ? p->unit : "");
		put_field(value, p, (__u32)raw);
	}
	return EXIT_SUCCESS;
}

int cmd_set(const struct cmd_opts *o, int argc, char **argv)
{
	unsigned char value[MAX_PARAMS_SIZE];
	const struct algo *a = o->algo;
	__u32 key = 0;
	int fd, err;

	if (!a->nparams)
		return bad_argument("%s has no parameters", a->name);
	/* Validate against the defaults first: bad input is reported before any state is read. */
	for (size_t i = 0; i < a->nparams; i++)
		put_field(value, &a->params[i], a->params[i].def);
	err = apply_args(a, argc - 1, argv + 1, value);
	if (err)
		return err;
	if (check_root())
		return EXIT_FAILURE;
	fd = open_params(a, 0);
	if (fd < 0)
		return EXIT_FAILURE;
	err = bpf_map_lookup_elem(fd, &key, value) ? -errno : 0;
	if (err) {
		close(fd);
		return fail(err, "cannot read the params map");
	}
	if (apply_args(a, argc - 1, argv + 1, value)) {
		close(fd);
		return EXIT_FAILURE;
	}
	err = bpf_map_update_elem(fd, &key, value, BPF_EXIST) ? -errno : 0;
	close(fd);
	if (err)
		return fail(err, "cannot write the params map");
	for (size_t i = 0; i < a->nparams; i++) {
		char note[NOTE_TEXT];

		if (param_status(&a->params[i], get_field(value, &a->params[i]), note, sizeof(note)))
			warn(0, "%s: %s", a->params[i].name, note);
	}
	return EXIT_SUCCESS;
}

void help_params(FILE *out)
{
	char d[VALUE_TEXT], lo[VALUE_TEXT], hi[VALUE_TEXT];

	fprintf(out, "parameters (KEY, unit, default, range, meaning):\n");
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);

		for (size_t j = 0; j < a->nparams; j++) {
			const struct param_desc *p = &a->params[j];
			char range[2 * VALUE_TEXT + 4];

			format_value(d, p, p->def);
			format_value(lo, p, p->min);
			format_value(hi, p, p->max);
			snprintf(range, sizeof(range), "%s..%s", lo, hi);
			fprintf(out, "  %-12s %-13s %-9s %-6s %-12s %s\n", a->name, p->name, p->unit, d,
				range, p->help);
		}
	}
}

/* Text in a markdown table cell, whose column separator is '|'. */
static void markdown_cell(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', out);
		fputc(*s, out);
	}
}

/* docs/reference.md's parameter table (bbrctl-gen params-table): algorithms that share a table
 * (bbr2, bbr3) share its rows.
 */
void params_markdown(FILE *out)
{
	char d[VALUE_TEXT], lo[VALUE_TEXT], hi[VALUE_TEXT], ulo[VALUE_TEXT], uhi[VALUE_TEXT];

	fprintf(out,
		"| algorithm | key | map field | unit | default | range | usual | meaning |\n"
		"|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);
		char names[128] = "";
		bool first = true;

		for (size_t k = 0; k < i && first; k++)
			first = algo_at(k)->params != a->params;
		if (!a->nparams || !first)
			continue;
		for (size_t k = i; k < nalgos; k++)
			if (algo_at(k)->params == a->params)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					names[0] ? ", " : "", algo_at(k)->name);
		for (size_t j = 0; j < a->nparams; j++) {
			const struct param_desc *p = &a->params[j];

			format_value(d, p, p->def);
			format_value(lo, p, p->min);
			format_value(hi, p, p->max);
			format_value(ulo, p, p->usual_min);
			format_value(uhi, p, p->usual_max);
			fprintf(out, "| %s | `%s` | `%s` | %s | %s | %s .. %s | ", names, p->name, p->field,
				p->unit, d, lo, hi);
			if (p->usual_min || p->usual_max)
				fprintf(out, "%s .. %s | ", ulo, uhi);
			else /* no band (param_status) */
				fputs("none | ", out);
			markdown_cell(out, p->help);
			fputs(" |\n", out);
		}
	}
}

/* For apply: checks KEY=VALUE... as set does (EXIT_USAGE after one line) and lists in out, as
 * "key=value (now x)", those that differ from the live values (from the defaults when a is not
 * attached). The count of them, or a negative exit status.
 */
int params_diff(const struct algo *a, int argc, char **argv, char *out, size_t size)
{
	unsigned char want[MAX_PARAMS_SIZE], now[MAX_PARAMS_SIZE];
	size_t used = 0;
	__u32 key = 0;
	int fd, n = 0, err;

	out[0] = '\0';
	if (argc && !a->nparams)
		return -bad_argument("%s has no parameters", a->name);
	for (size_t i = 0; i < a->nparams; i++)
		put_field(now, &a->params[i], a->params[i].def);
	if (algo_attached(a)) {
		fd = open_params(a, BPF_F_RDONLY);
		if (fd < 0)
			return -EXIT_FAILURE;
		err = bpf_map_lookup_elem(fd, &key, now) ? -errno : 0;
		close(fd);
		if (err)
			return -fail(err, "cannot read the params map");
	}
	memcpy(want, now, sizeof(want));
	err = apply_args(a, argc, argv, want);
	if (err)
		return -err;
	for (size_t i = 0; i < a->nparams; i++) {
		const struct param_desc *p = &a->params[i];
		char w[VALUE_TEXT], h[VALUE_TEXT], item[3 * VALUE_TEXT + 16];

		if (get_field(want, p) == get_field(now, p))
			continue;
		format_value(w, p, get_field(want, p));
		format_value(h, p, get_field(now, p));
		snprintf(item, sizeof(item), "%s=%s (now %s)", p->name, w, h);
		used = str_append(out, size, used, n++ ? " " : "", item);
	}
	return n;
}
