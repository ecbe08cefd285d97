/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef IOSTRATA_DROPS_BPF_H
#define IOSTRATA_DROPS_BPF_H

#include "iostrata.h"

/* Per-CPU counters of what could not be recorded (enum drop_reason); the loader sums them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP_NREASONS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* Add k to slot idx of a per-CPU array of __u64 counters. */
static __always_inline void counter_add(void *map, __u32 idx, __u64 k)
{
	__u64 *n = bpf_map_lookup_elem(map, &idx);

	if (n)
		__sync_fetch_and_add(n, k);	/* a program in IRQ context may nest */
}

static __always_inline void counter_inc(void *map, __u32 idx)
{
	counter_add(map, idx, 1);
}

static __always_inline void drop(__u32 reason)
{
	counter_inc(&drops, reason);
}

/* k events of one reason at once (each one counted, as the reason's name says) */
static __always_inline void drops_add(__u32 reason, __u64 k)
{
	counter_add(&drops, reason, k);
}

#endif /* IOSTRATA_DROPS_BPF_H */
