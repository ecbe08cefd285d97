// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The syscall layer: what only it has. Its programs are classic tracepoints (syscalls:sys_enter_*
 * and sys_exit_*), one pair per syscall of SYSCALLS() in iostrata.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
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
		 "block devices only; io_submit, io_getevents, io_pgetevents, io_uring_enter",
	  .unmeasured = "the call had not returned when tracing stopped" },
};

/* Without -P: the array slot of (generation, syscall) stands for this key. */
static void total_key(uint32_t gen, uint32_t i, void *key)
{
	*(struct syscall_key *)key = (struct syscall_key){ .gen = gen, .sc = i };
}

/*
 * (generation, syscall) in the array, unless -P or -C key by more, or the array's copy per CPU
 * would pass the budget every histogram map keeps to: then those keys are the hash's, which
 * holds what fits per CPU and spills the rest to slots all CPUs share.
 */
static bool sc_flat(const struct layer_inst *l)
{
	return !l->cfg->per_process && !l->cfg->per_cgroup &&
	       hist_map_keys(l, 2 * SC_N) == 2 * SC_N;
}

static uint32_t hash_keys(const struct layer_inst *l)
{
	if (sc_flat(l))
		return 1;	/* unused */
	return l->cfg->per_process || l->cfg->per_cgroup ? 2 * 4096 : 2 * SC_N;
}

static uint32_t array_slots(const struct layer_inst *l)
{
	return sc_flat(l) ? 2 * SC_N : 1;
}

static const struct layer_hists hists[] = {
	{ .map = SKEL_MAP(syscall, sc_hists), .key_size = sizeof(struct syscall_key),
	  .entries = hash_keys, .spill = SKEL_MAP(syscall, sc_spill),
	  .spill_idx = SKEL_MAP(syscall, sc_spill_idx),
	  .spill_free = SKEL_MAP(syscall, sc_spill_free) },
	{ .map = SKEL_MAP(syscall, sc_total), .per_gen = SC_N, .array_key = total_key,
	  .entries = array_slots },
};

static void label(const struct layer_inst *l, const void *key, struct rec *r)
{
	const struct syscall_key *k = key;

	snprintf(r->syscall, sizeof(r->syscall), "%s", k->sc < SC_N ? sc_names[k->sc] : "?");
	if (k->tgid) {
		r->pid = k->tgid;
		snprintf(r->comm, sizeof(r->comm), "%.15s", k->comm);
	}
	layer_label_cgroup(l, k->cgroup, r);
}

static const char *sc_name(unsigned int sc, char *buf, size_t len)
{
	snprintf(buf, len, "%s", sc < SC_N ? sc_names[sc] : "?");
	return buf;
}

static int configure(struct layer_inst *l)
{
	struct syscall_bpf *skel = l->skel;

	COMMON_RODATA(skel->rodata, l);
	skel->rodata->per_process = l->cfg->per_process;
	skel->rodata->sc_flat = sc_flat(l);
	/* the stop's walk of the threads still in a call (pending) */
	bpf_program__set_autoload(skel->progs.sc_in_call, true);
	if (l->cfg->comm) {
		skel->rodata->filter_comm = true;
		strncpy((char *)skel->rodata->comm_filter, l->cfg->comm, 15);
	}
	return 0;
}

/*
 * io_uring_enter with the uring layer running: that layer follows each request from its
 * submission to its reap, and timing every enter too cost two more programs per call, per I/O
 * where a ring is entered once per request (docs/trust.md, "What the tracer costs").
 */
static const char *event_unneeded(const struct trace_config *c, int ev)
{
	/* events[] holds each syscall's entry and exit, in SYSCALLS() order */
	if (ev / 2 == SC_io_uring_enter && (!c->layers || c->layers & BIT(LAYER_URING)))
		return "left to the uring layer, which follows each request (-l syscall without "
		       "uring times it)";
	return NULL;
}

/*
 * At the stop (detached): each call entered and not returned, unmeasured, so that the stage's
 * count + unmeasured is every call seen entering. The calls are in the threads' own storage:
 * a task iterator walks the threads and writes each one's key.
 */
static int pending(struct layer_inst *l, bool final, struct interval *iv)
{
	struct syscall_bpf *skel = l->skel;
	char buf[64 * sizeof(struct syscall_key)];
	size_t have = 0, off;
	struct bpf_link *link;
	int fd, err = 0;
	ssize_t n;

	if (!final)
		return 0;
	link = bpf_program__attach_iter(skel->progs.sc_in_call, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	while (!err && (n = read(fd, buf + have, sizeof(buf) - have)) != 0) {
		if (n < 0) {
			if (errno != EINTR)
				err = -errno;
			continue;
		}
		have += (size_t)n;
		for (off = 0; !err && have - off >= sizeof(struct syscall_key);
		     off += sizeof(struct syscall_key)) {
			struct syscall_key k;

			memcpy(&k, buf + off, sizeof(k));
			err = layer_add_stage(l, &k, 0, 0, 0, iv);
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	if (!err && have)
		err = -EIO;	/* a key cut short: not the iterator's output */
	close(fd);
out:
	bpf_link__destroy(link);
	return err;
}

LAYER_SKELETON(syscall)

const struct layer syscall_layer = {
	LAYER_COMMON(syscall),
	.drops = BIT(DROP_HIST_FULL) | BIT(DROP_SC_START_FULL),
	.label = label, .code_name = sc_name,
	.configure = configure, .event_unneeded = event_unneeded, .pending = pending,
};
