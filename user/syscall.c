// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The syscall layer's loader. Its programs are classic tracepoints (syscalls:sys_enter_* and
 * sys_exit_*), which need tracefs: mounted here when the host has not (said under -v), and
 * unmounted again at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "syscall.skel.h"
#include "common.h"
#include "layer.h"
#include "maps.h"

#define TRACEFS "/sys/kernel/tracing"
#define SC_NAME(name) #name,
static const char *const sc_names[SC_N] = { SYSCALLS(SC_NAME) };
#undef SC_NAME

struct syscall_layer {
	struct syscall_bpf *skel;
	struct bpf_link *links[2 * SC_N];
	int ncpus;
	struct hist *vals;
	bool mounted_tracefs;
	uint64_t prev_drops[DROP_NREASONS];
	uint64_t prev_misses;
};

static bool tp_exists(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), TRACEFS "/events/syscalls/%s_%s", dir, name);
	return !access(path, F_OK);
}

static void fill_report(struct layer_report *rep, bool have_events, const char *why_none)
{
	int i, n = 0, missing = 0;
	char *p;

	memset(rep, 0, sizeof(*rep));
	/* one line per syscall would not fit: one event row for the family, with the gaps */
	rep->nevents = 1;
	rep->events[0].event = "syscalls:sys_{enter,exit}_*";
	rep->events[0].role = "each traced syscall's entry and exit";
	rep->events[0].method = have_events ? "tracepoint" : NULL;
	if (!have_events) {
		snprintf(rep->events[0].why, sizeof(rep->events[0].why), "%s", why_none);
	} else {
		p = rep->events[0].why;
		for (i = 0; i < SC_N; i++) {
			if (tp_exists("sys_enter", sc_names[i]) && tp_exists("sys_exit", sc_names[i])) {
				n++;
				continue;
			}
			missing++;
			p += snprintf(p, sizeof(rep->events[0].why) - (size_t)(p - rep->events[0].why),
				      "%s%s", missing > 1 ? "," : "absent: ", sc_names[i]);
		}
	}
	rep->nstages = 1;
	rep->stages[0].layer = "syscall";
	rep->stages[0].stage = "duration";
	rep->stages[0].from = "sys_enter_<syscall>";
	rep->stages[0].to = "sys_exit_<syscall>";
	rep->stages[0].available = have_events && n > 0;
	if (rep->stages[0].available)
		snprintf(rep->stages[0].how, sizeof(rep->stages[0].how),
			 "classic tracepoints on %d syscalls (read/write family and fsync family on "
			 "regular files and block devices only; io_submit, io_getevents, io_pgetevents, "
			 "io_uring_enter)%s%s", n,
			 missing ? "; " : "", missing ? rep->events[0].why : "");
	else
		snprintf(rep->stages[0].how, sizeof(rep->stages[0].how), "unavailable: %s",
			 have_events ? "none of the syscalls has tracepoints" : why_none);
}

static void syscall_report_static(struct layer_report *rep)
{
	bool have = !access(TRACEFS "/events/syscalls", F_OK);

	fill_report(rep, have, have ? "" : "tracefs not mounted (as root iostrata mounts it)");
}

static void syscall_stop(void *state)
{
	struct syscall_layer *l = state;
	int i;

	if (!l)
		return;
	for (i = 0; i < 2 * SC_N; i++)
		bpf_link__destroy(l->links[i]);
	syscall_bpf__destroy(l->skel);
	if (l->mounted_tracefs && umount2(TRACEFS, MNT_DETACH))
		vlog("syscall: could not unmount " TRACEFS ": %s", strerror(errno));
	free(l->vals);
	free(l);
}

static int syscall_start(void **out, struct layer_report *rep)
{
	struct syscall_layer *l = calloc(1, sizeof(*l));
	struct bpf_program *prog;
	int i, err;
	char name[64];

	*out = NULL;
	if (!l) {
		errorf("out of memory for the syscall layer");
		return -1;
	}
	l->ncpus = libbpf_num_possible_cpus();
	l->vals = calloc((size_t)(l->ncpus > 0 ? l->ncpus : 1), sizeof(struct hist));
	if (!l->vals) {
		errorf("out of memory for the syscall layer");
		free(l);
		return -1;
	}
	if (tp_forced_missing("syscalls") || !tracefs_ready(&l->mounted_tracefs)) {
		fill_report(rep, false, tp_forced_missing("syscalls") ? "forced missing by "
			    "--fail-probe" : "no syscall tracepoints (CONFIG_FTRACE_SYSCALLS off, or "
			    "tracefs cannot be mounted)");
		errorf("syscall layer unavailable: %s", rep->events[0].why);
		syscall_stop(l);
		return -1;
	}
	fill_report(rep, true, "");
	l->skel = syscall_bpf__open();
	if (!l->skel) {
		errorf("cannot open the syscall layer's BPF object: %s", strerror(errno));
		syscall_stop(l);
		return -1;
	}
	l->skel->rodata->filter_tgid = (uint32_t)opts.tgid;
	l->skel->rodata->filter_cgroup = opts.cgroup != NULL;
	l->skel->rodata->per_process = opts.per_process;
	if (opts.comm) {
		l->skel->rodata->filter_comm = true;
		strncpy((char *)l->skel->rodata->comm_filter, opts.comm, 15);
	}
	/* -P: per-process keys in the hash; else (generation, syscall) in the array */
	bpf_map__set_max_entries(l->skel->maps.sc_hists, opts.per_process ?
				 hist_map_keys(sizeof(struct hist), l->ncpus, 2 * 4096) : 1);
	if (opts.per_process)
		bpf_map__set_max_entries(l->skel->maps.sc_total, 1);
	for (i = 0; i < SC_N; i++) {
		bool on = tp_exists("sys_enter", sc_names[i]) && tp_exists("sys_exit", sc_names[i]);

		snprintf(name, sizeof(name), "sce_%s", sc_names[i]);
		bpf_program__set_autoload(bpf_object__find_program_by_name(l->skel->obj, name), on);
		snprintf(name, sizeof(name), "scx_%s", sc_names[i]);
		bpf_program__set_autoload(bpf_object__find_program_by_name(l->skel->obj, name), on);
	}
	err = syscall_bpf__load(l->skel);
	if (err) {
		errorf("cannot load the syscall layer's BPF programs: %s (-v shows the verifier "
		       "log)", strerror(-err));
		syscall_stop(l);
		return -1;
	}
	if (opts.cgroup && cgroup_filter_set(l->skel->maps.cgroup_filter)) {
		syscall_stop(l);
		return -1;
	}
	/* exits before entries: a syscall entered now always finds its exit attached */
	for (i = 0; i < 2 * SC_N; i++) {
		const char *dir = i < SC_N ? "scx" : "sce";
		int sc = i % SC_N;

		snprintf(name, sizeof(name), "%s_%s", dir, sc_names[sc]);
		prog = bpf_object__find_program_by_name(l->skel->obj, name);
		if (!bpf_program__autoload(prog))
			continue;
		l->links[i] = bpf_program__attach(prog);
		if (!l->links[i]) {
			errorf("cannot attach to tracepoint syscalls:%s_%s: %s",
			       dir[2] == 'e' ? "sys_enter" : "sys_exit", sc_names[sc], strerror(errno));
			syscall_stop(l);
			return -1;
		}
	}
	{
		struct bpf_map *maps[] = { l->skel->maps.sc_start, l->skel->maps.sc_hists,
					   l->skel->maps.sc_total, l->skel->maps.sc_zero,
					   l->skel->maps.drops };
		char note[80];

		report_maps_mem(rep, maps, 5);
		snprintf(note, sizeof(note), "task storage: a %zu B slot per thread, at its first "
			 "traced syscall", sizeof(struct syscall_start));
		report_map_note(rep, "sc_start", note);
	}
	vlog("syscall: attached to the entry and exit tracepoints of its syscalls");
	*out = l;
	return 0;
}

static void syscall_label(const void *key, struct rec *rec, void *ctx)
{
	const struct syscall_key *k = key;

	snprintf(rec->syscall, sizeof(rec->syscall), "%s", k->sc < SC_N ? sc_names[k->sc] : "?");
	if (opts.per_process) {
		rec->pid = k->tgid;
		snprintf(rec->comm, sizeof(rec->comm), "%.15s", k->comm);
	}
}

static int syscall_collect(void *state, struct interval *iv)
{
	static const char *const drop_names[DROP_NREASONS] = {
		[DROP_HIST_FULL] = "syscall_hist_full",
		[DROP_SC_START_FULL] = "syscall_start_full",
	};
	static const char *const stages[] = { "duration" };
	struct syscall_layer *l = state;
	uint32_t old = gen_retire(&l->skel->bss->gen, iv), sc, idx;
	int err = 0, fd = bpf_map__fd(l->skel->maps.sc_total);

	if (opts.per_process)
		err = drain_hists(bpf_map__fd(l->skel->maps.sc_hists), sizeof(struct syscall_key),
				  old, l->ncpus, l->vals, 1, "syscall", stages, syscall_label, NULL,
				  iv);
	for (sc = 0; sc < SC_N && !err && !opts.per_process; sc++) {
		struct syscall_key k = { .gen = old, .sc = sc };

		/* an array slot cannot be deleted: an idle one is left at zero */
		idx = old * SC_N + sc;
		if (retired_read_and_zero(fd, &idx, l->vals, (size_t)l->ncpus * sizeof(struct hist)))
			err = hists_to_recs(&k, l->vals, l->ncpus, 1, "syscall", stages,
					    syscall_label, NULL, iv);
	}

	return err ? err : drops_read(l->skel->maps.drops, l->ncpus, DROP_HIST_FULL,
				      DROP_SC_START_FULL, drop_names, l->prev_drops, iv);
}

const struct layer_ops syscall_layer_ops = {
	.name = "syscall",
	.start = syscall_start,
	.collect = syscall_collect,
	.stop = syscall_stop,
	.report_static = syscall_report_static,
};
