// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The syscall layer: what only it has. Its programs are classic tracepoints (syscalls:sys_enter_*
 * and sys_exit_*), one pair per syscall of SYSCALLS() in iostrata.h.
 */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "syscall.skel.h"
#include "layer.h"

#define SC_NAME(name) #name,
static const char *const sc_names[SC_N] = { SYSCALLS(SC_NAME) };
#undef SC_NAME

#define SC_EVENTS(name)								\
	{ "sys_enter_" #name, EV_SYSCALL, SKEL_PROG(syscall, sce_##name), .pair = 1,	\
	  .role = #name ": entry" },						\
	{ "sys_exit_" #name, EV_SYSCALL, SKEL_PROG(syscall, scx_##name), .pair = -1,	\
	  .role = #name ": exit, timed" },
static const struct layer_event events[] = { SYSCALLS(SC_EVENTS) };
#undef SC_EVENTS

static const struct layer_stage stages[] = {
	{ "duration", -1, -1, "sys_enter_<syscall>", "sys_exit_<syscall>",
	  .how = "classic tracepoints: the read/write and fsync families on regular files and "
		 "block devices only; io_submit, io_getevents, io_pgetevents, io_uring_enter" },
};

/* Without -P: the array slot of (generation, syscall) stands for this key. */
static void total_key(uint32_t gen, uint32_t i, void *key)
{
	*(struct syscall_key *)key = (struct syscall_key){ .gen = gen, .sc = i };
}

static const struct layer_hists hists[] = {
	{ .map = SKEL_MAP(syscall, sc_hists), .key_size = sizeof(struct syscall_key) },
	{ .map = SKEL_MAP(syscall, sc_total), .per_gen = SC_N, .array_key = total_key },
};

static const char *const drop_names[DROP_NREASONS] = {
	[DROP_HIST_FULL] = "syscall_hist_full",
	[DROP_SC_START_FULL] = "syscall_start_full",
};

static const struct layer_map_note maps[] = {
	{ .map = SKEL_MAP(syscall, sc_start) }, { .map = SKEL_MAP(syscall, sc_hists) },
	{ .map = SKEL_MAP(syscall, sc_total) }, { .map = SKEL_MAP(syscall, sc_zero) },
	{ .map = SKEL_MAP(syscall, drops) }, { 0 },
};

static void label(const struct layer_inst *l, const void *key, struct rec *r)
{
	const struct syscall_key *k = key;

	snprintf(r->syscall, sizeof(r->syscall), "%s", k->sc < SC_N ? sc_names[k->sc] : "?");
	if (k->tgid) {
		r->pid = k->tgid;
		snprintf(r->comm, sizeof(r->comm), "%.15s", k->comm);
	}
}

static int configure(struct layer_inst *l)
{
	const struct trace_config *c = l->cfg;
	struct syscall_bpf *skel = l->skel;

	OWNER_RODATA(skel->rodata, l);
	skel->rodata->per_process = c->per_process;
	if (c->comm) {
		skel->rodata->filter_comm = true;
		strncpy((char *)skel->rodata->comm_filter, c->comm, 15);
	}
	/* -P: per-process keys in the hash; else (generation, syscall) in the array */
	return bpf_map__set_max_entries(skel->maps.sc_hists, c->per_process ?
					hist_map_keys(l, 2 * 4096) : 1) ?:
	       bpf_map__set_max_entries(skel->maps.sc_total, c->per_process ? 1 : 2 * SC_N);
}

static void *open_skel(void) { return syscall_bpf__open(); }
static void destroy_skel(void *s) { syscall_bpf__destroy(s); }

const struct layer syscall_layer = {
	.name = "syscall",
	.help = "duration of the read/write and fsync families, io_submit, io_getevents, "
		"io_uring_enter",
	.events = events, .nevents = sizeof(events) / sizeof(events[0]),
	.stages = stages, .nstages = 1,
	.hists = hists, .nhists = sizeof(hists) / sizeof(hists[0]),
	.label = label,
	.drop_names = drop_names,
	.drops_map = SKEL_MAP(syscall, drops), .gens_map = SKEL_MAP(syscall, gens),
	.cgroup_map = SKEL_MAP(syscall, cgroup_filter),
	.maps = maps,
	.open = open_skel, .destroy = destroy_skel,
	.configure = configure,
};
