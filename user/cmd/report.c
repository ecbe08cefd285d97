// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata report FILE... -o HTML [--svg DIR] [--force] [--top N] [--scale log|sqrt]: read recordings
 * (`iostrata record`, or `iostrata -j` output) and write one self-contained HTML report, and
 * one SVG per panel. Needs no root and no BPF: it works on the host and on a laptop alike.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "cmd.h"
#include "log.h"
#include "outfile.h"
#include "recread.h"
#include "report.h"

static const char usage_text[] =
"Usage: iostrata report FILE... -o HTML [--svg DIR] [--force] [--top N] [--scale S]\n"
"\n"
"Renders recordings (iostrata record; iostrata -j output too) as one HTML file:\n"
"per layer and stage a latency heatmap (time across, latency buckets up, colour\n"
"by count, p50/p99/max lines, a tooltip on every cell), the top label sets'\n"
"heatmaps, summary tables, io_uring/aio waterfalls, drops, the host and options.\n"
"Nothing in it is fetched from anywhere. FILE may be gzip (.gz).\n"
"\n"
"  -o, --output=HTML     the report to write (not over a file, unless --force)\n"
"      --svg=DIR         also one SVG file per panel in DIR (created)\n"
"      --force           replace the report and SVG files if they exist\n"
"      --top=N           label sets per layer with panels of their own (default 4)\n"
"      --scale=S         colour by log (default) or sqrt of the count\n"
"  -v, --verbose         say what was read and binned\n"
"  -h, --help            show this help\n"
"\n"
"Examples:\n"
"  iostrata report run.ndjson.gz -o report.html\n"
"  iostrata report a.ndjson b.ndjson -o ab.html --svg panels --top 8\n";

enum { OPT_SVG = 256, OPT_TOP, OPT_SCALE, OPT_FORCE };

static const struct option long_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "scale", required_argument, NULL, OPT_SCALE },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int parse(int argc, char **argv, struct report_opts *o, int *verbose)
{
	char msg[256];
	uint64_t top;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (opt_path("-o", o->html, optarg, "written"))
				return -1;
			o->html = optarg;
			break;
		case OPT_SVG:
			if (opt_path("--svg", o->svg_dir, optarg, "written"))
				return -1;
			o->svg_dir = optarg;
			break;
		case OPT_FORCE: o->force = true; break;
		case OPT_TOP:
			if (cli_uint(optarg, 0, 1000, &top)) {
				errorf("bad --top '%s': expected an integer from 0 to 1000", optarg);
				return -1;
			}
			o->top = (int)top;
			break;
		case OPT_SCALE:
			if (strcmp(optarg, "log") && strcmp(optarg, "sqrt")) {
				errorf("bad --scale '%s': log or sqrt", optarg);
				return -1;
			}
			o->sqrt_scale = !strcmp(optarg, "sqrt");
			break;
		case 'v': (*verbose)++; break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			errorf("%s", cli_getopt_problem(c, argv, long_opts, msg, sizeof(msg)));
			return -1;
		}
	}
	if (optind >= argc) {
		errorf("report needs at least one recording (see --help)");
		return -1;
	}
	if (!o->html) {
		errorf("report needs -o HTML: where to write the report");
		return -1;
	}
	return 0;
}

/* A recording named twice (or by two names) would count its I/O twice: -1, said. */
static int named_twice(char **files, int n)
{
	struct stat a, b;
	int i, j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (!strcmp(files[i], "-") && !strcmp(files[j], "-")) {
				errorf("standard input ('-') is named twice: it is one recording");
				return -1;
			}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n && !stat(files[i], &a); j++)
			if (!stat(files[j], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
			    S_ISREG(a.st_mode)) {
				errorf("%s and %s are the same recording: its I/O would be counted "
				       "twice", files[i], files[j]);
				return -1;
			}
	return 0;
}

/* Every record of one file into the report. 0, or -1 (said). */
static int read_file(struct report *rep, struct recread_runs *runs, const char *path)
{
	struct recread *rr = recread_open(path);
	struct interval iv;
	enum recread_kind k;
	bool meta = false, end = false;
	char note[600];
	int err = 0;

	if (!rr)
		return -1;
	memset(&iv, 0, sizeof(iv));
	while ((k = recread_next(rr, &iv)) != RR_EOF) {
		if (k == RR_ERROR) {
			err = -1;
			break;
		}
		if (k == RR_META) {
			meta = true;
			err = recread_runs_add(runs, path, recread_meta(rr), NULL) ?:
			      report_add_meta(rep, path, recread_meta(rr));
		} else if (k == RR_INTERVAL) {
			if (recread_intervals(rr) == 1)
				err = recread_runs_add(runs, path, recread_meta(rr), &iv);
			if (!meta && !err) {	/* an older file, or iostrata -j output: no meta */
				meta = true;
				err = report_add_meta(rep, path, recread_meta(rr));
			}
			if (!err)
				err = report_add_interval(rep, path, &iv);
		} else if (k == RR_END) {
			end = true;
			report_add_end(rep, path, recread_end(rr));
		}
		if (err)
			break;
	}
	if (!err && !end) {
		snprintf(note, sizeof(note), "%s has no end record: the recording was cut short "
			 "(killed, the host lost power, or still running); shown up to its last "
			 "whole line.", path);
		report_add_note(rep, note);
	}
	vlog("%s: %llu intervals", path, (unsigned long long)recread_intervals(rr));
	interval_clear(&iv);
	recread_close(rr);
	return err;
}

int cmd_report(int argc, char **argv)
{
	struct report_opts o = { .top = 4 };
	struct recread_runs runs = { 0 };
	struct report *rep;
	int verbose = 0, r, i;

	r = parse(argc, argv, &o, &verbose);
	if (r)
		return r > 0 ? 0 : 2;
	log_init("iostrata", false, verbose);
	log_defer_warnings();
	/* said before anything is read: an output that exists, is not a file, or is an input */
	if (outfile_allowed(o.html, o.force, argv + optind, argc - optind) < 0 ||
	    named_twice(argv + optind, argc - optind))
		return 1;
	rep = report_new(&o);
	if (!rep)
		return 1;
	for (i = optind; i < argc; i++) {
		if (read_file(rep, &runs, argv[i])) {
			recread_runs_free(&runs);
			report_free(rep);
			return 1;
		}
	}
	recread_runs_free(&runs);
	r = report_write(rep) ? 1 : 0;
	report_free(rep);
	return r;
}
