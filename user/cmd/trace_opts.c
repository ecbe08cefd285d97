// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options `iostrata` and `iostrata record` share, and record's own. */
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
#include "sysinfo.h"
#include "trace_opts.h"

static const char usage_trace[] =
"Usage: iostrata [OPTIONS] [INTERVAL [COUNT]]\n"
"       iostrata record -o FILE [--force] [OPTIONS] [INTERVAL [COUNT]]\n"
"       iostrata report FILE... -o HTML [--svg DIR] [--top N] [--scale S]\n"
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

static const char usage_opts[] =
"  -d, --disk=DISK       only this disk (vda, /dev/nvme0n1)\n"
"  -p, --pid=PID         only I/O queued by this process\n"
"  -c, --cgroup=PATH     only I/O queued from this cgroup v2 or below it\n"
"  -l, --layers=LIST     block,uring,aio,syscall (stages below; default: every\n"
"                        available layer, only block with -d)\n"
"      --comm=NAME       only threads named NAME (syscall layer)\n"
"      --stages=LIST     only these stages (device, block.device, ...); block's\n"
"                        device alone: 2 programs per I/O, own I/O not excluded\n"
"  -D, --per-disk        a histogram set per disk\n"
"  -F, --per-op          a histogram set per operation and request flags\n"
"  -P, --per-process     a histogram set per process (uring, aio, syscall layers)\n"
"  -O, --per-opcode      a histogram set per io_uring opcode / aio command\n"
"  -W, --waterfall       per process/opcode: each stage's count, p50, p99 and share\n"
"  -m, --milliseconds    show latencies in milliseconds\n"
"  -T, --timestamp       print the time with each interval\n"
"  -j, --json            one NDJSON record per interval on stdout\n"
"      --duration=SEC    stop after SEC seconds\n"
"      --inflight=N      in-flight table slots, a power of two (default 131072)\n"
"      --fail-probe=TP   testing: act as if the kernel lacked tracepoint TP\n"
"      --force-raw-tp    testing: attach the raw_tp twins, not tp_btf\n"
"  -v, --verbose         show probing and libbpf diagnostics (-vv: more)\n"
"  -h, --help            show this help\n"
"  -V, --version         show the version\n";

static const char usage_tail[] =
"\n"
"Examples:\n"
"  iostrata                          all layers, whole host, every second\n"
"  iostrata record -o run.ndjson.gz -P -O --duration 3600\n"
"                                    an hour of every layer, to a file\n"
"  iostrata report run.ndjson.gz -o report.html\n"
"                                    heatmaps and tables, one HTML file\n"
"  iostrata -D -F 5 3                per disk and op, three 5-second intervals\n"
"  iostrata -d vda -j --duration 10  NDJSON for vda, stop after 10 s\n"
"  iostrata features                 what this kernel supports\n"
"  iostrata calibrate                check the tracer against known I/O here\n";

/* The help's layer list comes from the layer table. */
static void usage(FILE *f, bool record)
{
	int i, s, n;

	fputs(record ? usage_record : usage_trace, f);
	fputs(usage_opts, f);
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

enum { OPT_DURATION = 256, OPT_INFLIGHT, OPT_FAIL_PROBE, OPT_FORCE_RAW_TP, OPT_COMM,
       OPT_STAGES, OPT_FORCE };

static const struct option long_opts[] = {
	{ "disk", required_argument, NULL, 'd' },
	{ "pid", required_argument, NULL, 'p' },
	{ "cgroup", required_argument, NULL, 'c' },
	{ "per-disk", no_argument, NULL, 'D' },
	{ "per-op", no_argument, NULL, 'F' },
	{ "per-process", no_argument, NULL, 'P' },
	{ "per-opcode", no_argument, NULL, 'O' },
	{ "waterfall", no_argument, NULL, 'W' },
	{ "layers", required_argument, NULL, 'l' },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "stages", required_argument, NULL, OPT_STAGES },
	{ "milliseconds", no_argument, NULL, 'm' },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "json", no_argument, NULL, 'j' },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "inflight", required_argument, NULL, OPT_INFLIGHT },
	{ "fail-probe", required_argument, NULL, OPT_FAIL_PROBE },
	{ "force-raw-tp", no_argument, NULL, OPT_FORCE_RAW_TP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "output", required_argument, NULL, 'o' },	/* record only: past the end of trace's */
	{ "force", no_argument, NULL, OPT_FORCE },
	{ 0 },
};

static int layer_names(char *buf, size_t len)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < NLAYERS && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
					 layers[i]->name);
	return 0;
}

static int parse_layers(const char *list, unsigned int *mask)
{
	char buf[128], names[96], *tok, *save = NULL;
	int id;

	layer_names(names, sizeof(names));
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!layer_by_name(tok, &id)) {
			errorf("unknown layer '%s' in -l (layers: %s)", tok, names);
			return -1;
		}
		*mask |= 1u << id;
	}
	if (!*mask) {
		errorf("-l needs at least one layer (%s)", names);
		return -1;
	}
	return 0;
}

static int parse_seconds(const char *what, const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 31536000) {
		errorf("bad %s '%s': expected a positive number of seconds", what, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_long(const char *what, const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		errorf("bad %s '%s': expected an integer from %ld to %ld", what, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* -p takes a pid or tid; the filter matches the process (tgid) it belongs to. */
static int resolve_pid(const char *s, pid_t *tgid_out)
{
	char path[64], line[256];
	long pid, tgid = -1;
	FILE *f;

	if (parse_long("pid", s, 1, INT_MAX, &pid))
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f) {
		errorf("no such process: %ld", pid);
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	*tgid_out = (pid_t)(tgid > 0 ? tgid : pid);
	return 0;
}

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

int trace_parse(int argc, char **argv, struct trace_args *a, bool record)
{
	struct trace_config *c = &a->cfg;
	const char *pid_arg = NULL, *disk = NULL;
	char msg[256];
	long v;
	int o;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, record ? ":d:p:c:l:o:DFPOWmTjvhV" :
				":d:p:c:l:DFPOWmTjvhV", long_opts, NULL)) != -1) {
		if (!record && (o == 'o' || o == OPT_FORCE)) {
			o = '?';	/* trace has no output file */
			optopt = 0;
		}
		switch (o) {
		case 'o': a->output = optarg; break;
		case OPT_FORCE: a->force = true; break;
		case 'd': disk = optarg; break;
		case 'p': pid_arg = optarg; break;
		case 'c': c->cgroup = optarg; break;
		case 'D': c->per_disk = true; break;
		case 'F': c->per_op = true; break;
		case 'P': c->per_process = true; break;
		case 'O': c->per_opcode = true; break;
		case 'W': a->text.waterfall = true; break;
		case 'l':
			if (parse_layers(optarg, &c->layers))
				return -1;
			break;
		case OPT_STAGES:
			if (parse_stages(optarg, c))
				return -1;
			break;
		case OPT_COMM:
			if (!*optarg || strlen(optarg) > 15) {
				errorf("bad --comm '%s': a thread name is 1 to 15 characters", optarg);
				return -1;
			}
			c->comm = optarg;
			break;
		case 'm': a->text.ms = true; break;
		case 'T': a->text.timestamps = true; break;
		case 'j': a->json = true; break;
		case 'v': a->verbose++; break;
		case OPT_DURATION:
			if (parse_seconds("duration", optarg, &a->lim.duration_s))
				return -1;
			break;
		case OPT_INFLIGHT:
			if (parse_long("--inflight", optarg, 64, 1 << 24, &v))
				return -1;
			if (v & (v - 1)) {
				errorf("bad --inflight '%s': expected a power of two", optarg);
				return -1;
			}
			c->inflight_slots = (uint32_t)v;
			break;
		case OPT_FAIL_PROBE:
			if (c->nfail_tp == MAX_FAIL_TPS) {
				errorf("too many --fail-probe options");
				return -1;
			}
			c->fail_tp[c->nfail_tp++] = optarg;
			break;
		case OPT_FORCE_RAW_TP:
			c->force_raw_tp = true;
			break;
		case 'h':
			usage(stdout, record);
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
	if (record && !a->output) {
		errorf("record needs -o FILE: where to write the recording");
		return -1;
	}
	if (stages_layers(c))
		return -1;
	if (disk && disk_resolve(disk, &c->dev))
		return -1;
	if (pid_arg && resolve_pid(pid_arg, &c->tgid))
		return -1;
	if (c->cgroup && access(c->cgroup, F_OK)) {
		errorf("-c %s: %s", c->cgroup, strerror(errno));
		return -1;
	}
	return 0;
}

