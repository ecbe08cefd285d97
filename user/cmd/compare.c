// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata compare A B: did B make I/O faster, slower, or nothing, and how sure? A and B are
 * recordings or directories of them. Per layer, stage and label set, quantiles of each side,
 * the ratio B/A with an interval-bootstrap confidence interval, a verdict (lib/compare.h); with
 * --aa N, the false-positive rate of those verdicts on one set split against itself. Needs no
 * root and no BPF.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cmd.h"
#include "cmp_opts.h"
#include "compare.h"
#include "json.h"
#include "log.h"
#include "outfile.h"

static const char usage_text[] =
"Usage: iostrata compare A B [--threshold PCT] [--gate LAYER:STAGE:Q]... [-j]\n"
"                            [--html FILE [--force]] [--seed N] [--resamples N]\n"
"       iostrata compare A --aa N [--threshold PCT] [-j] [--seed N]\n"
"                            [--resamples N]\n"
"\n"
"Compares two recordings (iostrata record; iostrata -j output too), or two\n"
"directories of them (every *.ndjson and *.ndjson.gz): for every layer, stage and\n"
"label set in both, p50/p90/p99/p99.9 of each side, the ratio B/A with a 95%\n"
"interval from a bootstrap over whole intervals, and a verdict: faster, slower,\n"
"no change, or not enough data. A change is called only when the interval lies\n"
"wholly outside 1 +/- the larger of twice the bucket error (6.25%) and\n"
"--threshold.\n"
"A gate passes only when its interval's upper end lies below 1 + that limit.\n"
"Exit status: 0; 3 when a stage named by --gate got slower; 4 when no gate got\n"
"slower but one could not be decided: not enough data at its quantile, events\n"
"the tracer lost (drops) could change its verdict, or its interval reaches\n"
"1 + the limit (a slowdown beyond it is not excluded); with --aa, 4 when the rate is\n"
"undetermined (fewer than half the splits had enough data for any quantile);\n"
"1 when the input cannot be read or compared or the --html file cannot be\n"
"written; 2 for bad options.\n"
"\n"
"      --threshold=PCT   the smallest change called, in percent (default 5)\n"
"      --gate=L:S:Q      exit 3 if layer L, stage S is slower at quantile Q\n"
"                        (p50, p90, p99, p99.9) in any label set; repeatable\n"
"      --aa=N            A/A check of one set: N random even splits of its\n"
"                        intervals compared; prints the false-positive rate\n"
"      --html=FILE       also write overlaid CDFs and a ratio heatmap (HTML)\n"
"      --force           replace the --html file if it exists\n"
"      --seed=N          seed of the resampling (default 1)\n"
"      --resamples=N     bootstrap resamples (default 1000)\n"
"  -j, --json            one JSON document on stdout\n"
"  -v, --verbose         say what was read, and why data was not enough\n"
"  -h, --help            show this help\n"
"\n"
"Examples:\n"
"  iostrata compare before.ndjson.gz after.ndjson.gz\n"
"  iostrata compare runs/none runs/mq-deadline --gate block:device:p99\n"
"  iostrata compare run.ndjson.gz --aa 200\n";

enum { OPT_AA = COPT_NEXT, OPT_HTML, OPT_RESAMPLES, OPT_FORCE };

static const struct option long_opts[] = {
	CMP_OPTS_LONG,
	{ "aa", required_argument, NULL, OPT_AA },
	{ "html", required_argument, NULL, OPT_HTML },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "resamples", required_argument, NULL, OPT_RESAMPLES },
	{ "json", no_argument, NULL, 'j' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct compare_args {
	struct cmp_opts o;
	struct cmp_gates g;
	int aa, verbose;
	bool json, force;
	const char *html, *a, *b;
};

static int parse_ulong(const char *opt, const char *s, unsigned long long lo,
		       unsigned long long hi, unsigned long long *out)
{
	uint64_t v;

	if (cli_uint(s, lo, hi, &v)) {
		errorf("bad %s '%s': expected an integer from %llu to %llu", opt, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* 0, 1 (help shown), or -1 (a usage error, said). */
static int parse(int argc, char **argv, struct compare_args *a)
{
	unsigned long long v;
	char msg[256];
	int c, r;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":jvh", long_opts, NULL)) != -1) {
		r = cmp_opt(&a->o, &a->g, c, optarg);	/* --threshold, --gate, --seed */
		if (r < 0)
			return -1;
		if (r)
			continue;
		switch (c) {
		case OPT_AA:
			if (parse_ulong("--aa", optarg, 1, 100000, &v))
				return -1;
			a->aa = (int)v;
			break;
		case OPT_HTML:
			if (opt_path("--html", a->html, optarg, "written"))
				return -1;
			a->html = optarg;
			break;
		case OPT_FORCE: a->force = true; break;
		case OPT_RESAMPLES:
			if (parse_ulong("--resamples", optarg, 100, 1000000, &v))
				return -1;
			a->o.resamples = (int)v;
			break;
		case 'j': a->json = true; break;
		case 'v': a->verbose++; break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			errorf("%s", cli_getopt_problem(c, argv, long_opts, msg, sizeof(msg)));
			return -1;
		}
	}
	if (a->aa) {
		if (argc - optind != 1) {
			errorf("compare --aa takes one set (a recording or a directory), not %d",
			       argc - optind);
			return -1;
		}
		if (a->g.n || a->html) {
			errorf("compare --aa has no --gate or --html: it compares a set with itself");
			return -1;
		}
		a->a = argv[optind];
		return 0;
	}
	if (argc - optind != 2) {
		errorf("compare needs two sets, A and B: recordings or directories of them "
		       "(see --help)");
		return -1;
	}
	a->a = argv[optind];
	a->b = argv[optind + 1];
	if (!strcmp(a->a, "-") && !strcmp(a->b, "-")) {
		errorf("compare reads standard input ('-') for one side only");
		return -1;
	}
	return 0;
}

static struct cmp_set *load(const char *path)
{
	struct cmp_set *s = cmp_set_new();

	if (s && cmp_set_add_path(s, path)) {
		cmp_set_free(s);
		return NULL;
	}
	return s;
}

static int run_aa(const struct compare_args *a)
{
	struct cmp_set *s = load(a->a);
	struct cmp_aa *aa;
	char why[256];
	int err, status;
	double fpr;
	struct jw w;

	if (!s)
		return 1;
	aa = cmp_aa_run(s, a->aa, &a->o);
	cmp_set_free(s);
	if (!aa)
		return 1;
	if (a->json) {
		jw_init(&w);
		jw_obj(&w, NULL);
		jw_str(&w, "type", "compare_aa");
		jw_str(&w, "path", a->a);
		cmp_aa_write_json(aa, &w);
		jw_end_obj(&w);
		err = w.oom ? (errno = ENOMEM, -1) : jw_flush_line(&w, stdout);
		jw_free(&w);
	} else {
		cmp_aa_print_text(aa, stdout);
		err = fflush(stdout) || ferror(stdout) ? -1 : 0;
	}
	/* a rate that could not be measured is "not decided", as a gate that judged nothing */
	status = cmp_aa_rate(aa, &fpr, why, sizeof(why)) ? 0 : 4;
	cmp_aa_free(aa);
	return sink_written(err) > 0 ? 1 : status;
}

/*
 * The comparison to stdout, then the page (--html): an output that cannot be written leaves
 * no page behind. A closed pipe on stdout is a reader's way to stop: the status stands.
 */
static int run_compare(const struct compare_args *a)
{
	struct cmp_set *sa = load(a->a), *sb = sa ? load(a->b) : NULL;
	struct cmp_result *r = NULL;
	int status = 1, err;
	struct jw w;

	if (sb)
		r = cmp_run(sa, sb, &a->o);
	cmp_set_free(sa);
	cmp_set_free(sb);
	if (!r)
		return 1;
	if (cmp_gates_check(&a->g, r))
		goto out;
	if (a->json) {
		jw_init(&w);
		jw_obj(&w, NULL);
		jw_str(&w, "type", "compare");
		jw_str(&w, "a_path", a->a);
		jw_str(&w, "b_path", a->b);
		cmp_write_json(r, &w);
		status = cmp_gates_say(&a->g, r, true, &w);
		jw_end_obj(&w);
		err = w.oom ? (errno = ENOMEM, -1) : jw_flush_line(&w, stdout);
		jw_free(&w);
	} else {
		cmp_print_text(r, stdout);
		if (a->verbose)
			cmp_print_why(r, stdout);
		status = cmp_gates_say(&a->g, r, true, NULL);
		err = fflush(stdout) || ferror(stdout) ? -1 : 0;
	}
	if (sink_written(err) > 0)
		status = 1;
	else if (a->html && cmp_write_html(r, a->a, a->b, a->html, a->force))
		status = 1;
out:
	cmp_result_free(r);
	return status;
}

int cmd_compare(int argc, char **argv)
{
	struct compare_args a = { .o = CMP_OPTS_DEFAULT };
	int r;

	r = parse(argc, argv, &a);
	if (r)
		return r > 0 ? 0 : 2;
	log_init("iostrata", a.json, a.verbose);
	log_defer_warnings();
	if (a.html) {	/* said before anything is read */
		char *in[] = { (char *)a.a, (char *)a.b };

		if (outfile_allowed(a.html, a.force, in, 2) < 0)
			return 1;
	} else if (a.force) {
		errorf("compare --force: it only lets --html replace a file");
		return 2;
	}
	return a.aa ? run_aa(&a) : run_compare(&a);
}
