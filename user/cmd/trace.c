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
#include "opts.h"

struct trace_args {
	struct trace_config cfg;
	struct run_limits lim;
	struct text_opts text;
	bool json;
	int verbose;
};

static const char usage_head[] =
"Usage: iostrata [OPTIONS] [INTERVAL [COUNT]]\n"
"       iostrata snoop [--slower DURATION] [-l LIST] [-d DISK] [-p PID] [-c PATH] [-j]\n"
"       iostrata features [-j] [-v]\n"
"       iostrata calibrate [-j] [-v] [--dir DIR]\n"
"\n"
"Per-layer I/O latency histograms, built in the kernel. Prints every INTERVAL\n"
"seconds (default 1) until Ctrl-C, COUNT intervals, or --duration; then one\n"
"final interval (partial if cut short). iostrata's own I/O is never counted.\n"
"\n";

/* after the shared filter options (opts.c) */
static const char usage_own[] =
"      --stages=LIST     only these stages (device, block.device, ...); block's\n"
"                        device alone: 2 programs per I/O, own I/O not excluded\n"
"  -D, --per-disk        a histogram set per disk\n"
"  -F, --per-op          a histogram set per operation and request flags\n"
"  -P, --per-process     a histogram set per process (uring, aio, syscall layers)\n"
"  -O, --per-opcode      a histogram set per io_uring opcode / aio command\n"
"  -C, --per-cgroup      a histogram set per cgroup v2 of the submitter\n"
"  -W, --waterfall       per process/opcode: each stage's count, p50, p99 and share\n"
"  -m, --milliseconds    show latencies in milliseconds\n"
"  -T, --timestamp       print the time with each interval\n"
"  -j, --json            one NDJSON record per interval on stdout\n";

static const char usage_end[] =
"  -h, --help            show this help\n"
"  -V, --version         show the version\n";

static const char usage_tail[] =
"\n"
"Examples:\n"
"  iostrata                          all layers, whole host, every second\n"
"  iostrata -D -F 5 3                per disk and op, three 5-second intervals\n"
"  iostrata -d vda -j --duration 10  NDJSON for vda, stop after 10 s\n"
"  iostrata snoop --slower 20ms      every request of 20 ms or more, one a line\n"
"  iostrata features                 what this kernel supports\n"
"  iostrata calibrate                check the tracer against known I/O here\n";

/* The help's layer list comes from the layer table. */
static void usage(FILE *f)
{
	int i, s, n;

	fputs(usage_head, f);
	fputs(trace_opts_help, f);
	fputs(usage_own, f);
	fputs(trace_opts_duration_help, f);
	fputs(trace_opts_testing_help, f);
	fputs(trace_opts_verbose_help, f);
	fputs(usage_end, f);
	fputs("\nLayers (-l) and their stages:\n", f);
	for (i = 0; i < NLAYERS; i++) {
		fprintf(f, "  %-8s", layers[i]->name);
		for (s = n = 0; s < layers[i]->nstages; s++)
			if (layers[i]->stages[s].name)
				fprintf(f, "%s%s", n++ ? ", " : " ", layers[i]->stages[s].name);
		fputc('\n', f);
	}
	fputs(usage_tail, f);
}

enum { OPT_STAGES = 256 };

static const struct option long_opts[] = {
	TRACE_OPTS_LONG,
	{ "per-disk", no_argument, NULL, 'D' },
	{ "per-op", no_argument, NULL, 'F' },
	{ "per-process", no_argument, NULL, 'P' },
	{ "per-opcode", no_argument, NULL, 'O' },
	{ "per-cgroup", no_argument, NULL, 'C' },
	{ "waterfall", no_argument, NULL, 'W' },
	{ "stages", required_argument, NULL, OPT_STAGES },
	{ "milliseconds", no_argument, NULL, 'm' },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

/*
 * --stages: each name is a stage of every layer that has it (device) or of one (block.device).
 * The layers traced are then those with a stage asked, unless -l names them (each must have one).
 */
static int parse_stages(const char *list, struct trace_config *c)
{
	char buf[256], *tok, *save = NULL, *dot;
	int i, s, found;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		dot = strchr(tok, '.');
		found = 0;
		for (i = 0; i < NLAYERS; i++) {
			if (dot && (strncmp(tok, layers[i]->name, (size_t)(dot - tok)) ||
				    layers[i]->name[dot - tok]))
				continue;
			for (s = 0; s < layers[i]->nstages; s++) {
				const char *n = layers[i]->stages[s].name;

				if (n && !strcmp(n, dot ? dot + 1 : tok)) {
					c->stages[i] |= 1u << s;
					found = 1;
				}
			}
		}
		if (!found) {
			errorf("unknown stage '%s' in --stages (the stages are in --help)", tok);
			return -1;
		}
	}
	return 0;
}

/* -l and --stages together: every layer traced has a stage asked; --stages alone picks them. */
static int stages_layers(struct trace_config *c)
{
	unsigned int with = 0;
	int i;

	for (i = 0; i < NLAYERS; i++)
		if (c->stages[i])
			with |= 1u << i;
	if (!with)
		return 0;
	if (!c->layers) {
		c->layers = with;
		return 0;
	}
	for (i = 0; i < NLAYERS; i++) {
		if ((c->layers & (1u << i)) && !(with & (1u << i))) {
			errorf("-l %s: none of its stages is in --stages", layers[i]->name);
			return -1;
		}
	}
	return 0;
}

/* 0 ok, 1 exit 0 (help/version), -1 usage error (said) */
static int parse_args(int argc, char **argv, struct trace_args *a)
{
	struct trace_config *c = &a->cfg;
	struct trace_opts t;
	char msg[256];
	long v;
	int o;

	trace_opts_start(&t);
	while ((o = trace_getopt(argc, argv, ":" TRACE_OPTS_SHORT "DFPOCWmTjhV", long_opts, c,
				 &t)) != -1) {
		switch (o) {
		case TRACE_OPT_BAD:
			return -1;
		case 'D': c->per_disk = true; break;
		case 'F': c->per_op = true; break;
		case 'P': c->per_process = true; break;
		case 'O': c->per_opcode = true; break;
		case 'C': c->per_cgroup = true; break;
		case 'W': a->text.waterfall = true; break;
		case OPT_STAGES:
			if (parse_stages(optarg, c))
				return -1;
			break;
		case 'm': a->text.ms = true; break;
		case 'T': a->text.timestamps = true; break;
		case 'j': a->json = true; break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("iostrata %s\n", IOSTRATA_VERSION);
			return 1;
		default:	/* ':' or '?' */
			errorf("%s", cli_getopt_problem(o, argv, msg, sizeof(msg)));
			return -1;
		}
	}
	if (optind < argc && parse_seconds("interval", argv[optind++], &a->lim.interval_s))
		return -1;
	if (optind < argc) {
		if (parse_long("count", argv[optind++], 1, LONG_MAX, &v))
			return -1;
		a->lim.count = v;
	}
	if (optind < argc) {
		errorf("unexpected argument '%s' (see --help)", argv[optind]);
		return -1;
	}
	if (stages_layers(c))
		return -1;
	a->lim.duration_s = t.duration_s;
	a->verbose = t.verbose;
	return trace_opts_finish(c, &t);
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
	struct trace_args a = { .cfg = TRACE_CONFIG_DEFAULT, .lim = { .interval_s = 1.0 },
				.json = log_json() };
	struct session *s;
	int r = parse_args(argc, argv, &a);

	if (r)
		return r > 0 ? 0 : 2;
	if (trace_session_open(&a.cfg, a.json, a.verbose, &s))
		return 1;
	r = session_run(s, &a.lim, print_interval, &a);
	session_close(s);
	return r;
}
