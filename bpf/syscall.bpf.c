// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata syscall layer: how long the read/write family, the fsync family and the aio and
 * io_uring entry points take, per syscall and (with -P) per process.
 *
 *   duration   syscalls:sys_enter_<name> -> syscalls:sys_exit_<name>, same thread
 *
 * Per-syscall tracepoints (classic, through tracefs) fire only for these syscalls, where the
 * raw sys_enter/sys_exit would run for every syscall on the host. Threads are attributed to
 * their process (tgid): glibc's POSIX aio helper threads count under the process that queued
 * the requests.
 *
 * The fd-taking syscalls (the read/write family, fsync, fdatasync, sync_file_range) are timed
 * only on regular files and block devices: at entry the fd is looked up in the calling task's
 * fd table (task->files->fdt->fd[fd]->f_inode->i_mode, CO-RE reads) and the call is skipped
 * unless S_ISREG or S_ISBLK, so pipes, sockets, ttys and other character devices are not
 * counted. A call whose fd cannot be resolved (out of the table, not open, unreadable) is
 * skipped too and not counted anywhere. io_submit, io_getevents, io_pgetevents and
 * io_uring_enter are not filtered.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iostrata.h"
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool filter_comm;
const volatile char comm_filter[16];
const volatile bool per_process;
/* Neither -P nor -C, and sc_total fits the histogram budget: (generation, syscall) a slot */
const volatile bool sc_flat = true;

/*
 * Entry time by thread, in the thread's own storage: a thread is in at most one syscall at a
 * time, its slot is found from the task without hashing, and it goes away with the thread.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct syscall_start);
} sc_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	/* preallocated: see hist_map_keys() in user/layer.c */
	__uint(max_entries, 64);		/* resized by the loader */
	__type(key, struct syscall_key);
	__type(value, struct hist);
} sc_hists SEC(".maps");
HIST_SPILL_MAPS(sc, struct syscall_key, struct hist);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hist);
} sc_zero SEC(".maps");

/*
 * Without -P and -C the key is only (generation, syscall): an array indexed by gen * SC_N + sc,
 * whose lookup the JIT inlines, where the hash lookup cost ~40 ns per exit. The loader shrinks
 * it to one entry where sc_hists is used instead: with -P or -C, and on hosts with so many CPUs
 * that the array's per-CPU copies would pass the budget every histogram map keeps to
 * (hist_map_keys() in user/layer.c; from 231 CPUs).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * SC_N);
	__type(key, __u32);
	__type(value, struct hist);
} sc_total SEC(".maps");

static __always_inline bool comm_matches(void)
{
	char comm[16];
	int i;

	bpf_get_current_comm(comm, sizeof(comm));
	for (i = 0; i < 16; i++) {
		if (comm[i] != comm_filter[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* Does sc take an fd as its first argument? sc is a constant in each program: this folds. */
static __always_inline bool takes_fd(__u32 sc)
{
	switch (sc) {
	case SC_read: case SC_pread64: case SC_readv: case SC_preadv: case SC_preadv2:
	case SC_write: case SC_pwrite64: case SC_writev: case SC_pwritev: case SC_pwritev2:
	case SC_fsync: case SC_fdatasync: case SC_sync_file_range:
		return true;
	default:
		return false;
	}
}

/*
 * Is fd, in the current task, a regular file or a block device? False when it cannot be
 * resolved: no file, or mode 0, is neither.
 */
static __always_inline bool fd_is_file_or_bdev(unsigned int fd)
{
	struct file *file = fd_file(fd);
	struct inode *ino;
	umode_t mode;

	if (!file)
		return false;
	ino = KFIELD(struct file, file, f_inode);
	mode = KFIELD(struct inode, ino, i_mode) & S_IFMT;
	return mode == S_IFREG || mode == S_IFBLK;
}

static __always_inline int on_enter(struct trace_event_raw_sys_enter *ctx, __u32 sc)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct syscall_start *st;

	if (!owner_passes(id))
		return 0;
	if (filter_comm && !comm_matches())
		return 0;
	if (takes_fd(sc) && !fd_is_file_or_bdev((unsigned int)ctx->args[0])) {
		/* an entry left by a lost exit would otherwise pair with this call's exit */
		st = bpf_task_storage_get(&sc_start, bpf_get_current_task_btf(), 0, 0);
		if (st)
			st->ts = 0;
		return 0;
	}
	/* created at the thread's first traced syscall; NULL if that allocation fails (counted) */
	st = bpf_task_storage_get(&sc_start, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		drop(DROP_SC_START_FULL);
		return 0;
	}
	st->sc = sc;
	st->fd = takes_fd(sc) ? (__s32)ctx->args[0] : -1;
	/* where the call is made, as the other layers' submitters: a thread moved to another
	 * cgroup while it waits keeps the one it called from (its bios' block records do) */
	st->cgroup = owner_cgroup();
	st->ts = bpf_ktime_get_ns();
	return 0;
}

/* snoop: a slow call, from the calling thread itself. */
static __always_inline void snoop_syscall(__u64 id, __u32 sc, __s32 fd, __u64 cgroup,
					  __u64 start, __u64 now, long ret)
{
	struct snoop_rec *r = snoop_reserve(SN_SYSCALL);
	struct file *f;

	if (!r)
		return;
	r->ts[SN_SUBMIT] = start;
	r->ts[SN_END] = now;
	r->tgid = id >> 32;
	r->tid = (__u32)id;
	r->cgroup = cgroup;
	r->code = sc;
	r->res = ret;
	/* the process's name, as the other layers' records give it */
	BPF_CORE_READ_STR_INTO(&r->comm, (struct task_struct *)bpf_get_current_task(), group_leader,
			       comm);
	if (fd >= 0 && (f = fd_file((unsigned int)fd)))
		snoop_file(r, f);
	snoop_submit(r);
}

static __always_inline int on_exit(struct trace_event_raw_sys_exit *ctx, __u32 sc)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	struct syscall_key key = {};
	struct syscall_start *st;
	struct hist *h;
	__u64 start, cgroup;

	st = bpf_task_storage_get(&sc_start, bpf_get_current_task_btf(), 0, 0);
	if (!st || !st->ts)
		return 0;	/* entered before tracing began, or filtered out at entry */
	now = bpf_ktime_get_ns();
	start = st->ts;
	cgroup = st->cgroup;
	st->ts = 0;
	if (st->sc != sc || now < start)
		return 0;
	if (snoop_slow(start, now))
		snoop_syscall(id, sc, st->fd, cgroup, start, now, ctx->ret);
	if (!sc_flat) {
		key.gen = cur_gen();
		key.sc = sc;
		if (per_process) {
			key.tgid = id >> 32;
			bpf_get_current_comm(key.comm, sizeof(key.comm));
		}
		/* the calling thread's, noted at entry */
		key.cgroup = key_cgroup(cgroup);
		h = hists_lookup_or_init(&sc_hists, &key, &sc_zero, HIST_SPILL_ARGS(sc));
	} else {
		__u32 idx = cur_gen() * SC_N + sc;

		h = bpf_map_lookup_elem(&sc_total, &idx);
	}
	if (h)
		hist_add(h, now - start);
	return 0;
}

#define SC_PROGS(name)							\
SEC("tracepoint/syscalls/sys_enter_" #name)				\
int sce_##name(struct trace_event_raw_sys_enter *ctx)			\
{ return on_enter(ctx, SC_##name); }					\
SEC("tracepoint/syscalls/sys_exit_" #name)				\
int scx_##name(struct trace_event_raw_sys_exit *ctx)			\
{ return on_exit(ctx, SC_##name); }

SYSCALLS(SC_PROGS)

/*
 * At the stop, once detached: every thread still in a traced call, under the key its exit would
 * have counted it by, read by user space and counted unmeasured (the call's end was not seen).
 * A thread's comm and cgroup are taken as on_exit takes them.
 */
SEC("iter/task")
int sc_in_call(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct syscall_key key = {};
	struct syscall_start *st;

	if (!task)
		return 0;
	st = bpf_task_storage_get(&sc_start, task, 0, 0);
	if (!st || !st->ts)
		return 0;
	key.sc = st->sc;
	if (per_process) {
		key.tgid = task->tgid;
		bpf_probe_read_kernel_str(key.comm, sizeof(key.comm), task->comm);
	}
	key.cgroup = key_cgroup(st->cgroup);
	bpf_seq_write(ctx->meta->seq, &key, sizeof(key));
	return 0;
}
