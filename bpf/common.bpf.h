/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every layer's BPF object has: its owner filters, its generation, its histogram maps. */
#ifndef IOSTRATA_COMMON_BPF_H
#define IOSTRATA_COMMON_BPF_H

#include "iostrata.h"
#include "drops.bpf.h"

/* Set by the loader before load; frozen afterwards, so the verifier prunes what they disable. */
const volatile __u32 filter_tgid;	/* 0 = all */
const volatile bool filter_cgroup;	/* cgroup_filter[0] holds the cgroup */
const volatile __u32 self_tgid;		/* iostrata itself: never traced */
/* snoop: requests at least this slow (ns) go to the ring buffer; 0 = every one */
const volatile bool snoop;
const volatile __u64 snoop_slower_ns;
/* ring buffer bytes queued before the consumer is woken (it also polls on its own) */
const volatile __u64 snoop_wake_bytes = SNOOP_RB_DEFAULT / 2;
/* -C: histograms keyed by the submitter's cgroup v2 id */
const volatile bool per_cgroup;
/*
 * How old a table entry may be and still be taken for a live one where nothing better tells a
 * leftover from it (INFLIGHT_STALE_NS; --stale-after, testing, shortens it).
 */
const volatile __u64 stale_ns = INFLIGHT_STALE_NS;

/*
 * The histogram generation, one for every layer: the session creates this map once, hands it to
 * every object before load and flips it each interval, so all layers' intervals end at the same
 * instant. Histogram keys carry it (see block_key).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gens SEC(".maps");

static __always_inline __u32 cur_gen(void)
{
	__u32 zero = 0, *g = bpf_map_lookup_elem(&gens, &zero);

	return g ? *g & 1 : 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

static __always_inline bool is_self(__u64 pid_tgid)
{
	return self_tgid && (__u32)(pid_tgid >> 32) == self_tgid;
}

/* Does the current task pass -p and -c, and is it not iostrata? Decided where the submitter runs. */
static __always_inline bool owner_passes(__u64 pid_tgid)
{
	if (is_self(pid_tgid))
		return false;
	if (filter_tgid && (__u32)(pid_tgid >> 32) != filter_tgid)
		return false;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return false;
	return true;
}

/*
 * Who submits: noted where the submitter runs, only when snoop or -C needs it (the verifier
 * prunes the reads otherwise), never at completion, which runs in whatever task was interrupted.
 */
static __always_inline bool owner_wanted(void)
{
	return snoop || per_cgroup;
}

static __always_inline __u64 owner_cgroup(void)
{
	return owner_wanted() ? bpf_get_current_cgroup_id() : 0;
}

/* The cgroup a histogram key carries: the submitter's with -C, else 0. */
static __always_inline __u64 key_cgroup(__u64 cgroup)
{
	return per_cgroup ? cgroup : 0;
}

/*
 * snoop's ring buffer: the session creates one and hands it to every layer's object; without
 * snoop each object keeps this one-page placeholder, which no program writes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} snoop_rb SEC(".maps");

/* Is a request that took from -> to slow enough to print? (snoop off: never) */
static __always_inline bool snoop_slow(__u64 from, __u64 to)
{
	return snoop && from && to >= from && to - from >= snoop_slower_ns;
}

/* A zeroed record to fill, or NULL, counted: the ring buffer is full (never silently lost). */
static __always_inline struct snoop_rec *snoop_reserve(__u8 layer)
{
	struct snoop_rec *r = bpf_ringbuf_reserve(&snoop_rb, sizeof(*r), 0);

	if (!r) {
		drop(DROP_SNOOP_LOST);
		return NULL;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->layer = layer;
	return r;
}

/* Wake the consumer only once it has enough to read: a wakeup per record would cost more. */
static __always_inline void snoop_submit(struct snoop_rec *r)
{
	__u64 queued = bpf_ringbuf_query(&snoop_rb, BPF_RB_AVAIL_DATA);

	bpf_ringbuf_submit(r, queued >= snoop_wake_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
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
 * Reading kernel objects the verifier cannot type (an address held as an integer, a void *
 * field). bpf_probe_read_kernel is a helper call per field: ~40 ns each here (a chain of four
 * cost 173 ns more than an empty program, measured side by side on block_bio_queue under fio).
 * bpf_rdonly_cast (v6.2+) makes such an address a typed read-only pointer instead, whose fields
 * are plain loads the JIT makes fault-safe (a faulting load reads 0, as a failed probe read
 * does): the same chain cost nothing measurable. The loader sets direct_reads when the kernel's
 * BTF has the kfunc; where it has not (v6.1), the calls are dead code the verifier drops.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
const volatile bool direct_reads;

#define KCAST(type, p)	((type *)bpf_rdonly_cast((const void *)(__u64)(p),		\
						 bpf_core_type_id_kernel(type)))
/* A struct pointer that KFIELD read (typed alike on every kernel), as an integer: a key */
#define KADDR(p)	(direct_reads ? btf_ptr_u64(p) : (__u64)(p))
/* p->field of the kernel object of `type` at p (a pointer or an address): 0 when unreadable */
#define KFIELD(type, p, field)								\
	(direct_reads ? KCAST(type, p)->field : BPF_CORE_READ((type *)(__u64)(p), field))

#define S_IFMT	0170000
#define S_IFREG	0100000
#define S_IFBLK	0060000

/*
 * fd's file in the current task's fd table, or NULL when it cannot be resolved (out of the
 * table, not open, unreadable). The kernel takes an fd as an unsigned int (fdget).
 */
static __always_inline struct file *fd_file(unsigned int fd)
{
	__u64 task = bpf_get_current_task();
	struct files_struct *files = KFIELD(struct task_struct, task, files);
	struct fdtable *fdt = files ? KFIELD(struct files_struct, files, fdt) : NULL;
	struct file *file = NULL;
	__u64 fds = 0;

	if (!fdt || fd >= KFIELD(struct fdtable, fdt, max_fds))
		return NULL;
	/*
	 * fdt->fd is an array of pointers: loaded directly it is a scalar on some kernels and
	 * untrusted memory on others (v6.18), so it is probe-read, as is its element.
	 */
	if (bpf_probe_read_kernel(&fds, sizeof(fds),
				  (void *)fdt + bpf_core_field_offset(struct fdtable, fd)) || !fds ||
	    bpf_probe_read_kernel(&file, sizeof(file), (void *)(fds + fd * sizeof(file))))
		return NULL;
	return file;
}

/* A snoop record's file: its device and inode; a block device file also names its disk. */
static __always_inline void snoop_file(struct snoop_rec *r, struct file *f)
{
	struct inode *ino = BPF_CORE_READ(f, f_inode);

	if (!ino)
		return;
	r->ino = BPF_CORE_READ(ino, i_ino);
	r->fdev = BPF_CORE_READ(ino, i_sb, s_dev);
	if ((BPF_CORE_READ(ino, i_mode) & S_IFMT) == S_IFBLK)
		r->disk = BPF_CORE_READ(ino, i_rdev);
}

/*
 * Keyed histograms (-D, -F, -O, -P, -C) live in a per-CPU hash, whose memory is its keys x CPUs:
 * on a host with many CPUs it holds few keys (hist_map_keys() in user/layer.c). Keys past
 * them spill into shared slots written by every CPU at once, and so updated with atomics
 * (hist_spill: the loader sized them; else the verifier drops the code).
 */
const volatile bool hist_spill;

/*
 * A per-CPU hash's spill maps (resized by the loader): prefix_spill, an array of value_type,
 * one slot per spilled key, which the loader reads and empties in place (a hash update would
 * swap the element, and a program still holding the old one would write into whatever key
 * takes it next); prefix_spill_idx, key -> slot; prefix_spill_free, the free slots, emptied
 * (every histogram marked shared, min_ns at its top) by the loader before it queues them.
 */
#define HIST_SPILL_MAPS(prefix, key_type, value_type)				\
struct {									\
	__uint(type, BPF_MAP_TYPE_ARRAY);					\
	__uint(max_entries, 1);							\
	__type(key, __u32);							\
	__type(value, value_type);						\
} prefix##_spill SEC(".maps");							\
struct {									\
	__uint(type, BPF_MAP_TYPE_HASH);					\
	__uint(max_entries, 1);							\
	__type(key, key_type);							\
	__type(value, __u32);							\
} prefix##_spill_idx SEC(".maps");						\
struct {									\
	__uint(type, BPF_MAP_TYPE_QUEUE);					\
	__uint(max_entries, 1);							\
	__type(value, __u32);							\
} prefix##_spill_free SEC(".maps")

#define HIST_SPILL_ARGS(prefix) &prefix##_spill, &prefix##_spill_idx, &prefix##_spill_free

/* A new key's spill slot, taken from the free ones; NULL (counted): none left. */
static __always_inline void *spill_new(void *spill, void *idx, void *free, const void *key)
{
	__u32 slot, *s;
	long err;

	if (bpf_map_pop_elem(free, &slot))
		goto full;
	err = bpf_map_update_elem(idx, key, &slot, BPF_NOEXIST);
	if (!err)
		return bpf_map_lookup_elem(spill, &slot);
	bpf_map_push_elem(free, &slot, 0);	/* untouched: still empty */
	if (err == -17) {			/* EEXIST: another CPU gave the key a slot */
		s = bpf_map_lookup_elem(idx, key);
		if (s)
			return bpf_map_lookup_elem(spill, s);
	}
full:
	drop(DROP_HIST_FULL);
	return NULL;
}

/*
 * The value of key in a per-CPU hash of histograms, created on first use from zero_map's
 * zeroed value (values are too big for the stack); when that hash is full, its spill slot.
 * A key neither has room for is counted.
 */
static __always_inline void *hists_lookup_or_init(void *map, const void *key, void *zero_map,
						  void *spill, void *spill_idx, void *spill_free)
{
	__u32 zero = 0, *s;
	void *v = bpf_map_lookup_elem(map, key), *z;
	long err;

	if (v)
		return v;
	if (hist_spill) {
		s = bpf_map_lookup_elem(spill_idx, key);
		if (s)
			return bpf_map_lookup_elem(spill, s);
	}
	z = bpf_map_lookup_elem(zero_map, &zero);
	if (!z)
		return NULL;
	err = bpf_map_update_elem(map, key, z, BPF_NOEXIST);
	if (!err || err == -17 /* EEXIST: another CPU created it */)
		return bpf_map_lookup_elem(map, key);
	if (hist_spill)
		return spill_new(spill, spill_idx, spill_free, key);
	drop(DROP_HIST_FULL);
	return NULL;
}

/*
 * Lower (lower: min) or raise (max) *p to v unless another CPU's value already passes it.
 * After 16 tries (16 other CPUs moved it meanwhile) it is left: the loader's hist_mend() keeps
 * min and max in their buckets.
 */
#define HIST_CAS_TRIES 16
static __always_inline void cas_bound(__u64 *p, __u64 v, bool lower)
{
	__u64 old = *(volatile __u64 *)p, seen;
	int i;

	for (i = 0; i < HIST_CAS_TRIES && (lower ? v < old : v > old); i++) {
		seen = __sync_val_compare_and_swap(p, old, v);
		if (seen == old)
			return;
		old = seen;
	}
}

/*
 * hist_record() for a histogram every CPU writes at once (min_ns starts at its top). Not its
 * count: the loader counts the buckets of every copy it reads (hist_mend), and an atomic add
 * is ~6 ns, one per stage of every request.
 */
static __always_inline void hist_add_shared(struct hist *h, __u64 v)
{
	__u32 i = hist_index(v);

	if (i >= HIST_NSLOTS)
		i = HIST_NSLOTS - 1;
	__sync_fetch_and_add(&h->slots[i], 1);
	__sync_fetch_and_add(&h->sum_ns, v);
	cas_bound(&h->min_ns, v, true);
	cas_bound(&h->max_ns, v, false);
}

/* Count v in h, per-CPU or shared. */
static __always_inline void hist_add(struct hist *h, __u64 v)
{
	if (hist_spill && h->shared)
		hist_add_shared(h, v);
	else
		hist_record(h, v);
}

/* An event h's stage saw but could not time. */
static __always_inline void hist_unmeasured(struct hist *h)
{
	if (hist_spill && h->shared)
		__sync_fetch_and_add(&h->unmeasured, 1);
	else
		h->unmeasured++;
}

/* A stage whose start was not seen is counted as unmeasured, never given a made-up value. */
static __always_inline void stage_add(struct hist *h, __u64 from, __u64 to)
{
	if (from && to >= from)
		hist_add(h, to - from);
	else
		hist_unmeasured(h);
}

#endif /* IOSTRATA_COMMON_BPF_H */
