// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata calibrate: before trusting the tracer on a host, run known I/O through it and
 * compare. Each check runs iostrata-load (found beside this binary, else on PATH) as a child
 * that waits until the layers are attached with a filter on its pid, so only its own I/O is
 * counted; the tracer's counts and percentiles are then set against what the load issued and
 * measured itself, or against a latency set in advance (io_uring TIMEOUT, aio POLL). Last, the
 * tracer's own cost: BPF run time per I/O per layer (BPF_ENABLE_STATS, on only while its fd is
 * open) and the IOPS of one workload without and with tracing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "cmd.h"
#include "histfmt.h"
#include "json.h"
#include "ksyms.h"
#include "log.h"
#include "session.h"
#include "spawn.h"

enum {
	L_BLOCK = 1 << LAYER_BLOCK, L_URING = 1 << LAYER_URING, L_AIO = 1 << LAYER_AIO,
	L_SYSCALL = 1 << LAYER_SYSCALL,
};

struct cal {
	const char *load;	/* path of iostrata-load */
	const char *dir;	/* where the temporary files go */
	double skew;		/* testing: expected latencies x (1 + skew) */
	int nchecks, nfail, nskip;
	char detail[200];	/* said with the next check (then cleared) */
	bool json;		/* -j */
	struct jw jw;		/* -j: the document being built */
};

/* One traced run of the load: its stdout (JSON) and the tracer's records. */
struct run {
	char out[1 << 16];
	struct recs recs;
	char why[256];		/* why the layers could not start */
	char drops[200];	/* what the tracer could not record in this run, "" if nothing */
	uint64_t unseen;	/* of those, complete_unseen: completions no BPF program received */
	int status;
};

/* ---- the load's JSON, which this project writes: a few numbers by key, in document order */

static bool load_num(const char *doc, const char *op, const char *sub, const char *key,
		     double *out)
{
	char k[64];
	const char *p = strstr(doc, "\"total\":");

	snprintf(k, sizeof(k), "\"%s\":", op);
	p = p ? strstr(p, k) : NULL;
	if (p && sub) {
		snprintf(k, sizeof(k), "\"%s\":", sub);
		p = strstr(p, k);
	}
	snprintf(k, sizeof(k), "\"%s\":", key);
	p = p ? strstr(p, k) : NULL;
	if (!p)
		return false;
	*out = strtod(p + strlen(k), NULL);
	return true;
}

/* ---- the tracer's records */

typedef bool (*rec_pred)(const struct rec *r, const void *arg);

static bool stage_is(const struct rec *r, const void *arg)
{
	/* { layer, stage, label value or NULL, a flag the record must have (and not rahead) } */
	const char *const *ls = arg;

	if (strcmp(r->layer, ls[0]) || strcmp(r->stage, ls[1]))
		return false;
	if (ls[3] && (!strstr(r->flags, ls[3]) || strstr(r->flags, "rahead")))
		return false;
	if (!ls[2])
		return true;
	return !strcmp(r->syscall, ls[2]) || !strcmp(r->opcode, ls[2]) || !strcmp(r->op, ls[2]);
}

static void merged_flags(const struct recs *recs, const char *layer, const char *stage,
			 const char *label, const char *flags, struct hist *h)
{
	const char *ls[4] = { layer, stage, label, flags };
	size_t i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < recs->n; i++)
		if (stage_is(&recs->v[i], ls))
			hist_merge(h, &recs->v[i].h);
}

static void merged(const struct recs *recs, const char *layer, const char *stage,
		   const char *label, struct hist *h)
{
	merged_flags(recs, layer, stage, label, NULL, h);
}

/* ---- one run: the child waits on a pipe until the layers have attached with its pid */

static int traced_run(struct cal *c, char **args, unsigned mask, bool cost,
		      uint64_t ns[NLAYERS], struct run *r)
{
	struct trace_config cfg = TRACE_CONFIG_DEFAULT;
	uint64_t before[NLAYERS], after[NLAYERS];
	struct session *s = NULL;
	struct interval iv;
	int go[2], out[2], i, n;
	size_t used = 0;
	ssize_t got;
	char *argv[40];
	pid_t pid;

	memset(r, 0, sizeof(*r));
	argv[0] = (char *)c->load;
	for (n = 1; args[n - 1] && n < 36; n++)
		argv[n] = args[n - 1];
	argv[n++] = "--json";
	argv[n] = NULL;
	if (pipe(go) || pipe(out))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		char b;

		close(go[1]);
		close(out[0]);
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		dup2(out[1], STDOUT_FILENO);
		if (!log_verbosity()) {
			int nul = open("/dev/null", O_WRONLY);

			dup2(nul, STDERR_FILENO);
		}
		setenv("TMPDIR", c->dir, 1);
		execv(c->load, argv);
		_exit(127);
	}
	close(go[0]);
	close(out[1]);
	/* this run's own configuration: the load's process only, per op and opcode */
	cfg.layers = mask;	/* 0: every available layer */
	cfg.tgid = pid;
	cfg.per_op = true;
	cfg.per_opcode = true;
	log_mute(true);
	if (session_open(&cfg, false, &s, NULL, NULL))
		snprintf(r->why, sizeof(r->why), "%s", *log_muted_error() ? log_muted_error() :
			 "the layers could not start");
	log_mute(false);
	if (s && cost)
		session_run_time(s, before);
	if (write(go[1], "g", 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	while ((got = read(out[0], r->out + used, sizeof(r->out) - 1 - used)) > 0)
		used += (size_t)got;
	r->out[used] = '\0';
	close(out[0]);
	waitpid(pid, &r->status, 0);
	if (!s)
		return -ECHILD;
	if (cost) {
		session_run_time(s, after);
		for (i = 0; i < NLAYERS; i++)
			ns[i] = after[i] - before[i];
	}
	/* the load is done: detach and take everything the maps hold, as one interval */
	memset(&iv, 0, sizeof(iv));
	session_finish(s, &iv);
	session_close(s);
	for (int d = 0; d < iv.ndrops; d++) {
		size_t u = strlen(r->drops);

		if (!strcmp(iv.drops[d].name, "complete_unseen"))
			r->unseen += iv.drops[d].n;
		if (iv.drops[d].n && u < sizeof(r->drops) - 40)
			snprintf(r->drops + u, sizeof(r->drops) - u, "%s%s=%" PRIu64,
				 u ? " " : "drops: ", iv.drops[d].name, iv.drops[d].n);
	}
	r->recs = iv.recs;	/* the run keeps the records */
	return WIFEXITED(r->status) && !WEXITSTATUS(r->status) ? 0 : -ECHILD;
}

/* ---- reporting */

static const char *fmt(char *buf, size_t len, double ns)
{
	if (isnan(ns))
		return "-";
	return fmt_ns(buf, len, (uint64_t)llround(ns), false);
}

/*
 * One check. Counts (tol_ns < 0): observed == expected, or within expected * (1 + tol_frac)
 * on the side tol_frac's sign gives (above it when positive, below when negative).
 * Latencies: |observed - expected| <= tol_frac * expected + tol_ns. skip: the reason it could
 * not be checked here.
 */
static void check(struct cal *c, const char *name, double expected, double observed,
		  double tol_frac, double tol_ns, const char *skip)
{
	bool count = tol_ns < 0, pass;
	char e[24], o[24], tol[48];
	const char *res;

	c->nchecks++;
	if (skip) {
		res = "SKIP";
		c->nskip++;
	} else {
		pass = count ? (tol_frac >= 0 ? observed >= expected &&
					 observed <= expected * (1 + tol_frac) :
					 observed <= expected &&
					 observed >= expected * (1 + tol_frac)) :
		       fabs(observed - expected) <= tol_frac * expected + tol_ns;
		res = pass ? "PASS" : "FAIL";
		c->nfail += !pass;
	}
	if (count) {
		snprintf(e, sizeof(e), "%.0f", expected);
		snprintf(o, sizeof(o), "%.0f", observed);
		if (tol_frac > 0)
			snprintf(tol, sizeof(tol), "+0..%.0f%%", tol_frac * 100);
		else if (tol_frac < 0)
			snprintf(tol, sizeof(tol), "-%.0f..0%%", -tol_frac * 100);
		else
			snprintf(tol, sizeof(tol), "exact");
	} else {
		char t[24];

		fmt(e, sizeof(e), expected);
		fmt(o, sizeof(o), observed);
		snprintf(tol, sizeof(tol), "%.0f%% + %s", tol_frac * 100, fmt(t, sizeof(t), tol_ns));
	}
	if (c->json) {
		jw_obj(&c->jw, NULL);
		jw_str(&c->jw, "check", name);
		jw_str(&c->jw, "unit", count ? "count" : "ns");
		jw_u64(&c->jw, "expected", (uint64_t)llround(expected));
		if (skip || isnan(observed))
			jw_null(&c->jw, "observed");
		else
			jw_u64(&c->jw, "observed", (uint64_t)llround(observed));
		jw_str(&c->jw, "tolerance", tol);
		jw_str(&c->jw, "result", res);
		if (skip)
			jw_str(&c->jw, "why", skip);
		if (c->detail[0])
			jw_str(&c->jw, "detail", c->detail);
		jw_end_obj(&c->jw);
		c->detail[0] = '\0';
		return;
	}
	printf("%-44s %10s %10s  %-14s %s%s%s%s%s\n", name, e, o, tol, res, skip ? ": " : "",
	       skip ? skip : "", c->detail[0] && strcmp(res, "PASS") ? " - " : "",
	       c->detail[0] && strcmp(res, "PASS") ? c->detail : "");
	c->detail[0] = '\0';
	fflush(stdout);
}

static double p_of(const struct hist *h, uint32_t ppm)
{
	uint64_t v;

	return hist_percentile(h, ppm, &v) ? (double)v : NAN;
}

/* The load's own percentile, e.g. "50.000000", of op's total latency. */
static double load_p(const struct run *r, const char *op, const char *pct)
{
	double v;

	return load_num(r->out, op, "lat_ns", pct, &v) ? v : NAN;
}

/* ---- the checks */

struct rw_case {
	const char *engine, *ios, *qd;
	unsigned mask;
	const char *layer, *label;
	const char *count_stage;	/* counts every request */
	const char *lat_stage;		/* compared with the load's own latency; NULL: none */
	bool linked;			/* its O_DIRECT requests link to their bios */
};

#define RW_ATTEMPTS 3

static void retry_said(struct cal *c, const char *engine, int attempt, const struct run *r)
{
	char why[96];

	snprintf(why, sizeof(why), "the kernel completed %" PRIu64 " requests no BPF program "
		 "received (complete_unseen)", r->unseen);
	if (!c->json) {
		printf("  (%s run %d of %d repeated: %s; docs/trust.md)\n", engine, attempt,
		       RW_ATTEMPTS, why);
		return;
	}
	jw_obj(&c->jw, NULL);
	jw_str(&c->jw, "check", engine);
	jw_str(&c->jw, "unit", "retry");
	jw_str(&c->jw, "detail", why);
	jw_str(&c->jw, "drops", r->drops);
	jw_end_obj(&c->jw);
}

static void rw_checks(struct cal *c, const struct rw_case *k, bool *on_block)
{
	char *args[] = { "--engine", (char *)k->engine, "--rw", "randread", "--ios", (char *)k->ios,
			 "--qd", (char *)k->qd, "--size", "16m", NULL };
	char name[96], why[600];
	struct hist h;
	struct run *r = calloc(1, sizeof(*r));
	double n = strtod(k->ios, NULL), issued = NAN;
	const char *skip = NULL;
	int err, attempt;

	if (!r)
		return;
	/*
	 * A run in which the kernel completed requests that no BPF program received (a host fault
	 * measured in docs/trust.md, "complete_unseen": counted, never measured) cannot show
	 * whether the tracer links and counts every request: it is said and run again, at most
	 * RW_ATTEMPTS times in all; the last run is judged as it is.
	 */
	for (attempt = 1;; attempt++) {
		err = traced_run(c, args, k->mask, false, NULL, r);
		if (!r->unseen || attempt == RW_ATTEMPTS)
			break;
		retry_said(c, k->engine, attempt, r);
		recs_clear(&r->recs);
	}
	if (*r->drops && !c->json)
		printf("  (%s run: %s)\n", k->engine, r->drops);
	if (*r->drops && c->json) {
		jw_obj(&c->jw, NULL);
		jw_str(&c->jw, "check", k->engine);
		jw_str(&c->jw, "unit", "drops");
		jw_str(&c->jw, "detail", r->drops);
		jw_end_obj(&c->jw);
	}
	if (err) {
		snprintf(why, sizeof(why), "iostrata-load --engine %s failed (exit %d)%s%s",
			 k->engine, WEXITSTATUS(r->status), *r->why ? "; " : "", r->why);
		skip = why;
	} else if (*r->why) {
		skip = r->why;
	}
	load_num(r->out, "read", NULL, "total_ios", &issued);
	snprintf(name, sizeof(name), "%s: issued by the load", k->engine);
	check(c, name, n, issued, 0, -1, skip);
	merged(&r->recs, k->layer, k->count_stage, k->label, &h);
	snprintf(name, sizeof(name), "%s: %s %s %s count", k->engine, k->layer, k->count_stage,
		 k->label);
	check(c, name, n, (double)h.count, 0, -1, skip);
	if (k->lat_stage) {
		/* the tracer's per-request time against the load's own clock: a few us apart
		 * (the load stamps in user space, the tracer in the kernel) */
		merged(&r->recs, k->layer, k->lat_stage, k->label, &h);
		snprintf(name, sizeof(name), "%s: %s %s p50 vs the load's", k->engine, k->layer,
			 k->lat_stage);
		check(c, name, load_p(r, "read", "50.000000") * (1 + c->skew), p_of(&h, 500000),
		      0.10, 20000, skip);
		snprintf(name, sizeof(name), "%s: %s %s p99 vs the load's", k->engine, k->layer,
			 k->lat_stage);
		check(c, name, load_p(r, "read", "99.000000") * (1 + c->skew), p_of(&h, 990000),
		      0.25, 100000, skip);
	}
	if (k->linked) {
		const char *ls = link_problem();

		struct hist sb, w;

		merged(&r->recs, k->layer, "submit_bio", k->label, &sb);
		merged(&r->recs, k->layer, "wait", k->label, &w);
		merged(&r->recs, k->layer, "device", k->label, &h);
		/* which stamp was missing, when some are (submit_bio: no bio linked at queue) */
		snprintf(c->detail, sizeof(c->detail), "submit_bio %" PRIu64 " (+%" PRIu64
			 " unmeasured), wait %" PRIu64 " (+%" PRIu64 "), device %" PRIu64 " (+%"
			 PRIu64 ")", (uint64_t)sb.count, (uint64_t)sb.unmeasured, (uint64_t)w.count,
			 (uint64_t)w.unmeasured, (uint64_t)h.count, (uint64_t)h.unmeasured);
		snprintf(name, sizeof(name), "%s: %s requests linked to bios", k->engine, k->layer);
		check(c, name, n, (double)h.count, 0, -1, skip ? skip : *ls ? ls :
		      !*on_block ? "the directory is not on a block device" : NULL);
	}
	if (!strcmp(k->engine, "psync")) {
		/* the O_DIRECT preads are REQ_SYNC; the load's page faults (readahead of its own
		 * binary) and the filesystem's metadata reads are not, or are few */
		merged_flags(&r->recs, "block", "device", "read", "sync", &h);
		*on_block = h.count > 0;
		{	/* the read requests by flags, said if the check fails */
			size_t used = 0, j;

			c->detail[0] = '\0';
			for (j = 0; j < r->recs.n && used < sizeof(c->detail) - 40; j++) {
				const struct rec *x = &r->recs.v[j];

				if (!strcmp(x->layer, "block") && !strcmp(x->stage, "device") &&
				    !strcmp(x->op, "read"))
					used += (size_t)snprintf(c->detail + used,
								 sizeof(c->detail) - used,
								 "%s%s %" PRIu64 "+%" PRIu64 "u",
								 used ? ", " : "",
								 *x->flags ? x->flags : "-",
								 (uint64_t)x->h.count,
								 (uint64_t)x->h.unmeasured);
			}
		}
		/*
		 * Requests, not bios: one per O_DIRECT read, REQ_SYNC, unless the scheduler merged
		 * it into an adjacent request of the same process. Seen: 0.6-3.3 % short in 3 of
		 * ~12 runs, with many readahead requests from the same process and no drop; most
		 * likely (not proven) merged into readahead of the load's binary. So at most N.
		 */
		check(c, "psync: block read requests", n, (double)(h.count + h.unmeasured), -0.05, -1,
		      skip ? skip : !*on_block ? "the directory is not on a block device" : NULL);
	}
	recs_clear(&r->recs);
	free(r);
}

static void probe_check(struct cal *c, const char *engine, const char *op, const char *layer,
			const char *stage, const char *label)
{
	char *args[] = { "--engine", (char *)engine, "--op", (char *)op, "--latency", "5ms",
			 "--ios", "40", NULL };
	char name[96], why[600];
	struct run *r = calloc(1, sizeof(*r));
	const char *skip = NULL;
	struct hist h;

	if (!r)
		return;
	if (traced_run(c, args, strcmp(layer, "uring") ? L_AIO : L_URING, false, NULL, r)) {
		snprintf(why, sizeof(why), "iostrata-load --engine %s --op %s failed (exit %d)%s%s",
			 engine, op, WEXITSTATUS(r->status), *r->why ? "; " : "", r->why);
		skip = why;
	} else if (*r->why) {
		skip = r->why;
	}
	merged(&r->recs, layer, stage, label, &h);
	snprintf(name, sizeof(name), "%s %s 5 ms: %s %s count", engine, op, layer, stage);
	check(c, name, 40, (double)h.count, 0, -1, skip);
	snprintf(name, sizeof(name), "%s %s 5 ms: %s %s p50", engine, op, layer, stage);
	check(c, name, 5e6 * (1 + c->skew), p_of(&h, 500000), 0.05, 0, skip);
	recs_clear(&r->recs);
	free(r);
}

/* IOPS of one io_uring workload without and with every layer, and the BPF time per I/O. */
static void cost(struct cal *c)
{
	char *args[] = { "--engine", "io_uring", "--rw", "randread", "--qd", "32", "--runtime",
			 "2", "--size", "64m", NULL };
	struct run *r = calloc(1, sizeof(*r));
	double iops0 = NAN, iops1 = NAN, ios = NAN;
	uint64_t ns[NLAYERS] = { 0 }, total = 0;
	int stats, i;

	if (!r)
		return;
	if (!traced_run(c, args, 0, false, NULL, r))
		load_num(r->out, "read", NULL, "iops", &iops0);
	recs_clear(&r->recs);
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);	/* restored when the fd closes */
	if (!traced_run(c, args, 0, true, ns, r)) {
		load_num(r->out, "read", NULL, "iops", &iops1);
		load_num(r->out, "read", NULL, "total_ios", &ios);
	}
	if (stats >= 0)
		close(stats);
	recs_clear(&r->recs);
	free(r);
	for (i = 0; i < NLAYERS; i++)
		total += ns[i];
	if (c->json) {
		jw_obj(&c->jw, "cost");
		jw_str(&c->jw, "workload", "iostrata-load io_uring randread 4k qd32 O_DIRECT 2 s");
		if (stats < 0 || isnan(ios) || ios <= 0) {
			jw_null(&c->jw, "bpf_ns_per_io");
		} else {
			jw_obj(&c->jw, "bpf_ns_per_io");
			for (i = 0; i < NLAYERS; i++)
				jw_u64(&c->jw, layers[i]->name, (uint64_t)llround((double)ns[i] / ios));
			jw_u64(&c->jw, "total", (uint64_t)llround((double)total / ios));
			jw_end_obj(&c->jw);
		}
		jw_u64(&c->jw, "iops_untraced", isnan(iops0) ? 0 : (uint64_t)llround(iops0));
		jw_u64(&c->jw, "iops_traced", isnan(iops1) ? 0 : (uint64_t)llround(iops1));
		jw_end_obj(&c->jw);
		return;
	}
	printf("\ncost (iostrata-load io_uring randread 4k qd32 O_DIRECT, 2 s each)\n");
	if (stats < 0 || isnan(ios) || ios <= 0) {
		printf("  BPF run time: unknown (%s)\n", stats < 0 ? "BPF_ENABLE_STATS refused" :
		       "the traced run failed");
	} else {
		printf("  BPF run time per I/O:");
		for (i = 0; i < NLAYERS; i++)
			printf(" %s %.0f ns,", layers[i]->name, (double)ns[i] / ios);
		printf(" total %.0f ns\n", (double)total / ios);
	}
	printf("  IOPS: untraced %.0f, traced %.0f", iops0, iops1);
	if (!isnan(iops0) && !isnan(iops1) && iops0 > 0)
		printf(" (%+.1f %%; one run each: these vary by +-15 %% here)", 100 * (iops1 / iops0 - 1));
	printf("\n");
}

static const char usage[] =
"Usage: iostrata calibrate [-j] [-v] [--dir DIR]\n"
"\n"
"Runs known I/O through every layer with iostrata-load and checks what the tracer\n"
"reports against it: counts exactly, latencies against the load's own clock and\n"
"against latencies set in advance; then the tracer's cost. Exit 1 if a check fails.\n"
"\n"
"  --dir=DIR     directory for the temporary files (default $TMPDIR or /var/tmp;\n"
"                on a block device for the block and bio-link checks)\n"
"  --skew=PCT    testing: expect every latency PCT % higher (the checks must fail)\n"
"  -j, --json    one JSON document on stdout\n"
"  -v, --verbose show the load's errors and the layers' diagnostics\n"
"  -h, --help    show this help\n";

int cmd_calibrate(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' }, { "skew", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' }, { "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	static const struct rw_case cases[] = {
		/* engine, ios, qd, layers, layer, label, count stage, latency stage, linked */
		{ "psync", "1000", "1", L_BLOCK | L_SYSCALL, "syscall", "pread64", "duration",
		  "duration", false },
		/* glibc queues the requests to its threads: the load's latency includes the
		 * queueing, the syscall's does not, so only the count compares */
		{ "posixaio", "500", "8", L_SYSCALL, "syscall", "pread64", "duration", NULL, false },
		{ "libaio", "1000", "8", L_BLOCK | L_AIO, "aio", "pread", "total", "total", true },
		/* total (submit -> reap) is bounded at the ring's next event: the last CQEs
		 * before the ring closes have none, so submit_cqe counts */
		{ "io_uring", "1000", "8", L_BLOCK | L_URING, "uring", "read", "submit_cqe", "total",
		  true },
	};
	struct cal c = { .dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp",
			 .json = log_json() };
	int verbose = 0;
	bool exiting;
	char msg[256], *end;
	struct stat st;
	bool on_block = true;
	int o;
	size_t i;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":jvh", lo, NULL)) != -1) {
		switch (o) {
		case 'd': c.dir = optarg; break;
		case 's':
			errno = 0;
			c.skew = strtod(optarg, &end) / 100;
			if (errno || end == optarg || *end || !isfinite(c.skew) || c.skew <= -1) {
				errorf("bad --skew '%s': expected a percentage above -100", optarg);
				return 2;
			}
			break;
		case 'j': c.json = true; break;
		case 'v': verbose++; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			errorf("%s", cli_getopt_problem(o, argv, msg, sizeof(msg)));
			return 2;
		}
	}
	if (optind < argc) {
		errorf("calibrate takes no argument '%s'", argv[optind]);
		return 2;
	}
	log_init("iostrata", c.json, verbose);
	if (stat(c.dir, &st) || !S_ISDIR(st.st_mode) || access(c.dir, W_OK)) {
		errorf("--dir %s: not a writable directory", c.dir);
		return 2;
	}
	c.load = load_binary();
	if (!c.load) {
		errorf("calibrate needs iostrata-load beside iostrata or on PATH");
		return 1;
	}
	if (!privileged()) {
		errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
		return 1;
	}
	session_signals();
	if (c.json) {
		jw_init(&c.jw);
		jw_obj(&c.jw, NULL);
		jw_str(&c.jw, "type", "calibrate");
		jw_str(&c.jw, "load", c.load);
		jw_str(&c.jw, "dir", c.dir);
		jw_arr(&c.jw, "checks");
	} else {
		printf("iostrata calibrate: %s, files in %s\n\n", c.load, c.dir);
		printf("%-44s %10s %10s  %-14s %s\n", "CHECK", "EXPECTED", "OBSERVED", "TOLERANCE",
		       "RESULT");
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && !session_stopping(); i++)
		rw_checks(&c, &cases[i], &on_block);
	if (!session_stopping())
		probe_check(&c, "io_uring", "timeout", "uring", "submit_cqe", "timeout");
	if (!session_stopping())
		probe_check(&c, "libaio", "poll", "aio", "total", "poll");
	if (c.json)
		jw_end_arr(&c.jw);	/* the checks, however many ran */
	if (!session_stopping())
		cost(&c);
	exiting = session_stopping();
	if (c.json) {
		jw_u64(&c.jw, "checks_run", (uint64_t)c.nchecks);
		jw_u64(&c.jw, "failed", (uint64_t)c.nfail);
		jw_u64(&c.jw, "skipped", (uint64_t)c.nskip);
		jw_str(&c.jw, "result", c.nfail || exiting ? "FAIL" : "PASS");
		jw_end_obj(&c.jw);
		jw_flush_line(&c.jw, stdout);
		jw_free(&c.jw);
	} else {
		printf("\n%s: %d checks, %d failed, %d skipped%s\n", c.nfail || exiting ? "FAIL" :
		       "PASS", c.nchecks, c.nfail, c.nskip, exiting ? " (interrupted)" : "");
	}
	return c.nfail || exiting ? 1 : 0;
}
