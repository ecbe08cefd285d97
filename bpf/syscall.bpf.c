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
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "iostrata.h"
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool filter_comm;
const volatile char comm_filter[16];
const volatile bool per_process;

/* Entry time by thread: a thread is in at most one syscall at a time. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);		/* resized by the loader */
	__type(key, __u32);
	__type(value, struct syscall_start);
} sc_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 64);		/* resized by the loader */
	__type(key, struct syscall_key);
	__type(value, struct hist);
} sc_hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hist);
} sc_zero SEC(".maps");

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

static __always_inline int on_enter(__u32 sc)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct syscall_start st = { .sc = sc };
	__u32 tid = (__u32)id;

	if (!owner_passes(id))
		return 0;
	if (filter_comm && !comm_matches())
		return 0;
	st.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&sc_start, &tid, &st, BPF_ANY))
		drop(DROP_SC_START_FULL);
	return 0;
}

static __always_inline int on_exit(__u32 sc)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	struct syscall_key key = {};
	struct syscall_start *st;
	__u32 tid = (__u32)id;
	struct hist *h;
	__u64 start;
	__u32 entered;

	st = bpf_map_lookup_elem(&sc_start, &tid);
	if (!st)
		return 0;	/* entered before tracing began, or filtered out at entry */
	now = bpf_ktime_get_ns();
	start = st->ts;
	entered = st->sc;
	bpf_map_delete_elem(&sc_start, &tid);
	if (entered != sc || now < start)
		return 0;
	key.gen = gen & 1;
	key.sc = sc;
	if (per_process) {
		key.tgid = id >> 32;
		bpf_get_current_comm(key.comm, sizeof(key.comm));
	}
	h = hists_lookup_or_init(&sc_hists, &key, &sc_zero);
	if (h)
		hist_record(h, now - start);
	return 0;
}

#define SC_PROGS(name)							\
SEC("tracepoint/syscalls/sys_enter_" #name)				\
int sce_##name(void *ctx) { return on_enter(SC_##name); }		\
SEC("tracepoint/syscalls/sys_exit_" #name)				\
int scx_##name(void *ctx) { return on_exit(SC_##name); }

SYSCALLS(SC_PROGS)
