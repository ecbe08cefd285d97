/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Open-addressed tables in ARRAY maps: TABLE_PROBES consecutive slots, picked by a
 * multiplicative hash of a pointer. An array slot costs a few ns to update where a BPF hash
 * update costs ~75 ns. Claims use compare-and-swap so two CPUs never own one slot; lookups scan
 * all probes, so freeing a slot is a plain store.
 *
 * TABLE(name, type, map, mask) defines name_find(), name_claim() and name_free() for a map whose
 * value `type` starts with `__u64 key` (0 = free) and has `__u64 ts` (0 while being claimed; the
 * staleness clock) and `__u32 tgid`. A key is a pointer, plus the tgid when the pointer is a user
 * address (tgid 0 in a lookup matches any entry).
 */
#ifndef IOSTRATA_TABLE_BPF_H
#define IOSTRATA_TABLE_BPF_H

#include "iostrata.h"
#include "drops.bpf.h"

static __always_inline __u32 table_hash(__u64 ptr, __u32 tgid)
{
	/* objects are at least 8-byte aligned: drop the low bits, then Fibonacci-hash */
	return (__u32)((((ptr >> 3) ^ tgid) * 0x9E3779B97F4A7C15ULL) >> 32);
}

#define TABLE(name, type, map, mask)						\
static __always_inline type *name##_slot(__u32 h, __u32 i)			\
{										\
	__u32 idx = (h + i) & (mask);						\
										\
	return bpf_map_lookup_elem(&map, &idx);					\
}										\
										\
static __always_inline type *name##_find(__u64 ptr, __u32 tgid)		\
{										\
	__u32 h = table_hash(ptr, tgid), i;					\
	type *e;								\
										\
	for (i = 0; i < INFLIGHT_PROBES; i++) {					\
		e = name##_slot(h, i);						\
		if (e && e->key == ptr && (!tgid || e->tgid == tgid))		\
			return e;						\
	}									\
	return NULL;								\
}										\
										\
/*										\
 * A slot for (ptr, tgid) at time ts: the existing entry (*existed = true), else a free one,	\
 * else one older than INFLIGHT_STALE_NS (counted). NULL, counted, when every probe is busy.	\
 * A claimed slot has ts == 0 until the caller stamps it.				\
 */										\
static __always_inline type *name##_claim(__u64 ptr, __u32 tgid, __u64 ts, bool *existed)	\
{										\
	type *e, *free = NULL, *stale = NULL;					\
	__u32 h = table_hash(ptr, tgid), i;					\
	__u64 k, old;								\
										\
	*existed = false;							\
	for (i = 0; i < INFLIGHT_PROBES; i++) {					\
		e = name##_slot(h, i);						\
		if (!e)								\
			return NULL;						\
		k = e->key;							\
		if (k == ptr && (!tgid || e->tgid == tgid)) {			\
			*existed = true;					\
			return e;						\
		}								\
		if (!k) {							\
			if (!free)						\
				free = e;					\
		} else if (!stale) {						\
			old = e->ts;						\
			if (old && ts > old && ts - old > INFLIGHT_STALE_NS)	\
				stale = e;					\
		}								\
	}									\
	if (free && __sync_val_compare_and_swap(&free->key, 0, ptr) == 0)	\
		e = free;							\
	else if (stale && (k = stale->key) &&					\
		 __sync_val_compare_and_swap(&stale->key, k, ptr) == k) {	\
		drop(DROP_INFLIGHT_STALE);					\
		e = stale;							\
	} else {								\
		drop(DROP_INFLIGHT_FULL);					\
		return NULL;							\
	}									\
	e->ts = 0;								\
	e->tgid = tgid;								\
	return e;								\
}										\
										\
static __always_inline void name##_free(type *e)				\
{										\
	e->ts = 0;								\
	e->key = 0;								\
}

#endif /* IOSTRATA_TABLE_BPF_H */
