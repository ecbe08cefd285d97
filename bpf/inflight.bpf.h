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
	__uint(map_flags, ENTRY_MAP_FLAGS);
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

/* An entry's payload, written last with its timestamp (0 until then: being claimed). */
static __always_inline void entry_fill(struct inflight *e, __u64 ts, __u64 queued,
				       const struct who *w, __u32 dev)
{
	e->queued = queued;
	e->tgid = w->tgid;
	e->requeued = 0;
	if (owner_wanted()) {
		e->cgroup = w->cgroup;
		e->tid = w->tid;
	}
	e->dev = dev;
	e->ts = ts;
}

/* Who queued an entry's (earliest) bio, as entry_fill noted it. */
static __always_inline void entry_who(const struct inflight *e, struct who *w)
{
	w->tgid = e->tgid;
	if (owner_wanted()) {
		w->cgroup = e->cgroup;
		w->tid = e->tid;
	}
}

/* The loader attached block_rq_requeue: a requeued request's entry says so (requeued). */
const volatile bool requeue_traced;

/*
 * A request issued again while its entry is live: a requeue, restamped, keeping its queue time,
 * link and owner (true); else the next I/O at the request, whose last completion no program
 * saw, counted (false: the caller fills the entry afresh). A requeue is known by its mark
 * (block_rq_requeue); where that event is not traced, by no new bio coming with the issue,
 * which takes a missed completion for a requeue when bios are not tracked (--stages device).
 */
static __always_inline bool rq_requeued(struct inflight *e, __u64 ts, __u64 queued)
{
	if (requeue_traced ? e->requeued : !queued) {
		e->requeued = 0;
		e->ts = ts;
		return true;
	}
	drop(DROP_COMPLETE_UNSEEN);
	return false;
}

/*
 * A bio's entry left behind: inflight_reused, unless it was an fsync's empty write (its entry
 * has a dev: bio_put_dev). That request is never issued (a flush request runs for it) and ends
 * in the flush's completion, in the same call: a completion the host runs no program for
 * (docs/trust.md, "complete_unseen") takes both, and the kernel counts both. The flush's is
 * found at its tag; the write's only here, by its bio's entry.
 */
static __always_inline void bio_leftover(const struct inflight *e)
{
	drop(e->dev ? DROP_COMPLETE_UNSEEN : DROP_INFLIGHT_REUSED);
}

/*
 * A bio entry never consumed whose bio was queued with REQ_NOWAIT: it ended without becoming a
 * request, as such bios do when they would have to wait. io_uring tries a read or write with
 * REQ_NOWAIT first; one too large for the queue's limits is then ended with BLK_STS_AGAIN rather
 * than split, and issued again from an io-wq worker as a new bio (most often at the freed one's
 * address): every 1 MiB O_DIRECT read of a loop device that splits them in two. No request, no
 * completion the kernel counts: nothing lost. Counted as inflight_reused, it said half such
 * requests were not followed. (Such a bio that did become a request, both of whose events no
 * program saw, would be missed here: its issue runs where its queue, seen, ran.)
 */
static __always_inline bool bio_ended_unmade(const struct inflight *e)
{
	return !e->dev && e->bio_nowait;
}

/*
 * Record ts for ptr: a bio's (is_bio, with its link in `queued`'s place, dev 0 or bio_put_dev's,
 * and whether it was queued with REQ_NOWAIT) or a request's (with its disk, dev). An existing
 * entry for the same pointer is a leftover: a bio never consumed (counted, unless it ended
 * without becoming a request), overwritten; or a request issued again (rq_requeued). Returns 0
 * on success.
 */
static __always_inline int inflight_put(__u64 ptr, __u64 ts, __u64 queued, const struct who *w,
					__u32 dev, bool is_bio, bool nowait)
{
	struct inflight *e;
	bool existed;

	e = inflight_tab_claim(ptr, 0, ts, &existed);
	if (!e)
		return -1;
	if (existed && is_bio) {
		if (!bio_ended_unmade(e))
			bio_leftover(e);
	} else if (existed && rq_requeued(e, ts, queued)) {
		return 0;
	}
	entry_fill(e, ts, queued, w, dev);
	if (is_bio)
		e->bio_nowait = nowait;
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
	if (w)
		entry_who(e, w);
	inflight_tab_free(e, ptr, 0);
	if (ts <= now && now - ts > stale_ns) {
		drop(DROP_INFLIGHT_STALE);
		return 0;
	}
	return ts;
}

static __always_inline struct inflight *inflight_find(__u64 ptr)
{
	return inflight_tab_find(ptr, 0);
}

/* Drop a leftover entry for ptr, if any, as one overwritten would be (counted). */
static __always_inline void inflight_forget(__u64 ptr)
{
	struct inflight *e = inflight_tab_find(ptr, 0);

	if (!e)
		return;
	bio_leftover(e);
	inflight_tab_free(e, ptr, 0);
}

/*
 * Requests by tag. While a request is in flight its tag is its own on its hardware queue: the
 * driver tag without a scheduler, where the request is the tag's preallocated one, or the
 * scheduler tag with one (stable across a requeue, which gives the driver tag back). A flush
 * borrows the tag of the request it runs for, which waits meanwhile. So a region owned by one
 * hardware queue needs no probing and no compare-and-swap: issue and completion each touch one
 * slot, the one the request had last time. (A hashed claim reads all its probes to rule out an
 * existing entry: on a disk completing on another CPU, 4 lines last written there.) Owners are
 * claimed once, never freed: a hardware queue gone leaves its region to a new one only at the
 * same address.
 */
/* Both sized by the loader (the maps' max_entries with them): 2^bits regions and slots. */
const volatile __u32 rq_region_bits = RQ_REGION_BITS_DEFAULT;
const volatile __u32 rq_slot_bits = RQ_SLOT_BITS_DEFAULT;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1u << RQ_REGION_BITS_DEFAULT);
	__type(key, __u32);
	__type(value, __u64);
} rq_regions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, ENTRY_MAP_FLAGS);
	__uint(max_entries, 1u << (RQ_REGION_BITS_DEFAULT + RQ_SLOT_BITS_DEFAULT));
	__type(key, __u32);
	__type(value, struct inflight);
} rq_slots SEC(".maps");

/* Requests issued outside the tag slots (no region for their hardware queue, or a deeper tag) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rq_untagged SEC(".maps");

/*
 * hctx's region, -1 without one. claim: take a free probe for it, and try again when another
 * CPU took that one first, so that a request issued without a region (every probe another's,
 * for good) completes without one too. The last round only looks: a claim made in the round
 * before is found there, never left unused (the issue would go to the hashed table while its
 * completion, finding the region, looked in the slot).
 */
static __always_inline int rq_region(__u64 hctx, bool claim)
{
	__u32 h = table_hash(hctx, 0) >> (32 - rq_region_bits), i, j, idx, free;
	__u32 none = 1u << rq_region_bits;
	__u64 *o;

	for (j = 0; j <= RQ_REGION_PROBES; j++) {
		free = none;
		for (i = 0; i < RQ_REGION_PROBES; i++) {
			idx = (h + i) & (none - 1);
			o = bpf_map_lookup_elem(&rq_regions, &idx);
			if (!o)
				return -1;
			if (*o == hctx)
				return idx;
			if (!*o && free == none)
				free = idx;
		}
		if (!claim || free == none || j == RQ_REGION_PROBES)
			return -1;
		o = bpf_map_lookup_elem(&rq_regions, &free);
		if (!o)
			return -1;
		__sync_val_compare_and_swap(o, 0, hctx);	/* then look again: ours or taken */
	}
	return -1;
}

/*
 * Writes the kernel runs as a flush sequence (PREFLUSH with data, or FUA emulated by a flush
 * after it) end twice: their data part, counted here, then, once the flush after it is done,
 * the request again with 0 bytes and its bio put back, which the kernel's /sys/block stat
 * counts. The requests whose data part was counted (or counted as complete_unseen) are noted
 * here, so that their second end is not counted again; one whose data part ended before
 * tracing began is not here, and its second end is counted, as the kernel counts it.
 * rqf_flush_seq: RQF_FLUSH_SEQ (set by the loader from BTF); 0 where its value cannot be
 * told: then no second end is counted (a data part that ended before tracing is missed). The
 * loader sizes the map by the CPUs: the LRU's free lists are per CPU.
 */
const volatile __u32 rqf_flush_seq = 1u << 4;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);	/* the loader adds 256 per CPU */
	__type(key, __u64);
	__type(value, __u8);
} fseq_counted SEC(".maps");

static __always_inline void fseq_note(__u64 rq)
{
	__u8 one = 1;

	bpf_map_update_elem(&fseq_counted, &rq, &one, BPF_ANY);
}

/* Was rq's data part counted? Forgotten once asked: its second end is its last. */
static __always_inline bool fseq_was_counted(__u64 rq)
{
	return !bpf_map_delete_elem(&fseq_counted, &rq);
}

/* Cleared by the loader for --no-tag-slots (testing): every request in the in-flight table. */
const volatile bool tag_slots = true;

/* The request's slot, or NULL: then it lives in the in-flight table. */
static __always_inline struct inflight *rq_slot(__u64 hctx, __u32 tag, bool claim)
{
	int r;
	__u32 idx;

	if (!tag_slots || tag >> rq_slot_bits || !hctx)	/* BLK_MQ_NO_TAG is -1: beyond too */
		return NULL;
	r = rq_region(hctx, claim);
	if (r < 0)
		return NULL;
	idx = ((__u32)r << rq_slot_bits) + tag;
	return bpf_map_lookup_elem(&rq_slots, &idx);
}

/*
 * inflight_put for a request at issue. The slot is this request's while it is in flight: an
 * entry of its own is a re-issue (rq_requeued: a requeue, or the next I/O, the last one's end
 * unseen); another request's entry (a flush that borrowed the tag) ended unseen too.
 */
static __always_inline int rq_put(__u64 hctx, __u32 tag, __u64 ptr, __u64 ts, __u64 queued,
				  const struct who *w, __u32 dev, __u32 link)
{
	struct inflight *e = rq_slot(hctx, tag, true);
	__u32 zero = 0;
	__u64 k, *n;

	if (!e) {	/* the in-flight table has no room for the link: REQ_LINK_WALK */
		if (tag_slots && (n = bpf_map_lookup_elem(&rq_untagged, &zero)))
			(*n)++;
		return inflight_put(ptr, ts, queued, w, dev, false, false);
	}
	k = e->key;
	if (k == ptr && e->ts) {
		if (rq_requeued(e, ts, queued))	/* its bios, link and queue time: the first issue's */
			return 0;
	} else if (k && e->ts) {
		drop(DROP_COMPLETE_UNSEEN);
		/*
		 * A flush sequence's data part whose end went unseen (the flush after it borrows
		 * its tag): its second end is to come. Its bios are done (bio is NULL until that
		 * end puts them back), so it is told from a flush request, which never has one,
		 * by biotail.
		 */
		if (BPF_CORE_READ((struct request *)k, rq_flags) & rqf_flush_seq &&
		    !BPF_CORE_READ((struct request *)k, bio) &&
		    BPF_CORE_READ((struct request *)k, biotail))
			fseq_note(k);
	}
	e->key = ptr;
	e->rq_link = link;
	entry_fill(e, ts, queued, w, dev);
	return 0;
}

/*
 * inflight_take for a request at completion, with the link rq_put noted (else REQ_LINK_WALK).
 * start: the kernel's rq->start_time_ns, its allocation (0 when block statistics are off and no
 * scheduler is attached). The slot's entry is this request's unless its own issue went unseen
 * after an earlier completion did too: then it was stamped before this request was allocated.
 * That tells a leftover at any age, so a request in flight for minutes (a hung device) is
 * measured; without start, an entry past stale_ns is taken for a leftover, as in the tables.
 * The allocation time may be a plug's cached clock, earlier than the allocation (safe here);
 * STALE_SKEW_NS allows for bpf_ktime_get_ns() running a little behind the kernel's clock.
 */
#define STALE_SKEW_NS	1000000ULL

static __always_inline __u64 rq_take(__u64 hctx, __u32 tag, __u64 ptr, __u64 now, __u64 start,
				     __u64 *queued, struct who *w, __u32 *link)
{
	struct inflight *e = rq_slot(hctx, tag, false);
	__u64 ts;

	*link = REQ_LINK_WALK;
	if (!e)
		return inflight_take(ptr, now, queued, w);
	if (e->key != ptr)
		return 0;
	ts = e->ts;
	*queued = e->queued;
	*link = e->rq_link;
	entry_who(e, w);
	e->ts = 0;
	e->key = 0;
	if (start ? ts + STALE_SKEW_NS < start : ts <= now && now - ts > stale_ns) {
		drop(DROP_INFLIGHT_STALE);
		return 0;
	}
	return ts;
}

/* A request's entry (issued, not completed), or NULL. */
static __always_inline struct inflight *rq_find(__u64 hctx, __u32 tag, __u64 ptr)
{
	struct inflight *e = rq_slot(hctx, tag, false);

	if (!e)
		return inflight_find(ptr);
	return e->key == ptr ? e : NULL;
}

#endif /* IOSTRATA_INFLIGHT_BPF_H */
