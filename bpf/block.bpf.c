// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata block layer: per-disk, per-op latency of the blk-mq path, in three stages.
 *
 *   wait    rq->start_time_ns (request allocated)   -> block_rq_issue
 *   device  block_rq_issue                          -> block_rq_complete (final)
 *   total   block_bio_queue (earliest bio of the rq) -> block_rq_complete (final)
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
#include "drops.bpf.h"
#include "inflight.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load; frozen afterwards, so the verifier prunes what they disable. */
const volatile __u32 filter_dev;	/* whole-disk dev_t, 0 = all */
const volatile __u32 filter_tgid;	/* 0 = all */
const volatile bool filter_cgroup;	/* cgroup_filter[0] holds the cgroup */
const volatile bool per_disk;
const volatile bool per_op;
const volatile __u32 flags_mask;	/* request flag bits kept in the key (per-flags mode) */
/* Index of the pointer argument: 1 where the prototype still has a request_queue first. */
const volatile __u32 rq_issue_arg;
const volatile __u32 bio_queue_arg;
const volatile __u32 split_arg;

/* Flipped by the loader every interval; see struct block_key. */
volatile __u32 gen;

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 64);		/* resized by the loader */
	__type(key, struct block_key);
	__type(value, struct block_hists);
} block_hists SEC(".maps");

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

static __always_inline void hist_add(struct hist *h, __u64 v)
{
	__u32 i = hist_index(v);

	if (i >= HIST_NSLOTS)		/* cannot happen; bounds the index for the verifier */
		i = HIST_NSLOTS - 1;
	/* per-CPU value, written by one program that cannot nest on this CPU: no atomics */
	h->slots[i]++;
	if (!h->count || v < h->min_ns)
		h->min_ns = v;
	if (v > h->max_ns)
		h->max_ns = v;
	h->count++;
	h->sum_ns += v;
}

static __always_inline void stage_add(struct hist *h, __u64 from, __u64 to)
{
	if (from && to >= from)
		hist_add(h, to - from);
	else
		h->unmeasured++;
}

static __always_inline struct block_hists *hists_get(struct block_key *key)
{
	struct block_hists *h;
	__u32 zero = 0;
	void *z;
	long err;

	h = bpf_map_lookup_elem(&block_hists, key);
	if (h)
		return h;
	z = bpf_map_lookup_elem(&block_zero, &zero);
	if (!z)
		return NULL;
	err = bpf_map_update_elem(&block_hists, key, z, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: another CPU created it */) {
		drop(DROP_HIST_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&block_hists, key);
}

static __always_inline int on_bio_queue(struct bio *bio)
{
	struct gendisk *disk = bio_disk(bio);
	__u64 id;

	if (!disk)
		return 0;
	/* bio-based devices (dm, md, zram) never build a request: nothing would consume the entry */
	if (!BPF_CORE_READ(disk, queue, mq_ops))
		return 0;
	if (filter_dev && disk_dev(disk) != filter_dev)
		return 0;
	id = bpf_get_current_pid_tgid();
	if (filter_tgid && (__u32)(id >> 32) != filter_tgid)
		return 0;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return 0;
	inflight_put((__u64)bio, bpf_ktime_get_ns(), id >> 32, true);
	return 0;
}

/*
 * A bio split to fit the queue's limits: the split-off front part is chained to its parent
 * (bi_private) and becomes a request of its own, so it inherits the parent's queue time.
 */
static __always_inline int on_split(struct bio *split)
{
	struct inflight *parent = inflight_find((__u64)BPF_CORE_READ(split, bi_private));

	if (parent && parent->ts)
		inflight_put((__u64)split, parent->ts, parent->tgid, true);
	return 0;
}

static __always_inline int on_rq_issue(struct request *rq)
{
	if (filter_dev) {
		struct gendisk *disk = rq_disk(rq);

		if (!disk || disk_dev(disk) != filter_dev)
			return 0;
	}
	/* a requeued request is issued again: its entry is simply restamped */
	inflight_put((__u64)rq, bpf_ktime_get_ns(), 0, false);
	return 0;
}

static __always_inline int on_rq_complete(struct request *rq, unsigned int nr_bytes)
{
	struct block_key key = { .op = BLOCK_OP_ANY };
	__u64 now, queued = 0, issued, started, ts;
	struct block_hists *h;
	struct gendisk *disk;
	struct bio *bio;
	__u32 opf, dev = 0, i;

	/* partial completions leave the request in flight: only the final one counts */
	if (nr_bytes < BPF_CORE_READ(rq, __data_len))
		return 0;
	disk = rq_disk(rq);
	if (disk)
		dev = disk_dev(disk);
	if (filter_dev && dev != filter_dev)
		return 0;

	now = bpf_ktime_get_ns();
	issued = inflight_take((__u64)rq, NULL);

	/* the earliest queue time among the request's bios (merges add bios at either end) */
	bio = BPF_CORE_READ(rq, bio);
	for (i = 0; i < BIO_WALK_MAX && bio; i++) {
		ts = inflight_take((__u64)bio, NULL);
		if (ts && (!queued || ts < queued))
			queued = ts;
		bio = BPF_CORE_READ(bio, bi_next);
	}
	/* with a pid/cgroup filter, only requests holding a bio that passed it are counted */
	if (owner_filtered() && !queued)
		return 0;

	if (!issued)	/* issued before tracing began: the kernel's own stamp, when it keeps one */
		issued = BPF_CORE_READ(rq, io_start_time_ns);
	started = BPF_CORE_READ(rq, start_time_ns);

	if (per_disk)
		key.dev = dev;
	if (per_op) {
		opf = BPF_CORE_READ(rq, cmd_flags);
		key.op = opf & 0xff;		/* REQ_OP_MASK since v4.10 */
		key.flags = (opf >> 8) & flags_mask;
	}
	key.gen = gen & 1;
	h = hists_get(&key);
	if (!h)
		return 0;
	stage_add(&h->stage[BLOCK_WAIT], started, issued);
	stage_add(&h->stage[BLOCK_DEVICE], issued, now);
	stage_add(&h->stage[BLOCK_TOTAL], queued, now);
	return 0;
}

/*
 * In-flight keys and hashes need pointers as plain integers. raw_tp arguments already are;
 * tp_btf arguments are typed pointers, on which the verifier forbids arithmetic except
 * pointer - pointer (for privileged programs). So subtract a fixed anchor's address and add
 * back that address, learnt once as an integer.
 */
static char anchor;
__u64 anchor_addr;

static __always_inline __u64 btf_ptr_u64(const void *p)
{
	const void *a = &anchor;
	__u64 d;

	if (!anchor_addr)
		bpf_probe_read_kernel(&anchor_addr, sizeof(anchor_addr), &a);
	d = (__u64)p - (__u64)&anchor;
	barrier_var(d);
	return d + anchor_addr;
}

/*
 * Twins: the same handler under tp_btf (BTF-typed arguments) and raw_tp (for kernels whose
 * tp_btf attach fails). `body` is a macro taking the accessor of argument i as an integer.
 */
#define BTF_ARG(i)	btf_ptr_u64((const void *)ctx[i])
#define RAW_ARG(i)	(ctx[i])
#define TWIN(event, body)						\
SEC("tp_btf/" #event)							\
int tp_btf_##event(__u64 *ctx) { body(BTF_ARG); }			\
SEC("raw_tp/" #event)							\
int raw_tp_##event(__u64 *ctx) { body(RAW_ARG); }

#define BIO_QUEUE(A)	return on_bio_queue((struct bio *)(bio_queue_arg ? A(1) : A(0)))
#define SPLIT(A)	return on_split((struct bio *)(split_arg ? A(1) : A(0)))
#define RQ_ISSUE(A)	return on_rq_issue((struct request *)(rq_issue_arg ? A(1) : A(0)))
/* nr_bytes is a plain integer in both program types */
#define RQ_COMPLETE(A)	return on_rq_complete((struct request *)A(0), (unsigned int)ctx[2])

TWIN(block_bio_queue, BIO_QUEUE)
TWIN(block_split, SPLIT)
TWIN(block_rq_issue, RQ_ISSUE)
TWIN(block_rq_complete, RQ_COMPLETE)
