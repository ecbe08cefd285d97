/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The in-flight table (see struct inflight in iostrata.h): INFLIGHT_PROBES consecutive slots of
 * an ARRAY map, picked by a multiplicative hash of the pointer. Claims use compare-and-swap so
 * two CPUs never own one slot; lookups scan all probes, so freeing a slot is a plain store.
 */
#ifndef IOSTRATA_INFLIGHT_BPF_H
#define IOSTRATA_INFLIGHT_BPF_H

#include "iostrata.h"
#include "drops.bpf.h"

/* Set by the loader to the table size minus one (a power of two minus one). */
const volatile __u32 inflight_mask = INFLIGHT_SLOTS_DEFAULT - 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, INFLIGHT_SLOTS_DEFAULT);
	__type(key, __u32);
	__type(value, struct inflight);
} inflight SEC(".maps");

static __always_inline __u32 inflight_hash(__u64 ptr)
{
	/* kernel objects are at least 8-byte aligned: drop the low bits, then Fibonacci-hash */
	return (__u32)(((ptr >> 3) * 0x9E3779B97F4A7C15ULL) >> 32);
}

static __always_inline struct inflight *inflight_slot(__u32 h, __u32 i)
{
	__u32 idx = (h + i) & inflight_mask;

	return bpf_map_lookup_elem(&inflight, &idx);
}

/*
 * Record ts for ptr. An existing entry for the same pointer is a leftover whose owner was never
 * consumed (bios) or a re-issue (requests, requeue): it is overwritten, and counted when
 * `leftover_is_drop`. Returns 0 on success.
 */
static __always_inline int inflight_put(__u64 ptr, __u64 ts, __u64 queued, __u32 tgid,
					bool leftover_is_drop)
{
	struct inflight *e, *free = NULL, *stale = NULL;
	__u32 h = inflight_hash(ptr), i;
	__u64 k, old;

	for (i = 0; i < INFLIGHT_PROBES; i++) {
		e = inflight_slot(h, i);
		if (!e)
			return -1;
		k = e->key;
		if (k == ptr) {
			if (leftover_is_drop)
				drop(DROP_INFLIGHT_REUSED);
			e->ts = ts;
			if (queued) {	/* a requeued request keeps the queue time of its first issue */
				e->queued = queued;
				e->tgid = tgid;
			}
			return 0;
		}
		if (!k) {
			if (!free)
				free = e;
		} else if (!stale) {
			old = e->ts;
			/* ts == 0: another CPU has claimed the slot and not yet stamped it */
			if (old && ts > old && ts - old > INFLIGHT_STALE_NS)
				stale = e;
		}
	}
	if (free && __sync_val_compare_and_swap(&free->key, 0, ptr) == 0) {
		e = free;
	} else if (stale && (k = stale->key) &&
		   __sync_val_compare_and_swap(&stale->key, k, ptr) == k) {
		drop(DROP_INFLIGHT_STALE);
		e = stale;
	} else {
		drop(DROP_INFLIGHT_FULL);
		return -1;
	}
	e->queued = queued;
	e->tgid = tgid;
	e->ts = ts;
	return 0;
}

/*
 * Remove ptr's entry; returns its timestamp (0 when absent, or when older than the stale bound:
 * a leftover of an earlier object at the same address, never a latency) and, if asked, its
 * queue time and tgid.
 */
static __always_inline __u64 inflight_take(__u64 ptr, __u64 now, __u64 *queued, __u32 *tgid)
{
	struct inflight *e;
	__u32 h = inflight_hash(ptr), i;
	__u64 ts;

	for (i = 0; i < INFLIGHT_PROBES; i++) {
		e = inflight_slot(h, i);
		if (!e)
			return 0;
		if (e->key != ptr)
			continue;
		ts = e->ts;
		if (queued)
			*queued = e->queued;
		if (tgid)
			*tgid = e->tgid;
		e->ts = 0;
		e->key = 0;
		if (ts <= now && now - ts > INFLIGHT_STALE_NS) {
			drop(DROP_INFLIGHT_STALE);
			return 0;
		}
		return ts;
	}
	return 0;
}

/* Look ptr up without removing it. */
static __always_inline struct inflight *inflight_find(__u64 ptr)
{
	struct inflight *e;
	__u32 h = inflight_hash(ptr), i;

	for (i = 0; i < INFLIGHT_PROBES; i++) {
		e = inflight_slot(h, i);
		if (e && e->key == ptr)
			return e;
	}
	return NULL;
}

#endif /* IOSTRATA_INFLIGHT_BPF_H */
