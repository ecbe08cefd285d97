// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The block layer's loader: probe the tracepoints, open -> configure -> load -> attach, then
 * drain one histogram generation per interval.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "block.skel.h"
#include "common.h"
#include "layer.h"
#include "maps.h"
#include "req.h"

struct block_layer {
	struct block_bpf *skel;
	struct bpf_link *links[MAX_EVENTS];
	struct bpf_program *progs[MAX_EVENTS];	/* the attached twin of each event */
	int ncpus;
	void *vals;			/* per-CPU lookup buffer */
	uint64_t prev_drops[DROP_NREASONS];
	uint64_t prev_misses;
};

/* The events, in the order a request meets them; `nargs` is today's prototype. */
static const struct {
	const char *tp;
	int nargs;
	int required;
	const char *role;
} events[] = {
	{ "block_bio_queue",   1, 0, "bio queued: starts wait and total; -p/-c filters" },
	{ "block_split",       2, 0, "bio split: the split part inherits the queue time" },
	{ "block_rq_issue",    1, 0, "request issued to the driver: ends wait, starts device" },
	{ "block_rq_complete", 3, 1, "request completed: ends every stage" },
};
#define NEVENTS (int)(sizeof(events) / sizeof(events[0]))
enum { EV_BIO_QUEUE, EV_SPLIT, EV_RQ_ISSUE, EV_RQ_COMPLETE };

static const char *const drop_names[DROP_NREASONS] = {
	[DROP_INFLIGHT_FULL] = "inflight_full",
	[DROP_INFLIGHT_STALE] = "inflight_stale",
	[DROP_INFLIGHT_REUSED] = "inflight_reused",
	[DROP_HIST_FULL] = "hist_full",
	[DROP_COMPLETE_UNSEEN] = "complete_unseen",
};

static const char *const stage_names[BLOCK_NSTAGES] = {
	[BLOCK_WAIT] = "wait", [BLOCK_DEVICE] = "device", [BLOCK_TOTAL] = "total",
};

/* Fill in which events BTF offers and how each would attach (before any load). */
static void probe_events(struct layer_report *rep, bool tp_btf)
{
	int i, n;

	rep->nevents = NEVENTS;
	for (i = 0; i < NEVENTS; i++) {
		struct event_status *e = &rep->events[i];

		memset(e, 0, sizeof(*e));
		e->event = events[i].tp;
		e->role = events[i].role;
		e->required = events[i].required;
		n = tp_nargs(events[i].tp);
		e->nargs = n;
		if (n < 0) {
			snprintf(e->why, sizeof(e->why), "%s",
				 tp_forced_missing(e->event) ? "forced missing by --fail-probe"
				 : "tracepoint not in this kernel's BTF");
			continue;
		}
		/* older prototypes carried a request_queue before the pointer we read (v5.11) */
		e->arg = n > events[i].nargs ? 1 : 0;
		if (n < events[i].nargs || n > events[i].nargs + 1) {
			snprintf(e->why, sizeof(e->why), "unknown prototype (%d arguments)", n);
			continue;
		}
		e->method = tp_btf ? "tp_btf" : "raw_tp";
	}
}

static void stage(struct layer_report *rep, const char *name, int from, int to)
{
	const struct event_status *ev = rep->events;
	struct stage_status *s = &rep->stages[rep->nstages++];
	int missing = !ev[from].method ? from : !ev[to].method ? to : -1;

	s->layer = "block";
	s->stage = name;
	s->from = ev[from].event;
	s->to = ev[to].event;
	s->available = missing < 0;
	if (missing >= 0)
		snprintf(s->how, sizeof(s->how), "unavailable: %s: %s", ev[missing].event,
			 ev[missing].why);
	else
		snprintf(s->how, sizeof(s->how), "%s [%s] -> %s [%s]%s", ev[from].event,
			 ev[from].method, ev[to].event, ev[to].method,
			 from == EV_BIO_QUEUE && !ev[EV_SPLIT].method ?
			 "; split bios unmeasured (no block_split)" : "");
}

static void describe_stages(struct layer_report *rep)
{
	rep->nstages = 0;
	stage(rep, "wait", EV_BIO_QUEUE, EV_RQ_ISSUE);
	stage(rep, "device", EV_RQ_ISSUE, EV_RQ_COMPLETE);
	stage(rep, "total", EV_BIO_QUEUE, EV_RQ_COMPLETE);
}

static void block_report_static(struct layer_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	probe_events(rep, true);
	describe_stages(rep);
}

static struct bpf_program *prog_of(struct block_bpf *skel, const char *method, const char *tp)
{
	char name[64];

	snprintf(name, sizeof(name), "%s_%s", method, tp);
	return bpf_object__find_program_by_name(skel->obj, name);
}

static int count_disks(void)
{
	struct dirent *de;
	DIR *d = opendir("/sys/block");
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void report_maps(struct block_layer *b, struct layer_report *rep)
{
	struct bpf_map *maps[] = { b->skel->maps.inflight, b->skel->maps.block_hists,
				   b->skel->maps.block_total, b->skel->maps.block_zero,
				   b->skel->maps.drops };

	rep->nmaps = 0;
	report_maps_mem(rep, maps, (int)(sizeof(maps) / sizeof(maps[0])));
	snprintf(rep->maps[0].note, sizeof(rep->maps[0].note), "%u slots x %zu B",
		 bpf_map__max_entries(maps[0]), sizeof(struct inflight));
	snprintf(rep->maps[1].note, sizeof(rep->maps[1].note),
		 "preallocated: %zu B x %d CPUs per key, %u keys",
		 sizeof(struct block_hists), b->ncpus, bpf_map__max_entries(maps[1]));
}

static int configure(struct block_layer *b, struct layer_report *rep)
{
	struct block_bpf *skel = b->skel;
	uint32_t keys = 1;
	int i;

	skel->rodata->filter_dev = opts.dev;
	skel->rodata->filter_tgid = (uint32_t)opts.tgid;
	skel->rodata->filter_cgroup = opts.cgroup != NULL;
	skel->rodata->per_disk = opts.per_disk;
	skel->rodata->per_op = opts.per_op;
	skel->rodata->flags_mask = opts.per_op ? req_flags_mask() : 0;
	skel->rodata->bio_queue_arg = rep->events[EV_BIO_QUEUE].arg;
	skel->rodata->split_arg = rep->events[EV_SPLIT].arg;
	skel->rodata->rq_issue_arg = rep->events[EV_RQ_ISSUE].arg;
	skel->rodata->inflight_mask = opts.inflight_slots - 1;
	if (bpf_map__set_max_entries(skel->maps.inflight, opts.inflight_slots))
		return -1;
	/* an io_uring or aio layer runs: stamp their requests with their bios' block times */
	skel->rodata->link_reqs = reqs_fd() >= 0;
	REQ_RODATA(skel->rodata);
	if (reqs_fd() >= 0 ? reqs_use(skel->maps.reqs) :
	    bpf_map__set_max_entries(skel->maps.reqs, 1))
		return -1;
	/* two generations x disks x (op, flags) combinations, with room for hot-plugged disks */
	if (opts.per_disk)
		keys *= (uint32_t)count_disks() + 16;
	if (opts.per_op)
		keys *= 64;
	if (keys > 8192)
		keys = 8192;
	if (bpf_map__set_max_entries(skel->maps.block_hists,
				     hist_map_keys(sizeof(struct block_hists), b->ncpus, 2 * keys)))
		return -1;

	for (i = 0; i < NEVENTS; i++) {
		const char *m = rep->events[i].method;

		bpf_program__set_autoload(prog_of(skel, "tp_btf", events[i].tp),
					  m && !strcmp(m, "tp_btf"));
		bpf_program__set_autoload(prog_of(skel, "raw_tp", events[i].tp),
					  m && !strcmp(m, "raw_tp"));
	}
	return 0;
}

static int check_required(const struct layer_report *rep)
{
	const struct event_status *ev = rep->events;
	int i;

	for (i = 0; i < rep->nevents; i++) {
		if (ev[i].required && !ev[i].method) {
			errorf("required tracepoint block:%s unavailable (%s)", ev[i].event,
			       ev[i].why);
			return -1;
		}
	}
	if (!ev[EV_BIO_QUEUE].method && !ev[EV_RQ_ISSUE].method) {
		errorf("no block stage can be measured: block_bio_queue (%s) and block_rq_issue "
		       "(%s) are both unavailable", ev[EV_BIO_QUEUE].why, ev[EV_RQ_ISSUE].why);
		return -1;
	}
	if ((opts.tgid || opts.cgroup) && !ev[EV_BIO_QUEUE].method) {
		errorf("-%c needs tracepoint block:block_bio_queue, unavailable (%s)",
		       opts.tgid ? 'p' : 'c', ev[EV_BIO_QUEUE].why);
		return -1;
	}
	return 0;
}

static void block_stop(void *state);

/* Load the programs rep chose; 0, or a negative errno with nothing left loaded. */
static int load(struct block_layer *b, struct layer_report *rep)
{
	int err;

	b->skel = block_bpf__open();
	if (!b->skel)
		return -errno;
	err = configure(b, rep) ? -errno : block_bpf__load(b->skel);
	if (err) {
		block_bpf__destroy(b->skel);
		b->skel = NULL;
	}
	return err;
}

/*
 * Attach every loaded program. A tracepoint whose program will not attach becomes unavailable
 * (with the reason); 0 unless that leaves a required one out.
 */
static int attach(struct block_layer *b, struct layer_report *rep)
{
	int i;

	for (i = 0; i < NEVENTS; i++) {
		struct event_status *e = &rep->events[i];

		if (!e->method)
			continue;
		b->progs[i] = prog_of(b->skel, e->method, e->event);
		b->links[i] = bpf_program__attach(b->progs[i]);
		if (b->links[i]) {
			vlog("block: %s attached by %s (pointer argument %d of %d)", e->event,
			     e->method, e->arg, e->nargs);
			continue;
		}
		snprintf(e->why, sizeof(e->why), "%s attach failed: %s", e->method,
			 strerror(errno));
		vlog("block: %s: %s", e->event, e->why);
		e->method = NULL;
		if (check_required(rep))
			return -1;
	}
	return 0;
}

static void detach(struct block_layer *b)
{
	int i;

	for (i = 0; i < MAX_EVENTS; i++) {
		bpf_link__destroy(b->links[i]);
		b->links[i] = NULL;
		b->progs[i] = NULL;
	}
	block_bpf__destroy(b->skel);
	b->skel = NULL;
}

static void block_stop(void *state);

static int block_start(void **out, struct layer_report *rep)
{
	bool tp_btf = !opts.force_raw_tp;
	struct block_layer *b;
	int err;

	*out = NULL;
	if (!vmlinux_btf()) {
		errorf("kernel BTF not found (/sys/kernel/btf/vmlinux): this kernel needs "
		       "CONFIG_DEBUG_INFO_BTF");
		return -1;
	}
	b = calloc(1, sizeof(*b));
	if (b)
		b->ncpus = libbpf_num_possible_cpus();
	if (b && b->ncpus > 0)
		b->vals = calloc((size_t)b->ncpus, sizeof(struct block_hists));
	if (!b || !b->vals) {
		errorf("out of memory for the block layer's buffers");
		free(b);
		return -1;
	}

	/* tp_btf first; if the kernel refuses to load or attach it, the raw_tp twins */
	for (;;) {
		memset(rep, 0, sizeof(*rep));
		probe_events(rep, tp_btf);
		describe_stages(rep);
		if (check_required(rep))
			goto fail;
		err = load(b, rep);
		if (err && !tp_btf) {
			errorf("cannot load the block layer's BPF programs: %s (-v shows the "
			       "verifier log)", strerror(-err));
			goto fail;
		}
		if (!err && !attach(b, rep))
			break;
		if (!tp_btf)		/* attach() has said why */
			goto fail;
		vlog("block: tp_btf programs %s; trying their raw_tp twins",
		     err ? "did not load" : "did not attach");
		detach(b);
		tp_btf = false;
	}

	if (opts.cgroup) {
		if (cgroup_filter_set(b->skel->maps.cgroup_filter))
			goto fail;
	}
	describe_stages(rep);
	report_maps(b, rep);
	*out = b;
	return 0;
fail:
	block_stop(b);
	return -1;
}

static void block_stop(void *state)
{
	struct block_layer *b = state;

	if (!b)
		return;
	detach(b);
	free(b->vals);
	free(b);
}

static void key_labels(const struct block_key *k, struct rec *r)
{
	if (opts.per_disk) {
		if (k->dev)
			disk_name(k->dev, r->disk, sizeof(r->disk));
		else
			snprintf(r->disk, sizeof(r->disk), "(none)");
	}
	if (k->op != BLOCK_OP_ANY)
		op_name(k->op, r->op, sizeof(r->op));
	if (k->flags)
		req_flags_str(k->flags, r->flags, sizeof(r->flags));
}

/* Three records (wait, device, total) for one histogram set summed over CPUs. */
static int add_recs(struct block_layer *b, const struct block_key *k, struct interval *iv)
{
	const size_t vsz = sizeof(struct block_hists);
	struct rec *r[BLOCK_NSTAGES];
	int cpu, s;

	for (s = 0; s < BLOCK_NSTAGES; s++) {
		r[s] = recs_add(&iv->recs);
		if (!r[s])
			return -ENOMEM;
		r[s]->layer = "block";
		r[s]->stage = stage_names[s];
		r[s]->stage_order = s;
		key_labels(k, r[s]);
	}
	for (cpu = 0; cpu < b->ncpus; cpu++) {
		const struct block_hists *v = (const void *)((char *)b->vals + cpu * vsz);

		for (s = 0; s < BLOCK_NSTAGES; s++)
			hist_merge(&r[s]->h, &v->stage[s]);
	}
	return 0;
}

static bool vals_empty(struct block_layer *b)
{
	const size_t vsz = sizeof(struct block_hists);
	int cpu, s;

	for (cpu = 0; cpu < b->ncpus; cpu++) {
		const struct block_hists *v = (const void *)((char *)b->vals + cpu * vsz);

		for (s = 0; s < BLOCK_NSTAGES; s++)
			if (v->stage[s].count || v->stage[s].unmeasured)
				return false;
	}
	return true;
}

/* Whole-host mode: the retired generation's array slot, read then zeroed. */
static int drain_total(struct block_layer *b, uint32_t g, struct interval *iv)
{
	int fd = bpf_map__fd(b->skel->maps.block_total);
	struct block_key k = { .op = BLOCK_OP_ANY };
	int err;

	if (bpf_map_lookup_elem(fd, &g, b->vals))
		return -errno;
	if (vals_empty(b))
		return 0;
	err = add_recs(b, &k, iv);
	memset(b->vals, 0, (size_t)b->ncpus * sizeof(struct block_hists));
	if (bpf_map_update_elem(fd, &g, b->vals, BPF_ANY))
		return -errno;
	return err;
}

/* Per disk/op: every key of the retired generation, read then deleted. */
static int drain_keys(struct block_layer *b, uint32_t g, struct interval *iv)
{
	int fd = bpf_map__fd(b->skel->maps.block_hists);
	struct block_key *keys;
	size_t nkeys, i;
	int err = map_keys(fd, sizeof(*keys), (void **)&keys, &nkeys);

	for (i = 0; i < nkeys && !err; i++)
		if (keys[i].gen == g &&
		    retired_read_and_zero(fd, &keys[i], b->vals,
					  (size_t)b->ncpus * sizeof(struct block_hists)))
			err = add_recs(b, &keys[i], iv);
	free(keys);
	return err;
}

static uint64_t recursion_misses(struct block_layer *b)
{
	struct bpf_prog_info info;
	uint32_t len;
	uint64_t n = 0;
	int i;

	for (i = 0; i < MAX_EVENTS; i++) {
		if (!b->links[i])
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(b->progs[i]), &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

static int block_collect(void *state, struct interval *iv)
{
	struct block_layer *b = state;
	uint32_t old = gen_retire(&b->skel->bss->gen, iv);
	uint64_t misses;
	int err;

	err = opts.per_disk || opts.per_op ? drain_keys(b, old, iv) : drain_total(b, old, iv);
	if (!err)
		err = drops_read(b->skel->maps.drops, b->ncpus, 0, DROP_NREASONS - 1, drop_names,
				 b->prev_drops, iv);
	misses = recursion_misses(b);
	if (iv->ndrops < MAX_DROPS) {
		iv->drops[iv->ndrops].name = "prog_recursion";
		iv->drops[iv->ndrops++].n = misses - b->prev_misses;
	}
	b->prev_misses = misses;
	return err;
}

const struct layer_ops block_layer_ops = {
	.name = "block",
	.start = block_start,
	.collect = block_collect,
	.stop = block_stop,
	.report_static = block_report_static,
};
