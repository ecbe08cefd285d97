// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata [OPTIONS] [INTERVAL [COUNT]]: trace, and print an interval at a time, as text or
 * NDJSON, until Ctrl-C, COUNT intervals or --duration.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "cmd.h"
#include "log.h"
#include "trace_opts.h"

static const char usage_head[] =
"Usage: iostrata [OPTIONS] [INTERVAL [COUNT]]\n"
"       iostrata record -o FILE [--force] [OPTIONS] [INTERVAL [COUNT]]\n"
"       iostrata report FILE... -o HTML [--svg DIR] [--force] [--top N] [--scale S]\n"
"       iostrata compare A B [--gate L:S:Q]... [--html FILE [--force]] [-j] [OPTIONS]\n"
"       iostrata compare A --aa N [-j] [OPTIONS]\n"
"       iostrata snoop [--slower DURATION] [-l LIST] [-d DISK] [-p PID] [-c PATH] [-j]\n"
"       iostrata sched-ab -d DISK A B [--rounds N] [--round-secs S] [-o DIR] -- LOAD...\n"
"       iostrata serve [OPTIONS]\n"
"       iostrata features [-j] [-v]\n"
"       iostrata calibrate [-j] [-v] [--dir DIR]\n"
"\n"
"Per-layer I/O latency histograms, built in the kernel. Prints every INTERVAL\n"
"seconds (default 1) until Ctrl-C, COUNT intervals, or --duration; then one\n"
"final interval (partial if cut short). iostrata's own I/O is never counted.\n"
"\n";

static const char usage_record[] =
"Usage: iostrata record -o FILE [--force] [OPTIONS] [INTERVAL [COUNT]]\n"
"\n"
"Traces as iostrata does, and writes every interval to FILE as NDJSON: a meta\n"
"record first (host, kernel, options, layers, bucket scheme, disks), an end\n"
"record last (why it stopped, totals, drops). Each line is written as it is\n"
"made, so a file cut short is readable up to its last whole line. FILE ending\n"
"in .gz is gzip. Prints the usual view on stdout (with -j: the same records).\n"
"Render it with `iostrata report FILE -o report.html`.\n"
"\n"
"  -o, --output=FILE     write the recording here (refused if it exists)\n"
"      --force           overwrite an existing FILE\n";

static const char usage_view[] =
"  -D, --per-disk        a histogram set per disk\n"
"  -F, --per-op          a histogram set per operation and request flags\n"
"  -P, --per-process     a histogram set per process (uring, aio, syscall layers)\n"
"  -O, --per-opcode      a histogram set per io_uring opcode / aio command\n"
"  -C, --per-cgroup      a histogram set per cgroup v2 of the submitter\n"
"  -W, --waterfall       per process/opcode: each stage's count, p50, p99 and share\n"
"  -m, --milliseconds    show latencies in milliseconds\n"
"  -T, --timestamp       print the time with each interval\n"
"  -j, --json            one NDJSON record per interval on stdout\n";

static const char usage_tail[] =
"\n"
"Examples:\n"
"  iostrata                          all layers, whole host, every second\n"
"  iostrata -D -F 5 3                per disk and op, three 5-second intervals\n"
"  iostrata -d vda -j --duration 10  NDJSON for vda, stop after 10 s\n"
"  iostrata record -o run.ndjson.gz -P -O --duration 3600\n"
"                                    an hour of every layer, to a file\n"
"  iostrata report run.ndjson.gz -o report.html\n"
"                                    heatmaps and tables, one HTML file\n"
"  iostrata compare before.ndjson.gz after.ndjson.gz --gate block:device:p99\n"
"                                    faster, slower or no change, and how sure\n"
"  iostrata snoop --slower 20ms      every request of 20 ms or more, one a line\n"
"  iostrata sched-ab -d sdb mq-deadline none -- --device /dev/sdb --force\n"
"                                    is none faster than mq-deadline on sdb?\n"
"  iostrata serve                    Prometheus metrics on 127.0.0.1:9750\n"
"  iostrata features                 what this kernel supports\n"
"  iostrata calibrate                check the tracer against known I/O here\n";

/* The help's layer list comes from the layer table. */
static void usage_of(FILE *f, bool record)
{
	fputs(record ? usage_record : usage_head, f);
	fputs(trace_opts_help_what, f);
	fputs(usage_view, f);
	fputs(trace_opts_help_knobs, f);
	usage_layers(f);
	fputs(usage_tail, f);
}

static void usage(FILE *f)
{
	usage_of(f, false);
}

static void usage_rec(FILE *f)
{
	usage_of(f, true);
}

enum { OPT_FORCE = TOPT_NEXT };

static const struct option long_opts[] = {
	TRACE_OPTS_LONG,
	{ "per-disk", no_argument, NULL, 'D' },
	{ "per-op", no_argument, NULL, 'F' },
	{ "waterfall", no_argument, NULL, 'W' },
	{ "milliseconds", no_argument, NULL, 'm' },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "json", no_argument, NULL, 'j' },
	{ "output", required_argument, NULL, 'o' },	/* record only */
	{ "force", no_argument, NULL, OPT_FORCE },	/* record only */
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

int trace_args_parse(int argc, char **argv, struct trace_args *a, bool record)
{
	struct trace_config *c = &a->t.cfg;
	long v;
	int o;

	while ((o = trace_getopt(&a->t, argc, argv, record ? "o:DFWmTjhV" : "DFWmTjhV",
				 long_opts)) != -1) {
		if (!record && (o == OPT_FORCE || o == 'o')) {
			/* trace has no output file: --output=F was taken, then ignored */
			errorf("unknown option '--%s' (see --help; iostrata record -o FILE writes "
			       "a file)", o == 'o' ? "output" : "force");
			return -1;
		}
		switch (o) {
		case -2: return -1;
		case 'o':
			if (opt_path("-o", a->output, optarg, "written"))
				return -1;
			a->output = optarg;
			break;
		case OPT_FORCE: a->force = true; break;
		case 'D': c->per_disk = true; break;
		case 'F': c->per_op = true; break;
		case 'W': a->text.waterfall = true; break;
		case 'm': a->text.ms = true; break;
		case 'T': a->text.timestamps = true; break;
		case 'j': a->json = true; break;
		default:	/* -h, -V, ':' or '?' */
			return trace_opt_rest(&a->t, o, argv, record ? usage_rec : usage);
		}
	}
	if (optind < argc && parse_seconds("interval", argv[optind++], &a->t.lim.interval_s))
		return -1;
	if (optind < argc) {
		if (parse_long("count", argv[optind++], 1, LONG_MAX, &v))
			return -1;
		a->t.lim.count = v;
	}
	if (optind < argc) {
		errorf("unexpected argument '%s' (see --help)", argv[optind]);
		return -1;
	}
	if (record && !a->output) {
		errorf("record needs -o FILE: where to write the recording");
		return -1;
	}
	return trace_opts_finish(&a->t);
}

/* The sink: the interval on stdout, as text or NDJSON. */
static int print_interval(const struct interval *iv, void *arg)
{
	const struct trace_args *a = arg;
	int err;

	if (a->json) {
		err = output_json(iv, stdout);
	} else {
		output_text(iv, &a->text, stdout);
		err = ferror(stdout) ? -1 : 0;
	}
	return sink_written(err);
}

int cmd_trace(int argc, char **argv)
{
	struct trace_args a = { .t = TRACE_OPTS_DEFAULT, .json = log_json() };
	struct session *s;
	int r = trace_args_parse(argc, argv, &a, false);

	if (r)
		return r > 0 ? 0 : 2;
	if (trace_session_open(&a.t, a.json, &s))
		return 1;
	r = session_run(s, &a.t.lim, print_interval, &a);
	session_close(s);
	return r;
}
