/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every layer's BPF object has: its owner filters, its generation, its histogram maps. */
#ifndef IOSTRATA_COMMON_BPF_H
#define IOSTRATA_COMMON_BPF_H

#include "iostrata.h"
#include "drops.bpf.h"

/* Set by the loader before load; frozen afterwards, so the verifier prunes what they disable. */
const volatile __u32 filter_tgid;	/* 0 = all */
const volatile bool filter_cgroup;	/* cgroup_filter[0] holds the cgroup */
const volatile __u32 self_tgid;		/* iostrata itself: never traced */

/*
 * The histogram generation, one for every layer: the session creates this map once, hands it to
 * every object before load and flips it each interval, so all layers' intervals end at the same
 * instant. Histogram keys carry it (see block_key).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gens SEC(".maps");

static __always_inline __u32 cur_gen(void)
{
	__u32 zero = 0, *g = bpf_map_lookup_elem(&gens, &zero);

	return g ? *g & 1 : 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

static __always_inline bool is_self(__u64 pid_tgid)
{
	return self_tgid && (__u32)(pid_tgid >> 32) == self_tgid;
}

/* Does the current task pass -p and -c, and is it not iostrata? Decided where the submitter runs. */
static __always_inline bool owner_passes(__u64 pid_tgid)
{
	if (is_self(pid_tgid))
		return false;
	if (filter_tgid && (__u32)(pid_tgid >> 32) != filter_tgid)
		return false;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return false;
	return true;
}

/*
 * The value of key in a per-CPU hash of histograms, created from zero_map's single zeroed
 * value on first use (values are too big for the stack); a full map is counted.
 */
static __always_inline void *hists_lookup_or_init(void *map, const void *key, void *zero_map)
{
	__u32 zero = 0;
	void *v = bpf_map_lookup_elem(map, key), *z;
	long err;

	if (v)
		return v;
	z = bpf_map_lookup_elem(zero_map, &zero);
	if (!z)
		return NULL;
	err = bpf_map_update_elem(map, key, z, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: another CPU created it */) {
		drop(DROP_HIST_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(map, key);
}

/*
 * In-flight keys and hashes need pointers as plain integers. raw_tp arguments already are;
 * tp_btf arguments are typed pointers, on which the verifier forbids arithmetic except
 * pointer - pointer (for privileged programs). So subtract a fixed anchor's address and add
 * back that address, learnt once as an integer.
 */
static char anchor;
__u64 anchor_addr;

static __always_inline __u64 btf_ptr_u64(const void *p)
{
	const void *a = &anchor;
	__u64 d;

	if (!anchor_addr)
		bpf_probe_read_kernel(&anchor_addr, sizeof(anchor_addr), &a);
	d = (__u64)p - (__u64)&anchor;
	barrier_var(d);
	return d + anchor_addr;
}

/* A stage whose start was not seen is counted as unmeasured, never given a made-up value. */
static __always_inline void stage_add(struct hist *h, __u64 from, __u64 to)
{
	if (from && to >= from)
		hist_record(h, to - from);
	else
		h->unmeasured++;
}

#endif /* IOSTRATA_COMMON_BPF_H */
