// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Block completions of one disk counted by the task each ran on top of (current's comm; a
 * completion in softirq runs on whatever task the CPU was running), while `on` is set: what BPF
 * saw, for bench/unseen.py to set beside what a tracefs instance recorded of the same event.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct comm_key {
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct comm_key);
	__type(value, __u64);
} by_comm SEC(".maps");

const volatile __u32 target_dev;	/* the kernel's dev_t encoding, as tracefs prints it */
__u32 on;
__u64 unrecorded;			/* completions seen that the full map had no room for */

SEC("tp_btf/block_rq_complete")
int BPF_PROG(unseen_rq_complete, struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	struct comm_key k = {};
	__u64 one = 1, *n;

	if (!on || (((__u32)BPF_CORE_READ(disk, major) << 20) |
		    (__u32)BPF_CORE_READ(disk, first_minor)) != target_dev)
		return 0;
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	n = bpf_map_lookup_elem(&by_comm, &k);
	if (!n) {
		if (!bpf_map_update_elem(&by_comm, &k, &one, BPF_NOEXIST))
			return 0;
		n = bpf_map_lookup_elem(&by_comm, &k);	/* another CPU may have added it first */
	}
	__sync_fetch_and_add(n ? n : &unrecorded, 1);
	return 0;
}
