// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata block layer: per-disk, per-op latency of the blk-mq path, in three stages.
 *
 *   wait    block_bio_queue (earliest bio of the request) -> block_rq_issue
 *   device  block_rq_issue                                -> block_rq_complete (final)
 *   total   block_bio_queue (earliest bio of the request) -> block_rq_complete (final)
 *
 * Every boundary is our own bpf_ktime_get_ns() at the event. The kernel's rq->start_time_ns and
 * io_start_time_ns are not used: since v6.9 they come from a per-plug cached clock, so two
 * of them taken within one plug can be equal, and they are unset when block statistics are off.
 *
 * Attribution and filters are decided where the submitter runs (block_bio_queue); completion
 * runs in interrupt context and only consumes what was recorded there. Every program has a
 * tp_btf and a raw_tp twin over the same handler; the loader keeps the one the kernel offers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "iostrata.h"
#include "compat.bpf.h"
#include "common.bpf.h"
#include "inflight.bpf.h"
#include "req.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load; frozen afterwards, so the verifier prunes what they disable. */
const volatile __u32 filter_dev;	/* whole-disk dev_t, 0 = all */
const volatile bool per_disk;
const volatile bool per_op;
const volatile bool link_reqs;	/* an io_uring or aio layer runs: link their requests' bios */
/* wait and total are asked for (or bios are needed by -p/-c or linking): bios are tracked */
const volatile bool queue_stages = true;
const volatile __u32 flags_mask;	/* request flag bits kept in the key (per-flags mode) */
/*
 * REQ_PREFLUSH | REQ_FUA as this kernel numbers them, when -F or snoop shows flags: a write the
 * kernel runs as a flush sequence has them cleared from its request (blk_insert_flush), so they
 * are taken from the request's first bio, which keeps what was asked. 0: not wanted.
 */
const volatile __u32 bio_flush_flags;
/* REQ_NOWAIT as this kernel numbers it (relocated at load): a bio that must not wait */
#define req_nowait	(1u << bpf_core_enum_value(enum req_flag_bits, __REQ_NOWAIT))
/* Index of the pointer argument: 1 where the prototype still has a request_queue first. */
const volatile __u32 rq_issue_arg;
const volatile __u32 rq_requeue_arg;
const volatile __u32 bio_queue_arg;
const volatile __u32 split_arg;
/*
 * --lose-completions (testing): the programs miss the final completion of every lose_every-th
 * request they hold, as the kernel sometimes makes them (docs/trust.md, "complete_unseen"), so
 * that tests can check each such request is counted. 0: never (the verifier drops the code).
 * lost_completions: how many were missed so.
 */
const volatile __u32 lose_every;
__u64 lose_tick, lost_completions;
/* per CPU: 1 from a flush request's completion missed on purpose to the next one held */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lose_flush SEC(".maps");
/* Requests held that were requeued (shown by -v at the stop): rare, so one shared counter. */
__u64 requeues;

/* Per disk and/or per op: one histogram set per key, created on first use. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	/* preallocated: see hist_map_keys() in user/layer.c */
	__uint(max_entries, 64);		/* resized by the loader */
	__type(key, struct block_key);
	__type(value, struct block_hists);
} block_hists SEC(".maps");
HIST_SPILL_MAPS(block, struct block_key, struct block_hists);

/* Whole host (no -D/-F): one histogram set per generation, an array lookup the JIT inlines. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct block_hists);
} block_total SEC(".maps");

/* One zeroed value to create new histogram keys from (values are too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct block_hists);
} block_zero SEC(".maps");

static __always_inline bool owner_filtered(void)
{
	return filter_tgid || filter_cgroup;
}

static __always_inline struct block_hists *hists_get(__u32 dev, __u32 opf, __u64 cgroup)
{
	struct block_key key = { .op = BLOCK_OP_ANY };
	__u32 g = cur_gen();

	if (!per_disk && !per_op && !per_cgroup)
		return bpf_map_lookup_elem(&block_total, &g);
	key.gen = g;
	key.cgroup = key_cgroup(cgroup);
	if (per_disk)
		key.dev = dev;
	if (per_op) {
		key.op = opf & 0xff;		/* REQ_OP_MASK since v4.10 */
		key.flags = (opf >> 8) & flags_mask;
	}
	return hists_lookup_or_init(&block_hists, &key, &block_zero, HIST_SPILL_ARGS(block));
}

/*
 * A request that merged more than BIO_WALK_MAX bios (sequential I/O under a plug or scheduler):
 * the rest of its chain is walked in a bpf_loop of up to BIO_LOOP_MAX bios, reading bi_next with
 * bpf_probe_read_kernel in both variants. Without it, the bios past the first few were neither
 * consumed (their entries lingered until reclaimed, counted) nor linked to their io_uring/aio
 * requests.
 */
struct bio_walk {
	__u64 bio;		/* the next bio, as an integer */
	__u64 now, queued, issued;
	struct who w;		/* bios_rest: the earliest bio's; link_rest: the block request's */
};

/* bio's successor (bio_walk is ours, not the kernel's: kept out of CO-RE's reach) */
static __always_inline __u64 bio_next(__u64 bio)
{
	struct bio *b = (void *)bio;

	return (__u64)BPF_CORE_READ(b, bi_next);
}

static long bios_rest_one(__u64 i, struct bio_walk *w)
{
	struct who t = {};
	__u64 ts = inflight_take(w->bio, w->now, NULL, &t);

	if (ts && (!w->queued || ts < w->queued)) {
		w->queued = ts;
		w->w = t;
	}
	w->bio = bio_next(w->bio);
	return w->bio ? 0 : 1;
}

static long link_rest_one(__u64 i, struct bio_walk *w)
{
	__u32 at;

	req_stamp_done(req_of_bio(w->bio, w->w.tgid, &at), w->issued, w->now);
	w->bio = bio_next(w->bio);
	return w->bio ? 0 : 1;
}

/* Direct loads: p->a->b, checked against BTF by the verifier. */
#define KR_1(a)			(a)
#define KR_2(a, b)		((a)->b)
#define KR_3(a, b, c)		((a)->b->c)
#define KR_4(a, b, c, d)	((a)->b->c->d)
#define KR_PICK(_1, _2, _3, _4, N, ...) N
#define KR_DIRECT(...)		KR_PICK(__VA_ARGS__, KR_4, KR_3, KR_2, KR_1)(__VA_ARGS__)

#define H(name)		name##_btf
#define KR(...)		KR_DIRECT(__VA_ARGS__)
#define PTR_U64(p)	btf_ptr_u64(p)
#include "block_handlers.bpf.h"
#undef H
#undef KR
#undef PTR_U64

#define H(name)		name##_raw
#define KR(...)		BPF_CORE_READ(__VA_ARGS__)
#define PTR_U64(p)	((__u64)(p))
#include "block_handlers.bpf.h"
#undef H
#undef KR
#undef PTR_U64

/*
 * Twins: the same handlers as tp_btf programs (BTF-typed arguments, direct loads) and as
 * raw_tp programs (for kernels where tp_btf will not load).
 */
#define TWIN(event, body)						\
SEC("tp_btf/" #event)							\
int tp_btf_##event(__u64 *ctx) { body(btf); }				\
SEC("raw_tp/" #event)							\
int raw_tp_##event(__u64 *ctx) { body(raw); }

#define ARG(i)		((void *)ctx[i])
#define BIO_QUEUE(v)	return on_bio_queue_##v(bio_queue_arg ? ARG(1) : ARG(0))
#define SPLIT(v)	return on_split_##v(split_arg ? ARG(1) : ARG(0))
#define RQ_ISSUE(v)	return on_rq_issue_##v(rq_issue_arg ? ARG(1) : ARG(0))
#define RQ_REQUEUE(v)	return on_rq_requeue_##v(rq_requeue_arg ? ARG(1) : ARG(0))
#define RQ_COMPLETE(v)	return on_rq_complete_##v(ARG(0), (unsigned int)ctx[2])

TWIN(block_bio_queue, BIO_QUEUE)
TWIN(block_split, SPLIT)
TWIN(block_rq_issue, RQ_ISSUE)
TWIN(block_rq_requeue, RQ_REQUEUE)
TWIN(block_rq_complete, RQ_COMPLETE)
