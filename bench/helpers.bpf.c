// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What each building block of a tracing program costs here: one program per block on
 * block_rq_issue, each doing that one thing. bench/helpers.py reads every program's bpf_stats
 * run time per event beside fio and subtracts the empty program's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} pcpu_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} pcpu_hash SEC(".maps");

__u64 sink;

static long step(__u64 i, void *c)
{
	(*(__u64 *)c)++;
	return 0;
}

SEC("tp_btf/block_rq_issue") int hc_empty(void *ctx) { return 0; }
SEC("tp_btf/block_rq_issue") int hc_ktime(void *ctx) { sink = bpf_ktime_get_ns(); return 0; }
SEC("tp_btf/block_rq_issue") int hc_pid_tgid(void *ctx) { sink = bpf_get_current_pid_tgid(); return 0; }
SEC("tp_btf/block_rq_issue") int hc_cgroup_id(void *ctx) { sink = bpf_get_current_cgroup_id(); return 0; }

/* The same id by direct loads (task->cgroups->dfl_cgrp->kn->id): measured, not cheaper */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define RO(type, p)	((type *)bpf_rdonly_cast((const void *)(__u64)(p),		\
						 bpf_core_type_id_kernel(type)))

SEC("tp_btf/block_rq_issue") int hc_cgroup_direct(void *ctx)
{
	struct task_struct *t;
	struct css_set *cs;
	struct cgroup *cg;

	if (!bpf_rdonly_cast)	/* a weak kfunc: 0 where the kernel has none (v6.1) */
		return 0;
	t = RO(struct task_struct, bpf_get_current_task());
	cs = RO(struct css_set, t->cgroups);
	cg = RO(struct cgroup, cs->dfl_cgrp);
	sink = RO(struct kernfs_node, cg->kn)->id;
	return 0;
}

SEC("tp_btf/block_rq_issue") int hc_loop_1(void *ctx)
{
	__u64 c = 0;

	bpf_loop(1, step, &c, 0);
	sink = c;
	return 0;
}

SEC("tp_btf/block_rq_issue") int hc_loop_4(void *ctx)
{
	__u64 c = 0;

	bpf_loop(4, step, &c, 0);
	sink = c;
	return 0;
}

SEC("tp_btf/block_rq_issue") int hc_pcpu_array(void *ctx)
{
	__u32 k = 1;
	__u64 *v = bpf_map_lookup_elem(&pcpu_array, &k);

	if (v)
		(*v)++;
	return 0;
}

SEC("tp_btf/block_rq_issue") int hc_array_atomic(void *ctx)
{
	__u32 k = 1;
	__u64 *v = bpf_map_lookup_elem(&array, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("tp_btf/block_rq_issue") int hc_pcpu_hash(void *ctx)
{
	__u64 k = 7, *v = bpf_map_lookup_elem(&pcpu_hash, &k);

	if (v)
		(*v)++;
	else
		bpf_map_update_elem(&pcpu_hash, &k, &k, 0);
	return 0;
}

SEC("tp_btf/block_rq_issue") int hc_probe_read(void *ctx)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), ctx);
	sink = v;
	return 0;
}
