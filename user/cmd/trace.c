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

struct trace_args {
	struct trace_opts t;
	struct text_opts text;
	bool json;
};

static const char usage_head[] =
"Usage: iostrata [OPTIONS] [INTERVAL [COUNT]]\n"
"       iostrata snoop [--slower DURATION] [-l LIST] [-d DISK] [-p PID] [-c PATH] [-j]\n"
"       iostrata serve [OPTIONS]\n"
"       iostrata features [-j] [-v]\n"
"       iostrata calibrate [-j] [-v] [--dir DIR]\n"
"\n"
"Per-layer I/O latency histograms, built in the kernel. Prints every INTERVAL\n"
"seconds (default 1) until Ctrl-C, COUNT intervals, or --duration; then one\n"
"final interval (partial if cut short). iostrata's own I/O is never counted.\n"
"\n";

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
"  iostrata snoop --slower 20ms      every request of 20 ms or more, one a line\n"
"  iostrata serve                    Prometheus metrics on 127.0.0.1:9750\n"
"  iostrata features                 what this kernel supports\n"
"  iostrata calibrate                check the tracer against known I/O here\n";

/* The help's layer list comes from the layer table. */
static void usage(FILE *f)
{
	fputs(usage_head, f);
	fputs(trace_opts_help_what, f);
	fputs(usage_view, f);
	fputs(trace_opts_help_knobs, f);
	usage_layers(f);
	fputs(usage_tail, f);
}

static const struct option long_opts[] = {
	TRACE_OPTS_LONG,
	{ "per-disk", no_argument, NULL, 'D' },
	{ "per-op", no_argument, NULL, 'F' },
	{ "waterfall", no_argument, NULL, 'W' },
	{ "milliseconds", no_argument, NULL, 'm' },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

/* 0 ok, 1 exit 0 (help/version), -1 usage error (said) */
static int parse_args(int argc, char **argv, struct trace_args *a)
{
	struct trace_config *c = &a->t.cfg;
	long v;
	int o;

	while ((o = trace_getopt(&a->t, argc, argv, "DFWmTjhV", long_opts)) != -1) {
		switch (o) {
		case -2: return -1;
		case 'D': c->per_disk = true; break;
		case 'F': c->per_op = true; break;
		case 'W': a->text.waterfall = true; break;
		case 'm': a->text.ms = true; break;
		case 'T': a->text.timestamps = true; break;
		case 'j': a->json = true; break;
		default:	/* -h, -V, ':' or '?' */
			return trace_opt_rest(o, argv, usage);
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
	int r = parse_args(argc, argv, &a);

	if (r)
		return r > 0 ? 0 : 2;
	if (trace_session_open(&a.t, a.json, &s))
		return 1;
	r = session_run(s, &a.t.lim, print_interval, &a);
	session_close(s);
	return r;
}
