/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The request table (struct ioreq in iostrata.h) that the io_uring, aio and block objects share:
 * the loader creates it once and hands each object its fd before load.
 *
 * Linking a bio to its request: the bio's bi_end_io says who owns it. For the O_DIRECT paths
 * (iomap filesystems, raw block devices) the owner leads to the kiocb; the kiocb's ki_complete
 * says whether io_uring (kiocb == io_kiocb: io_rw sits at offset 0 of the request) or aio (kiocb
 * == aio_kiocb, whose ki_res holds the user's iocb pointer and aio_data) submitted it. The function
 * addresses come from /proc/kallsyms through .rodata; 0 = not found, that path not linked.
 * Buffered I/O (page cache end_io) has no such link: its requests stay unlinked.
 */
#ifndef IOSTRATA_REQ_BPF_H
#define IOSTRATA_REQ_BPF_H

#include "table.bpf.h"
#include "common.bpf.h"

const volatile __u32 req_mask = REQ_SLOTS_DEFAULT - 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, ENTRY_MAP_FLAGS);
	__uint(max_entries, REQ_SLOTS_DEFAULT);
	__type(key, __u32);
	__type(value, struct ioreq);
} reqs SEC(".maps");

TABLE(req_tab, struct ioreq, reqs, req_mask)

/* Events of the traced applications (enum app_event), counted per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EV_NEVENTS);
	__type(key, __u32);
	__type(value, __u64);
} app_events SEC(".maps");

static __always_inline void count_event(__u32 ev)
{
	counter_inc(&app_events, ev);
}

/* bi_end_io and ki_complete functions, from /proc/kallsyms */
const volatile __u64 endio_iomap;		/* iomap_dio_bio_end_io */
const volatile __u64 endio_blkdev;		/* blkdev_bio_end_io */
const volatile __u64 endio_blkdev_async;	/* blkdev_bio_end_io_async */
const volatile __u64 endio_chain;		/* bio_chain_endio */
const volatile __u64 kc_uring;			/* io_complete_rw */
const volatile __u64 kc_uring_iopoll;		/* io_complete_rw_iopoll */
const volatile __u64 kc_aio;			/* aio_complete_rw */

/*
 * A request layer's histogram maps: prefix_hists, per-CPU by struct ioreq_key (preallocated:
 * see hist_map_keys() in user/layer.c; resized by the loader), and its spill maps for the keys
 * it has no room for (HIST_SPILL_MAPS); prefix_flat, without -O, -P and -C, the same
 * histograms at path flags * 2 + generation for the path flags below flat_per_gen (1 slot when
 * unused); prefix_zero, one zeroed value to create hash keys from (too big for the stack).
 */
#define REQ_HIST_MAPS(prefix)							\
struct {									\
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);					\
	__uint(max_entries, 1024);						\
	__type(key, struct ioreq_key);						\
	__type(value, struct ioreq_hists);					\
} prefix##_hists SEC(".maps");							\
HIST_SPILL_MAPS(prefix, struct ioreq_key, struct ioreq_hists);			\
struct {									\
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);				\
	__uint(max_entries, REQ_FLAT_SLOTS);					\
	__type(key, __u32);							\
	__type(value, struct ioreq_hists);					\
} prefix##_flat SEC(".maps");							\
struct {									\
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);				\
	__uint(max_entries, 1);							\
	__type(key, __u32);							\
	__type(value, struct ioreq_hists);					\
} prefix##_zero SEC(".maps")

/* Histogram keys of the io_uring and aio layers: -P and -O */
const volatile bool per_process;
const volatile bool per_opcode;
/*
 * Neither -O, -P nor -C: a key is its generation and path flags, an array slot (flat) for the
 * path flags below this (all REQ_FLAT_PER_GEN where the budget holds them, the commonest
 * ones on hosts with many CPUs: plain, io-wq, poll), a hash key for the others. 0: no array.
 */
const volatile __u32 flat_per_gen;

/*
 * The histograms of a request's key: in `flat`, a per-CPU array the JIT inlines, when the key
 * is (generation, path flags) alone and the array has its slot; else in `map`, a per-CPU hash.
 * Looked up at every CQE and every reap, so the array spares two hash lookups per request.
 */
static __always_inline struct ioreq_hists *req_hists_of(void *map, void *flat, void *zero,
							void *spill, void *spill_idx,
							void *spill_free, __u16 opcode,
							__u16 flags, __u32 tgid, __u64 cgroup)
{
	struct ioreq_key key = { .gen = cur_gen(), .flags = flags };

	if ((flags & REQ_FL_KEY) < flat_per_gen) {
		__u32 idx = (flags & REQ_FL_KEY) * 2 + key.gen;

		return bpf_map_lookup_elem(flat, &idx);
	}

	key.opcode = per_opcode ? opcode : 0xffff;
	key.tgid = per_process ? tgid : 0;
	key.cgroup = key_cgroup(cgroup);
	return hists_lookup_or_init(map, &key, zero, spill, spill_idx, spill_free);
}

/* A new entry's submitter, where it runs: its thread and cgroup for snoop and -C. */
static __always_inline void req_note_owner(struct ioreq *e, __u64 id, __u64 cgroup)
{
	e->tgid = id >> 32;
	if (owner_wanted()) {
		e->tid = (__u32)id;
		e->cgroup = cgroup;
	}
}

/* snoop: a slow request's record with its entry's boundaries; ended at `end` of slot `slot`. */
static __always_inline struct snoop_rec *req_snoop(const struct ioreq *e, __u8 layer, int slot,
						   __u64 end)
{
	struct snoop_rec *r = snoop_reserve(layer);

	if (!r)
		return NULL;
	r->ts[SN_SUBMIT] = e->ts;
	if (e->bio_q) {
		r->ts[SN_BIO_QUEUED] = e->bio_q;
		r->ts[SN_ISSUE] = e->issue;
		r->ts[SN_DEVICE] = e->done;
	}
	if (slot == SN_CQE)
		r->ts[SN_CQE] = end;
	else
		r->ts[SN_END] = end;
	r->tgid = e->tgid;
	r->tid = e->tid;
	r->cgroup = e->cgroup;
	r->code = e->opcode;
	r->flags = e->flags;
	return r;
}

/*
 * -P and snoop: each submitting process's name, kept so that it is known after the process
 * exits. A per-CPU note of the last process seen (its tgid and its mm) spares the work on
 * every request of a steady load; a new tgid or a new mm (an exec, or the pid reused) reads the
 * name again and replaces a stale one (a process that exec'd dd after python3 was named
 * python3 for good).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, REQ_COMM_SLOTS);
	__type(key, __u32);
	__type(value, char[16]);
} req_comm SEC(".maps");

struct comm_seen {
	__u64 mm;
	__u32 tgid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct comm_seen);
} comm_last SEC(".maps");

static __always_inline void req_note_comm(__u32 tgid)
{
	struct task_struct *t;
	struct comm_seen *last;
	__u32 zero = 0;
	__u64 mm, *had;
	char comm[16] = {};

	if (!per_process && !snoop)
		return;
	t = (void *)bpf_get_current_task();
	/* a direct load where the kernel allows (KFIELD): this runs at every request */
	mm = KADDR(KFIELD(struct task_struct, t, mm));
	last = bpf_map_lookup_elem(&comm_last, &zero);
	if (last && last->tgid == tgid && last->mm == mm)
		return;
	if (last) {
		last->tgid = tgid;
		last->mm = mm;
	}
	/* the process's name: the submitter may be its io-wq or SQPOLL thread */
	BPF_CORE_READ_STR_INTO(&comm, t, group_leader, comm);
	had = bpf_map_lookup_elem(&req_comm, &tgid);
	if (!had || had[0] != ((__u64 *)comm)[0] || had[1] != ((__u64 *)comm)[1])
		bpf_map_update_elem(&req_comm, &tgid, comm, BPF_ANY);
}

/*
 * A slow request's record takes its submitter's name now, as it is noted at this moment: read
 * when the record was decoded, a name noted since (an exec, the pid reused) took its place.
 */
static __always_inline void snoop_comm(struct snoop_rec *r)
{
	__u32 tgid = r->tgid;	/* the key on the stack: every kernel takes that */
	char *name = bpf_map_lookup_elem(&req_comm, &tgid);

	if (name)
		__builtin_memcpy(r->comm, name, sizeof(r->comm));
}

/*
 * An aio request's table key: the user address of its struct iocb, mixed with the iocb's
 * aio_data. The kernel copies an iocb at io_submit, so an application may submit one struct again
 * while the first submission is in flight; both completions then name the same address
 * (io_event.obj). aio_data, handed back in io_event.data and kept in the kernel's aio_kiocb
 * (ki_res.data), tells them apart wherever the application sets it, as it must to tell its own
 * completions apart. aio_data 0 leaves the address alone.
 */
static __always_inline __u64 aio_key(__u64 obj, __u64 data)
{
	__u64 k = obj ^ (data * 0x9e3779b97f4a7c15ULL);

	return k ? k : obj;	/* 0 marks a free slot */
}

/*
 * The request that owns bio, or NULL, and its slot in the request table (*at). tgid: the aio
 * submitter's (aio keys are user pointers). Five to seven dependent reads per bio: done where
 * the bio is queued, and again at completion only where its link was not carried (REQ_LINK_WALK).
 * Direct loads where the kernel allows (KFIELD).
 */
static __always_inline struct ioreq *req_of_bio(__u64 bio, __u32 tgid, __u32 *at)
{
	void *end = KFIELD(struct bio, bio, bi_end_io), *priv = KFIELD(struct bio, bio, bi_private);
	struct kiocb *iocb;
	void *kc;

	if (!end)
		return NULL;
	if ((__u64)end == endio_chain) {
		/* a split-off part (rare): its parent, an address in either mode, has the owner */
		bio = (__u64)priv;
		end = BPF_CORE_READ((struct bio *)bio, bi_end_io);
		priv = BPF_CORE_READ((struct bio *)bio, bi_private);
		if (!end)
			return NULL;
	}
	if ((__u64)end == endio_iomap)
		iocb = KFIELD(struct iomap_dio, priv, iocb);
	else if ((__u64)end == endio_blkdev)
		iocb = KFIELD(struct blkdev_dio, priv, iocb);
	else if ((__u64)end == endio_blkdev_async)	/* the bio is embedded in its blkdev_dio */
		iocb = KFIELD(struct blkdev_dio, bio - bpf_core_field_offset(struct blkdev_dio, bio),
			      iocb);
	else
		return NULL;
	if (!iocb)
		return NULL;
	kc = KFIELD(struct kiocb, iocb, ki_complete);
	if (!kc)
		return NULL;
	if ((__u64)kc == kc_uring || (__u64)kc == kc_uring_iopoll)
		return req_tab_find_at(KADDR(iocb), 0, at);
	if ((__u64)kc == kc_aio && tgid)
		return req_tab_find_at(aio_key(KFIELD(struct aio_kiocb, iocb, ki_res.obj),
					       KFIELD(struct aio_kiocb, iocb, ki_res.data)), tgid, at);
	return NULL;
}

/*
 * A block request holding r's bios was issued at `issued` (0 = not seen) and completed now:
 * r keeps the earliest issue and the latest completion over all of them.
 */
static __always_inline void req_stamp_done(struct ioreq *r, __u64 issued, __u64 now)
{
	if (!r || !r->bio_q)
		return;
	if (issued && (!r->issue || issued < r->issue))
		r->issue = issued;
	if (now > r->done)
		r->done = now;
}

/*
 * req_stamp_done for the request whose slot the bios carried (link: slot + 1): the one request
 * owning every bio of this block request, the earliest queued at `queued`. The slot is still that
 * request's: its bios are completing, so it has posted no CQE. A slot taken over meanwhile
 * (the request reclaimed as stale after stale_ns in flight) holds a request submitted
 * after those bios were queued: not stamped.
 */
static __always_inline void req_stamp_link(__u32 link, __u64 queued, __u64 issued, __u64 now)
{
	__u32 at = link - 1;
	struct ioreq *r = bpf_map_lookup_elem(&reqs, &at);
	__u64 ts;

	if (!r)
		return;
	ts = r->ts;
	if (r->key && ts && ts <= queued)
		req_stamp_done(r, issued, now);
}

/*
 * A request's stages from its entry, at its end (CQE posted / event reaped). A read or write
 * with no bio linked counts as unmeasured in the linked stages: their `unmeasured` is the
 * unlinked count.
 */
static __always_inline void req_linked_stages(struct ioreq_hists *h, struct ioreq *e, __u64 end,
					      bool device_cqe)
{
	__u64 issue = e->issue, done = e->done;

	if (!e->bio_q && !(e->flags & REQ_FL_RW))
		return;		/* not a read or write: no bios to link, so not "unlinked" either */

	stage_add(&h->stage[REQ_SUBMIT_BIO], e->bio_q ? e->ts : 0, e->bio_q);
	stage_add(&h->stage[REQ_WAIT], done ? e->bio_q : 0, issue);
	stage_add(&h->stage[REQ_DEVICE], e->bio_q ? issue : 0, done);
	if (device_cqe)
		stage_add(&h->stage[REQ_DEVICE_CQE], e->bio_q ? done : 0, end);
}

#endif /* IOSTRATA_REQ_BPF_H */
