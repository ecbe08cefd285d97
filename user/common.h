/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Options and diagnostics shared by iostrata's user-space files. */
#ifndef IOSTRATA_COMMON_H
#define IOSTRATA_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <signal.h>
#include <time.h>

#define MAX_FAIL_TPS 8

struct opts {
	bool json;		/* -j: NDJSON on stdout, errors as JSON on stderr */
	bool per_disk;		/* -D */
	bool per_op;		/* -F */
	bool per_process;	/* -P */
	bool per_opcode;	/* -O: io_uring opcode / aio command */
	bool waterfall;		/* -W: the terminal view as a waterfall of stages */
	const char *comm;	/* --comm: only threads with this comm */
	unsigned int layers;	/* -l: bit per layer; 0 = every available one */
	bool ms;		/* -m */
	bool timestamps;	/* -T */
	int verbose;		/* -v */
	double interval_s;	/* [interval] */
	long count;		/* [count], 0 = unlimited */
	double duration_s;	/* --duration, 0 = unlimited */
	const char *disk;	/* -d */
	uint32_t dev;		/* -d resolved (kernel dev_t) */
	pid_t tgid;		/* -p resolved to its process */
	const char *cgroup;	/* -c */
	uint32_t inflight_slots;	/* --inflight: slots of the bio/request and the io_uring/aio tables */
	const char *fail_tp[MAX_FAIL_TPS];	/* --fail-probe: act as if the kernel lacked it */
	int nfail_tp;
	bool force_raw_tp;	/* --force-raw-tp: testing: the raw_tp twins only */
};

extern struct opts opts;

/* While set, errorf() speaks only under -v: an optional layer that cannot start is skipped. */
extern bool errors_muted;
extern char muted_error[512];		/* the first error said while muted */
extern volatile sig_atomic_t exiting;	/* SIGINT or SIGTERM seen */

/* One line on stderr: "iostrata: error: ..." or {"type":"error","message":...} under -j. */
void errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Diagnostics shown under -v only. */
void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The kernel's memlock figure for a BPF map fd (its /proc/self/fdinfo). */
uint64_t map_memlock(int fd);

/* clock_gettime(clk) in nanoseconds. */
uint64_t clock_ns(clockid_t clk);

/* Which tracepoints the kernel offers, from BTF (user/sysinfo.c). */
struct btf;
struct btf *vmlinux_btf(void);
/* Number of arguments of tracepoint `tp` (without the hidden context), -1 when absent. */
int tp_nargs(const char *tp);
/* Is argument i (from 0) of tracepoint tp a pointer to struct `name`, by the kernel's BTF? */
bool tp_arg_is_struct_ptr(const char *tp, int i, const char *name);
bool tp_forced_missing(const char *tp);

/* REQ_OP_* and request-flag names as this kernel numbers them. */
const char *op_name(unsigned int op, char *buf, size_t len);
uint32_t req_flags_mask(void);
const char *req_flags_str(uint32_t flags, char *buf, size_t len);

/* The lower-case name of value val of a BTF enum, without prefix ("read" for IORING_OP_READ). */
const char *btf_enum_name(const char *enum_type, const char *prefix, unsigned int val,
			  char *buf, size_t len);
/* /proc/PID/comm, or "?" once the process has gone. */
const char *process_comm(uint32_t pid, char *buf, size_t len);

/* Mount tracefs (for classic tracepoints) if the host has not; true when syscall events are
 * visible after. *mounted tells the caller to unmount it when done. */
bool tracefs_ready(bool *mounted);

/* Disks: name <-> kernel dev_t (major << 20 | minor). */
int disk_resolve(const char *name, uint32_t *dev);
const char *disk_name(uint32_t dev, char *buf, size_t len);

#endif
