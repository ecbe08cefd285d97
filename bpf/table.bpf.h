/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Open-addressed tables in ARRAY maps: INFLIGHT_PROBES consecutive slots, picked by a
 * multiplicative hash of a pointer. An array slot costs a few ns to update where a BPF hash
 * update costs ~75 ns. Claims use compare-and-swap so two CPUs never own one slot.
 *
 * A key's first probe (its home) counts the keys of that home placed at later probes. While the
 * count is 0, which is nearly always (the tables are mostly empty), a lookup reads one slot and a
 * claim that finds the home free takes it without reading the others: a claim must rule out an
 * existing entry, and reading all probes for that cost ~40 ns per claim (4 lines, last written
 * on the CPU that completed their I/O).
 *
 * TABLE(name, type, map, mask) defines name_find(), name_find_at() (with the slot),
 * name_claim() and name_free() for a map whose value `type` starts with `__u64 key` (0 = free)
 * and has `__u64 ts` (0 while being claimed; the staleness clock), `__u32 tgid` and `__u32 spill`
 * (zeroed with the map, then the table's alone). A key is a pointer, plus the tgid when the
 * pointer is a user address (tgid 0 in a lookup matches any entry).
 */
#ifndef IOSTRATA_TABLE_BPF_H
#define IOSTRATA_TABLE_BPF_H

#include "iostrata.h"
#include "common.bpf.h"

static __always_inline __u32 table_hash(__u64 ptr, __u32 tgid)
{
	/* objects are at least 8-byte aligned: drop the low bits, then Fibonacci-hash */
	return (__u32)((((ptr >> 3) ^ tgid) * 0x9E3779B97F4A7C15ULL) >> 32);
}

/*
 * A slot's spill word. The low half counts the keys whose home this slot is, placed at a later
 * probe (at most INFLIGHT_PROBES - 1 while the count is right); the high half is the probe this
 * slot's own entry is at. Both change by atomic adds only, so a CPU placing its entry here and
 * another counting a key displaced from here never lose each other's update.
 */
#define SPILL_COUNT(w)	((w) & 0xffff)
#define SPILL_PROBE(w)	((w) >> 16)

#define TABLE(name, type, map, mask)						\
static __always_inline type *name##_slot(__u32 h, __u32 i)			\
{										\
	__u32 idx = (h + i) & (mask);						\
										\
	return bpf_map_lookup_elem(&map, &idx);					\
}										\
										\
static __always_inline bool name##_is(const type *e, __u64 ptr, __u32 tgid)	\
{										\
	return e->key == ptr && (!tgid || e->tgid == tgid);			\
}										\
										\
/* The entry of (ptr, tgid) and its slot: at its first probe, or at a later one only when	\
 * some entry whose first probe that is was placed further on (its spill count). */	\
static __always_inline type *name##_find_at(__u64 ptr, __u32 tgid, __u32 *at)	\
{										\
	__u32 h = table_hash(ptr, tgid), i;					\
	type *e = name##_slot(h, 0);						\
										\
	*at = h & (mask);							\
	if (!e || name##_is(e, ptr, tgid))					\
		return e;							\
	if (!SPILL_COUNT(e->spill))						\
		return NULL;							\
	for (i = 1; i < INFLIGHT_PROBES; i++) {					\
		e = name##_slot(h, i);						\
		if (e && name##_is(e, ptr, tgid)) {				\
			*at = (h + i) & (mask);					\
			return e;						\
		}								\
	}									\
	return NULL;								\
}										\
										\
static __always_inline type *name##_find(__u64 ptr, __u32 tgid)		\
{										\
	__u32 at;								\
										\
	return name##_find_at(ptr, tgid, &at);					\
}										\
										\
/* e, just taken at probe i of home's keys: it notes its probe, home counts it displaced. */	\
static __always_inline type *name##_placed(type *e, type *home, __u32 i, __u32 tgid)	\
{										\
	__u32 was = SPILL_PROBE(e->spill);					\
										\
	if (was != i)								\
		__sync_fetch_and_add(&e->spill, (i - was) << 16);		\
	if (i)									\
		__sync_fetch_and_add(&home->spill, 1);				\
	e->ts = 0;								\
	e->tgid = tgid;								\
	return e;								\
}										\
										\
/*										\
 * A slot for (ptr, tgid) at time ts: the existing entry (*existed = true), else a free one,	\
 * else one older than stale_ns (counted). NULL, counted, when every probe is busy.	\
 * A claimed slot has ts == 0 until the caller stamps it. The first probe free, with no key of	\
 * its own placed further on, is the whole search: (ptr, tgid) is nowhere else.		\
 */										\
static __always_inline type *name##_claim(__u64 ptr, __u32 tgid, __u64 ts, bool *existed)	\
{										\
	type *e, *home, *free = NULL, *stale = NULL;				\
	__u32 h = table_hash(ptr, tgid), i, fi = 0, si = 0, w;			\
	__u64 k, old;								\
										\
	*existed = false;							\
	home = name##_slot(h, 0);						\
	if (!home)								\
		return NULL;							\
	k = home->key;								\
	if (!k && !SPILL_COUNT(home->spill) &&					\
	    __sync_val_compare_and_swap(&home->key, 0, ptr) == 0)		\
		return name##_placed(home, home, 0, tgid);			\
	for (i = 0; i < INFLIGHT_PROBES; i++) {					\
		e = name##_slot(h, i);						\
		if (!e)								\
			return NULL;						\
		k = e->key;							\
		if (name##_is(e, ptr, tgid)) {					\
			*existed = true;					\
			return e;						\
		}								\
		if (!k) {							\
			if (!free) {						\
				free = e;					\
				fi = i;						\
			}							\
		} else if (!stale) {						\
			old = e->ts;						\
			if (old && ts > old && ts - old > stale_ns) {		\
				stale = e;					\
				si = i;						\
			}							\
		}								\
	}									\
	if (free && __sync_val_compare_and_swap(&free->key, 0, ptr) == 0)	\
		return name##_placed(free, home, fi, tgid);			\
	if (stale && (k = stale->key) &&					\
	    __sync_val_compare_and_swap(&stale->key, k, ptr) == k) {		\
		/* the leftover leaves its own first probe's count */		\
		w = SPILL_PROBE(stale->spill);					\
		if (w && (e = name##_slot(h, si - w)))	/* mod the size */	\
			__sync_fetch_and_sub(&e->spill, 1);			\
		drop(DROP_INFLIGHT_STALE);					\
		return name##_placed(stale, home, si, tgid);			\
	}									\
	drop(DROP_INFLIGHT_FULL);						\
	return NULL;								\
}										\
										\
/* Free e, the entry of (ptr, tgid) as found: displaced, it leaves its first probe's count. */	\
static __always_inline void name##_free(type *e, __u64 ptr, __u32 tgid)	\
{										\
	__u32 w = SPILL_PROBE(e->spill);					\
	type *home;								\
										\
	e->ts = 0;								\
	e->key = 0;								\
	if (w && (home = name##_slot(table_hash(ptr, tgid), 0)))		\
		__sync_fetch_and_sub(&home->spill, 1);				\
}

#endif /* IOSTRATA_TABLE_BPF_H */
