/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * iostrata-load: known I/O through every Linux interface, timed by its own clock with the same
 * histogram as the tracer (bpf/hist.h).
 */
#ifndef IOSTRATA_LOAD_H
#define IOSTRATA_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include "hist.h"

#define LOAD_VERSION	"0.1.0"
#define MAX_JOBS	256
#define MAX_QD		65536
#define VERIFY_MAGIC	0x31444c5254534f49ULL	/* "IOSTRLD1" little-endian */

enum engine_id { ENG_PSYNC, ENG_LIBAIO, ENG_POSIXAIO, ENG_IO_URING, ENG_THREADPOOL, ENG_N };
enum op_kind { OP_RW, OP_NOP, OP_TIMEOUT, OP_POLL };
enum dir { DIR_READ, DIR_WRITE, NDIRS };

struct lopts {
	enum engine_id engine;
	enum op_kind op;
	bool rand;		/* random offsets */
	int read_pct;		/* 100 = reads only, 0 = writes only */
	uint32_t bs;
	uint32_t qd;
	int jobs;
	uint64_t size;		/* bytes of the file/device region used */
	double runtime_s;	/* 0 = until --ios */
	uint64_t ios;		/* per job; 0 = until --runtime */
	double rate;		/* IOPS per job; 0 = unlimited */
	bool direct;
	uint32_t fsync_every;
	const char *file;
	const char *device;
	uint64_t seed;
	bool json;
	bool check;	/* --check: the options checked, nothing run */
	bool force;
	bool keep;
	int cpus[256];
	int ncpus;
	uint64_t latency_ns;	/* --latency for the timeout and poll probes */
	int spin;		/* busy-poll for completions (io_uring, libaio); -1 = unset */
	uint64_t poll_ns;	/* busy-poll this long before sleeping for a completion */
	/* io_uring */
	bool sqpoll;
	bool iopoll;		/* IORING_SETUP_IOPOLL: needs a device with poll queues */
	int sqpoll_cpu;		/* -1 = kernel's choice */
	bool fixed_bufs;
	bool fixed_files;
	bool force_async;	/* --async: IOSQE_ASYNC on every read/write SQE */
	uint32_t submit_batch;	/* SQEs/iocbs per submit call; 0 = as many as free */
	uint32_t complete_batch;	/* completions to wait for; 0 = 1 */
	uint32_t hold_submits;	/* testing: every Nth submit is refused as -EAGAIN; 0 = none */
	/* threadpool */
	int workers;
};

extern struct lopts lo;
extern atomic_bool load_stop;	/* set by SIGINT/SIGTERM or the runtime limit */

/* Per direction: counts, and three histograms: lat = slat + clat as the application sees it. */
struct dir_stats {
	uint64_t ios;		/* completed, errors included */
	uint64_t bytes;
	uint64_t errors;
	uint64_t short_ios;
	struct hist lat;	/* prepared -> completion reaped */
	struct hist slat;	/* prepared -> submit call returned (async engines) */
	struct hist clat;	/* submit call returned -> completion reaped */
	/*
	 * io_uring: prepared -> the first submit after its reap that the kernel took an SQE of.
	 * A reap is a store to the CQ head in our memory; a tracer sees it at the ring's next
	 * event, at the latest that submit: its per-request time is at least about lat and at
	 * most about this (about: the tracer's clock runs inside the submit calls, ours before
	 * them).
	 */
	struct hist reap_bound;
};

struct job {
	int id;
	pthread_t thread;
	int fd;
	uint64_t region_len;	/* bytes of the target this job uses (a multiple of bs) */
	uint64_t seq;		/* I/Os prepared so far */
	uint64_t next_off;	/* sequential cursor */
	uint64_t rng;
	uint64_t writes_since_fsync;
	uint64_t fsyncs;	/* --fsync-every: fsyncs issued (and returned 0) */
	struct dir_stats d[NDIRS];
	atomic_uint_fast64_t done;	/* completions, for the progress line */
	uint64_t start_ns, end_ns;
	struct rusage ru0, ru1;	/* this thread's own usage */
	uint64_t next_due_ns;	/* --rate */
	int err;		/* first fatal error (errno) */
	char errmsg[200];
	void *buf_mem;		/* qd buffers of bs bytes, page aligned */
};

/* One I/O in flight. */
struct io {
	uint32_t idx;
	enum dir dir;
	uint64_t off;
	void *buf;
	uint64_t t_prep, t_sub;
};

/* One line on stderr ("iostrata-load: error: ..." or JSON with --json). */
void lerr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t now_ns(void);

/* ns as a struct timespec (a relative timeout, or an absolute time on a clock) */
static inline struct timespec ts_of_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };

	return ts;
}

/* Job helpers (main.c): every engine prepares and completes I/Os through these. */
bool job_more(struct job *j);			/* is another I/O to be prepared now? */
uint64_t job_pace(const struct job *j);		/* --rate: ns until the next is due, else 0 */
/* Nothing in flight under --rate and the job not over: sleep until the next I/O is due (if it
 * is not already), true; false when the job is over. */
bool job_idle(struct job *j);
void job_prep(struct job *j, struct io *io);	/* pick dir/offset, stamp the buffer, t_prep */
void job_done(struct job *j, struct io *io, long res, uint64_t t_done);
int job_fsync_due(struct job *j);		/* fsync if --fsync-every says so; -errno */
void job_fail(struct job *j, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Engines (engines.c): run the job to its end; 0 or -errno (with job_fail called). */
int run_psync(struct job *j);
int run_libaio(struct job *j);
int run_posixaio(struct job *j);
int run_uring(struct job *j);
int run_threadpool(struct job *j);

/* Targets (target.c): open or create the file/device every job uses. */
/*
 * Started with stdin, stdout or stderr closed: /dev/null takes the fd, else the target file,
 * the first thing opened, would get it (and the report with it); *out_closed says stdout was
 * (said at the end). 0, or -1.
 */
int std_fds_hold(bool *out_closed);
/* opens (and lays out) the target: 0; -1 (it cannot be), -2 (a bad option for it: exit 2),
 * with a one-line error */
int target_check(void);
int target_open(void);
int target_fd_for_job(void);	/* a descriptor for one job */
/* --check: a job's open of the checked target tried, and closed: 0, or -1 said */
int target_check_open(void);
void target_cleanup(void);	/* removes what we created; safe from a signal path */
const char *target_describe(void);

#endif
