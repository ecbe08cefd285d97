// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata io_uring layer: where each request's time went.
 *
 *   submit_cqe   io_uring_submit_req (io_uring_submit_sqe before v6.4) -> io_uring_complete
 *   cqe_reap     io_uring_complete -> the first of this ring's later events that finds the CQ
 *                head past the CQE (an upper bound: reaping is a store in user memory)
 *   total        submitted -> reaped (bound as above)
 *   submit_bio, wait, device, device_cqe
 *                for requests whose bios the block programs linked (req.bpf.h): submitted ->
 *                first bio queued -> first block request issued -> last one completed -> CQE
 *
 * Requests live in the shared request table, keyed by the request pointer. Requests are
 * recycled: the pointer is unique only while in flight, so a request whose CQE never comes
 * (IOSQE_CQE_SKIP_SUCCESS, cancellation, a ring torn down) leaves an entry that is reclaimed,
 * and counted, when the pointer is reused or the entry grows stale.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iostrata.h"
#include "common.bpf.h"
#include "req.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";


#define IORING_SETUP_SQPOLL_BIT	(1U << 1)
#define ETIME_	62	/* a TIMEOUT's result when it expired: a success */
/*
 * A zero-copy send's second CQE, its notification (v6.1): posted by a request the kernel made
 * itself, never submitted, at an address a request whose CQE never came (CQE_SKIP_SUCCESS, an
 * overflowed CQE) may have left its entry: that entry is not this CQE's. Its send's own CQE is
 * the request's.
 */
#define IORING_CQE_F_NOTIF_	(1u << 3)

REQ_HIST_MAPS(uring);

/* Per ring (struct ring_state): user space maps it to free the slots of rings gone. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RING_TABLE_SLOTS);
	__type(key, __u32);
	__type(value, struct ring_state);
} rings SEC(".maps");

static __always_inline struct ring_state *ring_slot(__u32 h, __u32 i)
{
	__u32 idx = (h + i) & (RING_TABLE_SLOTS - 1);

	return bpf_map_lookup_elem(&rings, &idx);
}

/*
 * The top bits of the Fibonacci hash: io_ring_ctx objects sit at a fixed stride in their slab,
 * and the product's low bits (what table.bpf.h's masks keep, fine for its mostly empty tables)
 * spread 300 such addresses so unevenly over 512 slots that about 13 found their 8 probes taken
 * (a simulation of 2 KiB objects, 16 per slab); the top bits leave about 1 (random keys: 3).
 */
static __always_inline __u32 ring_hash(__u64 ctx)
{
	return table_hash(ctx, 0) >> (32 - RING_TABLE_BITS);
}

static __always_inline struct ring_state *ring_find(__u64 ctx)
{
	__u32 h = ring_hash(ctx), i;
	struct ring_state *rs;

	for (i = 0; i < RING_PROBES; i++) {
		rs = ring_slot(h, i);
		if (rs && rs->key == ctx)
			return rs;
	}
	return NULL;
}

/*
 * A slot for a ring: its own, else a free one, else the one idle longest if idle for
 * RING_IDLE_NS (a ring whose process has gone and whose slot user space has not freed yet, or
 * one at rest: ring_of counts its unreaped CQEs as unmeasured). NULL when every probe holds a
 * ring in use: the caller counts its CQEs' reaps as unmeasured, and the drop. A slot being
 * taken has ts 0 (user space zeroes it before freeing one; a takeover swaps it first), so two
 * CPUs never take one slot; a slot taken here has rings 0, so ring_of always starts it afresh.
 */
static __always_inline struct ring_state *ring_claim(__u64 ctx, __u64 now)
{
	struct ring_state *rs, *free = NULL, *idle = NULL;
	__u32 h = ring_hash(ctx), i;
	__u64 k, oldest = now, ts;

	for (i = 0; i < RING_PROBES; i++) {
		rs = ring_slot(h, i);
		if (!rs)
			return NULL;
		k = rs->key;
		if (k == ctx)
			return rs;
		ts = rs->ts;
		if (!k) {
			if (!free)
				free = rs;
		} else if (ts && ts < oldest) {
			oldest = ts;
			idle = rs;
		}
	}
	if (free && __sync_val_compare_and_swap(&free->key, 0, ctx) == 0) {
		rs = free;
	} else {
		/* another CPU may have just given this ring the free slot */
		rs = ring_find(ctx);
		if (rs)
			return rs;
		if (!idle || now - oldest <= RING_IDLE_NS ||
		    __sync_val_compare_and_swap(&idle->ts, oldest, 0) != oldest)
			return NULL;
		rs = idle;
		rs->key = ctx;
	}
	rs->rings = 0;
	rs->ts = now;
	return rs;
}

/* The idle clock, written every RING_TS_STEP_NS at most: the line is shared across CPUs. */
static __always_inline void ring_touch(struct ring_state *rs, __u64 now)
{
	__u64 ts = rs->ts;

	if (ts && now - ts > RING_TS_STEP_NS)
		rs->ts = now;
}

/* A tracepoint argument as an integer, whether the program type typed it or not. */
static __always_inline __u64 arg_u64(__u64 *ctx, int i)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &ctx[i]);
	return v;
}

static __always_inline struct ioreq_hists *hists_of(__u16 opcode, __u16 flags, __u32 tgid,
						    __u64 cgroup)
{
	return req_hists_of(&uring_hists, &uring_flat, &uring_zero, HIST_SPILL_ARGS(uring), opcode,
			    flags, tgid, cgroup);
}

struct reap_ctx {
	struct ring_state *rs;
	__u32 from;
	__u64 now;
};

static long reap_one(__u64 i, struct reap_ctx *c)
{
	__u32 idx = c->from + (__u32)i;
	struct ring_cqe *q = &c->rs->cqe[idx & (RING_SLOTS - 1)];
	struct ioreq_hists *h;
	__u64 posted;

	if (q->idx != idx || !q->posted)
		return 0;
	/* taken, not read and cleared: a CPU or user space forgetting it at once must not count it */
	posted = __sync_lock_test_and_set(&q->posted, 0);
	if (!posted)
		return 0;
	h = hists_of(q->opcode, q->flags, c->rs->owner, q->cgroup);
	if (h) {
		stage_add(&h->stage[REQ_DONE_REAP], posted, c->now);
		stage_add(&h->stage[REQ_TOTAL], q->submitted, c->now);
	}
	return 0;
}

/*
 * Any event of a ring is a moment to read its CQ head: every CQE behind it was reaped before
 * now. Two CPUs may look at once: the one that moves rs->head accounts for the CQEs it passed.
 */
static __always_inline void reap_check_head(struct ring_state *rs, __u32 head, __u64 now)
{
	__u32 old = rs->head, n;
	struct reap_ctx c = { .rs = rs, .now = now };

	if (head == old || __sync_val_compare_and_swap(&rs->head, old, head) != old)
		return;
	n = head - old;
	if (n > RING_SLOTS) {	/* posted before tracing began, or overwritten: see ring_post */
		old = head - RING_SLOTS;
		n = RING_SLOTS;
	}
	c.from = old;
	bpf_loop(n, reap_one, &c, 0);
}

/* The CQ head read through the io_rings that ring_of() noted. */
static __always_inline void reap_check(struct ring_state *rs, __u64 now)
{
	struct io_rings *rings = (void *)rs->rings;

	reap_check_head(rs, BPF_CORE_READ(rings, cq.head), now);
}

/*
 * A CQE of a ring gone (a new ring took its ctx or its slot) whose reap no event bounded:
 * counted as unmeasured in cqe_reap and total, so that every CQE posted is in both, timed or not.
 */
static long forget_one(__u64 i, struct reap_ctx *c)
{
	struct ring_cqe *q = &c->rs->cqe[i & (RING_SLOTS - 1)];
	struct ioreq_hists *h;

	if (!q->posted || !__sync_lock_test_and_set(&q->posted, 0))
		return 0;
	h = hists_of(q->opcode, q->flags, c->rs->owner, q->cgroup);
	if (h) {
		hist_unmeasured(&h->stage[REQ_DONE_REAP]);
		hist_unmeasured(&h->stage[REQ_TOTAL]);
	}
	return 0;
}

/*
 * The state of the ring at ctx `key`, with its io_rings as an integer, the CQ head as read now,
 * and the process the request is of; NULL when the table has no slot for it. A ring
 * closed and another made at once can get the same ctx and io_rings addresses before user space
 * frees the old one's slot: the old ring's last CQEs, never reaped, were then taken for the new
 * ring's, and counted as reap_unseen when it reached their slots (most likely what a test saw
 * once: 4 reap_unseen after a qd-4 load's ring closed and the next load's opened). A ring is
 * its process's, so a new process is a new ring too. (A ring shared over fork then restarts as
 * each process uses it: its CQEs in between are counted unmeasured in cqe_reap and total, never
 * lost.)
 */
static __always_inline struct ring_state *ring_of(__u64 key, __u64 r, __u32 head, __u32 tgid,
						  __u64 now)
{
	struct ring_state *rs = ring_find(key);
	struct io_ring_ctx *ctx = (void *)key;

	/* a slot taken from an idle ring keeps that ring's owner and CQEs: forgotten below */
	if (!rs && !(rs = ring_claim(key, now)))
		return NULL;
	if (rs->rings != r || rs->owner != tgid) {
		/* new, or a new ring at a freed one's ctx: its CQEs are not ours to bound */
		struct reap_ctx c = { .rs = rs };

		if (rs->owner)
			bpf_loop(RING_SLOTS, forget_one, &c, 0);
		rs->head = head;
		rs->owner = tgid;
		rs->sqpoll = !!(BPF_CORE_READ(ctx, flags) & IORING_SETUP_SQPOLL_BIT);
		rs->rings = r;
	}
	ring_touch(rs, now);
	return rs;
}

/* The opcodes that move data, so could have bios (UAPI numbers: fixed across kernels) */
static __always_inline bool uring_rw(__u8 op)
{
	return op == IORING_OP_READV || op == IORING_OP_WRITEV || op == IORING_OP_READ_FIXED ||
	       op == IORING_OP_WRITE_FIXED || op == IORING_OP_READ || op == IORING_OP_WRITE;
}

/*
 * What a submission needs from the kernel, read by the caller: by direct (BTF-checked) loads
 * in tp_btf programs, by bpf_probe_read_kernel in their raw_tp twins.
 */
struct submit_view {
	__u64 req, ctx, rings;	/* pointers as integers */
	__u32 head;		/* the ring's CQ head */
	__u32 rflags;		/* low word of req->flags */
	__u8 opcode;
};

static __always_inline int on_submit(const struct submit_view *v, __u64 id, __u64 now)
{
	struct ring_state *rs;
	__u32 tgid = id >> 32;
	struct ioreq *e;
	bool existed;

	req_note_comm(tgid);
	rs = ring_of(v->ctx, v->rings, v->head, tgid, now);
	if (rs)
		reap_check_head(rs, v->head, now);

	e = req_tab_claim(v->req, 0, now, &existed);
	if (!e)
		return 0;
	if (existed)	/* its CQE never came (CQE_SKIP_SUCCESS, cancelled): reclaimed */
		drop(DROP_INFLIGHT_REUSED);
	e->opcode = v->opcode;
	e->flags = uring_rw(e->opcode) ? REQ_FL_RW : 0;
	/* REQ_F_LINK/HARDLINK share IOSQE_IO_LINK/HARDLINK's bits 2 and 3 in every version */
	if (v->rflags & (3u << 2))
		e->flags |= REQ_FL_CHAIN;
	if (rs && rs->sqpoll)
		e->flags |= REQ_FL_SQPOLL;
	req_note_owner(e, id, owner_cgroup());
	e->bio_q = e->issue = e->done = 0;
	e->ts = now;
	return 0;
}

/*
 * A request whose CQE must not be timed from the entry at its address, which is then an earlier
 * request's whose CQE never came (IOSQE_CQE_SKIP_SUCCESS): reclaimed and counted, as a traced
 * submission at the address would (on_submit). Two such requests:
 * - one that failed before its submission event (io_init_req: a bad opcode, fd or flag): its
 *   CQE comes, but its submission was never seen, so it is not counted, as a request submitted
 *   before tracing began is not. Where the kernel fails a linked request here after its
 *   submission event (v6.1: its async prep failing), its own entry goes, counted the same way,
 *   and its CQE is not counted (never a time from another request);
 * - one submitted by a process not traced (-p, -c, iostrata's own: submit_*).
 */
static __always_inline int req_forget(__u64 req)
{
	struct ioreq *e = req_tab_find(req, 0);

	if (!e)
		return 0;
	req_tab_free(e, req, 0);
	drop(DROP_INFLIGHT_REUSED);
	return 0;
}

static __always_inline int on_flag(__u64 req, __u16 flag)
{
	struct ioreq *e = req_tab_find(req, 0);

	if (e)
		e->flags |= flag;
	return 0;
}

/*
 * What a CQE needs from the kernel, read by the caller: by direct loads where the prototype types
 * the ring and the CQE (tp_btf, v6.x), else by bpf_probe_read_kernel.
 */
struct complete_view {
	__u64 req, ctx, rings;	/* pointers as integers */
	__u32 head;		/* the ring's CQ head */
	/*
	 * The ring's cached CQ tail: io_uring_complete fires once the CQE has its slot and the
	 * tail has moved past it, so the CQE's free-running index is tail - 1 (v6.1 and v6.18
	 * alike; seen on both: a wrong guess shows as every reap bounded one CQE late).
	 */
	__u32 tail;
	int res;
};

/* snoop: a slow request, at its CQE (its reap is bounded later, in the histograms only) */
static __always_inline void snoop_uring(const struct ioreq *e, const struct complete_view *v,
					__u64 now)
{
	struct snoop_rec *r = req_snoop(e, SN_URING, SN_CQE, now);
	struct io_kiocb *req = (void *)v->req;	/* a local: v is ours, out of CO-RE's reach */
	struct file *f;

	if (!r)
		return;
	r->res = v->res;
	f = BPF_CORE_READ(req, file);
	if (f)
		snoop_file(r, f);
	snoop_comm(r);
	snoop_submit(r);
}

static __always_inline int on_complete(struct ioreq *e, const struct complete_view *v)
{
	struct ioreq_hists *h;
	struct ring_state *rs;
	struct ring_cqe *q;
	__u64 now, ts, cgroup;
	__u32 idx, tgid;
	__u16 opcode, flags;

	now = bpf_ktime_get_ns();
	ts = e->ts;
	opcode = e->opcode;
	flags = e->flags;
	tgid = e->tgid;
	cgroup = e->cgroup;
	if (v->res < 0 && !(opcode == IORING_OP_TIMEOUT && v->res == -ETIME_))
		flags |= REQ_FL_FAILED;
	/*
	 * No age limit: the entry at this request's address is its own, whatever its age (a read
	 * on a hung device, a long POLL_ADD). Every submission at an address claims it afresh, or
	 * forgets what is there when its process is not traced (submit_*); one that failed before
	 * its event frees it (req_forget).
	 */
	if (!ts || now < ts) {
		req_tab_free(e, v->req, 0);
		if (ts)
			drop(DROP_INFLIGHT_STALE);
		return 0;
	}
	if (snoop_slow(ts, now))
		snoop_uring(e, v, now);
	h = hists_of(opcode, flags & REQ_FL_KEY, tgid, cgroup);
	if (h) {
		stage_add(&h->stage[REQ_SUBMIT_DONE], ts, now);
		req_linked_stages(h, e, now, true);
	}
	req_tab_free(e, v->req, 0);

	rs = ring_of(v->ctx, v->rings, v->head, tgid, now);
	if (!rs) {		/* no slot for the ring: this CQE's reap cannot be bounded */
		drop(DROP_RING_FULL);
		if (h) {
			hist_unmeasured(&h->stage[REQ_DONE_REAP]);
			hist_unmeasured(&h->stage[REQ_TOTAL]);
		}
		return 0;
	}
	reap_check_head(rs, v->head, now);
	idx = v->tail - 1;
	q = &rs->cqe[idx & (RING_SLOTS - 1)];
	if (q->posted)		/* more than RING_SLOTS CQEs unreaped: that one's reap is unseen */
		drop(DROP_REAP_UNSEEN);
	q->submitted = ts;
	q->idx = idx;
	q->opcode = opcode;
	q->flags = flags & REQ_FL_KEY;
	if (per_cgroup)
		q->cgroup = cgroup;
	q->posted = now;
	return 0;
}

/*
 * Any prototype: ring and request as untyped pointers, the result and the CQE's flags read
 * from the request (what the event's own arguments carry, where it has them).
 */
static __always_inline int complete_read(struct io_ring_ctx *ctx, struct io_kiocb *req)
{
	struct complete_view v = { .req = (__u64)req, .ctx = (__u64)ctx };
	struct io_rings *rings;
	struct ioreq *e;

	if (!req)		/* an extra CQE tied to no request */
		return 0;
	e = req_tab_find((__u64)req, 0);
	if (!e || BPF_CORE_READ(req, cqe.flags) & IORING_CQE_F_NOTIF_)
		return 0;
	rings = BPF_CORE_READ(ctx, rings);
	v.rings = (__u64)rings;
	v.head = BPF_CORE_READ(rings, cq.head);
	v.tail = BPF_CORE_READ(ctx, cached_cq_tail);
	v.res = BPF_CORE_READ(req, cqe.res);
	return on_complete(e, &v);
}

static __always_inline int on_wait(struct io_ring_ctx *ctx)
{
	struct ring_state *rs = ring_find((__u64)ctx);
	__u64 now;

	if (!rs)
		return 0;
	now = bpf_ktime_get_ns();
	ring_touch(rs, now);	/* waiting is not idle: the ring keeps its slot */
	reap_check(rs, now);
	return 0;
}

/* tp_btf programs and raw_tp twins; the loader keeps one event name for submission. */
#define TWIN(event, call)						\
SEC("tp_btf/" #event) int tp_btf_##event(__u64 *ctx) { return call; }	\
SEC("raw_tp/" #event) int raw_tp_##event(__u64 *ctx) { return call; }

#define ARGP(i)	((void *)arg_u64(ctx, i))

/* Submission, the hot path: direct loads in tp_btf (the argument is a typed io_kiocb *) */
static __always_inline int submit_btf(__u64 *ctx)
{
	struct io_kiocb *req = (void *)ctx[0];
	__u64 id = bpf_get_current_pid_tgid();
	struct submit_view v = {};
	struct io_ring_ctx *rctx;
	struct io_rings *rings;

	if (!req)
		return 0;
	if (!owner_passes(id))
		return req_forget(btf_ptr_u64(req));
	rctx = req->ctx;
	rings = rctx->rings;
	v.req = btf_ptr_u64(req);
	v.ctx = btf_ptr_u64(rctx);
	v.rings = btf_ptr_u64(rings);
	v.head = rings->cq.head;
	v.opcode = req->opcode;
	v.rflags = (__u32)req->flags;	/* 32 bits before v6.10, 64 after: CO-RE sizes the load */
	return on_submit(&v, id, bpf_ktime_get_ns());
}

static __always_inline int submit_raw(__u64 *ctx)
{
	struct io_kiocb *req = (void *)arg_u64(ctx, 0);
	__u64 id = bpf_get_current_pid_tgid();
	struct submit_view v = { .req = (__u64)req };
	struct io_ring_ctx *rctx;
	struct io_rings *rings;

	if (!req)
		return 0;
	if (!owner_passes(id))
		return req_forget((__u64)req);
	rctx = BPF_CORE_READ(req, ctx);
	rings = BPF_CORE_READ(rctx, rings);
	v.ctx = (__u64)rctx;
	v.rings = (__u64)rings;
	v.head = BPF_CORE_READ(rings, cq.head);
	v.opcode = BPF_CORE_READ(req, opcode);
	/* the field grew from 32 to 64 bits (v6.10): its low word is first on little-endian */
	bpf_probe_read_kernel(&v.rflags, sizeof(v.rflags),
			      (void *)req + bpf_core_field_offset(struct io_kiocb, flags));
	return on_submit(&v, id, bpf_ktime_get_ns());
}

#define SUBMIT(event)								\
SEC("tp_btf/" #event) int tp_btf_##event(__u64 *ctx) { return submit_btf(ctx); }	\
SEC("raw_tp/" #event) int raw_tp_##event(__u64 *ctx) { return submit_raw(ctx); }

SUBMIT(io_uring_submit_req)
SUBMIT(io_uring_submit_sqe)
TWIN(io_uring_queue_async_work, on_flag(arg_u64(ctx, 0), REQ_FL_PUNTED))
TWIN(io_uring_poll_arm, on_flag(arg_u64(ctx, 0), REQ_FL_POLL))
TWIN(io_uring_complete, complete_read(ARGP(0), ARGP(1)))
/* (sqe, req, error) since v6.0; v5.19 had the ring before the request (not attached: nargs) */
TWIN(io_uring_req_failed, req_forget(arg_u64(ctx, 1)))

/*
 * The prototype that types the ring and the CQE, (struct io_ring_ctx *, void *req,
 * struct io_uring_cqe *): every read a direct load. The loader picks it from BTF when the
 * kernel has it, else the twins above (v6.1: the ring is a void *, the CQE's fields scalars).
 */
SEC("tp_btf/io_uring_complete")
int tp_btf_io_uring_complete_typed(__u64 *ctx)
{
	struct io_ring_ctx *rctx = (void *)ctx[0];
	struct io_uring_cqe *cqe = (void *)ctx[2];
	struct complete_view v;
	struct io_rings *rings;
	struct ioreq *e;

	if (!ctx[1])
		return 0;
	e = req_tab_find(ctx[1], 0);
	if (!e || cqe->flags & IORING_CQE_F_NOTIF_)	/* a notification: not its entry */
		return 0;
	rings = rctx->rings;
	v.req = ctx[1];
	v.ctx = btf_ptr_u64(rctx);
	v.rings = btf_ptr_u64(rings);
	v.head = rings->cq.head;
	v.tail = rctx->cached_cq_tail;
	v.res = cqe->res;
	return on_complete(e, &v);
}
TWIN(io_uring_cqring_wait, on_wait(ARGP(0)))
TWIN(io_uring_cqe_overflow, (count_event(EV_CQE_OVERFLOW), 0))
