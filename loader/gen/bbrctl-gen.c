// SPDX-License-Identifier: GPL-2.0
/* bbrctl-gen: bbrctl's man page and bash completion, written from the tables bbrctl itself parses
 * with (commands, algorithms, parameters, record keys, BBRCTL_DISABLE keys), so that neither can drift
 * from the program.
 *   bbrctl-gen man          roff for bbrctl(8)
 *   bbrctl-gen completion   a bash completion script
 *   bbrctl-gen params-table the parameter table of docs/reference.md (markdown)
 *   bbrctl-gen disable-keys the BBRCTL_DISABLE keys, as docs/reference.md lists them (make check-readme)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"
#include "bbrkit_version.h"

/* roff treats a leading '.' or '\'' as a request and '\\' as an escape; '-' must be \- in options. */
static void roff_text(FILE *out, const char *s)
{
	bool line_start = true;

	for (; *s; s++) {
		if (line_start && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
		line_start = *s == '\n';
	}
}

/* A help printer's output (record keys, parameters) as a no-fill block. */
static void roff_block(FILE *out, void (*print)(FILE *out))
{
	char *text = NULL;
	size_t size = 0;
	FILE *mem = open_memstream(&text, &size);

	if (!mem)
		return;
	print(mem);
	fclose(mem);
	fputs(".PP\n.nf\n", out);
	roff_text(out, text);
	fputs(".fi\n", out);
	free(text);
}

static void man_option(FILE *out, const struct cli_opt *o)
{
	fprintf(out, ".TP\n.BR \\-%c \", \" \\-\\-", o->short_name);
	roff_text(out, o->name);
	if (o->metavar)
		fprintf(out, " \" \" \\fI%s\\fR", o->metavar);
	fputc('\n', out);
	roff_text(out, o->help);
	fputc('\n', out);
}

static void man(FILE *out)
{
	char usage[256];

	fprintf(out, ".TH BBRCTL 8 \"\" \"bbrkit %s\" \"System Administration\"\n", BBRKIT_VERSION);
	fputs(".SH NAME\nbbrctl \\- attach, tune and observe bbrkit's BPF TCP congestion controls\n"
	      ".SH SYNOPSIS\n.B bbrctl\n[\\fB\\-v\\fR] [\\fB\\-j\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] "
	      "[\\fIARGS\\fR]\n.br\n"
	      ".B bbrctl \\-\\-version\n"
	      ".SH DESCRIPTION\n"
	      "bbrctl registers bbrkit's congestion controls (BPF struct_ops programs built into it) with "
	      "the\n"
	      "running kernel through pinned struct_ops links under\n.IR " BBRKIT_PIN_ROOT " ,\n"
	      "changes their parameters, upgrades them in place, and reads their per-flow state. It needs\n"
	      "root, except list and show \\-\\-json of a detached algorithm, which describe the parameters\n"
	      "from the tables compiled into bbrctl. Errors are one line on stderr,\n"
	      ".IR \"bbrctl: command algo: what[: errno text]\" ,\n"
	      "and leave everything as it was; under\n.B \\-\\-json\nstdout then holds one JSON object,\n"
	      ".IR \"{\\(dqerror\\(dq: what, \\(dqcommand\\(dq: command algo, \\(dqexit_status\\(dq: N}\" ,\n"
	      "instead of the command's document.\n"
	      ".SH OPTIONS\n"
	      ".TP\n.BR \\-v \", \" \\-\\-verbose\ncopy libbpf's log, including the verifier's, to stderr "
	      "(also after the command)\n"
	      ".TP\n.BR \\-j \", \" \\-\\-json\nthe command's \\-\\-json, for list, show, flows and "
	      "features\n"
	      "(any other command refuses it)\n"
	      ".TP\n.BR \\-V \", \" \\-\\-version\nprint the version (git describe at build time)\n"
	      ".TP\n.BR \\-h \", \" \\-\\-help\nprint the commands; each command also has \\-\\-help\n"
	      ".SH COMMANDS\n",
		out);
	for (const struct cli_command *c = cli_commands; c->name; c++) {
		cli_usage(c, usage, sizeof(usage));
		fputs(".SS ", out);
		roff_text(out, usage);
		fputs("\n", out);
		roff_text(out, c->doc);
		for (const struct cli_opt *o = c->opts; o && o->name; o++)
			man_option(out, o);
		/* The parameters and record keys have sections of their own below. */
		if (c->extra_help && c->extra_help != help_params && c->extra_help != record_keys_help)
			roff_block(out, c->extra_help);
	}
	fputs(".SH PARAMETERS\n", out);
	roff_block(out, help_params);
	fputs(".PP\nA value written raw (e.g. with bpftool) outside its range acts as the default;\n"
	      ".B show\nflags it.\n.SH RECORD KEYS\nThe keys of\n.B flows \\-\\-json\nand\n.BR trace .\n",
		out);
	roff_block(out, record_keys_help);
	fputs(".SH EXIT STATUS\n.TP\n0\ndone (also flows with nothing attached: an empty table or list)\n"
	      ".TP\n1\nthe command failed (not root, the kernel refused, not attached, ...)\n"
	      ".TP\n2\na usage error: an unknown option, command, algorithm or parameter, a missing or\n"
	      "extra argument, a malformed or out-of-range value, an unknown " BBRCTL_DISABLE_ENV " key\n"
	      ".SH ENVIRONMENT\n.TP\n.B " BBRCTL_DISABLE_ENV "\n"
	      "turns off the pieces it names, to run on one kernel the fallbacks an older one takes;\n"
	      "a key not listed below is a usage error (exit status 2)\n",
		out);
	roff_block(out, disable_keys_help);
	fputs(".SH FILES\n.TP\n.I " BBRKIT_PIN_ROOT "/ALGO/\n"
	      "link (the registration), abi (the object's ABI version), params, ctl, events, flows or\n"
	      "flows\\-tcp\n"
	      ".TP\n.I " BBRCTL_AVAILABLE_CC "\nthe kernel's registered congestion controls\n"
	      ".SH SEE ALSO\n.BR bbrbench (1),\n.BR bpftool (8),\n.BR tc (8)\n",
		out);
}

static void words(FILE *out, const char *prefix, const char *suffix)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		fprintf(out, "%s%s%s", prefix, c->name, suffix);
}

static void completion(FILE *out)
{
	fputs("# bash completion for bbrctl, generated by bbrctl-gen from bbrctl's own tables.\n"
	      "_bbrctl()\n{\n\tlocal cur prev cmd i\n\tCOMPREPLY=()\n\tcur=${COMP_WORDS[COMP_CWORD]}\n"
	      "\tprev=${COMP_WORDS[COMP_CWORD-1]}\n\tcmd=\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n\t\tcase ${COMP_WORDS[i]} in\n\t\t",
		out);
	words(out, "", "|");
	fputs("__none) cmd=${COMP_WORDS[i]}; break ;;\n\t\tesac\n\tdone\n"
	      "\tif [[ -z $cmd ]]; then\n\t\tCOMPREPLY=($(compgen -W \"-v --verbose -j --json -V --version "
	      "-h --help",
		out);
	words(out, " ", "");
	fputs("\" -- \"$cur\"))\n\t\treturn\n\tfi\n\tcase $prev in\n"
	      "\t--out|--object|-o) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
	      "\t--format|-f) COMPREPLY=($(compgen -W \"jsonl csv\" -- \"$cur\")); return ;;\n\tesac\n"
	      "\tif [[ $cur == -* ]]; then\n\t\tcase $cmd in\n",
		out);
	for (const struct cli_command *c = cli_commands; c->name; c++) {
		fprintf(out, "\t\t%s) COMPREPLY=($(compgen -W \"-v --verbose -h --help", c->name);
		for (const struct cli_opt *o = c->opts; o && o->name; o++)
			fprintf(out, " -%c --%s", o->short_name, o->name);
		fputs("\" -- \"$cur\")) ;;\n", out);
	}
	fputs("\t\tesac\n\t\treturn\n\tfi\n\tcase $cmd in\n\tset)\n"
	      "\t\t# The first argument after set is the algorithm, then its KEY=VALUE pairs.\n"
	      "\t\tlocal algo= n=0\n"
	      "\t\tfor ((i = i + 1; i < COMP_CWORD; i++)); do\n"
	      "\t\t\t[[ ${COMP_WORDS[i]} == -* ]] && continue\n"
	      "\t\t\t((n++ == 0)) && algo=${COMP_WORDS[i]}\n\t\tdone\n"
	      "\t\tif [[ -n $algo ]]; then\n\t\t\tlocal keys=\n\t\t\tcase $algo in\n",
		out);
	for (size_t i = 0; i < nalgos; i++) {
		const struct algo *a = algo_at(i);

		if (!a->nparams)
			continue;
		fprintf(out, "\t\t\t%s) keys=\"", a->name);
		for (size_t j = 0; j < a->nparams; j++)
			fprintf(out, "%s%s=", j ? " " : "", a->params[j].name);
		fputs("\" ;;\n", out);
	}
	fputs("\t\t\tesac\n\t\t\tcompopt -o nospace 2>/dev/null\n"
	      "\t\t\tCOMPREPLY=($(compgen -W \"$keys\" -- \"$cur\"))\n\t\t\treturn\n\t\tfi\n\t\t;;\n"
	      "\tlist|features) return ;;\n\tesac\n\tCOMPREPLY=($(compgen -W \"",
		out);
	for (size_t i = 0; i < nalgos; i++)
		fprintf(out, "%s%s", i ? " " : "", algo_at(i)->name);
	fputs("\" -- \"$cur\"))\n}\ncomplete -F _bbrctl bbrctl\n", out);
}

int main(int argc, char **argv)
{
	algos_init();
	if (argc == 2 && !strcmp(argv[1], "man")) {
		man(stdout);
		return EXIT_SUCCESS;
	}
	if (argc == 2 && !strcmp(argv[1], "completion")) {
		completion(stdout);
		return EXIT_SUCCESS;
	}
	if (argc == 2 && !strcmp(argv[1], "params-table")) {
		params_markdown(stdout);
		return EXIT_SUCCESS;
	}
	if (argc == 2 && !strcmp(argv[1], "disable-keys")) {
		disable_keys_help(stdout);
		return EXIT_SUCCESS;
	}
	fprintf(stderr, "usage: bbrctl-gen man|completion|params-table|disable-keys\n");
	return EXIT_FAILURE;
}
