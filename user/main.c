// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata: I/O latency, layer by layer.
 *
 * One lifecycle: parse -> check privileges -> open/configure/load/attach each layer -> drain
 * one interval at a time -> print -> detach on every exit path.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "common.h"
#include "cli.h"
#include "json.h"
#include "layer.h"
#include "output.h"
#include "req.h"

#define IOSTRATA_VERSION "0.1.0"

struct opts opts = {
	.interval_s = 1.0,
	.inflight_slots = INFLIGHT_SLOTS_DEFAULT,
};

volatile sig_atomic_t exiting;
bool errors_muted;
char muted_error[512];	/* the first error said while muted */

static void on_signal(int sig)
{
	exiting = 1;
}

static void vmsg(FILE *f, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	cli_error_line(f, "iostrata", opts.json, msg);
}

void errorf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (!errors_muted) {
		vmsg(stderr, fmt, ap);
	} else {
		char msg[512];

		vsnprintf(msg, sizeof(msg), fmt, ap);
		if (!muted_error[0])
			snprintf(muted_error, sizeof(muted_error), "%s", msg);
		vlog("skipped: %s", msg);
	}
	va_end(ap);
}

void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!opts.verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "iostrata: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (opts.verbose < (level == LIBBPF_DEBUG ? 2 : 1))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static const char usage[] =
"Usage: iostrata [OPTIONS] [INTERVAL [COUNT]]\n"
"       iostrata features [-j] [-v]\n"
"       iostrata calibrate [-j] [-v] [--dir DIR]\n"
"\n"
"Per-layer I/O latency histograms, built in the kernel. Prints every INTERVAL\n"
"seconds (default 1) until Ctrl-C, COUNT intervals, or --duration.\n"
"\n"
"  -d, --disk=DISK       only this disk (vda, /dev/nvme0n1)\n"
"  -p, --pid=PID         only I/O queued by this process\n"
"  -c, --cgroup=PATH     only I/O queued from this cgroup v2 or below it\n"
"  -l, --layers=LIST     block,uring,aio,syscall (default: every available layer;\n"
"                        only block with -d)\n"
"      --comm=NAME       only threads named NAME (syscall layer)\n"
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
"  -V, --version         show the version\n"
"\n"
"Examples:\n"
"  iostrata                          all layers, whole host, every second\n"
"  iostrata -D -F 5 3                per disk and op, three 5-second intervals\n"
"  iostrata -d vda -j --duration 10  NDJSON for vda, stop after 10 s\n"
"  iostrata features                 what this kernel supports\n"
"  iostrata calibrate                check the tracer against known I/O here\n";

enum { OPT_DURATION = 256, OPT_INFLIGHT, OPT_FAIL_PROBE, OPT_FORCE_RAW_TP, OPT_COMM };

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
	{ 0 },
};

/* Every layer this build has, in the order their records are printed. */
const struct layer_ops *const layers[] = { &block_layer_ops, &uring_layer_ops, &aio_layer_ops,
					    &syscall_layer_ops };
const int nlayers = NLAYERS;

static int parse_layers(const char *list)
{
	char buf[128], *tok, *save = NULL;
	int i;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NLAYERS && strcmp(tok, layers[i]->name); i++)
			;
		if (i == NLAYERS) {
			errorf("unknown layer '%s' in -l (layers: block, uring, aio, syscall)", tok);
			return -1;
		}
		opts.layers |= 1u << i;
	}
	if (!opts.layers) {
		errorf("-l needs at least one layer (block, uring, aio, syscall)");
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
static int resolve_pid(const char *s)
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
	opts.tgid = (pid_t)(tgid > 0 ? tgid : pid);
	return 0;
}

/* 0 ok, 1 exit 0 (help/version), -1 usage error */
static int parse_args(int argc, char **argv, bool features)
{
	const char *optstr = features ? ":jvhV" : ":d:p:c:l:DFPOWmTjvhV";
	const char *pid_arg = NULL;
	char msg[256];
	long v;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, optstr, long_opts, NULL)) != -1) {
		switch (c) {
		case 'd': opts.disk = optarg; break;
		case 'p': pid_arg = optarg; break;
		case 'c': opts.cgroup = optarg; break;
		case 'D': opts.per_disk = true; break;
		case 'F': opts.per_op = true; break;
		case 'P': opts.per_process = true; break;
		case 'O': opts.per_opcode = true; break;
		case 'W': opts.waterfall = true; break;
		case 'l':
			if (parse_layers(optarg))
				return -1;
			break;
		case OPT_COMM:
			if (!*optarg || strlen(optarg) > 15) {
				errorf("bad --comm '%s': a thread name is 1 to 15 characters", optarg);
				return -1;
			}
			opts.comm = optarg;
			break;
		case 'm': opts.ms = true; break;
		case 'T': opts.timestamps = true; break;
		case 'j': opts.json = true; break;
		case 'v': opts.verbose++; break;
		case OPT_DURATION:
			if (features) {
				errorf("features takes no --duration");
				return -1;
			}
			if (parse_seconds("duration", optarg, &opts.duration_s))
				return -1;
			break;
		case OPT_INFLIGHT:
			if (parse_long("--inflight", optarg, 64, 1 << 24, &v))
				return -1;
			if (v & (v - 1)) {
				errorf("bad --inflight '%s': expected a power of two", optarg);
				return -1;
			}
			opts.inflight_slots = (uint32_t)v;
			break;
		case OPT_FAIL_PROBE:
			if (opts.nfail_tp == MAX_FAIL_TPS) {
				errorf("too many --fail-probe options");
				return -1;
			}
			opts.fail_tp[opts.nfail_tp++] = optarg;
			break;
		case OPT_FORCE_RAW_TP:
			opts.force_raw_tp = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		case 'V':
			printf("iostrata %s\n", IOSTRATA_VERSION);
			return 1;
		default:	/* ':' or '?' */
			errorf("%s", cli_getopt_problem(c, argv, msg, sizeof(msg)));
			return -1;
		}
	}
	if (features) {
		if (optind < argc) {
			errorf("features takes no argument '%s'", argv[optind]);
			return -1;
		}
		return 0;
	}
	if (optind < argc && parse_seconds("interval", argv[optind++], &opts.interval_s))
		return -1;
	if (optind < argc) {
		if (parse_long("count", argv[optind++], 1, LONG_MAX, &v))
			return -1;
		opts.count = v;
	}
	if (optind < argc) {
		errorf("unexpected argument '%s' (see --help)", argv[optind]);
		return -1;
	}
	if (opts.disk && disk_resolve(opts.disk, &opts.dev))
		return -1;
	if (pid_arg && resolve_pid(pid_arg))
		return -1;
	if (opts.cgroup && access(opts.cgroup, F_OK)) {
		errorf("-c %s: %s", opts.cgroup, strerror(errno));
		return -1;
	}
	return 0;
}

/* Root, or the capabilities loading and attaching tracing programs takes. */
static bool privileged(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };
	uint64_t eff;

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &h, d))
		return false;
	eff = ((uint64_t)d[1].effective << 32) | d[0].effective;
	return (eff & (1ULL << CAP_SYS_ADMIN)) ||
	       ((eff & (1ULL << 39 /* CAP_BPF */)) && (eff & (1ULL << 38 /* CAP_PERFMON */)));
}

static int cmd_features(void)
{
	struct layer_report reps[NLAYERS];
	const char *names[NLAYERS];
	bool verified = privileged();
	void *state;
	int i;

	for (i = 0; i < NLAYERS; i++) {
		names[i] = layers[i]->name;
		memset(&reps[i], 0, sizeof(reps[i]));
		if (verified) {
			/* prove it: load and attach, then detach before printing; a layer that
			 * cannot start says why in its report */
			errors_muted = true;
			if (!layers[i]->start(&state, &reps[i]))
				layers[i]->stop(state);
			errors_muted = false;
		} else {
			layers[i]->report_static(&reps[i]);
		}
	}
	return features_print(reps, names, NLAYERS, verified, stdout) ? 1 : 0;
}

/* Layers to run: those named with -l; else every one (only block when -d names a disk). */
static bool wanted(int i, bool *explicit)
{
	*explicit = opts.layers != 0;
	if (opts.layers)
		return opts.layers & (1u << i);
	return !(opts.dev && strcmp(layers[i]->name, "block"));
}

static int emit(struct interval *iv)
{
	recs_sort(&iv->recs);
	if (opts.json)
		return output_json(iv, stdout);
	output_text(iv, stdout);
	return ferror(stdout) ? -1 : 0;
}

static void stop_all(void **state)
{
	int i;

	for (i = 0; i < NLAYERS; i++)
		if (state[i])
			layers[i]->stop(state[i]);
}

/*
 * After the last interval: retire the other generation once more. A program preempted past the
 * grace period (possible where completions run in a kworker, as loop's do) writes into the
 * generation the last interval retired; this picks it up. Printed only if it holds anything.
 */
static int collect_tail(void **state, uint64_t last)
{
	struct interval iv;
	bool any = false;
	int i, j, rc = 0;

	memset(&iv, 0, sizeof(iv));
	for (i = 0; i < NLAYERS; i++)
		if (state[i] && layers[i]->collect(state[i], &iv))
			rc = 1;
	for (j = 0; j < iv.ndrops; j++)
		any |= iv.drops[j].n != 0;
	for (j = 0; j < iv.nevents; j++)
		any |= iv.events[j].n != 0;
	if (!rc && (iv.recs.n || any)) {
		vlog("%zu late record(s) after the last interval", iv.recs.n);
		iv.interval_ns = iv.end_mono_ns - last;
		iv.ts_ns = clock_ns(CLOCK_REALTIME) - (clock_ns(CLOCK_MONOTONIC) - iv.end_mono_ns);
		if (emit(&iv))
			rc = errno == EPIPE ? -1 : 1;
	}
	recs_clear(&iv.recs);
	return rc;
}

static int cmd_trace(void)
{
	void *state[NLAYERS] = { NULL };
	struct layer_report rep;
	struct interval iv;
	struct timespec deadline;
	uint64_t start, last, end = 0, next, t;
	long n = 0;
	int i, err, rc = 0;

	/* the io_uring and aio layers share one request table, which the block layer links to */
	for (i = 0; i < NLAYERS; i++) {
		bool explicit;

		if (wanted(i, &explicit) && layers[i]->requests && reqs_open(opts.inflight_slots) < 0) {
			errorf("cannot create the request table: %s", strerror(errno));
			return 1;
		}
	}
	for (i = n = 0; i < NLAYERS; i++) {
		bool explicit;

		if (!wanted(i, &explicit))
			continue;
		/* a layer asked for by name must start; one that is merely available may not */
		errors_muted = !explicit;
		err = layers[i]->start(&state[i], &rep);
		errors_muted = false;
		if (err && explicit) {
			stop_all(state);
			reqs_close();
			return 1;
		}
		n += !err;
	}
	if (!n) {
		errorf("%s", muted_error[0] ? muted_error : "no layer could start");
		reqs_close();
		return 1;
	}
	n = 0;
	vlog("tracing; interval %.3fs, count %ld, duration %.3fs", opts.interval_s, opts.count,
	     opts.duration_s);

	start = last = clock_ns(CLOCK_MONOTONIC);
	if (opts.duration_s)
		end = start + (uint64_t)(opts.duration_s * 1e9);
	next = start;
	for (;;) {
		bool final;

		next += (uint64_t)(opts.interval_s * 1e9);
		if (end && next > end)
			next = end;
		deadline.tv_sec = (time_t)(next / 1000000000ULL);
		deadline.tv_nsec = (long)(next % 1000000000ULL);
		while (!exiting &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR)
			;
		/*
		 * The interval a signal cut short is printed too. Only a signal seen before the
		 * generation is retired makes it the last: one arriving during the drain finds
		 * events already in the new generation, which one more round reports.
		 */
		final = exiting;
		memset(&iv, 0, sizeof(iv));
		for (i = 0; i < NLAYERS && !rc; i++) {
			if (!state[i])		/* not wanted, or could not start */
				continue;
			err = layers[i]->collect(state[i], &iv);
			if (err) {
				errorf("reading the %s layer's histograms: %s", layers[i]->name,
				       strerror(-err));
				rc = 1;
			}
		}
		t = iv.end_mono_ns;	/* the instant the interval's generation was retired */
		iv.interval_ns = t - last;
		iv.ts_ns = clock_ns(CLOCK_REALTIME) - (clock_ns(CLOCK_MONOTONIC) - t);
		last = t;
		if (!rc && emit(&iv)) {
			if (errno == EPIPE) {
				rc = -1;	/* a closed pipe is a reader's way to stop */
			} else {
				errorf("writing the output: %s", strerror(errno));
				rc = 1;
			}
		}
		recs_clear(&iv.recs);
		if (rc || final || (opts.count && ++n >= opts.count) || (end && t >= end))
			break;
	}
	if (!rc)
		rc = collect_tail(state, last);
	stop_all(state);
	reqs_close();
	return rc < 0 ? 0 : rc;
}

int main(int argc, char **argv)
{
	/*
	 * SA_RESTART: a signal must not cut a write() to stdout short. Without it, a write blocked
	 * on a full pipe (a slow reader) that a signal interrupts before it moved a byte fails with
	 * EINTR, and stdio drops that part of the record: a torn JSON line. The interval sleep,
	 * clock_nanosleep, is never restarted, so a signal still ends it at once.
	 */
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	bool features = argc > 1 && !strcmp(argv[1], "features");
	bool calibrate = argc > 1 && !strcmp(argv[1], "calibrate");
	int r;

	/* -j is known before parsing so that parse errors are JSON too */
	for (r = 1; r < argc; r++)
		if (!strcmp(argv[r], "-j") || !strcmp(argv[r], "--json"))
			opts.json = true;

	if (calibrate) {
		for (r = 2; r < argc; r++)
			if (!strcmp(argv[r], "-h") || !strcmp(argv[r], "--help"))
				return cmd_calibrate(argc - 1, argv + 1);
		if (!privileged()) {
			errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
			return 1;
		}
		libbpf_set_print(libbpf_print);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		signal(SIGPIPE, SIG_IGN);
		return cmd_calibrate(argc - 1, argv + 1);
	}
	r = parse_args(argc - features, argv + features, features);
	if (r)
		return r > 0 ? 0 : 2;
	libbpf_set_print(libbpf_print);
	if (!privileged()) {
		if (features)
			return cmd_features();
		errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return features ? cmd_features() : cmd_trace();
}
