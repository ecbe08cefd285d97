// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The aio layer's loader: native aio requests followed through io_submit and io_getevents
 * (classic syscall tracepoints, so tracefs: mounted if absent, unmounted at exit).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "aio.skel.h"
#include "common.h"
#include "layer.h"
#include "maps.h"
#include "req.h"

static const char *const stage_names[REQ_NSTAGES] = {
	[REQ_SUBMIT_DONE] = "submit_complete", [REQ_DONE_REAP] = "complete_reap",
	[REQ_TOTAL] = "total", [REQ_SUBMIT_BIO] = "submit_bio", [REQ_WAIT] = "wait",
	[REQ_DEVICE] = "device",
};

/* program name, syscall tracepoint, required */
static const struct { const char *prog, *tp; bool required; } progs[] = {
	{ "aio_submit_exit", "sys_exit_io_submit", true },
	{ "aio_getevents_exit", "sys_exit_io_getevents", true },
	{ "aio_pgetevents_exit", "sys_exit_io_pgetevents", false },
	{ "aio_submit_enter", "sys_enter_io_submit", true },
	{ "aio_getevents_enter", "sys_enter_io_getevents", true },
	{ "aio_pgetevents_enter", "sys_enter_io_pgetevents", false },
};
#define NPROGS (int)(sizeof(progs) / sizeof(progs[0]))

struct aio_layer {
	struct aio_bpf *skel;
	struct bpf_link *links[NPROGS];
	struct req_report rep;
	bool mounted_tracefs;
};

/* IOCB_CMD_* (UAPI: fixed numbers; the kernel's enum has no name to look up in BTF) */
static const char *cmd_name(unsigned int cmd, char *buf, size_t len)
{
	static const char *const names[] = { "pread", "pwrite", "fsync", "fdsync", NULL, "poll",
					     "noop", "preadv", "pwritev" };

	if (cmd < sizeof(names) / sizeof(names[0]) && names[cmd])
		snprintf(buf, len, "%s", names[cmd]);
	else
		snprintf(buf, len, "%u", cmd);
	return buf;
}

static bool tp_there(const char *tp)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/syscalls/%s", tp);
	return !tp_forced_missing(tp) && !access(path, F_OK);
}

static void fill_report(struct layer_report *rep, const char *why_none)
{
	const struct req_syms *sy = req_syms();
	const char *link = req_link_problem();
	int i;

	memset(rep, 0, sizeof(*rep));
	rep->nevents = 2;
	rep->events[0] = (struct event_status){ .event = "syscalls:sys_{enter,exit}_io_submit",
		.role = "iocbs submitted: start every stage", .required = 1 };
	rep->events[1] = (struct event_status){
		.event = "syscalls:sys_{enter,exit}_io_{,p}getevents",
		.role = "events returned: end complete_reap and total", .required = 1 };
	for (i = 0; i < 2; i++) {
		bool ok = !*why_none && (i ? tp_there("sys_exit_io_getevents") :
					 tp_there("sys_exit_io_submit"));

		rep->events[i].method = ok ? "tracepoint" : NULL;
		if (!ok)
			snprintf(rep->events[i].why, sizeof(rep->events[i].why), "%s",
				 *why_none ? why_none : "syscall tracepoint absent");
	}
	rep->nstages = 6;
	for (i = 0; i < rep->nstages; i++) {
		struct stage_status *st = &rep->stages[i];

		*st = (struct stage_status){ .layer = "aio", .stage = stage_names[i],
			.from = "sys_enter_io_submit", .to = "sys_exit_io_getevents" };
		st->available = rep->events[0].method && rep->events[1].method;
		if (!st->available) {
			snprintf(st->how, sizeof(st->how), "unavailable: %s", rep->events[0].method ?
				 rep->events[1].why : rep->events[0].why);
			continue;
		}
		if (i == REQ_TOTAL) {
			snprintf(st->how, sizeof(st->how), "io_submit entry -> io_getevents exit; "
				 "iocbs reaped in user space counted as not observable");
			continue;
		}
		if (i != REQ_SUBMIT_DONE)
			st->from = "block events";
		if (i != REQ_DONE_REAP)
			st->to = "block events";
		if (*link || !sy->kc_aio)
			st->available = 0;
		snprintf(st->how, sizeof(st->how), "%s", *link ? link : !sy->kc_aio ?
			 "aio_complete_rw not in /proc/kallsyms" :
			 "O_DIRECT iocbs linked through bi_end_io; needs the block layer");
	}
}

static void aio_report_static(struct layer_report *rep)
{
	bool have = !access("/sys/kernel/tracing/events/syscalls", F_OK);

	fill_report(rep, have ? "" : "tracefs not mounted (as root iostrata mounts it)");
}

static void aio_stop(void *state)
{
	struct aio_layer *l = state;
	int i;

	if (!l)
		return;
	for (i = 0; i < NPROGS; i++)
		bpf_link__destroy(l->links[i]);
	aio_bpf__destroy(l->skel);
	if (l->mounted_tracefs && umount2("/sys/kernel/tracing", MNT_DETACH))
		vlog("aio: could not unmount tracefs: %s", strerror(errno));
	req_report_free(&l->rep);
	free(l);
}

static int fail(struct aio_layer *l, const char *what, int err)
{
	errorf("aio layer: %s: %s", what, strerror(err));
	aio_stop(l);
	return -1;
}

static int aio_start(void **out, struct layer_report *rep)
{
	struct aio_layer *l = calloc(1, sizeof(*l));
	struct bpf_program *p;
	int i;

	*out = NULL;
	static const char *const drop_names[DROP_NREASONS] = {
		[DROP_INFLIGHT_FULL] = "aio_inflight_full",
		[DROP_INFLIGHT_STALE] = "aio_inflight_stale",
		[DROP_HIST_FULL] = "aio_hist_full",
		[DROP_SC_START_FULL] = "aio_call_full",
		[DROP_AIO_BATCH] = "aio_batch_cut",
	};
	static const char *const event_names[EV_NEVENTS] = {
		[EV_AIO_REAP_UNOBSERVED] = "aio_reap_unobserved",
	};

	if (l)
		l->rep = (struct req_report){ .layer = "aio", .stages = stage_names,
			.name = cmd_name, .drop_names = drop_names, .event_names = event_names };
	if (!l || req_report_init(&l->rep)) {
		errorf("out of memory for the aio layer");
		aio_stop(l);
		return -1;
	}
	if (!tracefs_ready(&l->mounted_tracefs)) {
		fill_report(rep, "no syscall tracepoints (CONFIG_FTRACE_SYSCALLS off, or tracefs "
			    "cannot be mounted)");
		errorf("aio layer unavailable: %s", rep->events[0].why);
		aio_stop(l);
		return -1;
	}
	fill_report(rep, "");
	if (!rep->stages[REQ_TOTAL].available) {
		errorf("aio layer unavailable: %s", rep->stages[REQ_TOTAL].how);
		aio_stop(l);
		return -1;
	}
	l->skel = aio_bpf__open();
	if (!l->skel)
		return fail(l, "cannot open its BPF object", errno);
	l->skel->rodata->filter_tgid = (uint32_t)opts.tgid;
	l->skel->rodata->filter_cgroup = opts.cgroup != NULL;
	l->skel->rodata->per_process = opts.per_process;
	l->skel->rodata->per_opcode = opts.per_opcode;
	REQ_RODATA(l->skel->rodata);
	if (reqs_use(l->skel->maps.reqs) ||
	    bpf_map__set_max_entries(l->skel->maps.aio_hists, 
				     hist_map_keys(sizeof(struct ioreq_hists), l->rep.ncpus,
						   req_keys_wanted())))
		return fail(l, "cannot share the request table", errno);
	for (i = 0; i < NPROGS; i++) {
		p = bpf_object__find_program_by_name(l->skel->obj, progs[i].prog);
		bpf_program__set_autoload(p, tp_there(progs[i].tp));
	}
	i = aio_bpf__load(l->skel);
	if (i)
		return fail(l, "cannot load its BPF programs (-v shows the verifier log)", -i);
	if (opts.cgroup && cgroup_filter_set(l->skel->maps.cgroup_filter)) {
		aio_stop(l);
		return -1;
	}
	/* exits before entries: an entry recorded now always finds its exit attached */
	for (i = 0; i < NPROGS; i++) {
		p = bpf_object__find_program_by_name(l->skel->obj, progs[i].prog);
		if (!bpf_program__autoload(p))
			continue;
		l->links[i] = bpf_program__attach(p);
		if (!l->links[i])
			return fail(l, progs[i].tp, errno);
	}
	{
		struct bpf_map *maps[] = { l->skel->maps.reqs, l->skel->maps.aio_hists,
					   l->skel->maps.aio_calls, l->skel->maps.aio_zero,
					   l->skel->maps.drops };
		char note[80];

		report_maps_mem(rep, maps, (int)(sizeof(maps) / sizeof(maps[0])));
		snprintf(note, sizeof(note), "task storage: a %u B slot per thread, at its first "
			 "io_submit/io_getevents", bpf_map__value_size(l->skel->maps.aio_calls));
		report_map_note(rep, "aio_calls", note);
	}
	vlog("aio: attached to io_submit and io_getevents");
	*out = l;
	return 0;
}

static int aio_collect(void *state, struct interval *iv)
{
	struct aio_layer *l = state;

	return req_report_collect(&l->rep, &l->skel->bss->gen, l->skel->maps.aio_hists,
				  l->skel->maps.req_comm, l->skel->maps.drops,
				  l->skel->maps.app_events, iv);
}

const struct layer_ops aio_layer_ops = {
	.name = "aio",
	.requests = true,
	.start = aio_start,
	.collect = aio_collect,
	.stop = aio_stop,
	.report_static = aio_report_static,
};
