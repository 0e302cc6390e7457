// SPDX-License-Identifier: GPL-2.0
/* apply: a host's declared state from a file, the way it is restored at boot. The file is lines of
 *   attach ALGO [KEY=VALUE...]      a bbrkit algorithm attached, with these parameters
 *   rule NAME KEY=VALUE...          a policy rule, keys as `policy add` takes them
 * ('#' starts a comment). Whatever the file does not declare goes: rules are deleted and bbrkit's
 * algorithms detached. The whole file is checked before anything changes (a bad line is one error
 * naming FILE:LINE, exit 2); then the steps that take the host from what it has to what the file
 * says are printed, as a diff, and unless --dry-run carried out in order, each one a line of the
 * audit log: attachments, parameters, rules in the file's order (their creation order), deletions.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"
#include "policy_internal.h"

#define APPLY_FILE_MAX (1 << 20) /* a declaration of a few dozen lines; anything this big is a mistake */
#define APPLY_ALGOS_MAX 32	 /* attach lines: more than bbrkit has algorithms */
#define APPLY_STEPS_MAX (2 * APPLY_ALGOS_MAX + 2 * BBRKIT_POLICY_RULES)
#define STEP_TEXT 768

struct decl {
	int line;
	int argc; /* words after the keyword: ALGO or NAME first */
	char *argv[CLI_MANY + 2];
	const struct algo *algo; /* attach */
	struct policy_spec spec; /* rule */
};

struct config {
	char *text; /* the file, cut into words in place */
	struct decl attach[APPLY_ALGOS_MAX], rules[BBRKIT_POLICY_RULES];
	size_t nattach, nrules;
};

/* One change: its diff line and the command that makes it (argv[0] the verb or ALGO). */
struct step {
	char text[STEP_TEXT];
	char name[BBRKIT_POLICY_NAME_MAX]; /* a rule to delete: the plan's copy of the rules goes */
	int (*run)(const struct cmd_opts *o, int argc, char **argv);
	const struct algo *algo;
	int argc;
	char *argv[CLI_MANY + 4];
};

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = f ? malloc(APPLY_FILE_MAX + 1) : NULL;
	size_t n = buf ? fread(buf, 1, APPLY_FILE_MAX + 1, f) : 0;
	int err = f ? 0 : -errno;

	if (f)
		fclose(f);
	if (!f) {
		bad_argument("cannot read %s: %s", path, strerror(-err));
		return NULL;
	}
	if (!buf || n > APPLY_FILE_MAX) {
		free(buf);
		bad_argument("%s is larger than %d bytes", path, APPLY_FILE_MAX);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

static const struct decl *find_decl(const struct decl *d, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(d[i].argv[0], name))
			return &d[i];
	return NULL;
}

/* Each arm is a kernel algorithm registered now or a bbrkit one the file attaches. */
static int check_arms(const struct config *c, const struct decl *r)
{
	for (unsigned int i = 0; i < r->spec.rule.narms; i++) {
		const char *cc = r->spec.rule.arms[i].cc;

		if (algo_find(cc) ? !find_decl(c->attach, c->nattach, cc) : !kernel_has_cc(cc))
			return bad_argument("rule %s: %s is %s", r->argv[0], cc,
				algo_find(cc) ? "not attached by an attach line"
					      : "not a registered algorithm");
	}
	return EXIT_SUCCESS;
}

static int parse_line(struct config *c, struct decl *d, const char *keyword)
{
	char scratch[STEP_TEXT];

	if (!strcmp(keyword, "attach")) {
		if (c->nattach == APPLY_ALGOS_MAX)
			return bad_argument("more than %d attach lines", APPLY_ALGOS_MAX);
		if (!d->argc)
			return bad_argument("attach needs an ALGO");
		d->algo = find_algo_or_fail(d->argv[0]);
		if (!d->algo)
			return EXIT_USAGE;
		if (find_decl(c->attach, c->nattach, d->argv[0]))
			return bad_argument("%s is attached twice", d->argv[0]);
		if (params_diff(d->algo, d->argc - 1, d->argv + 1, scratch, sizeof(scratch)) < 0)
			return EXIT_USAGE;
		c->attach[c->nattach++] = *d;
		return EXIT_SUCCESS;
	}
	if (!strcmp(keyword, "rule")) {
		if (c->nrules == BBRKIT_POLICY_RULES)
			return bad_argument("more than %d rules", BBRKIT_POLICY_RULES);
		if (!d->argc)
			return bad_argument("rule needs a NAME");
		if (policy_parse(d->argv[0], d->argc - 1, d->argv + 1, &d->spec))
			return EXIT_USAGE;
		if (d->spec.replace)
			return bad_argument(
				"rule %s: replace is not a key here (apply replaces what differs)",
				d->argv[0]);
		if (find_decl(c->rules, c->nrules, d->argv[0]))
			return bad_argument("rule %s is declared twice", d->argv[0]);
		c->rules[c->nrules++] = *d;
		return EXIT_SUCCESS;
	}
	return bad_argument("unknown keyword '%s' (attach, rule)", keyword);
}

static int parse_config(const char *path, struct config *c)
{
	int n = 0;

	memset(c, 0, sizeof(*c));
	c->text = read_file(path);
	if (!c->text)
		return EXIT_USAGE;
	for (char *line = c->text, *next; line; line = next) {
		struct decl d = { 0 };
		char *word, *wsave = NULL, *keyword;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		set_context("apply %s:%d", path, ++n);
		line[strcspn(line, "#")] = '\0';
		keyword = strtok_r(line, " \t\r", &wsave);
		if (!keyword)
			continue;
		d.line = n;
		while ((word = strtok_r(NULL, " \t\r", &wsave)))
			if (d.argc == CLI_MANY)
				return bad_argument("more than %d words", CLI_MANY);
			else
				d.argv[d.argc++] = word;
		if (parse_line(c, &d, keyword))
			return EXIT_USAGE;
	}
	for (size_t i = 0; i < c->nrules; i++) {
		set_context("apply %s:%d", path, c->rules[i].line);
		if (check_arms(c, &c->rules[i]))
			return EXIT_USAGE;
	}
	set_context("apply %s", path);
	return EXIT_SUCCESS;
}

static struct step *add_step(struct step *steps, size_t *n, int (*run)(const struct cmd_opts *, int, char **),
	const struct algo *a, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static struct step *add_step(struct step *steps, size_t *n, int (*run)(const struct cmd_opts *, int, char **),
	const struct algo *a, const char *fmt, ...)
{
	struct step *s = &steps[(*n)++];
	va_list ap;

	memset(s, 0, sizeof(*s));
	va_start(ap, fmt);
	vsnprintf(s->text, sizeof(s->text), fmt, ap);
	va_end(ap);
	s->run = run;
	s->algo = a;
	return s;
}

static void add_args(struct step *s, int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		s->argv[s->argc++] = argv[i];
}

/* The steps from what the host has to what c declares. */
static int plan(const struct config *c, struct step *steps, size_t *n)
{
	static char add[] = "add", del[] = "del", replace[] = "replace=yes";
	struct bbrkit_policy_rule now[BBRKIT_POLICY_RULES] = {};
	char diff[STEP_TEXT], want[STEP_TEXT], had[STEP_TEXT];
	struct step *s;
	int err;

	*n = 0;
	if (policy_exists() && (err = policy_read_rules(now)))
		return fail(err, "cannot read the policy's rules");
	for (size_t i = 0; i < c->nattach; i++) {
		const struct decl *d = &c->attach[i];

		if (!algo_attached(d->algo)) {
			s = add_step(steps, n, cmd_attach, d->algo, "+ attach %s", d->algo->name);
			add_args(s, 1, (char **)d->argv);
		}
		err = params_diff(d->algo, d->argc - 1, (char **)d->argv + 1, diff, sizeof(diff));
		if (err < 0)
			return -err;
		if (err) {
			s = add_step(steps, n, cmd_set, d->algo, "~ set %s %s", d->algo->name, diff);
			add_args(s, d->argc, (char **)d->argv);
		}
	}
	for (size_t i = 0; i < c->nrules; i++) {
		const struct decl *d = &c->rules[i];
		int slot = find_slot(now, d->argv[0]);

		policy_rule_text(&d->spec.rule, want, sizeof(want));
		if (slot >= 0)
			policy_rule_text(&now[slot], had, sizeof(had));
		if (slot >= 0 && !strcmp(want, had))
			continue;
		if (slot >= 0)
			s = add_step(
				steps, n, cmd_policy, NULL, "~ rule %s %s (was %s)", d->argv[0], want, had);
		else
			s = add_step(steps, n, cmd_policy, NULL, "+ rule %s %s", d->argv[0], want);
		s->argv[s->argc++] = add;
		add_args(s, d->argc, (char **)d->argv);
		if (slot >= 0)
			s->argv[s->argc++] = replace;
	}
	for (unsigned int slot = 0; slot < BBRKIT_POLICY_RULES; slot++)
		if (now[slot].narms && !find_decl(c->rules, c->nrules, now[slot].name)) {
			s = add_step(steps, n, cmd_policy, NULL, "- rule %s", now[slot].name);
			memcpy(s->name, now[slot].name, sizeof(s->name));
			s->name[sizeof(s->name) - 1] = '\0';
			s->argv[s->argc++] = del;
			s->argv[s->argc++] = s->name;
		}
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);

		if (algo_attached(a) && !find_decl(c->attach, c->nattach, a->name)) {
			s = add_step(steps, n, cmd_detach, a, "- detach %s", a->name);
			s->argv[s->argc++] = (char *)a->name;
		}
	}
	return EXIT_SUCCESS;
}

int cmd_apply(const struct cmd_opts *o, int argc, char **argv)
{
	static struct config c;
	static struct step steps[APPLY_STEPS_MAX];
	const char *path = argv[0];
	size_t n, done;
	int ret;

	(void)argc;
	if (o->dry_run)
		audit_skip();
	ret = parse_config(path, &c);
	if (!ret && check_root())
		ret = EXIT_FAILURE;
	if (!ret)
		ret = plan(&c, steps, &n);
	if (!ret && !n)
		printf("nothing to change\n");
	for (size_t i = 0; !ret && i < n; i++)
		printf("%s\n", steps[i].text);
	for (done = 0; !ret && !o->dry_run && done < n; done++) {
		struct step *s = &steps[done];
		struct cmd_opts so = { .algo = s->algo };

		ret = s->run(&so, s->argc, s->argv);
		set_context("apply %s", path);
		audit("apply %s: %s%s", path, s->text, ret ? " (failed)" : "");
		if (ret)
			fail(0, "stopped at '%s': %zu of %zu changes made", s->text, done, n);
	}
	free(c.text);
	return ret;
}
