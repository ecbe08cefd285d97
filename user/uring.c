// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The io_uring layer's loader: submit -> CQE per opcode (and per process with -P). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "uring.skel.h"
#include "common.h"
#include "layer.h"
#include "maps.h"
#include "req.h"

enum { EV_SUBMIT, EV_PUNT, EV_POLL, EV_COMPLETE, EV_WAIT, EV_OVERFLOW, NEV };

static const char *const stage_names[REQ_NSTAGES] = {
	[REQ_SUBMIT_DONE] = "submit_cqe", [REQ_DONE_REAP] = "cqe_reap", [REQ_TOTAL] = "total",
	[REQ_SUBMIT_BIO] = "submit_bio", [REQ_WAIT] = "wait", [REQ_DEVICE] = "device",
	[REQ_DEVICE_CQE] = "device_cqe",
};

struct uring_layer {
	struct uring_bpf *skel;
	struct bpf_link *links[NEV];
	struct req_report rep;
};

static const char *opcode_name(unsigned int op, char *buf, size_t len)
{
	return btf_enum_name("io_uring_op", "IORING_OP_", op, buf, len);
}

/* Which events this kernel has; the submission event was renamed in v6.4. */
static void probe(struct layer_report *rep, bool tp_btf)
{
	static const char *const submit[] = { "io_uring_submit_req", "io_uring_submit_sqe" };
	static const char *const names[NEV] = {
		NULL, "io_uring_queue_async_work", "io_uring_poll_arm", "io_uring_complete",
		"io_uring_cqring_wait", "io_uring_cqe_overflow",
	};
	static const char *const roles[NEV] = {
		"request submitted: starts submit_cqe; reads the CQ head (cqe_reap)",
		"request punted to an io-wq worker: flags io-wq",
		"request waits on poll first: flags poll",
		"CQE posted: ends submit_cqe, starts cqe_reap; reads the CQ head",
		"application waits for CQEs: reads the CQ head (cqe_reap)",
		"CQE overflowed the CQ ring: counted",
	};
	const struct req_syms *sy = req_syms();
	struct stage_status *st;
	const char *link = req_link_problem();
	int i;

	memset(rep, 0, sizeof(*rep));
	rep->nevents = NEV;
	for (i = 0; i < NEV; i++) {
		struct event_status *e = &rep->events[i];

		e->event = names[i];
		if (i == EV_SUBMIT)
			e->event = tp_nargs(submit[0]) >= 0 ? submit[0] : submit[1];
		e->role = roles[i];
		e->required = i == EV_SUBMIT || i == EV_COMPLETE;
		e->nargs = tp_nargs(e->event);
		if (e->nargs < 0)
			snprintf(e->why, sizeof(e->why), "%s", tp_forced_missing(e->event) ?
				 "forced missing by --fail-probe" : "tracepoint not in this kernel's BTF");
		else if (i == EV_COMPLETE && e->nargs < 2)
			snprintf(e->why, sizeof(e->why), "no request argument (kernel before v5.18)");
		else
			e->method = tp_btf ? "tp_btf" : "raw_tp";
	}
	rep->nstages = REQ_NSTAGES;
	for (i = 0; i < REQ_NSTAGES; i++) {
		st = &rep->stages[i];
		*st = (struct stage_status){ .layer = "uring", .stage = stage_names[i] };
		st->available = rep->events[EV_SUBMIT].method && rep->events[EV_COMPLETE].method;
		if (!st->available) {
			snprintf(st->how, sizeof(st->how), "unavailable: %s: %s",
				 rep->events[EV_SUBMIT].method ? "io_uring_complete" :
				 rep->events[EV_SUBMIT].event, rep->events[EV_SUBMIT].method ?
				 rep->events[EV_COMPLETE].why : rep->events[EV_SUBMIT].why);
			continue;
		}
		switch (i) {
		case REQ_SUBMIT_DONE:
			st->from = rep->events[EV_SUBMIT].event;
			st->to = "io_uring_complete";
			snprintf(st->how, sizeof(st->how), "%s [%s] -> io_uring_complete [%s]%s",
				 st->from, rep->events[EV_SUBMIT].method,
				 rep->events[EV_COMPLETE].method,
				 rep->events[EV_PUNT].method ? "" : "; io-wq punts not told apart");
			break;
		case REQ_DONE_REAP:
		case REQ_TOTAL:
			st->from = i == REQ_TOTAL ? rep->events[EV_SUBMIT].event : "io_uring_complete";
			st->to = "CQ head read at the ring's next event";
			snprintf(st->how, sizeof(st->how), "%s -> the ring's next submit, CQE or wait "
				 "that finds the CQ head past it: an upper bound", st->from);
			break;
		default:
			st->from = i == REQ_SUBMIT_BIO ? rep->events[EV_SUBMIT].event : "block events";
			st->to = i == REQ_DEVICE_CQE ? "io_uring_complete" : "block events";
			if (*link || !sy->kc_uring)
				st->available = 0;
			snprintf(st->how, sizeof(st->how), "%s", *link ? link : !sy->kc_uring ?
				 "io_complete_rw not in /proc/kallsyms" :
				 "O_DIRECT requests linked through bi_end_io; needs the block layer");
		}
	}
}

static void uring_report_static(struct layer_report *rep)
{
	probe(rep, true);
}

static void uring_stop(void *state)
{
	struct uring_layer *l = state;
	int i;

	if (!l)
		return;
	for (i = 0; i < NEV; i++)
		bpf_link__destroy(l->links[i]);
	uring_bpf__destroy(l->skel);
	req_report_free(&l->rep);
	free(l);
}

/*
 * An event's program for its method. io_uring_complete has a tp_btf program of its own for the
 * prototype that types the ring and the CQE (direct loads), picked when BTF shows that prototype.
 */
static struct bpf_program *prog(struct uring_layer *l, const struct event_status *e)
{
	bool typed = !strcmp(e->method, "tp_btf") && !strcmp(e->event, "io_uring_complete") &&
		     tp_arg_is_struct_ptr(e->event, 0, "io_ring_ctx") &&
		     tp_arg_is_struct_ptr(e->event, 2, "io_uring_cqe");
	char name[80];

	snprintf(name, sizeof(name), "%s_%s%s", e->method, e->event, typed ? "_typed" : "");
	return bpf_object__find_program_by_name(l->skel->obj, name);
}

static int load_attach(struct uring_layer *l, struct layer_report *rep)
{
	struct bpf_object *obj;
	struct bpf_program *p;
	int i, err;

	l->skel = uring_bpf__open();
	if (!l->skel)
		return -errno;
	obj = l->skel->obj;
	l->skel->rodata->filter_tgid = (uint32_t)opts.tgid;
	l->skel->rodata->filter_cgroup = opts.cgroup != NULL;
	l->skel->rodata->per_process = opts.per_process;
	l->skel->rodata->per_opcode = opts.per_opcode;
	REQ_RODATA(l->skel->rodata);
	if (reqs_use(l->skel->maps.reqs) ||
	    bpf_map__set_max_entries(l->skel->maps.uring_hists, 
				     hist_map_keys(sizeof(struct ioreq_hists), l->rep.ncpus,
						   req_keys_wanted())))
		return -EINVAL;
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, false);
	for (i = 0; i < NEV; i++)
		if (rep->events[i].method)
			bpf_program__set_autoload(prog(l, &rep->events[i]), true);
	err = uring_bpf__load(l->skel);
	if (err)
		return err;
	if (opts.cgroup && cgroup_filter_set(l->skel->maps.cgroup_filter))
		return -EBADF;
	/* completion first, so that no request is submitted with nobody to see its CQE */
	for (i = NEV - 1; i >= 0; i--) {
		if (!rep->events[i].method)
			continue;
		l->links[i] = bpf_program__attach(prog(l, &rep->events[i]));
		if (!l->links[i])
			return -errno;
		vlog("uring: %s attached by %s (%s)", rep->events[i].event, rep->events[i].method,
		     bpf_program__name(prog(l, &rep->events[i])));
	}
	return 0;
}

static int uring_start(void **out, struct layer_report *rep)
{
	struct uring_layer *l = calloc(1, sizeof(*l));
	bool tp_btf = !opts.force_raw_tp;
	int err = 0, i;

	*out = NULL;
	static const char *const drop_names[DROP_NREASONS] = {
		[DROP_INFLIGHT_FULL] = "uring_inflight_full",
		[DROP_INFLIGHT_STALE] = "uring_inflight_stale",
		[DROP_INFLIGHT_REUSED] = "uring_inflight_reused",
		[DROP_HIST_FULL] = "uring_hist_full",
		[DROP_REAP_UNSEEN] = "uring_reap_unseen",
	};
	static const char *const event_names[EV_NEVENTS] = {
		[EV_CQE_OVERFLOW] = "uring_cqe_overflow",
	};

	if (l)
		l->rep = (struct req_report){ .layer = "uring", .stages = stage_names,
			.name = opcode_name, .drop_names = drop_names, .event_names = event_names };
	if (!l || req_report_init(&l->rep)) {
		errorf("out of memory for the io_uring layer");
		uring_stop(l);
		return -1;
	}
	for (;;) {
		probe(rep, tp_btf);
		if (!rep->stages[REQ_SUBMIT_DONE].available) {
			errorf("io_uring layer unavailable: %s", rep->stages[REQ_SUBMIT_DONE].how);
			uring_stop(l);
			return -1;
		}
		err = load_attach(l, rep);
		if (!err || !tp_btf)
			break;
		vlog("uring: tp_btf programs failed (%s); trying their raw_tp twins", strerror(-err));
		for (i = 0; i < NEV; i++) {
			bpf_link__destroy(l->links[i]);
			l->links[i] = NULL;
		}
		uring_bpf__destroy(l->skel);
		l->skel = NULL;
		tp_btf = false;
	}
	if (err) {
		errorf("cannot load or attach the io_uring layer: %s", strerror(-err));
		uring_stop(l);
		return -1;
	}
	rep->nmaps = 0;
	{
		struct bpf_map *maps[] = { l->skel->maps.reqs, l->skel->maps.uring_hists,
					   l->skel->maps.rings, l->skel->maps.uring_zero,
					   l->skel->maps.ring_zero, l->skel->maps.drops };

		report_maps_mem(rep, maps, (int)(sizeof(maps) / sizeof(maps[0])));
	}
	*out = l;
	return 0;
}

static int uring_collect(void *state, struct interval *iv)
{
	struct uring_layer *l = state;

	return req_report_collect(&l->rep, &l->skel->bss->gen, l->skel->maps.uring_hists,
				  l->skel->maps.req_comm, l->skel->maps.drops,
				  l->skel->maps.app_events, iv);
}

const struct layer_ops uring_layer_ops = {
	.name = "uring",
	.requests = true,
	.start = uring_start,
	.collect = uring_collect,
	.stop = uring_stop,
	.report_static = uring_report_static,
};
