// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Block completions of one disk counted by the thread each ran on top of (current; a completion
 * in softirq runs on whatever thread the CPU was running), with that thread's name when first
 * seen, while `on` is set: what BPF saw, for bench/completions.py to set beside what a tracefs
 * instance recorded of the same event, by thread id as tracefs records it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct seen {
	__u64 n;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);		/* thread id; 0 for every CPU's idle task */
	__type(value, struct seen);
} by_thread SEC(".maps");

const volatile __u32 target_dev;	/* the kernel's dev_t encoding, as tracefs prints it */
__u32 on;
__u64 unrecorded;			/* completions seen that the full map had no room for */

SEC("tp_btf/block_rq_complete")
int BPF_PROG(unseen_rq_complete, struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	struct seen first = { .n = 1 }, *n;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (!on || (((__u32)BPF_CORE_READ(disk, major) << 20) |
		    (__u32)BPF_CORE_READ(disk, first_minor)) != target_dev)
		return 0;
	n = bpf_map_lookup_elem(&by_thread, &tid);
	if (!n) {
		bpf_get_current_comm(first.comm, sizeof(first.comm));
		if (!bpf_map_update_elem(&by_thread, &tid, &first, BPF_NOEXIST))
			return 0;
		n = bpf_map_lookup_elem(&by_thread, &tid);	/* another CPU may have added it first */
	}
	__sync_fetch_and_add(n ? &n->n : &unrecorded, 1);
	return 0;
}
