// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options every tracing command takes alike (opts.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "layer.h"
#include "log.h"
#include "opts.h"
#include "session.h"
#include "sysinfo.h"

const char trace_opts_help[] =
"  -d, --disk=DISK       only this disk (vda, /dev/nvme0n1)\n"
"  -p, --pid=PID         only I/O queued by this process\n"
"  -c, --cgroup=PATH     only I/O queued from this cgroup v2 or below it\n"
"  -l, --layers=LIST     block,uring,aio,syscall (default: every available\n"
"                        layer, only block with -d)\n"
"      --comm=NAME       only threads named NAME (syscall layer)\n";

const char trace_opts_duration_help[] =
"      --duration=SEC    stop after SEC seconds\n";

const char trace_opts_verbose_help[] =
"  -v, --verbose         show probing and libbpf diagnostics (-vv: more)\n";

const char trace_opts_testing_help[] =
"      --inflight=N      in-flight table slots, a power of two (default 131072)\n"
"      --fail-probe=TP   testing: act as if the kernel lacked tracepoint TP\n"
"      --force-raw-tp    testing: attach the raw_tp twins, not tp_btf\n";

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

int parse_seconds(const char *what, const char *s, double *out)
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

int parse_long(const char *what, const char *s, long min, long max, long *out)
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

int parse_pow2(const char *what, const char *s, long min, long max, long *out)
{
	if (parse_long(what, s, min, max, out))
		return -1;
	if (*out & (*out - 1)) {
		errorf("bad %s '%s': expected a power of two", what, s);
		return -1;
	}
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

/* 1: option o was one of these (taken into c), 0: it was not, -1: a bad value (said). */
static int trace_opt(int o, const char *arg, struct trace_config *c, struct trace_opts *t)
{
	long v;

	switch (o) {
	case 'd': t->disk = arg; return 1;
	case 'p': t->pid = arg; return 1;
	case 'c': c->cgroup = arg; return 1;
	case 'l': return parse_layers(arg, &c->layers) ? -1 : 1;
	case OPT_COMM:
		if (!*arg || strlen(arg) > 15) {
			errorf("bad --comm '%s': a thread name is 1 to 15 characters", arg);
			return -1;
		}
		c->comm = arg;
		return 1;
	case OPT_INFLIGHT:
		if (parse_pow2("--inflight", arg, 64, 1 << 24, &v))
			return -1;
		c->inflight_slots = (uint32_t)v;
		return 1;
	case OPT_FAIL_PROBE:
		if (c->nfail_tp == MAX_FAIL_TPS) {
			errorf("too many --fail-probe options");
			return -1;
		}
		c->fail_tp[c->nfail_tp++] = arg;
		return 1;
	case OPT_FORCE_RAW_TP:
		c->force_raw_tp = true;
		return 1;
	case OPT_DURATION:
		return parse_seconds("duration", arg, &t->duration_s) ? -1 : 1;
	case 'v':
		t->verbose++;
		return 1;
	default:
		return 0;
	}
}

void trace_opts_start(struct trace_opts *t)
{
	memset(t, 0, sizeof(*t));
	opterr = 0;
	optind = 1;
}

int trace_getopt(int argc, char **argv, const char *optstring, const struct option *longopts,
		 struct trace_config *c, struct trace_opts *t)
{
	int o, r;

	while ((o = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		r = trace_opt(o, optarg, c, t);
		if (r < 0)
			return TRACE_OPT_BAD;
		if (!r)
			return o;
	}
	return -1;
}

int trace_opts_finish(struct trace_config *c, const struct trace_opts *t)
{
	if (t->disk && disk_resolve(t->disk, &c->dev))
		return -1;
	if (t->pid && resolve_pid(t->pid, &c->tgid))
		return -1;
	if (c->cgroup && access(c->cgroup, F_OK)) {
		errorf("-c %s: %s", c->cgroup, strerror(errno));
		return -1;
	}
	return 0;
}

int trace_session_open(const struct trace_config *c, bool json, int verbose, struct session **s)
{
	log_init("iostrata", json, verbose);
	if (!privileged()) {
		errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
		return -1;
	}
	session_signals();
	return session_open(c, false, s, NULL, NULL);
}

int sink_written(int err)
{
	if (!err)
		return 0;
	if (errno == EPIPE)
		return -1;	/* a closed pipe is a reader's way to stop */
	errorf("writing the output: %s", strerror(errno));
	return 1;
}
