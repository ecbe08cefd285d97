/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The block layer's handlers, compiled twice by block.bpf.c: once for tp_btf programs, where
 * kernel structs are read by direct (BTF-checked) loads, once for raw_tp programs, where they
 * are read with bpf_probe_read_kernel. The including file defines:
 *   H(name)     the handler's name for this variant
 *   KR(p, ...)  read p->a->b... (a CO-RE relocated read chain)
 *   PTR_U64(p)  a struct pointer as a plain integer (in-flight keys)
 * No include guard: it is meant to be included more than once.
 */

/* v5.17 removed rq->rq_disk (f3fa33acca9f); v5.12 replaced bio->bi_disk (309dca309fc3) */
static __always_inline struct gendisk *H(rq_disk)(struct request *rq)
{
	struct request___old *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return KR(old, rq_disk);
	return KR(rq, q, disk);
}

/* The request's op and flags, with the PREFLUSH and FUA its first bio asked (bio_flush_flags) */
static __always_inline __u32 H(rq_opf)(struct request *rq)
{
	__u32 opf = KR(rq, cmd_flags);
	struct bio *bio;

	if (bio_flush_flags) {
		bio = KR(rq, bio);
		if (bio)
			opf |= KR(bio, bi_opf) & bio_flush_flags;
	}
	return opf;
}

static __always_inline struct gendisk *H(bio_disk)(struct bio *bio)
{
	struct bio___old *old = (void *)bio;

	if (bpf_core_field_exists(old->bi_disk))
		return KR(old, bi_disk);
	return KR(bio, bi_bdev, bd_disk);
}

/* The kernel's internal dev_t encoding (MINORBITS = 20), as /sys/class/block/X/dev decodes. */
static __always_inline __u32 H(disk_dev)(struct gendisk *disk)
{
	return ((__u32)KR(disk, major) << 20) | (__u32)KR(disk, first_minor);
}

/*
 * A bio's entry has dev 0, except an fsync's empty write's (REQ_OP_WRITE with PREFLUSH and no
 * data, the only empty write the block layer queues): its disk, so that the entry, if its end is
 * never seen, counts as complete_unseen (bio_leftover), at the stop too (the sweep of requests).
 */
static __always_inline __u32 H(bio_put_dev)(struct bio *bio, struct gendisk *disk)
{
	if ((KR(bio, bi_opf) & 0xff) != 1 /* REQ_OP_WRITE */ || KR(bio, bi_iter.bi_size))
		return 0;
	return H(disk_dev)(disk);
}

static __always_inline int H(on_bio_queue)(struct bio *bio)
{
	struct gendisk *disk = H(bio_disk)(bio);
	__u32 at = 0, link = REQ_LINK_NONE;
	struct ioreq *r = NULL;
	struct who w = {};
	__u64 id, now;
	bool self;

	if (!disk)
		return 0;
	/* bio-based devices (dm, md, zram) never build a request: nothing would consume the entry */
	if (!KR(disk, queue, mq_ops))
		return 0;
	if (filter_dev && H(disk_dev)(disk) != filter_dev)
		return 0;
	id = bpf_get_current_pid_tgid();
	/* iostrata's own bios are noted too, so that their request is known as ours and skipped */
	self = is_self(id);
	if (!self && !owner_passes(id)) {
		/*
		 * Not traced (-p, -c), so not noted; but a leftover at this address (a traced bio that
		 * ended without a request: REQ_NOWAIT and no tag free) would be taken for this one by
		 * its request, with the leftover's owner and link. Dropped, and counted.
		 */
		inflight_forget(PTR_U64(bio));
		return 0;
	}
	w.tgid = id >> 32;
	now = bpf_ktime_get_ns();
	/* queued by the submitter (or its io-wq / SQPOLL thread): same tgid as the request */
	if (link_reqs && !self && (r = req_of_bio(PTR_U64(bio), w.tgid, &at)) &&
	    r->tgid != w.tgid)
		r = NULL;
	if (r) {
		if (!r->bio_q)
			r->bio_q = now;
		link = at + 1;
	}
	if (owner_wanted()) {	/* snoop, -C: here, in the submitter, never at completion */
		if (r) {
			/* its request's submitter, noted where it submitted, named in req_comm */
			w.tid = r->tid;
			w.cgroup = r->cgroup;
		} else {
			w.tid = (__u32)id;
			w.cgroup = bpf_get_current_cgroup_id();
			if (!self)
				req_note_comm(w.tgid);
		}
	}
	inflight_put(PTR_U64(bio), now, link, &w, H(bio_put_dev)(bio, disk), true,
		     KR(bio, bi_opf) & req_nowait);
	return 0;
}

/*
 * A bio split to fit the queue's limits: the split-off front part is chained to its parent
 * (bi_private) and becomes a request of its own, so it inherits the parent's queue time.
 * bi_private is a void *: read as an integer in both variants (a direct load would type it).
 */
static __always_inline int H(on_split)(struct bio *split)
{
	struct inflight *parent = inflight_find((__u64)BPF_CORE_READ(split, bi_private));
	struct who w;

	if (!parent || !parent->ts)
		return 0;
	w.tgid = parent->tgid;
	w.tid = parent->tid;
	w.cgroup = parent->cgroup;
	inflight_put(PTR_U64(split), parent->ts, parent->bio_link, &w, 0, true, false);
	return 0;
}

/*
 * The earliest queue time among the request's bios (merges add bios at either end), consuming
 * their entries, and their link (*link): the one request owning every bio, or REQ_LINK_NONE
 * (no bio linked), or REQ_LINK_WALK (bios of several requests, or of both kinds, a bio not seen,
 * or more than BIO_WALK_MAX bios). Runs where the bios were queued (usually): their entries are
 * cache-hot here.
 */
static __always_inline __u64 H(bios_queued)(struct request *rq, __u64 now, struct who *who,
					    __u32 *link)
{
	__u64 queued = 0, ts, l;
	struct bio *bio = KR(rq, bio);
	struct who t = {};
	__u32 i;

	*link = REQ_LINK_NONE;
	for (i = 0; i < BIO_WALK_MAX && bio; i++) {
		l = REQ_LINK_WALK;
		ts = inflight_take(PTR_U64(bio), now, &l, &t);
		if (ts && (!queued || ts < queued)) {
			queued = ts;
			*who = t;
		}
		if (!ts)
			l = REQ_LINK_WALK;
		if (!i)
			*link = l;
		else if (l != *link)
			*link = REQ_LINK_WALK;
		bio = KR(bio, bi_next);
	}
	if (bio) {
		struct bio_walk w = { .bio = PTR_U64(bio), .now = now, .queued = queued,
				      .w = *who };

		bpf_loop(BIO_LOOP_MAX, bios_rest_one, &w, 0);
		queued = w.queued;
		*who = w.w;
		*link = REQ_LINK_WALK;
	}
	return queued;
}

/*
 * The request's tag, its own while in flight (inflight.bpf.h): the scheduler's when it has one,
 * else the driver's. -1 (BLK_MQ_NO_TAG) as a u32 is beyond every region.
 */
static __always_inline __u32 H(rq_tag)(struct request *rq)
{
	int t = KR(rq, internal_tag);

	return t >= 0 ? (__u32)t : (__u32)KR(rq, tag);
}

#define RQ_AT(rq)	PTR_U64(KR(rq, mq_hctx)), H(rq_tag)(rq)

static __always_inline int H(on_rq_issue)(struct request *rq)
{
	__u32 dev = INFLIGHT_DEV_ANY;
	__u32 link = REQ_LINK_NONE;
	struct who w = {};
	__u64 now, queued;

	/* the disk is read only where it is needed anyway: the sweep at stop can do without */
	if (filter_dev || per_disk) {
		struct gendisk *disk = H(rq_disk)(rq);

		dev = disk ? H(disk_dev)(disk) : INFLIGHT_DEV_ANY;
		if (filter_dev && dev != filter_dev)
			return 0;
	}
	now = bpf_ktime_get_ns();
	/* move the bios' queue time into the request's entry: completion then reads one entry */
	queued = queue_stages ? H(bios_queued)(rq, now, &w, &link) : 0;
	/* with a pid/cgroup filter, only requests holding a bio that passed it are tracked */
	if (owner_filtered() && !queued && !rq_find(RQ_AT(rq), PTR_U64(rq)))
		return 0;
	/* a requeued request is issued again: its entry is restamped, its queue time kept */
	rq_put(RQ_AT(rq), PTR_U64(rq), now, queued, &w, dev, link);
	return 0;
}

/*
 * A request given back to be issued again (a driver out of resources, a timeout, a flush
 * sequence): its next issue is the same I/O, not a new one after a completion no program saw.
 */
static __always_inline int H(on_rq_requeue)(struct request *rq)
{
	struct inflight *e = rq_find(RQ_AT(rq), PTR_U64(rq));

	if (e && e->ts) {
		e->requeued = 1;
		__sync_fetch_and_add(&requeues, 1);
	}
	return 0;
}

/*
 * Stamp the io_uring/aio requests whose bios this block request carried: the earliest issue and
 * the latest completion over all the block requests holding their bios. tgid is the request's
 * (its earliest bio's): aio bios of another process merged into it are not linked.
 */
static __always_inline void H(link_done)(struct request *rq, __u64 issued, __u64 now, __u32 tgid)
{
	struct bio *bio = KR(rq, bio);
	__u32 i, at;

	for (i = 0; i < BIO_WALK_MAX && bio; i++) {
		req_stamp_done(req_of_bio(PTR_U64(bio), tgid, &at), issued, now);
		bio = KR(bio, bi_next);
	}
	if (bio) {
		struct bio_walk w = { .bio = PTR_U64(bio), .now = now, .issued = issued,
				      .w.tgid = tgid };

		bpf_loop(BIO_LOOP_MAX, link_rest_one, &w, 0);
	}
}

/* snoop: a slow request, with its submitter (noted at its earliest bio) and its boundaries. */
static __always_inline void H(snoop_block)(struct request *rq, const struct who *w, __u64 queued,
					   __u64 issued, __u64 now)
{
	struct snoop_rec *r = snoop_reserve(SN_BLOCK);
	struct gendisk *disk;

	if (!r)
		return;
	r->ts[SN_BIO_QUEUED] = queued;
	r->ts[SN_ISSUE] = issued;
	r->ts[SN_DEVICE] = now;
	r->tgid = w->tgid;
	r->tid = w->tid;
	r->cgroup = w->cgroup;
	disk = H(rq_disk)(rq);
	if (disk)
		r->disk = H(disk_dev)(disk);
	r->opf = H(rq_opf)(rq);
	r->sector = KR(rq, __sector);
	r->bytes = KR(rq, __data_len);
	if (r->tgid)
		snoop_comm(r);
	snoop_submit(r);
}

/*
 * --lose-completions: is this final completion of a request the programs hold to be missed? A
 * flush request's takes with it the ends of the fsyncs' empty writes it ran for, which the kernel
 * ends in the same call (flush_end_io), as a completion the host runs no program for does: the
 * CPU notes it (lose_flush) until the next completion of a request held.
 */
static __always_inline bool H(lose)(struct request *rq)
{
	struct inflight *e = rq_find(RQ_AT(rq), PTR_U64(rq));
	__u32 zero = 0;
	__u64 *flush = bpf_map_lookup_elem(&lose_flush, &zero);
	struct bio *bio;

	if (!flush)
		return false;
	if (!e || !e->ts) {
		bio = KR(rq, bio);
		if (!*flush || !bio || KR(bio, bi_io_vec))
			return false;
		__sync_fetch_and_add(&lost_completions, 1);
		return true;
	}
	*flush = 0;
	if (__sync_fetch_and_add(&lose_tick, 1) % lose_every != lose_every - 1)
		return false;
	__sync_fetch_and_add(&lost_completions, 1);
	if ((KR(rq, cmd_flags) & 0xff) == 2 /* REQ_OP_FLUSH */)
		*flush = 1;
	return true;
}

static __always_inline int H(on_rq_complete)(struct request *rq, unsigned int nr_bytes)
{
	__u64 now, queued = 0, issued;
	struct block_hists *h;
	__u32 opf = 0, dev = 0, link = REQ_LINK_WALK;
	struct gendisk *disk;
	struct who w = {};

	/* partial completions leave the request in flight: only the final one counts */
	if (nr_bytes < KR(rq, __data_len))
		return 0;
	if (filter_dev || per_disk) {
		disk = H(rq_disk)(rq);
		if (disk)
			dev = H(disk_dev)(disk);
		if (filter_dev && dev != filter_dev)
			return 0;
	}
	if (lose_every && H(lose)(rq))
		return 0;

	now = bpf_ktime_get_ns();
	issued = rq_take(RQ_AT(rq), PTR_U64(rq), now, KR(rq, start_time_ns), &queued, &w, &link);
	/*
	 * Not issued, and ended with 0 bytes though its bio has data buffers: the second end of a
	 * write the kernel ran as a flush sequence (fseq_counted). Not counted again when its data
	 * part was; counted (unmeasured) when that ended before tracing began. (An empty flush's
	 * request, whose bio has no buffers, is never issued, a flush request standing for it: it
	 * is counted at its end, as the kernel counts it, beside that flush request.) A request
	 * with no bio at all, the flush request itself, is counted, unmeasured, when its issue was
	 * not seen: it was issued before tracing began, and /sys/block/DEV/inflight, which leaves
	 * flushes out, cannot tell.
	 */
	if (!issued && !nr_bytes && KR(rq, bio) && KR(rq, bio, bi_io_vec)) {
		if (!rqf_flush_seq || fseq_was_counted(PTR_U64(rq)))
			return 0;
	} else if (nr_bytes && KR(rq, rq_flags) & rqf_flush_seq) {
		fseq_note(PTR_U64(rq));		/* a flush sequence's data part, counted below */
	}
	/* issue not seen (before tracing began, or no block_rq_issue): the bios still hold it */
	if (!issued && queue_stages)
		queued = H(bios_queued)(rq, now, &w, &link);
	/* with a pid/cgroup filter, only requests holding a bio that passed it are counted */
	if (owner_filtered() && !queued)
		return 0;
	/* a request whose earliest bio iostrata queued itself is not traced */
	if (self_tgid && w.tgid == self_tgid)
		return 0;
	if (link_reqs && link == REQ_LINK_WALK)
		H(link_done)(rq, issued, now, w.tgid);
	else if (link_reqs && link != REQ_LINK_NONE)
		req_stamp_link(link, queued, issued, now);
	/* total when its bios were seen, else device; a request with neither is not timed */
	if (snoop_slow(queued ? queued : issued, now))
		H(snoop_block)(rq, &w, queued, issued, now);

	if (per_op)
		opf = H(rq_opf)(rq);
	h = hists_get(dev, opf, w.cgroup);
	if (!h)
		return 0;
	/* a stage whose start was not seen is counted as unmeasured, never as a made-up value */
	stage_add(&h->stage[BLOCK_DEVICE], issued, now);
	if (!queue_stages)	/* device alone (--stages): no bio is tracked */
		return 0;
	stage_add(&h->stage[BLOCK_WAIT], queued, issued);
	stage_add(&h->stage[BLOCK_TOTAL], queued, now);
	return 0;
}

#undef RQ_AT
