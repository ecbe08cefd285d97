// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata-load: issues known I/O through one Linux interface per run and measures its own
 * latency with the tracer's histogram, so iostrata's numbers can be checked against it.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/sysinfo.h>
#include "histfmt.h"
#include "cli.h"
#include "json.h"
#include "load.h"
#include "stopsig.h"

struct lopts lo = {
	.engine = ENG_IO_URING,
	.op = OP_RW,
	.rand = true,
	.read_pct = 100,
	.bs = 4096,
	.jobs = 1,
	.direct = true,
	.seed = 0x10ad5eed,
	.sqpoll_cpu = -1,
	.workers = 4,
	.spin = -1,
};
atomic_bool load_stop;
/* a signal asked for the stop (the runtime's end sets load_stop alone): a second one leaves */
static atomic_bool load_signalled;

static const char *const engine_names[ENG_N] = {
	[ENG_PSYNC] = "psync", [ENG_LIBAIO] = "libaio", [ENG_POSIXAIO] = "posixaio",
	[ENG_IO_URING] = "io_uring", [ENG_THREADPOOL] = "threadpool",
};
static int (*const engine_run[ENG_N])(struct job *) = {
	[ENG_PSYNC] = run_psync, [ENG_LIBAIO] = run_libaio, [ENG_POSIXAIO] = run_posixaio,
	[ENG_IO_URING] = run_uring, [ENG_THREADPOOL] = run_threadpool,
};
static const char *const op_names[] = { "rw", "nop", "timeout", "poll" };

static struct job *jobs;
static const char *rw_arg = "randread";
static bool qd_set, size_set, runtime_set;
static bool errors_as_text;	/* --check: sched-ab reads its error line */

/* ---- diagnostics ---- */

void lerr(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_error_line(stderr, "iostrata-load", lo.json && !errors_as_text, msg);
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- the per-I/O path shared by every engine ---- */

static inline uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: fast, and the same --seed gives the same offsets */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/*
 * Job i's generator state from --seed: xorshift64* stays at 0 once there, so the one seed per
 * job whose state would be 0 (seed * K + i + 1 wraps to 0: K is odd, so there is one) gets a
 * fixed state instead. Every I/O of that job was at offset 0, and a read (randrw).
 */
static uint64_t job_rng(uint64_t seed, int i)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)i + 1;

	return s ? s : 0x10ad5eedULL;
}

void job_fail(struct job *j, int err, const char *fmt, ...)
{
	va_list ap;

	if (j->err)
		return;
	j->err = err ? err : EIO;
	va_start(ap, fmt);
	vsnprintf(j->errmsg, sizeof(j->errmsg), fmt, ap);
	va_end(ap);
}

/* The job has ended: an error, a stop, or its --ios issued. */
static bool job_ended(const struct job *j)
{
	return j->err || atomic_load_explicit(&load_stop, memory_order_relaxed) ||
	       (lo.ios && j->seq >= lo.ios);
}

/* --runtime's end once every job has started (0: not yet, or no --runtime), for --rate's waits */
static _Atomic uint64_t load_deadline;

uint64_t job_pace(const struct job *j)
{
	uint64_t t, until, end;

	if (lo.rate <= 0 || job_ended(j))
		return 0;
	t = now_ns();
	until = j->next_due_ns;
	/* no later than the runtime's end: a slow rate overran it by up to 1/rate */
	end = atomic_load_explicit(&load_deadline, memory_order_relaxed);
	if (end && end < until)
		until = end > t ? end : t + 100000;	/* the main thread is about to stop us */
	return until > t ? until - t : 0;
}

/*
 * --rate: an I/O is due every 1/rate s; one falling behind is issued at once, and the next is
 * due 1/rate after it (no burst to catch up). Never sleeps: an engine with I/Os in flight waits
 * for them at most job_pace() ns (so a completion is reaped when it happens, not after the next
 * I/O's pacing), and sleeps that long only with nothing in flight.
 */
bool job_more(struct job *j)
{
	uint64_t t;

	if (job_ended(j))
		return false;
	if (lo.rate > 0) {
		t = now_ns();
		if (t < j->next_due_ns)
			return false;
		j->next_due_ns += (uint64_t)(1e9 / lo.rate);
		if (j->next_due_ns < t)	/* fell behind: do not burst to catch up */
			j->next_due_ns = t;
	}
	return true;
}

bool job_idle(struct job *j)
{
	uint64_t ns;
	struct timespec ts;

	/* not "the next is due now": job_more's clock and this one's differ, and the job goes on */
	if (lo.rate <= 0 || job_ended(j))
		return false;
	ns = job_pace(j);
	ts = ts_of_ns(ns);
	if (ns)
		nanosleep(&ts, NULL);	/* a signal cuts it short: the caller looks again */
	return true;
}

/* Every written block starts with this header, so a test can prove what was written. */
struct verify_hdr {
	uint64_t magic;
	uint64_t offset;
	uint64_t seq;		/* the job's I/O number */
	uint32_t job;
	uint32_t bs;
	uint64_t seed;
};

void job_prep(struct job *j, struct io *io)
{
	uint64_t nblocks = j->region_len / lo.bs;

	io->dir = DIR_READ;
	if (lo.op == OP_RW) {
		if (lo.read_pct < 100 &&
		    (lo.read_pct == 0 || (int)(rng_next(&j->rng) % 100) >= lo.read_pct))
			io->dir = DIR_WRITE;
		if (lo.rand) {
			io->off = (rng_next(&j->rng) % nblocks) * lo.bs;
		} else {
			io->off = j->next_off;
			j->next_off = (j->next_off + lo.bs) % (nblocks * lo.bs);
		}
		if (io->dir == DIR_WRITE) {
			struct verify_hdr *h = io->buf;

			h->magic = VERIFY_MAGIC;
			h->offset = io->off;
			h->seq = j->seq;
			h->job = (uint32_t)j->id;
			h->bs = lo.bs;
			h->seed = lo.seed;
		}
	}
	io->t_sub = 0;
	io->t_prep = now_ns();
	j->seq++;
}

static const char *why(int err)
{
	switch (err) {
	case EINVAL:
		return lo.direct ? " (O_DIRECT needs --bs and offsets aligned to the device's "
			"logical block size; or use --buffered)" : "";
	case ENOSPC:
		return " (no space left on the target)";
	case EOPNOTSUPP:
		return lo.iopoll ? " (--iopoll needs a device with poll queues, e.g. nvme "
			"poll_queues=N, and --direct)" : " (the target does not support this operation)";
	default:
		return "";
	}
}

void job_done(struct job *j, struct io *io, long res, uint64_t t_done)
{
	struct dir_stats *d = &j->d[io->dir];

	d->ios++;
	if (res < 0) {
		d->errors++;
		job_fail(j, (int)-res, "%s at offset %llu failed: %s%s",
			 lo.op != OP_RW ? op_names[lo.op] : io->dir == DIR_READ ? "read" : "write",
			 (unsigned long long)io->off, strerror((int)-res), why((int)-res));
	} else if (lo.op == OP_RW) {
		d->bytes += (uint64_t)res;
		if ((uint64_t)res < lo.bs)
			d->short_ios++;
	}
	hist_record(&d->lat, t_done - io->t_prep);
	if (io->t_sub) {
		hist_record(&d->slat, io->t_sub - io->t_prep);
		hist_record(&d->clat, t_done - io->t_sub);
	}
	if (io->dir == DIR_WRITE)
		j->writes_since_fsync++;
	atomic_fetch_add_explicit(&j->done, 1, memory_order_relaxed);
}

/*
 * One fsync for every N writes completed: an engine that reaps several at once (past one, or
 * several, multiples of N) owes one for each multiple crossed, so a run of W writes issues
 * exactly W / N (the remainder carried, not dropped, as a reset to 0 did).
 */
int job_fsync_due(struct job *j)
{
	while (lo.fsync_every && j->writes_since_fsync >= lo.fsync_every) {
		j->writes_since_fsync -= lo.fsync_every;
		j->fsyncs++;	/* issued, whatever it returns */
		if (fsync(j->fd)) {
			int err = errno;

			job_fail(j, err, "fsync: %s", strerror(err));
			return -err;
		}
	}
	return 0;
}

static void *job_thread(void *arg)
{
	struct job *j = arg;
	cpu_set_t set;
	size_t i;

	if (lo.ncpus) {
		CPU_ZERO(&set);
		CPU_SET(lo.cpus[j->id % lo.ncpus], &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			job_fail(j, errno, "cannot pin to CPU %d: %s", lo.cpus[j->id % lo.ncpus],
				 strerror(errno));
			/* ended, as main waits to see, and having run for no time */
			j->start_ns = j->end_ns = now_ns();
			return NULL;
		}
	}
	/* sleeps for --rate and the poll probe end on time, not 50 us late */
	prctl(PR_SET_TIMERSLACK, 1UL);
	for (i = 0; i < (size_t)lo.qd * lo.bs; i++)	/* a pattern, not zeros */
		((unsigned char *)j->buf_mem)[i] = (unsigned char)(i * 37 + 11);
	getrusage(RUSAGE_THREAD, &j->ru0);
	j->start_ns = now_ns();
	j->next_due_ns = j->start_ns;
	engine_run[lo.engine](j);
	j->end_ns = now_ns();
	getrusage(RUSAGE_THREAD, &j->ru1);
	return NULL;
}

/* ---- options ---- */

static const char usage[] =
"Usage: iostrata-load [OPTIONS]\n"
"\n"
"Issues known I/O through one interface and reports its own latency (the same\n"
"histogram as iostrata). Default: io_uring, 4 KiB random O_DIRECT reads at qd 32\n"
"for 10 s on a temporary 256 MiB file in $TMPDIR or /var/tmp.\n"
"\n"
"  --engine=E           psync, libaio, posixaio, io_uring (default) or threadpool;\n"
"                       a probe (--op) defaults to the one engine it runs on\n"
"  --rw=MODE            read, write, randread, randwrite, rw[:PCT], randrw[:PCT]\n"
"                       (PCT: share of reads, default 50)\n"
"  --bs=SIZE            block size (default 4k)\n"
"  --qd=N               I/Os in flight per job (default 32; psync and the\n"
"                       timeout and poll probes: 1)\n"
"  --jobs=N             threads, each with its own ring/context (default 1)\n"
"  --size=SIZE          bytes of the target to use (default 256m for a new file)\n"
"  --runtime=TIME       stop after TIME (default 10s unless --ios)\n"
"  --ios=N              exactly N I/Os per job\n"
"  --rate=IOPS          at most IOPS per job\n"
"  --direct, --buffered O_DIRECT (default) or the page cache\n"
"  --fsync-every=N      fsync after every N writes\n"
"  --file=PATH          a file: created (and removed at exit) if absent; an\n"
"                       existing one is only read unless --force\n"
"  --device=PATH        a block device (needs --force; never a mounted one)\n"
"  --force              allow writing an existing file or a device\n"
"  --keep               keep a file iostrata-load created (the temporary one too)\n"
"  --seed=N             offsets and read/write mix: 0 to 2^64-1 (default fixed)\n"
"  --cpus=LIST          pin job i to the i-th CPU of LIST (e.g. 0,2-3): online\n"
"                       CPUs this process may run on (taskset, cpuset)\n"
"  --json               one JSON document (fio's field names) on stdout\n"
"  --check              check the options and the target as a run would, then\n"
"                       exit: 0 if a run would start; nothing made, written or\n"
"                       run; an error as a line of text, even with --json\n"
"io_uring:\n"
"  --sqpoll [--sqpoll-cpu=N]  a kernel thread polls the submission queue\n"
"  --iopoll             the ring polls for completions (devices with poll queues)\n"
"  --fixed-bufs, --fixed-files  registered buffers / file\n"
"  --async              IOSQE_ASYNC: each read/write runs in an io-wq worker\n"
"  --submit-batch=N     SQEs (or iocbs) per submit call (default 8)\n"
"  --complete-batch=N   completions to wait for at once (default 1)\n"
"  --spin, --no-spin    busy-poll for completions instead of sleeping (io_uring,\n"
"                       libaio; default on for the timeout and poll probes)\n"
"  --poll-time=TIME     io_uring: busy-poll up to TIME before sleeping\n"
"  --hold-submits=N     testing: every Nth submit gets -EAGAIN, the SQEs kept\n"
"                       for the next (as from a kernel short of memory)\n"
"threadpool:\n"
"  --workers=N          threads doing the pread/pwrite (default 4)\n"
"known-latency probes (no disk I/O), each on its one engine (--engine optional):\n"
"  --op=nop             io_uring NOP\n"
"  --op=timeout --latency=TIME   io_uring TIMEOUT requests of TIME\n"
"  --op=poll --latency=TIME      libaio POLL on a pipe written TIME after submit\n"
"\n"
"  -h, --help   -V, --version\n"
"TIME: digits with at most one '.', then ns, us, ms, s or m (minutes, never\n"
"milliseconds); no unit is seconds: 10s, 1.5m, 500ms, 250us, 1000ns, 2.\n"
"SIZE: bytes, or with k, m, g or t (powers of 1024): 4096, 4k, 1m, 1g.\n";

enum {
	O_ENGINE = 256, O_RW, O_BS, O_QD, O_JOBS, O_SIZE, O_RUNTIME, O_IOS, O_RATE, O_DIRECT,
	O_BUFFERED, O_FSYNC, O_FILE, O_DEVICE, O_FORCE, O_KEEP, O_SEED, O_CPUS, O_JSON, O_SQPOLL,
	O_SQPOLL_CPU, O_FIXED_BUFS, O_FIXED_FILES, O_ASYNC, O_SUBMIT_BATCH, O_COMPLETE_BATCH, O_WORKERS,
	O_OP, O_LATENCY, O_SPIN, O_NO_SPIN, O_IOPOLL, O_POLL_TIME, O_HOLD_SUBMITS, O_CHECK,
};

static const struct option long_opts[] = {
	{ "engine", required_argument, NULL, O_ENGINE },
	{ "rw", required_argument, NULL, O_RW },
	{ "bs", required_argument, NULL, O_BS },
	{ "qd", required_argument, NULL, O_QD },
	{ "jobs", required_argument, NULL, O_JOBS },
	{ "size", required_argument, NULL, O_SIZE },
	{ "runtime", required_argument, NULL, O_RUNTIME },
	{ "ios", required_argument, NULL, O_IOS },
	{ "rate", required_argument, NULL, O_RATE },
	{ "direct", no_argument, NULL, O_DIRECT },
	{ "buffered", no_argument, NULL, O_BUFFERED },
	{ "fsync-every", required_argument, NULL, O_FSYNC },
	{ "file", required_argument, NULL, O_FILE },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "force", no_argument, NULL, O_FORCE },
	{ "keep", no_argument, NULL, O_KEEP },
	{ "seed", required_argument, NULL, O_SEED },
	{ "cpus", required_argument, NULL, O_CPUS },
	{ "json", no_argument, NULL, O_JSON },
	{ "check", no_argument, NULL, O_CHECK },
	{ "sqpoll", no_argument, NULL, O_SQPOLL },
	{ "iopoll", no_argument, NULL, O_IOPOLL },
	{ "sqpoll-cpu", required_argument, NULL, O_SQPOLL_CPU },
	{ "fixed-bufs", no_argument, NULL, O_FIXED_BUFS },
	{ "fixed-files", no_argument, NULL, O_FIXED_FILES },
	{ "async", no_argument, NULL, O_ASYNC },
	{ "submit-batch", required_argument, NULL, O_SUBMIT_BATCH },
	{ "complete-batch", required_argument, NULL, O_COMPLETE_BATCH },
	{ "hold-submits", required_argument, NULL, O_HOLD_SUBMITS },
	{ "workers", required_argument, NULL, O_WORKERS },
	{ "op", required_argument, NULL, O_OP },
	{ "latency", required_argument, NULL, O_LATENCY },
	{ "spin", no_argument, NULL, O_SPIN },
	{ "no-spin", no_argument, NULL, O_NO_SPIN },
	{ "poll-time", required_argument, NULL, O_POLL_TIME },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

/* "4k", "1m", "512": bytes; errors name the option. */
static int parse_size(const char *opt, const char *s, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mul = 1;

	/* digits with at most one '.': strtod alone would take 1e3, 0x10, inf and " 4k" */
	if (strspn(s, "0123456789.") != strcspn(s, "kKmMgGtTiIbB") || strchr(s, '.') !=
	    strrchr(s, '.')) {
		lerr("bad %s '%s': expected a size such as 4096, 4k or 1m", opt, s);
		return -1;
	}
	errno = 0;
	v = strtod(s, &end);
	if (end != s && *end) {
		switch (*end | 0x20) {
		case 'b': mul = 1; end--; break;	/* "512b": bytes, the b read below */
		case 'k': mul = 1ULL << 10; break;
		case 'm': mul = 1ULL << 20; break;
		case 'g': mul = 1ULL << 30; break;
		case 't': mul = 1ULL << 40; break;
		default: mul = 0;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
	}
	if (errno || end == s || *end || !mul || !isfinite(v) || v <= 0 || v * mul > 1e18 ||
	    v * mul != floor(v * mul)) {
		lerr("bad %s '%s': expected a size such as 4096, 4k or 1m", opt, s);
		return -1;
	}
	*out = (uint64_t)(v * mul);
	return 0;
}

/* "10s", "500ms", "250us", "1000ns", "2" (seconds): nanoseconds. */
static int parse_time(const char *opt, const char *s, uint64_t *out)
{
	if (cli_parse_time(s, false, out)) {
		lerr("bad %s '%s': expected a time such as 10s, 500ms or 250us (digits, then ns, "
		     "us, ms, s or m for minutes)", opt, s);
		return -1;
	}
	return 0;
}

static int parse_num(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (cli_uint(s, min, max, out)) {
		lerr("bad %s '%s': expected an integer from %llu to %llu", opt, s,
		     (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	return 0;
}

static int parse_rw(const char *s)
{
	static const struct { const char *name; bool rand; int pct; } modes[] = {
		{ "read", false, 100 }, { "write", false, 0 }, { "randread", true, 100 },
		{ "randwrite", true, 0 }, { "rw", false, 50 }, { "randrw", true, 50 },
		{ "readwrite", false, 50 },
	};
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s), i;
	uint64_t pct;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strlen(modes[i].name) != n || strncmp(modes[i].name, s, n))
			continue;
		lo.rand = modes[i].rand;
		lo.read_pct = modes[i].pct;
		if (colon) {
			if (modes[i].pct != 50) {
				lerr("bad --rw '%s': only rw and randrw take a read share", s);
				return -1;
			}
			if (parse_num("--rw read share", colon + 1, 0, 100, &pct))
				return -1;
			lo.read_pct = (int)pct;
		}
		return 0;
	}
	lerr("bad --rw '%s': expected read, write, randread, randwrite, rw[:PCT] or "
	     "randrw[:PCT]", s);
	return -1;
}

/*
 * 0 if this process may run on cpu: online, and in its affinity (sched_getaffinity: the
 * active CPUs of its mask, within its cpuset). Else -1, with why in buf. Where the mask cannot
 * be read, 0: a job's own pinning still fails as one line.
 */
static int cpu_allowed(long cpu, char *why, size_t len)
{
	size_t n = 1024, size;
	cpu_set_t *set = NULL;
	char path[64], c = '1';
	int ok = 1;
	FILE *f;

	for (;;) {	/* as big as the kernel's mask: EINVAL when ours is smaller */
		set = CPU_ALLOC(n);
		size = CPU_ALLOC_SIZE(n);
		if (!set)
			return 0;
		if (!sched_getaffinity(0, size, set))
			break;
		CPU_FREE(set);
		if (errno != EINVAL || n >= (1u << 20))
			return 0;
		n *= 2;
	}
	if ((size_t)cpu < n)
		ok = CPU_ISSET_S((size_t)cpu, size, set);
	CPU_FREE(set);
	if (ok)
		return 0;
	/* cpu0 often has no online file: it cannot be taken offline */
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/online", cpu);
	if ((f = fopen(path, "re"))) {
		if (fread(&c, 1, 1, f) != 1)
			c = '1';
		fclose(f);
	}
	snprintf(why, len, c == '0' ? "CPU %ld is offline" : "CPU %ld is not one this process "
		 "may run on (its affinity: taskset, a cpuset)", cpu);
	return -1;
}

static int parse_cpus(const char *s)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	const char *p = s;
	char *end, why[128];
	long a, b;
	int i;

	lo.ncpus = 0;	/* a later --cpus replaces an earlier one, as every option does */
	while (*p) {
		/* digits only (strtol would take "-0" and " 1"), and the list's syntax before the
		 * range: "5x" is not CPU 5 */
		if (!isdigit((unsigned char)*p))
			goto bad;
		a = strtol(p, &end, 10);
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				goto bad;
			b = strtol(p, &end, 10);
		}
		if (*end && *end != ',')
			goto bad;
		if (a < 0 || b < a || b >= ncpu) {
			lerr("bad --cpus '%s': CPUs are 0 to %ld here", s, ncpu - 1);
			return -1;
		}
		for (; a <= b && lo.ncpus < (int)(sizeof(lo.cpus) / sizeof(lo.cpus[0])); a++)
			lo.cpus[lo.ncpus++] = (int)a;
		if (*end == ',' && !end[1])
			goto bad;	/* "0,": a list does not end with a comma */
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	/* each checked now, before a target is made: a job failed to pin itself after the
	 * target was laid out, its error said after the report, and --check said 0 */
	for (i = 0; i < lo.ncpus; i++)
		if (cpu_allowed(lo.cpus[i], why, sizeof(why))) {
			lerr("bad --cpus '%s': %s", s, why);
			return -1;
		}
	if (lo.ncpus)
		return 0;
bad:
	lerr("bad --cpus '%s': expected a list such as 0,2-3", s);
	return -1;
}

static int need(bool cond, const char *what)
{
	if (!cond)
		lerr("%s", what);
	return cond ? 0 : -1;
}

/* 0 ok, 1 done (help/version), -1 usage error */
static int parse_args(int argc, char **argv)
{
	bool eng_uring_opts = false, workers_set = false, engine_set = false;
	char msg[256];
	uint64_t v;
	int c, i;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hV", long_opts, NULL)) != -1) {
		switch (c) {
		case O_ENGINE:
			for (i = 0; i < ENG_N && strcmp(optarg, engine_names[i]); i++)
				;
			if (i == ENG_N) {
				lerr("unknown --engine '%s': psync, libaio, posixaio, io_uring or "
				     "threadpool", optarg);
				return -1;
			}
			lo.engine = (enum engine_id)i;
			engine_set = true;
			break;
		case O_OP:
			for (i = 0; i < 4 && strcmp(optarg, op_names[i]); i++)
				;
			if (i == 4) {
				lerr("unknown --op '%s': rw, nop, timeout or poll", optarg);
				return -1;
			}
			lo.op = (enum op_kind)i;
			break;
		case O_RW: rw_arg = optarg; if (parse_rw(optarg)) return -1; break;
		case O_BS:
			if (parse_size("--bs", optarg, &v) || need(v <= (64 << 20), "--bs is at most 64m"))
				return -1;
			lo.bs = (uint32_t)v;
			break;
		case O_QD:
			if (parse_num("--qd", optarg, 1, MAX_QD, &v))
				return -1;
			lo.qd = (uint32_t)v;
			qd_set = true;
			break;
		case O_JOBS:
			if (parse_num("--jobs", optarg, 1, MAX_JOBS, &v))
				return -1;
			lo.jobs = (int)v;
			break;
		case O_SIZE:
			if (parse_size("--size", optarg, &lo.size))
				return -1;
			size_set = true;
			break;
		case O_RUNTIME:
			if (parse_time("--runtime", optarg, &v))
				return -1;
			lo.runtime_s = (double)v / 1e9;
			runtime_set = true;
			break;
		case O_IOS:
			if (parse_num("--ios", optarg, 1, UINT64_MAX >> 1, &lo.ios))
				return -1;
			break;
		case O_RATE:
			if (parse_num("--rate", optarg, 1, 100000000, &v))
				return -1;
			lo.rate = (double)v;
			break;
		case O_DIRECT: lo.direct = true; break;
		case O_BUFFERED: lo.direct = false; break;
		case O_FSYNC:
			if (parse_num("--fsync-every", optarg, 1, UINT32_MAX, &v))
				return -1;
			lo.fsync_every = (uint32_t)v;
			break;
		case O_FILE:
		case O_DEVICE:
			/* no path at all is a bad option, not a file that cannot be made */
			if (!*optarg) {
				lerr("bad %s '': expected a path", c == O_FILE ? "--file" : "--device");
				return -1;
			}
			*(c == O_FILE ? &lo.file : &lo.device) = optarg;
			break;
		case O_FORCE: lo.force = true; break;
		case O_KEEP: lo.keep = true; break;
		case O_SEED:
			/* any seed, 0 too: it is not the generator's state (see job_rng) */
			if (parse_num("--seed", optarg, 0, UINT64_MAX, &lo.seed))
				return -1;
			break;
		case O_CPUS: if (parse_cpus(optarg)) return -1; break;
		case O_JSON: lo.json = true; break;
		case O_CHECK: lo.check = true; break;
		case O_SQPOLL: lo.sqpoll = eng_uring_opts = true; break;
		case O_IOPOLL: lo.iopoll = eng_uring_opts = true; break;
		case O_SQPOLL_CPU:
			if (parse_num("--sqpoll-cpu", optarg, 0, 4095, &v))
				return -1;
			/* the kernel's EINVAL would not say which value it refused */
			if ((long)v >= sysconf(_SC_NPROCESSORS_CONF)) {
				lerr("bad --sqpoll-cpu '%s': CPUs are 0 to %ld here", optarg,
				     sysconf(_SC_NPROCESSORS_CONF) - 1);
				return -1;
			}
			lo.sqpoll_cpu = (int)v;
			eng_uring_opts = true;
			break;
		case O_FIXED_BUFS: lo.fixed_bufs = eng_uring_opts = true; break;
		case O_FIXED_FILES: lo.fixed_files = eng_uring_opts = true; break;
		case O_ASYNC: lo.force_async = eng_uring_opts = true; break;
		case O_SUBMIT_BATCH:
			if (parse_num("--submit-batch", optarg, 1, MAX_QD, &v))
				return -1;
			lo.submit_batch = (uint32_t)v;
			break;
		case O_COMPLETE_BATCH:
			if (parse_num("--complete-batch", optarg, 1, MAX_QD, &v))
				return -1;
			lo.complete_batch = (uint32_t)v;
			break;
		case O_HOLD_SUBMITS:
			if (parse_num("--hold-submits", optarg, 2, UINT32_MAX, &v))
				return -1;
			lo.hold_submits = (uint32_t)v;
			eng_uring_opts = true;
			break;
		case O_WORKERS:
			if (parse_num("--workers", optarg, 1, 1024, &v))
				return -1;
			lo.workers = (int)v;
			workers_set = true;
			break;
		case O_LATENCY:
			if (parse_time("--latency", optarg, &lo.latency_ns))
				return -1;
			break;
		case O_SPIN: lo.spin = 1; break;
		case O_NO_SPIN: lo.spin = 0; break;
		case O_POLL_TIME:
			if (parse_time("--poll-time", optarg, &lo.poll_ns))
				return -1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		case 'V':
			printf("iostrata-load %s\n", LOAD_VERSION);
			return 1;
		default:	/* ':' or '?' */
			lerr("%s", cli_getopt_problem(c, argv, long_opts, msg, sizeof(msg)));
			return -1;
		}
	}
	if (optind < argc) {
		lerr("unexpected argument '%s' (see --help)", argv[optind]);
		return -1;
	}

	/* a probe runs on one engine only: without --engine, that one; a --engine given that
	 * cannot run it is refused below */
	if (!engine_set && lo.op == OP_POLL)
		lo.engine = ENG_LIBAIO;
	else if (!engine_set && (lo.op == OP_NOP || lo.op == OP_TIMEOUT))
		lo.engine = ENG_IO_URING;

	/* combinations */
	if (need(!(lo.sqpoll_cpu >= 0 && !lo.sqpoll), "--sqpoll-cpu needs --sqpoll") ||
	    need(!eng_uring_opts || lo.engine == ENG_IO_URING,
		 "--sqpoll, --iopoll, --fixed-bufs, --fixed-files, --async and --hold-submits "
		 "are io_uring options") ||
	    need(!(lo.iopoll && (!lo.direct || lo.op != OP_RW)),
		 "--iopoll polls O_DIRECT reads and writes: it needs --direct and no --op") ||
	    need(!lo.poll_ns || lo.engine == ENG_IO_URING, "--poll-time is an io_uring option") ||
	    need(!workers_set || lo.engine == ENG_THREADPOOL, "--workers is a threadpool option") ||
	    need(!(lo.submit_batch || lo.complete_batch) || lo.engine == ENG_IO_URING ||
		 lo.engine == ENG_LIBAIO,
		 "--submit-batch and --complete-batch are io_uring and libaio options") ||
	    need(!((lo.op == OP_NOP || lo.op == OP_TIMEOUT) && lo.engine != ENG_IO_URING),
		 "--op nop and --op timeout need --engine io_uring") ||
	    need(!(lo.op == OP_POLL && lo.engine != ENG_LIBAIO), "--op poll needs --engine libaio") ||
	    need(!((lo.op == OP_TIMEOUT || lo.op == OP_POLL) && !lo.latency_ns),
		 "--op timeout and --op poll need --latency") ||
	    need(!(lo.latency_ns && lo.op != OP_TIMEOUT && lo.op != OP_POLL),
		 "--latency is for --op timeout or --op poll") ||
	    need(!(lo.file && lo.device), "--file and --device are exclusive") ||
	    need(!(lo.op != OP_RW && (lo.file || lo.device)), "probes (--op) use no file") ||
	    need(!(lo.engine == ENG_PSYNC && qd_set && lo.qd > 1),
		 "psync is synchronous: one I/O at a time per job (use --jobs for more)") ||
	    need(!((lo.fixed_bufs || lo.fixed_files || lo.force_async || lo.fsync_every) &&
		   lo.op != OP_RW),
		 "--fixed-bufs, --fixed-files, --async and --fsync-every are for reads and writes, "
		 "not --op probes"))
		return -1;
	if (lo.spin < 0)	/* probes time the event, not the scheduler's wake-up */
		lo.spin = lo.op == OP_TIMEOUT || lo.op == OP_POLL;
	/* the kernel's IORING_MAX_ENTRIES: refused before any buffer is made */
	if (need(!(lo.engine == ENG_IO_URING && lo.qd > 32768),
		 "--qd is at most 32768 with io_uring (the kernel's ring limit)") ||
	    need(!(lo.fixed_bufs && lo.qd > 16384),
		 "--qd is at most 16384 with --fixed-bufs (a buffer registered per I/O in flight: "
		 "the kernel's IORING_MAX_REG_BUFFERS)"))
		return -1;
	if (need(!(lo.spin && lo.engine != ENG_IO_URING && lo.engine != ENG_LIBAIO),
		 "--spin is an io_uring and libaio option"))
		return -1;
	if (!qd_set)
		lo.qd = lo.engine == ENG_PSYNC || lo.op == OP_POLL || lo.op == OP_TIMEOUT ? 1 : 32;
	if (lo.op == OP_POLL && lo.qd != 1)
		return need(false, "--op poll runs one probe at a time (--qd 1)");
	if (lo.op == OP_RW && lo.direct && lo.bs % 512) {
		lerr("--bs %u is not a multiple of 512, which O_DIRECT needs (or use --buffered)",
		     lo.bs);
		return -1;
	}
	/* every written block starts with its header: a smaller block would overrun its buffer */
	if (lo.op == OP_RW && lo.read_pct < 100 && lo.bs < sizeof(struct verify_hdr)) {
		lerr("--bs %u is too small for writes: each written block starts with a %zu-byte "
		     "header", lo.bs, sizeof(struct verify_hdr));
		return -1;
	}
	if (size_set && lo.size < lo.bs)
		return need(false, "--size is smaller than --bs");
	if (!runtime_set && !lo.ios)
		lo.runtime_s = 10;
	return 0;
}

/* ---- report ---- */

struct totals {
	struct dir_stats d[NDIRS];
	uint64_t fsyncs;
	uint64_t runtime_ns;
	double usr_s, sys_s;
	long ctx;
};

static void hist_add_all(struct hist *dst, const struct hist *src)
{
	hist_merge(dst, src);
}

static void sum_dirs(struct dir_stats *dst, const struct dir_stats *src)
{
	int k;

	for (k = 0; k < NDIRS; k++) {
		dst[k].ios += src[k].ios;
		dst[k].bytes += src[k].bytes;
		dst[k].errors += src[k].errors;
		dst[k].short_ios += src[k].short_ios;
		hist_add_all(&dst[k].lat, &src[k].lat);
		hist_add_all(&dst[k].slat, &src[k].slat);
		hist_add_all(&dst[k].clat, &src[k].clat);
		hist_add_all(&dst[k].reap_bound, &src[k].reap_bound);
	}
}

static double tv_s(struct timeval a, struct timeval b)
{
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_usec - a.tv_usec) / 1e6;
}

/* fio's default percentile list, in parts per million */
static const uint32_t pcts[] = { 10000, 50000, 100000, 200000, 300000, 400000, 500000, 600000,
				 700000, 800000, 900000, 950000, 990000, 995000, 999000, 999500,
				 999900 };

static void stats_json(struct jw *w, const char *key, const struct hist *h, bool buckets)
{
	char name[32];
	uint64_t v;
	uint32_t i;

	jw_obj(w, key);
	jw_u64(w, "min", h->count ? h->min_ns : 0);
	jw_u64(w, "max", h->max_ns);
	jw_u64(w, "mean", h->count ? h->sum_ns / h->count : 0);
	jw_u64(w, "N", h->count);
	jw_u64(w, "sum", h->sum_ns);
	if (h->count) {
		jw_obj(w, "percentile");
		for (i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
			snprintf(name, sizeof(name), "%f", pcts[i] / 10000.0);
			if (hist_percentile(h, pcts[i], &v))
				jw_u64(w, name, v);
		}
		jw_end_obj(w);
	}
	if (buckets)
		jw_hist_buckets(w, "buckets", h);
	jw_end_obj(w);
}

static void dir_json(struct jw *w, const char *key, const struct dir_stats *d, uint64_t ns)
{
	double secs = ns / 1e9;

	jw_obj(w, key);
	jw_u64(w, "io_bytes", d->bytes);
	jw_u64(w, "io_kbytes", d->bytes >> 10);
	jw_u64(w, "bw_bytes", secs > 0 ? (uint64_t)(d->bytes / secs) : 0);
	jw_u64(w, "bw", secs > 0 ? (uint64_t)(d->bytes / secs / 1024) : 0);
	jw_u64(w, "iops", secs > 0 ? (uint64_t)llround(d->ios / secs) : 0);
	jw_u64(w, "runtime", ns / 1000000);
	jw_u64(w, "total_ios", d->ios);
	jw_u64(w, "short_ios", d->short_ios);
	jw_u64(w, "drop_ios", 0);
	jw_u64(w, "errors", d->errors);
	stats_json(w, "slat_ns", &d->slat, false);
	stats_json(w, "clat_ns", &d->clat, false);
	stats_json(w, "lat_ns", &d->lat, true);
	if (d->reap_bound.count)
		stats_json(w, "reap_bound_ns", &d->reap_bound, false);
	jw_end_obj(w);
}

/* fio's "sync" object, its count only: the fsyncs --fsync-every issued */
static void sync_json(struct jw *w, uint64_t fsyncs)
{
	if (lo.op != OP_RW)
		return;
	jw_obj(w, "sync");
	jw_u64(w, "total_ios", fsyncs);
	jw_end_obj(w);
}

static const char *dir_name(int k)
{
	return lo.op != OP_RW ? op_names[lo.op] : k == DIR_READ ? "read" : "write";
}

static void report_json(const struct totals *t, bool interrupted)
{
	const char *rwname = lo.op == OP_RW ? rw_arg : op_names[lo.op];
	uint64_t ios = t->d[0].ios + t->d[1].ios;
	struct jw w;
	int i;

	jw_init(&w);
	jw_obj(&w, NULL);
	jw_str(&w, "iostrata-load version", LOAD_VERSION);
	jw_u64(&w, "timestamp", (uint64_t)time(NULL));
	jw_bool(&w, "interrupted", interrupted);
	jw_obj(&w, "global options");
	jw_str(&w, "ioengine", engine_names[lo.engine]);
	jw_str(&w, "rw", rwname);
	jw_u64(&w, "rwmixread", (uint64_t)lo.read_pct);
	jw_u64(&w, "bs", lo.bs);
	jw_u64(&w, "iodepth", lo.qd);
	jw_u64(&w, "numjobs", (uint64_t)lo.jobs);
	jw_u64(&w, "size", lo.size);
	jw_u64(&w, "direct", lo.direct);
	jw_str(&w, "filename", target_describe());
	if (lo.ios)
		jw_u64(&w, "number_ios", lo.ios);
	if (lo.latency_ns)
		jw_u64(&w, "latency_ns", lo.latency_ns);
	jw_bool(&w, "sqthread_poll", lo.sqpoll);
	jw_bool(&w, "fixedbufs", lo.fixed_bufs);
	jw_bool(&w, "registerfiles", lo.fixed_files);
	jw_end_obj(&w);
	jw_arr(&w, "jobs");
	for (i = 0; i < lo.jobs; i++) {
		const struct job *j = &jobs[i];
		uint64_t ns = j->end_ns - j->start_ns;
		char name[32];

		snprintf(name, sizeof(name), "job%d", i);
		jw_obj(&w, NULL);
		jw_str(&w, "jobname", name);
		jw_u64(&w, "error", (uint64_t)j->err);
		if (j->err)
			jw_str(&w, "error_message", j->errmsg);
		jw_u64(&w, "job_runtime", ns / 1000000);
		dir_json(&w, lo.op != OP_RW ? op_names[lo.op] : "read", &j->d[DIR_READ], ns);
		if (lo.op == OP_RW)
			dir_json(&w, "write", &j->d[DIR_WRITE], ns);
		sync_json(&w, j->fsyncs);
		jw_i64(&w, "usr_cpu_ns", (int64_t)(tv_s(j->ru0.ru_utime, j->ru1.ru_utime) * 1e9));
		jw_i64(&w, "sys_cpu_ns", (int64_t)(tv_s(j->ru0.ru_stime, j->ru1.ru_stime) * 1e9));
		jw_i64(&w, "ctx", (j->ru1.ru_nvcsw - j->ru0.ru_nvcsw) +
				  (j->ru1.ru_nivcsw - j->ru0.ru_nivcsw));
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_obj(&w, "total");
	jw_u64(&w, "runtime", t->runtime_ns / 1000000);
	dir_json(&w, lo.op != OP_RW ? op_names[lo.op] : "read", &t->d[DIR_READ], t->runtime_ns);
	if (lo.op == OP_RW)
		dir_json(&w, "write", &t->d[DIR_WRITE], t->runtime_ns);
	sync_json(&w, t->fsyncs);
	jw_end_obj(&w);
	jw_obj(&w, "cpu");
	jw_u64(&w, "usr_ns", (uint64_t)(t->usr_s * 1e9));
	jw_u64(&w, "sys_ns", (uint64_t)(t->sys_s * 1e9));
	jw_u64(&w, "ctx", (uint64_t)t->ctx);
	jw_u64(&w, "cpu_ns_per_io", ios ? (uint64_t)((t->usr_s + t->sys_s) * 1e9 / ios) : 0);
	jw_bool(&w, "helper_threads_included", true);
	jw_end_obj(&w);
	jw_end_obj(&w);
	jw_flush_line(&w, stdout);
	jw_free(&w);
}

static void row_tp(const char *who, int k, const struct dir_stats *d, uint64_t ns)
{
	double secs = ns / 1e9;

	printf("%-5s %-7s %11" PRIu64 " %10.0f %9.1f %5" PRIu64 " %6" PRIu64 "\n", who,
	       dir_name(k), d->ios, secs > 0 ? d->ios / secs : 0,
	       secs > 0 ? d->bytes / secs / (1 << 20) : 0, d->errors, d->short_ios);
}

static void row_lat(const char *who, const char *what, const struct hist *h)
{
	static const uint32_t p[] = { 500000, 900000, 990000, 999000, 999900 };
	char v[8][16];
	uint64_t x;
	int i;

	if (!h->count)
		return;
	fmt_ns(v[0], sizeof(v[0]), h->min_ns, false);
	fmt_ns(v[1], sizeof(v[1]), h->sum_ns / h->count, false);
	for (i = 0; i < 5; i++) {
		hist_percentile(h, p[i], &x);
		fmt_ns(v[2 + i], sizeof(v[2 + i]), x, false);
	}
	fmt_ns(v[7], sizeof(v[7]), h->max_ns, false);
	printf("%-5s %-9s %7s %7s %7s %7s %7s %7s %7s %7s\n", who, what, v[0], v[1], v[2], v[3],
	       v[4], v[5], v[6], v[7]);
}

static void report_text(const struct totals *t, bool interrupted)
{
	uint64_t ios = t->d[0].ios + t->d[1].ios;
	char who[16], what[24];
	int i, k;

	printf("%s%s, %s, bs %u, qd %u, %d job%s; ", interrupted ? "INTERRUPTED: " : "",
	       engine_names[lo.engine], lo.op == OP_RW ? rw_arg : op_names[lo.op], lo.bs, lo.qd,
	       lo.jobs, lo.jobs > 1 ? "s" : "");
	/* a name as given: a newline in it split this line, an escape sequence drove the
	 * terminal; escaped, it stays one line and can be read back (--keep's file) */
	cli_put_escaped(stdout, target_describe());
	printf("%s\n", lo.op == OP_RW ? (lo.direct ? ", O_DIRECT" : ", buffered") : "");
	printf("%-5s %-7s %11s %10s %9s %5s %6s\n", "JOB", "DIR", "IOS", "IOPS", "MiB/s", "ERR",
	       "SHORT");
	for (i = 0; i < lo.jobs && lo.jobs > 1; i++)
		for (k = 0; k < NDIRS; k++)
			if (jobs[i].d[k].ios) {
				snprintf(who, sizeof(who), "%d", i);
				row_tp(who, k, &jobs[i].d[k], jobs[i].end_ns - jobs[i].start_ns);
			}
	for (k = 0; k < NDIRS; k++)
		if (t->d[k].ios || k == DIR_READ)
			row_tp("all", k, &t->d[k], t->runtime_ns);
	printf("\n%-5s %-9s %7s %7s %7s %7s %7s %7s %7s %7s\n", "JOB", "LATENCY", "MIN", "MEAN",
	       "P50", "P90", "P99", "P99.9", "P99.99", "MAX");
	for (k = 0; k < NDIRS; k++) {
		snprintf(what, sizeof(what), "%s", dir_name(k));
		row_lat("all", what, &t->d[k].lat);
		snprintf(what, sizeof(what), "%.5s slat", dir_name(k));
		row_lat("all", what, &t->d[k].slat);
	}
	if (lo.fsync_every)
		printf("\nfsync: %" PRIu64 " issued, one after every %u writes completed\n",
		       t->fsyncs, lo.fsync_every);
	printf("\ncpu: user %.2fs, system %.2fs (every thread, helpers included): %.2f us per I/O; "
	       "%ld context switches\n", t->usr_s, t->sys_s,
	       ios ? (t->usr_s + t->sys_s) * 1e6 / ios : 0.0, t->ctx);
	for (i = 0; i < lo.jobs; i++)
		if (jobs[i].err)
			printf("job %d stopped: %s\n", i, jobs[i].errmsg);
}

/* ---- main ---- */

/*
 * --jobs x --qd x --bs bytes of buffers, each filled by its job: no more than the memory
 * available (MemAvailable; the machine's RAM where it is not said). 0, or -1 said.
 */
static int buffers_fit(void)
{
	uint64_t need = (uint64_t)lo.jobs * lo.qd * lo.bs, avail = 0, kib;
	struct sysinfo si;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1) {
			avail = kib << 10;
			break;
		}
	if (f)
		fclose(f);
	if (!avail && !sysinfo(&si))
		avail = (uint64_t)si.totalram * si.mem_unit;
	if (avail && need > avail) {
		lerr("--jobs %d x --qd %u x --bs %u is %" PRIu64 " bytes of buffers, more than the "
		     "memory available (MemAvailable in /proc/meminfo)", lo.jobs, lo.qd, lo.bs,
		     need);
		return -1;
	}
	return 0;
}

/* A signal ended the issuing: the run stopped before its --runtime was up (load_stop unset). */
static atomic_bool signal_stopped;

static void on_signal(int sig)
{
	if (!atomic_exchange(&load_stop, true))
		atomic_store(&signal_stopped, true);
	if (atomic_exchange(&load_signalled, true)) {
		/* a second signal: leave now, but never leave our files behind */
		target_cleanup();
		_exit(130);
	}
}

static char out_buf[1 << 16];

static void progress(uint64_t start, uint64_t last_done, uint64_t *prev_t, uint64_t *prev_n)
{
	uint64_t t = now_ns(), n = 0, p99 = 0;
	struct hist *h = calloc(1, sizeof(*h));
	char buf[16];
	int i, k;

	if (!h)
		return;
	for (i = 0; i < lo.jobs; i++) {
		n += atomic_load_explicit(&jobs[i].done, memory_order_relaxed);
		for (k = 0; k < NDIRS; k++)	/* racy reads: good enough for a progress line */
			hist_merge(h, &jobs[i].d[k].lat);
	}
	hist_percentile(h, 990000, &p99);
	fprintf(stdout, "\r%6.1fs  %10.0f IOPS  p99 %-8s", (t - start) / 1e9,
		t > *prev_t ? (n - *prev_n) * 1e9 / (t - *prev_t) : 0.0,
		fmt_ns(buf, sizeof(buf), p99, false));
	fflush(stdout);
	*prev_t = t;
	*prev_n = n;
	free(h);
	(void)last_done;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct rusage ru0, ru1;
	struct totals t = { 0 };
	uint64_t start, end, deadline, prev_t, prev_n = 0;
	bool tty, interrupted, out_closed = false;
	int i, r, started = 0, rc = 0;

	if (std_fds_hold(&out_closed))
		return 1;
	/* the help or report whole in the buffer: its write error is the final flush's */
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
	/* --check says its error as a line of text, whatever else is given (sched-ab reads it) */
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			lo.json = true;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--check"))
			errors_as_text = true;
	r = parse_args(argc, argv);
	if (r > 0 && (fflush(stdout) || out_closed)) {	/* --help, --version: all, or an error */
		lerr("writing the output: %s", strerror(out_closed ? EBADF : errno));
		return 1;
	}
	if (r)
		return r > 0 ? 0 : 2;
	/*
	 * Each signal whose default ends the process stops the load, which removes what it made
	 * (stopsig.h: SIGUSR1 or SIGALRM left to the default ended it with a half laid out file
	 * left behind); but one the load was started ignoring stays ignored (nohup; a shell's
	 * background job ignores SIGQUIT), SIGINT and SIGTERM apart.
	 */
	if (!lo.check) {
		stop_signals_catch(&sa);
		signal(SIGPIPE, SIG_IGN);
	}
	/*
	 * The jobs' buffers, before any target is made (--check too): had one by one, buffers
	 * past the memory there is were filled by the jobs until the OOM killer ended the load,
	 * its file left behind; one too big for an allocation failed after a file's lay-out.
	 */
	if (buffers_fit())
		return 1;
	jobs = calloc((size_t)lo.jobs, sizeof(*jobs));
	if (!jobs) {
		lerr("out of memory");
		return 1;
	}
	for (i = 0; i < lo.jobs; i++)	/* a job never set up closes nothing at the end (not stdin) */
		jobs[i].fd = -1;
	for (i = 0; i < lo.jobs; i++)
		if (posix_memalign(&jobs[i].buf_mem, 4096, (size_t)lo.qd * lo.bs)) {
			jobs[i].buf_mem = NULL;
			lerr("out of memory for %u buffers of %u bytes", lo.qd, lo.bs);
			rc = 1;
			goto out;
		}
	/* --check: its exit as a run's would be, up to the point a run makes or writes anything */
	r = lo.check ? target_check() : target_open();
	if (r) {
		rc = r == -2 ? 2 : 1;
		goto out;
	}
	if (lo.op == OP_RW && lo.size < lo.bs) {
		lerr("the target (%llu bytes) is smaller than --bs", (unsigned long long)lo.size);
		rc = 1;
		goto out;
	}
	if (lo.check) {	/* and a job's open of it: O_DIRECT, the permission to write */
		rc = target_check_open() ? 1 : 0;
		goto out;
	}
	for (i = 0; i < lo.jobs; i++) {
		struct job *j = &jobs[i];

		j->id = i;
		j->rng = job_rng(lo.seed, i);
		j->region_len = lo.size / lo.bs * lo.bs;
		j->fd = target_fd_for_job();
		if (j->fd == -2) {
			rc = 1;
			goto out;
		}
	}

	tty = isatty(STDOUT_FILENO) && !lo.json;
	getrusage(RUSAGE_SELF, &ru0);
	start = prev_t = now_ns();
	for (i = 0; i < lo.jobs; i++, started++)
		if (pthread_create(&jobs[i].thread, NULL, job_thread, &jobs[i])) {
			lerr("cannot start job thread %d", i);
			atomic_store(&load_stop, true);
			rc = 1;
			break;
		}
	/*
	 * --runtime counts from when the jobs are ready to issue (the last one's start: a thread
	 * filling 2 GiB of buffers takes a while), and ends when it is up, not at the next tick
	 * after it: a 150 ms run lasted 200 ms, a 1 ms one 100 ms.
	 */
	deadline = 0;
	for (;;) {
		uint64_t n = 0, now, last_start = 0;
		struct timespec tick = { 0, 100 * 1000 * 1000 };
		bool all_done = true, all_started = true;

		for (i = 0; i < started; i++) {
			n += atomic_load_explicit(&jobs[i].done, memory_order_relaxed);
			all_done &= jobs[i].end_ns != 0;
			all_started &= jobs[i].start_ns != 0;
			if (jobs[i].start_ns > last_start)
				last_start = jobs[i].start_ns;
		}
		if (all_done)
			break;
		if (lo.runtime_s && !deadline && all_started) {
			deadline = last_start + (uint64_t)(lo.runtime_s * 1e9);
			atomic_store(&load_deadline, deadline);
		}
		now = now_ns();
		if (lo.runtime_s && !deadline)
			tick = ts_of_ns(1000000);	/* the jobs are getting ready */
		else if (deadline && !atomic_load(&load_stop))
			tick = ts_of_ns(deadline <= now ? 0 : deadline - now < 100000000ULL ?
					deadline - now : 100000000ULL);
		nanosleep(&tick, NULL);
		now = now_ns();
		if (deadline && now >= deadline)
			atomic_store(&load_stop, true);
		if (tty && now - prev_t >= 1000000000ULL)
			progress(start, n, &prev_t, &prev_n);
	}
	for (i = 0; i < started; i++)
		pthread_join(jobs[i].thread, NULL);
	end = now_ns();
	getrusage(RUSAGE_SELF, &ru1);
	if (tty)
		printf("\r%60s\r", "");
	/*
	 * Cut short: a signal stopped the issuing before --runtime was up, and, with --ios, before
	 * every I/O had completed. A signal after either (the last TIMEOUTs of a run, in flight, are
	 * waited for) leaves a whole run: not said to be interrupted.
	 */
	interrupted = atomic_load(&signal_stopped);
	if (interrupted && lo.ios) {
		/* each job against its own --ios: --ios times --jobs may not fit in 64 bits */
		interrupted = started < lo.jobs;
		for (i = 0; i < started; i++)
			if (atomic_load_explicit(&jobs[i].done, memory_order_relaxed) < lo.ios)
				interrupted = true;
	}

	t.runtime_ns = 0;
	for (i = 0; i < started; i++) {
		sum_dirs(t.d, jobs[i].d);
		t.fsyncs += jobs[i].fsyncs;
		if (jobs[i].end_ns - jobs[i].start_ns > t.runtime_ns)
			t.runtime_ns = jobs[i].end_ns - jobs[i].start_ns;
		if (jobs[i].err)
			rc = 1;
	}
	t.usr_s = tv_s(ru0.ru_utime, ru1.ru_utime);
	t.sys_s = tv_s(ru0.ru_stime, ru1.ru_stime);
	t.ctx = (ru1.ru_nvcsw - ru0.ru_nvcsw) + (ru1.ru_nivcsw - ru0.ru_nivcsw);
	(void)end;
	if (lo.json)
		report_json(&t, interrupted);
	else
		report_text(&t, interrupted);
	/*
	 * The report is the whole output: one that did not get out is an error. One line: a
	 * job's error, the first cause, is said before (and instead of) the report's.
	 */
	for (i = 0; i < started; i++)
		if (jobs[i].err) {
			lerr("job %d: %s", i, jobs[i].errmsg);
			break;
		}
	if (fflush(stdout) || ferror(stdout) || out_closed) {
		if (i == started)
			lerr("writing the report: %s",
			     strerror(out_closed ? EBADF : errno ? errno : EIO));
		rc = 1;
	}
out:
	for (i = 0; i < lo.jobs; i++) {
		if (jobs[i].fd >= 0)
			close(jobs[i].fd);
		free(jobs[i].buf_mem);
	}
	free(jobs);
	target_cleanup();
	return rc;
}
