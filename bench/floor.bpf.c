// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Empty programs on the block layer's events: what bpf_stats reports for doing nothing there. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/block_bio_queue") int floor_bio_queue(void *ctx) { return 0; }
SEC("tp_btf/block_rq_issue") int floor_rq_issue(void *ctx) { return 0; }
SEC("tp_btf/block_rq_complete") int floor_rq_complete(void *ctx) { return 0; }

/* The same event with one clock read, as every timing program makes: the clock's cost is the
 * difference between this program's run time per event and floor_rq_issue's. */
__u64 fclock_last;
SEC("tp_btf/block_rq_issue") int fclock_rq_issue(void *ctx)
{
	fclock_last = bpf_ktime_get_ns();
	return 0;
}
