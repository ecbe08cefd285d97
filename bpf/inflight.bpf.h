/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The block layer's in-flight table (struct inflight in iostrata.h), an open table (table.bpf.h). */
#ifndef IOSTRATA_INFLIGHT_BPF_H
#define IOSTRATA_INFLIGHT_BPF_H

#include "table.bpf.h"
#include "common.bpf.h"

/* Set by the loader to the table size minus one (a power of two minus one). */
const volatile __u32 inflight_mask = INFLIGHT_SLOTS_DEFAULT - 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, INFLIGHT_SLOTS_DEFAULT);
	__type(key, __u32);
	__type(value, struct inflight);
} inflight SEC(".maps");

TABLE(inflight_tab, struct inflight, inflight, inflight_mask)

/* Who queued a bio (the earliest of a request's): tgid always, the rest for snoop and -C. */
struct who {
	__u64 cgroup;
	__u32 tgid, tid;
};

/*
 * Record ts for ptr (a request's: with its disk, dev). An existing entry for the same pointer is
 * a leftover whose owner was never consumed (bios: counted when `leftover_is_drop`) or, for
 * requests, a re-issue: a requeue when no new bios come with it (queued == 0), else the next
 * I/O of a request whose completion was never seen (counted). It is overwritten. Returns 0 on
 * success.
 */
static __always_inline int inflight_put(__u64 ptr, __u64 ts, __u64 queued, const struct who *w,
					__u32 dev, bool leftover_is_drop)
{
	struct inflight *e;
	bool existed;

	e = inflight_tab_claim(ptr, 0, ts, &existed);
	if (!e)
		return -1;
	if (existed) {
		if (leftover_is_drop)
			drop(DROP_INFLIGHT_REUSED);
		e->ts = ts;
		/* a requeued request keeps the queue time of its first issue */
		if (!queued)
			return 0;
		/* new bios: not a requeue but the next I/O, so the last one's end went unseen */
		if (!leftover_is_drop)
			drop(DROP_COMPLETE_UNSEEN);
	}
	e->queued = queued;
	e->tgid = w->tgid;
	if (owner_wanted()) {
		e->cgroup = w->cgroup;
		e->tid = w->tid;
	}
	e->dev = dev;
	e->ts = ts;
	return 0;
}

/*
 * Remove ptr's entry; returns its timestamp (0 when absent, or when older than the stale bound:
 * a leftover of an earlier object at the same address, never a latency) and, if asked, its
 * queue time and who queued it.
 */
static __always_inline __u64 inflight_take(__u64 ptr, __u64 now, __u64 *queued, struct who *w)
{
	struct inflight *e = inflight_tab_find(ptr, 0);
	__u64 ts;

	if (!e)
		return 0;
	ts = e->ts;
	if (queued)
		*queued = e->queued;
	if (w) {
		w->tgid = e->tgid;
		if (owner_wanted()) {
			w->cgroup = e->cgroup;
			w->tid = e->tid;
		}
	}
	inflight_tab_free(e);
	if (ts <= now && now - ts > INFLIGHT_STALE_NS) {
		drop(DROP_INFLIGHT_STALE);
		return 0;
	}
	return ts;
}

static __always_inline struct inflight *inflight_find(__u64 ptr)
{
	return inflight_tab_find(ptr, 0);
}

#endif /* IOSTRATA_INFLIGHT_BPF_H */
