// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The block layer: what only it has. Its events, stages and maps are in the table below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "block.skel.h"
#include "ksyms.h"
#include "layer.h"
#include "log.h"
#include "sysinfo.h"

enum { EV_BIO_QUEUE, EV_SPLIT, EV_RQ_ISSUE, EV_RQ_REQUEUE, EV_RQ_COMPLETE };

/* The events, in the order a request meets them; nargs is today's prototype. */
static const struct layer_event events[] = {
	[EV_BIO_QUEUE] = { "block_bio_queue", EV_TP, SKEL_PROG(block, tp_btf_block_bio_queue),
		SKEL_PROG(block, raw_tp_block_bio_queue), .nargs = 1,
		.role = "bio queued: starts wait and total; -p/-c filters" },
	[EV_SPLIT] = { "block_split", EV_TP, SKEL_PROG(block, tp_btf_block_split),
		SKEL_PROG(block, raw_tp_block_split), .nargs = 2,
		.role = "bio split: the split part inherits the queue time" },
	[EV_RQ_ISSUE] = { "block_rq_issue", EV_TP, SKEL_PROG(block, tp_btf_block_rq_issue),
		SKEL_PROG(block, raw_tp_block_rq_issue), .nargs = 1,
		.role = "request issued to the driver: ends wait, starts device" },
	[EV_RQ_REQUEUE] = { "block_rq_requeue", EV_TP, SKEL_PROG(block, tp_btf_block_rq_requeue),
		SKEL_PROG(block, raw_tp_block_rq_requeue), .nargs = 1,
		.role = "request requeued: its next issue is the same I/O, not a new one after a "
			"completion unseen" },
	[EV_RQ_COMPLETE] = { "block_rq_complete", EV_TP,
		SKEL_PROG(block, tp_btf_block_rq_complete),
		SKEL_PROG(block, raw_tp_block_rq_complete), .nargs = 3, .required = true,
		.role = "request completed: ends every stage" },
};

static const struct layer_stage stages[BLOCK_NSTAGES] = {
	[BLOCK_WAIT] = { "wait", EV_BIO_QUEUE, EV_RQ_ISSUE, .note_ev = EV_SPLIT,
		.note = "split bios unmeasured (no block_split)",
		.unmeasured = "no queued bio seen (before tracing, flush/passthrough, or see drops)" },
	[BLOCK_DEVICE] = { "device", EV_RQ_ISSUE, EV_RQ_COMPLETE,
		.unmeasured = "issue not seen (before tracing began, or see drops)" },
	[BLOCK_TOTAL] = { "total", EV_BIO_QUEUE, EV_RQ_COMPLETE, .note_ev = EV_SPLIT,
		.note = "split bios unmeasured (no block_split)",
		.unmeasured = "no queued bio seen (before tracing, flush/passthrough, or see drops)" },
};

/* Whole host (no -D/-F): the array slot of the generation stands for this key. */
static void total_key(uint32_t gen, uint32_t i, void *key)
{
	*(struct block_key *)key = (struct block_key){ .gen = gen, .op = BLOCK_OP_ANY };
}

/* two generations x disks x (op, flags) combinations, with room for hot-plugged disks */
static uint32_t hist_keys(const struct layer_inst *l)
{
	uint32_t keys = 1;

	if (l->cfg->per_disk)
		keys *= (uint32_t)disk_count() + 16;
	if (l->cfg->per_op)
		keys *= 64;
	if (l->cfg->per_cgroup)
		keys *= 64;
	return 2 * (keys > 8192 ? 8192 : keys);
}

static const struct layer_hists hists[] = {
	{ .map = SKEL_MAP(block, block_hists), .key_size = sizeof(struct block_key),
	  .entries = hist_keys, .spill = SKEL_MAP(block, block_spill),
	  .spill_idx = SKEL_MAP(block, block_spill_idx),
	  .spill_free = SKEL_MAP(block, block_spill_free) },
	{ .map = SKEL_MAP(block, block_total), .per_gen = 1, .array_key = total_key },
};

static void label(const struct layer_inst *l, const void *key, struct rec *r)
{
	const struct block_key *k = key;

	if (l->cfg->per_disk) {
		if (k->dev)
			disk_name(k->dev, r->disk, sizeof(r->disk));
		else
			snprintf(r->disk, sizeof(r->disk), "(none)");
	}
	if (k->op != BLOCK_OP_ANY)
		op_name(k->op, r->op, sizeof(r->op));
	if (k->flags)
		req_flags_str(k->flags, r->flags, sizeof(r->flags));
	layer_label_cgroup(l, k->cgroup, r);
}

/*
 * Are io_uring/aio requests linked to their bios? When such a layer may run and one of its
 * stages bounded by block times is asked (submit_bio, wait, device, device_cqe), or snoop,
 * which shows those times: otherwise (--stages uring.submit_cqe,block.device) the block
 * programs skip the walk from each bio to its request.
 */
static bool links_needed(const struct trace_config *c)
{
	static const int linked[] = { REQ_SUBMIT_BIO, REQ_WAIT, REQ_DEVICE, REQ_DEVICE_CQE };
	static const int req_layers[] = { LAYER_URING, LAYER_AIO };
	size_t i, j;

	if (c->snoop)
		return true;
	for (i = 0; i < ARRAY_LEN(req_layers); i++) {
		if (c->layers && !(c->layers & BIT(req_layers[i])))
			continue;
		for (j = 0; j < ARRAY_LEN(linked); j++)
			if (stage_wanted(c, req_layers[i], linked[j]))
				return true;
	}
	return false;
}

/*
 * The bios' events are needed for wait and total, for -p/-c (decided where bios are queued) and
 * for linking io_uring/aio requests; without them the block layer runs two programs per I/O.
 * iostrata's own requests are known by their bios: with device alone they are counted too.
 */
static bool event_needed(const struct trace_config *c, int ev)
{
	if (ev != EV_BIO_QUEUE && ev != EV_SPLIT)
		return true;
	/* snoop and -C: who submitted is known where the bios are queued */
	return stage_wanted(c, LAYER_BLOCK, BLOCK_WAIT) || stage_wanted(c, LAYER_BLOCK, BLOCK_TOTAL) ||
	       c->tgid || c->cgroup || c->snoop || c->per_cgroup || links_needed(c);
}

static const char *event_unneeded(const struct trace_config *c, int ev)
{
	return event_needed(c, ev) ? NULL : "not needed by the stages asked (--stages)";
}

/* The tag slots' memory at most: beyond, hardware queues go without a region */
#define TAG_SLOTS_MAX_BYTES	(32u << 20)

/*
 * Tag slots for this machine (bpf/inflight.bpf.h): a region for each hardware queue, of the
 * -d disk alone or of every blk-mq disk, with as many again and 16 spare (disks added later,
 * and the spread of the hashed probes), at least 128 (a region is never given back: loop
 * devices come and go), and a slot for each tag of the deepest tag space (at most 4,096; the
 * old fixed 1,024 when sysfs says nothing). Only the regions give way to the 32 MiB cap. A
 * hardware queue without a region or a tag beyond the slots (a disk added later, nr_requests
 * raised) goes to the in-flight table: still measured, at a hashed table's cost, and counted.
 */
static int tag_slots_size(struct layer_inst *l)
{
	struct block_bpf *skel = l->skel;
	unsigned int depth, n = hw_queues(l->cfg->dev, &depth);
	uint32_t r = RQ_REGION_BITS_MIN, s = RQ_SLOT_BITS_MIN;

	while (r < RQ_REGION_BITS_MAX && (1u << r) < 2 * (n + 8))
		r++;
	while (s < RQ_SLOT_BITS_MAX && (1u << s) < depth)
		s++;
	if (!depth)		/* sysfs unreadable (or -d a bio-based disk): the old fixed size */
		s = RQ_SLOT_BITS_DEFAULT;
	while (r > RQ_REGION_BITS_MIN && ((uint64_t)sizeof(struct inflight) << (r + s)) >
	       TAG_SLOTS_MAX_BYTES)
		r--;
	skel->rodata->rq_region_bits = r;
	skel->rodata->rq_slot_bits = s;
	if (l->cfg->no_tag_slots)	/* never looked at: the programs stop before */
		return bpf_map__set_max_entries(skel->maps.rq_regions, 1) ?:
		       bpf_map__set_max_entries(skel->maps.rq_slots, 1);
	vlog("block: tag slots: %u regions of %u for %u hardware queues of depth up to %u "
	     "(%llu KiB)", 1u << r, 1u << s, n, depth,
	     (unsigned long long)(sizeof(struct inflight) << (r + s)) >> 10);
	return bpf_map__set_max_entries(skel->maps.rq_regions, 1u << r) ?:
	       bpf_map__set_max_entries(skel->maps.rq_slots, 1u << (r + s));
}

static int configure(struct layer_inst *l)
{
	const struct trace_config *c = l->cfg;
	struct block_bpf *skel = l->skel;

	COMMON_RODATA(skel->rodata, l);
	skel->rodata->filter_dev = c->dev;
	skel->rodata->per_disk = c->per_disk;
	skel->rodata->per_op = c->per_op;
	skel->rodata->flags_mask = c->per_op ? req_flags_mask() : 0;
	skel->rodata->bio_flush_flags = c->per_op || c->snoop ? req_flush_flags() : 0;
	skel->rodata->rqf_flush_seq = rq_flush_seq_flag();
	/* the LRU hands each CPU free nodes of its own: room for them all, and the notes */
	if (bpf_map__set_max_entries(skel->maps.fseq_counted,
				     4096 + 256 * (uint32_t)(l->ncpus > 0 ? l->ncpus : 1)))
		return -errno;
	skel->rodata->bio_queue_arg = l->rep.events[EV_BIO_QUEUE].arg;
	skel->rodata->split_arg = l->rep.events[EV_SPLIT].arg;
	skel->rodata->rq_issue_arg = l->rep.events[EV_RQ_ISSUE].arg;
	skel->rodata->rq_requeue_arg = l->rep.events[EV_RQ_REQUEUE].arg;
	skel->rodata->requeue_traced = l->rep.events[EV_RQ_REQUEUE].method != 0;
	skel->rodata->inflight_mask = c->inflight_slots - 1;
	skel->rodata->tag_slots = !c->no_tag_slots;
	skel->rodata->lose_every = c->lose_completions;
	/* an io_uring or aio layer runs and asks: stamp its requests with their bios' block times */
	skel->rodata->link_reqs = l->shared->reqs_fd >= 0 && links_needed(c);
	skel->rodata->queue_stages = event_needed(c, EV_BIO_QUEUE);
	skel->rodata->req_mask = c->inflight_slots - 1;
	LINK_SYMS_RODATA(skel->rodata, link_syms());
	return tag_slots_size(l) ?: bpf_map__set_max_entries(skel->maps.inflight, c->inflight_slots);
}

static int check(const struct layer_inst *l)
{
	const struct event_status *q = &l->rep.events[EV_BIO_QUEUE];

	if ((l->cfg->tgid || l->cfg->cgroup) && !q->method) {
		errorf("-%c needs tracepoint block:block_bio_queue, unavailable (%s)",
		       l->cfg->tgid ? 'p' : 'c', q->why);
		return -1;
	}
	return 0;
}

/*
 * At stop, the requests still in the in-flight table or a tag's slot were issued and their
 * completion not seen (and an fsync's empty write still there, never issued, ended unseen with
 * its flush: bio_leftover in bpf/inflight.bpf.h). On a disk the kernel now has nothing in flight on, each was completed by the kernel
 * without a program running (docs/trust.md, "complete_unseen"): counted there, so that the
 * requests per op plus complete_unseen equal /sys/block/DEV/stat's. On a busy disk they may
 * still be on the device: they end after tracing did, outside the window, and are not counted.
 * Without -d or -D the programs do not read a request's disk (it costs at every issue): such
 * requests count when every disk is idle.
 */
struct sweep {
	uint32_t dev[16];
	bool idle[16];
	int ndev;
	uint64_t unseen;
};

static int unseen_one(uint32_t idx, const void *v, void *arg)
{
	const struct inflight *e = v;
	struct sweep *s = arg;
	int i;

	(void)idx;
	/* free, being claimed, or a bio (but an fsync's empty write's, which has its disk) */
	if (!e->key || !e->ts || !e->dev)
		return 0;
	for (i = 0; i < s->ndev && s->dev[i] != e->dev; i++)
		;
	if (i == s->ndev) {
		if (i == (int)(sizeof(s->dev) / sizeof(s->dev[0])))
			return 0;
		s->dev[i] = e->dev;
		s->idle[i] = e->dev == INFLIGHT_DEV_ANY ? disks_idle() : disk_inflight(e->dev) == 0;
		s->ndev++;
	}
	s->unseen += s->idle[i];
	return 0;
}

/* Requests the programs put in the in-flight table for want of a tag slot (rq_untagged). */
static unsigned long long untagged(struct block_bpf *skel)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	unsigned long long n = 0;
	uint32_t zero = 0;
	uint64_t *v;

	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.rq_untagged), &zero, v))
		for (i = 0; i < ncpu; i++)
			n += v[i];
	free(v);
	return n;
}

static int pending(struct layer_inst *l, bool final, struct interval *iv)
{
	struct block_bpf *skel = l->skel;
	struct sweep s = { .ndev = 0 };
	int err;

	if (!final)
		return 0;
	err = array_sweep(bpf_map__fd(skel->maps.inflight), sizeof(struct inflight), unseen_one,
			  &s);
	if (!err)	/* requests by tag (bpf/inflight.bpf.h) */
		err = array_sweep(bpf_map__fd(skel->maps.rq_slots), sizeof(struct inflight),
				  unseen_one, &s);
	if (!err) {
		int bad = table_spill_check(bpf_map__fd(skel->maps.inflight), "in-flight",
					    l->cfg->inflight_slots, sizeof(struct inflight),
					    offsetof(struct inflight, spill));

		err = bad < 0 ? bad : 0;
	}
	if (!err && s.unseen) {
		vlog("block: %llu requests issued and not seen completing on disks now idle",
		     (unsigned long long)s.unseen);
		counters_add(iv->drops, &iv->ndrops, "complete_unseen", s.unseen);
	}
	if (!err && !l->cfg->no_tag_slots)
		vlog("block: %llu requests issued outside the tag slots", untagged(skel));
	if (!err)
		vlog("block: %llu requests requeued", (unsigned long long)skel->bss->requeues);
	if (!err && l->cfg->lose_completions)
		vlog("block: %llu completions missed on purpose (--lose-completions)",
		     (unsigned long long)skel->bss->lost_completions);
	return err;
}

LAYER_SKELETON(block)

const struct layer block_layer = {
	LAYER_COMMON(block),
	.drops = BIT(DROP_INFLIGHT_FULL) | BIT(DROP_INFLIGHT_STALE) | BIT(DROP_INFLIGHT_REUSED) |
		 BIT(DROP_HIST_FULL) | BIT(DROP_COMPLETE_UNSEEN),
	.drops_unprefixed = true, .reqs_map = SKEL_MAP(block, reqs),
	.comm_map = SKEL_MAP(block, req_comm),
	.label = label,
	.configure = configure, .check = check, .pending = pending, .event_unneeded = event_unneeded,
};
