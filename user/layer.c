// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The one routine every layer runs through: probe its events (BTF for tracepoints, tracefs for
 * syscall events), open its skeleton, hand it the session's shared maps, configure, load,
 * attach (ends of requests before their starts), fall back from tp_btf to the raw_tp twins,
 * report; then, each interval, drain a retired generation of its histogram maps and read its
 * counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cgroups.h"
#include "ksyms.h"
#include "layer.h"
#include "log.h"
#include "sysinfo.h"

/* What every bpftool skeleton starts with. */
struct skel_head {
	struct bpf_object_skeleton *skeleton;
	struct bpf_object *obj;
};

static struct bpf_program *prog_at(const struct layer_inst *l, size_t off)
{
	return off ? *(struct bpf_program **)((char *)l->skel + off) : NULL;
}

struct bpf_map *layer_map(const struct layer_inst *l, size_t off)
{
	return off ? *(struct bpf_map **)((char *)l->skel + off) : NULL;
}

const struct layer *layer_by_name(const char *name, int *id)
{
	int i;

	for (i = 0; i < NLAYERS; i++) {
		if (!strcmp(layers[i]->name, name)) {
			if (id)
				*id = i;
			return layers[i];
		}
	}
	return NULL;
}

static int id_of(const struct layer *d)
{
	int i;

	for (i = 0; i < NLAYERS && layers[i] != d; i++)
		;
	return i;
}

bool stage_wanted(const struct trace_config *cfg, int id, int st)
{
	bool any = false;
	int i;

	for (i = 0; i < NLAYERS; i++)
		any |= cfg->stages[i] != 0;
	return !any || (id < NLAYERS && (cfg->stages[id] & BIT(st)));
}

void layer_label_cgroup(const struct layer_inst *l, uint64_t id, struct rec *r)
{
	if (!l->cfg->per_cgroup)
		return;
	if (id)
		cgroup_name(l->shared->cgroups, id, r->cgroup, sizeof(r->cgroup));
	else	/* no submitter seen (a flush without bios, a request in flight at start) */
		snprintf(r->cgroup, sizeof(r->cgroup), "(none)");
}

const char *layer_unmeasured_why(const char *layer, const char *stage)
{
	const struct layer *d = layer_by_name(layer, NULL);
	int i;

	for (i = 0; d && i < d->nstages; i++)
		if (d->stages[i].name && !strcmp(d->stages[i].name, stage) && d->stages[i].unmeasured)
			return d->stages[i].unmeasured;
	return "no start event";
}

static bool forced_missing(const struct trace_config *cfg, const struct layer_event *e,
			   const char *tp)
{
	int i;

	for (i = 0; i < cfg->nfail_tp; i++)
		if (!strcmp(cfg->fail_tp[i], tp) ||
		    (e->kind == EV_SYSCALL && !strcmp(cfg->fail_tp[i], "syscalls")))
			return true;
	return false;
}

/* Which events this kernel offers and how each would attach: BTF and tracefs, nothing loaded. */
static void probe_events(const struct layer *d, const struct trace_config *cfg, bool tp_btf,
			 bool tracefs, struct layer_report *rep)
{
	int i, n;

	rep->nevents = d->nevents;
	for (i = 0; i < d->nevents; i++) {
		const struct layer_event *ev = &d->events[i];
		struct event_status *e = &rep->events[i];

		memset(e, 0, sizeof(*e));
		e->event = ev->tp;
		e->role = ev->role;
		e->required = ev->required;
		if (forced_missing(cfg, ev, ev->tp)) {
			snprintf(e->why, sizeof(e->why), "forced missing by --fail-probe");
			continue;
		}
		if (ev->kind == EV_SYSCALL) {
			if (!tracefs)
				snprintf(e->why, sizeof(e->why), "%s", geteuid() ?
					 "tracefs not mounted (as root iostrata mounts it)" :
					 "no syscall tracepoints (CONFIG_FTRACE_SYSCALLS off, or "
					 "tracefs cannot be mounted)");
			else if (!syscall_tp_exists(ev->tp))
				snprintf(e->why, sizeof(e->why), "syscall tracepoint absent");
			else
				e->method = "tracepoint";
			continue;
		}
		n = tp_nargs(ev->tp);
		if (n < 0 && ev->old_tp && !forced_missing(cfg, ev, ev->old_tp) &&
		    (n = tp_nargs(ev->old_tp)) >= 0)
			e->event = ev->old_tp;
		e->nargs = n;
		if (n < 0) {
			snprintf(e->why, sizeof(e->why), "tracepoint not in this kernel's BTF");
			continue;
		}
		if (ev->nargs && (ev->nargs_any ? n < ev->nargs : ev->exact_nargs ? n != ev->nargs :
				  n != ev->nargs && n != ev->nargs + 1)) {
			snprintf(e->why, sizeof(e->why), "unknown prototype (%d arguments)", n);
			continue;
		}
		/* an older prototype with a leading argument (a request_queue before v5.11) */
		e->arg = ev->nargs && !ev->nargs_any && n > ev->nargs;
		e->method = tp_btf ? "tp_btf" : "raw_tp";
	}
	/* only what the configuration needs is attached; the others say why not */
	for (i = 0; i < d->nevents && d->event_unneeded; i++) {
		struct event_status *e = &rep->events[i];
		const char *why;

		if (e->method && (why = d->event_unneeded(cfg, i))) {
			e->method = NULL;
			snprintf(e->why, sizeof(e->why), "%s", why);
		}
	}
	/* syscall events come in entry/exit pairs: one without the other times nothing */
	for (i = 0; i < d->nevents; i++) {
		const struct layer_event *ev = &d->events[i];
		struct event_status *e = &rep->events[i], *o;

		if (!ev->pair || !e->method)
			continue;
		o = &rep->events[i + ev->pair];
		if (!o->method && o->why[0] && strncmp(o->why, "pair", 4)) {
			e->method = NULL;
			snprintf(e->why, sizeof(e->why), "pair %s unavailable", o->event);
		}
	}
}

static const char *missing_required(const struct layer_report *rep)
{
	int i;

	for (i = 0; i < rep->nevents; i++)
		if (rep->events[i].required && !rep->events[i].method)
			return rep->events[i].event;
	return NULL;
}

/* Each stage: available or not, and how it is bounded; from the events as probed. */
static void describe_stages(const struct layer *d, struct layer_report *rep)
{
	const struct event_status *ev = rep->events;
	const char *req = missing_required(rep);
	bool any = false;
	int i, m;

	for (i = 0; i < rep->nevents; i++)
		any |= ev[i].method != NULL;
	rep->nstages = 0;
	for (i = 0; i < d->nstages && rep->nstages < MAX_STAGES; i++) {
		const struct layer_stage *s = &d->stages[i];
		struct stage_status *st;
		size_t used;

		if (!s->name)
			continue;
		st = &rep->stages[rep->nstages++];
		memset(st, 0, sizeof(*st));
		st->layer = d->name;
		st->stage = s->name;
		st->from = s->from >= 0 ? ev[s->from].event : s->from_text;
		st->to = s->to >= 0 ? ev[s->to].event : s->to_text;
		m = s->from >= 0 && !ev[s->from].method ? s->from :
		    s->to >= 0 && !ev[s->to].method ? s->to : -1;
		for (int k = 0; m < 0 && req && k < rep->nevents; k++)
			if (ev[k].required && !ev[k].method)
				m = k;
		if (m >= 0) {
			snprintf(st->how, sizeof(st->how), "unavailable: %s: %s", ev[m].event,
				 ev[m].why);
			continue;
		}
		if (!any) {
			snprintf(st->how, sizeof(st->how), "unavailable: %s", rep->nevents ?
				 ev[0].why : "no events");
			continue;
		}
		if (s->flags & STAGE_LINKED) {
			const char *lp = link_problem();

			if (*lp) {
				snprintf(st->how, sizeof(st->how), "unavailable: %s", lp);
				continue;
			}
			if (!*(const uint64_t *)((const char *)link_syms() + d->link_sym)) {
				snprintf(st->how, sizeof(st->how),
					 "unavailable: %s not in /proc/kallsyms", d->link_fn);
				continue;
			}
		}
		st->available = 1;
		if (s->how)
			used = (size_t)snprintf(st->how, sizeof(st->how), "%s", s->how);
		else
			used = (size_t)snprintf(st->how, sizeof(st->how), "%s [%s] -> %s [%s]",
						st->from, ev[s->from].method, st->to,
						ev[s->to].method);
		if (s->note && !ev[s->note_ev].method && used < sizeof(st->how))
			snprintf(st->how + used, sizeof(st->how) - used, "; %s", s->note);
	}
}

void layer_report_static(const struct layer *d, const struct trace_config *cfg,
			 struct layer_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	probe_events(d, cfg, true, !access(TRACEFS "/events/syscalls", F_OK), rep);
	describe_stages(d, rep);
}

/* The program event i attaches with, for the method probing chose. */
static struct bpf_program *event_prog(const struct layer_inst *l, int i)
{
	const struct layer_event *ev = &l->desc->events[i];
	const struct event_status *e = &l->rep.events[i];
	bool btf = !strcmp(e->method, "tp_btf"), old = ev->old_tp && e->event == ev->old_tp;

	if (ev->kind == EV_SYSCALL)
		return prog_at(l, ev->btf);
	if (btf && ev->typed && ev->typed_ok(e->event))
		return prog_at(l, ev->typed);
	if (old)
		return prog_at(l, btf ? ev->old_btf : ev->old_raw);
	return prog_at(l, btf ? ev->btf : ev->raw);
}

static void *link_destroy(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

/*
 * Destroy links[0..n) at once, each in a thread of its own (one without: here, in turn).
 * Detaching a program from a classic tracepoint waits in the kernel for an RCU grace period
 * (tasks trace): ~30 ms on this 2-CPU VM under load. Waiting at once, they share it; one after
 * another, the syscall layer's 34 and aio's 6 took ~1.2 s.
 */
static void links_destroy(struct bpf_link **links, int n)
{
	pthread_t t[NLAYERS * MAX_EVENTS];
	bool threaded[NLAYERS * MAX_EVENTS];
	pthread_attr_t attr;
	bool attr_ok = !pthread_attr_init(&attr);
	int i;

	if (attr_ok)
		pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < n; i++) {
		threaded[i] = !pthread_create(&t[i], attr_ok ? &attr : NULL, link_destroy,
					      links[i]);
		if (!threaded[i])
			bpf_link__destroy(links[i]);
	}
	for (i = 0; i < n; i++)
		if (threaded[i])
			pthread_join(t[i], NULL);
	if (attr_ok)
		pthread_attr_destroy(&attr);
}

static bool is_syscall(const struct layer_inst *l, int ev)
{
	return ev < l->desc->nevents && l->desc->events[ev].kind == EV_SYSCALL;
}

void layers_detach(struct layer_inst *const *ls, int n)
{
	struct bpf_link *side[NLAYERS * MAX_EVENTS];
	int i, ev, k, pass;

	if (n > NLAYERS)
		n = NLAYERS;
	/* starts of requests first: nothing starts that its end would not see */
	for (i = 0; i < n; i++)	/* tracepoints' programs, quick to detach: in table order */
		for (ev = 0; ls[i] && ev < MAX_EVENTS; ev++)
			if (ls[i]->links[ev] && !is_syscall(ls[i], ev)) {
				bpf_link__destroy(ls[i]->links[ev]);
				ls[i]->links[ev] = NULL;
			}
	/* syscall pairs: every layer's entries at once, then every layer's exits */
	for (pass = 0; pass < 2; pass++) {
		for (k = 0, i = 0; i < n; i++)
			for (ev = 0; ls[i] && ev < MAX_EVENTS; ev++)
				if (ls[i]->links[ev] &&
				    (ls[i]->desc->events[ev].pair > 0) == (pass == 0)) {
					side[k++] = ls[i]->links[ev];
					ls[i]->links[ev] = NULL;
				}
		links_destroy(side, k);
	}
}

void layer_detach(struct layer_inst *l)
{
	layers_detach(&l, 1);
}

/*
 * A perf event on syscall tracepoint tp, opened disabled and never enabled: it runs nothing, and
 * holds the tracepoint registered for perf while the layer's link on it detaches. The last perf
 * event of a tracepoint to go unregisters it and waits, under the kernel's event_mutex, for RCU
 * grace periods (tracepoint_synchronize_unregister(): ~40 ms here under load): one at a time
 * whatever the threads, 1.3 s for the syscall layer's, which held the last interval that long
 * after a stop. Held, they go after it (layer_free). -1 when it cannot be opened: the link's
 * own event then unregisters it, at the detach.
 */
static int tp_hold(const char *tp)
{
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(a),
				     .disabled = 1 };
	char path[256], buf[32];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), TRACEFS "/events/syscalls/%s/id", tp);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	a.config = strtoull(buf, NULL, 10);
	fd = (int)syscall(__NR_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		vlog("%s: no perf event to hold it while detaching: %s", tp, strerror(errno));
	return fd;
}

static void tp_release(struct layer_inst *l)
{
	int i;

	for (i = 0; i < MAX_EVENTS; i++) {
		if (l->tp_holds[i] >= 0)
			close(l->tp_holds[i]);
		l->tp_holds[i] = -1;
	}
}

static void unload(struct layer_inst *l)
{
	layer_detach(l);
	tp_release(l);	/* after the links: the tracepoints are unregistered here */
	memset(l->progs, 0, sizeof(l->progs));
	if (l->skel)
		l->desc->destroy(l->skel);
	l->skel = NULL;
}

void layer_free(struct layer_inst *l)
{
	if (!l)
		return;
	unload(l);
	free(l->vals);
	free(l->blank);
	free(l->spill_blank);
	free(l->held);
	free(l);
}

static int cgroup_filter_set(struct bpf_map *map, const char *path)
{
	uint32_t zero = 0;
	int fd = open(path, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || bpf_map__update_elem(map, &zero, sizeof(zero), &fd, sizeof(fd), 0)) {
		errorf("-c %s: not a cgroup v2 directory", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * After load, with spill slots: every slot emptied (its histograms marked shared, min_ns at the
 * top, for hist_add_shared) and queued as free for the programs to take.
 */
static int spill_init(struct layer_inst *l)
{
	const struct layer *d = l->desc;
	uint32_t slot, n;
	int i, h, fd, qfd;

	if (!l->spill)
		return 0;
	for (i = 0; i < d->nstages; i++)
		l->spill_blank[i] = (struct hist){ .min_ns = UINT64_MAX, .shared = 1 };
	for (h = 0; h < d->nhists; h++) {
		if (!d->hists[h].spill)
			continue;
		fd = bpf_map__fd(layer_map(l, d->hists[h].spill));
		qfd = bpf_map__fd(layer_map(l, d->hists[h].spill_free));
		n = bpf_map__max_entries(layer_map(l, d->hists[h].spill));
		for (slot = 0; slot < n; slot++)
			if (bpf_map_update_elem(fd, &slot, l->spill_blank, 0) ||
			    bpf_map_update_elem(qfd, NULL, &slot, 0))
				return -errno;
	}
	return 0;
}

/* Open, share, configure and load the programs probing chose; 0 or a negative errno. */
static int load(struct layer_inst *l)
{
	const struct layer *d = l->desc;
	struct bpf_program *p;
	struct skel_head *h;
	int i, err;

	l->skel = d->open();
	if (!l->skel)
		return -errno;
	h = l->skel;
	if (bpf_map__reuse_fd(layer_map(l, d->gens_map), l->shared->gen_fd))
		return -errno;
	if (l->shared->snoop_fd >= 0 &&
	    bpf_map__reuse_fd(layer_map(l, d->snoop_map), l->shared->snoop_fd))
		return -errno;
	if (d->comm_map && bpf_map__reuse_fd(layer_map(l, d->comm_map), l->shared->comm_fd))
		return -errno;
	if (d->reqs_map && (l->shared->reqs_fd >= 0 ?
			    bpf_map__reuse_fd(layer_map(l, d->reqs_map), l->shared->reqs_fd) :
			    bpf_map__set_max_entries(layer_map(l, d->reqs_map), 1)))
		return -errno;
	bpf_object__for_each_program(p, h->obj)
		bpf_program__set_autoload(p, false);
	for (i = 0; i < d->nevents; i++) {
		if (!l->rep.events[i].method)
			continue;
		l->progs[i] = event_prog(l, i);
		bpf_program__set_autoload(l->progs[i], true);
	}
	l->spill = false;
	for (i = 0; i < d->nhists; i++) {
		const struct layer_hists *hm = &d->hists[i];
		uint32_t want, n, spill;

		if (!hm->entries)
			continue;
		want = hm->entries(l);
		n = hm->key_size ? hist_map_keys(l, want) : want;
		if (hm->percpu && hm->percpu(l) < n)
			n = hm->percpu(l);
		spill = hm->spill ? hist_spill_keys(l, want, n) : 0;
		if (bpf_map__set_max_entries(layer_map(l, hm->map), n) ||
		    (hm->spill && (bpf_map__set_max_entries(layer_map(l, hm->spill), spill ?: 1) ||
				   bpf_map__set_max_entries(layer_map(l, hm->spill_idx),
							    spill ?: 1) ||
				   bpf_map__set_max_entries(layer_map(l, hm->spill_free),
							    spill ?: 1))))
			return -errno;
		l->spill |= spill > 0;
	}
	err = d->configure(l);
	if (err)
		return err;
	err = bpf_object__load_skeleton(h->skeleton);
	if (err)
		return err;
	err = spill_init(l);
	if (err)
		return err;
	if (l->cfg->cgroup && cgroup_filter_set(layer_map(l, d->cgroup_map), l->cfg->cgroup))
		return -EBADF;
	return 0;
}

/*
 * Attach, ends of requests before their starts: a request can never start with nobody to see
 * it end. 0; 1 when a tp_btf program would not attach (the raw_tp twins may); -1 said.
 */
static int attach(struct layer_inst *l, bool tp_btf)
{
	const struct layer *d = l->desc;
	int i;

	for (i = d->nevents - 1; i >= 0; i--) {
		struct event_status *e = &l->rep.events[i];

		if (!e->method)
			continue;
		l->links[i] = bpf_program__attach(l->progs[i]);
		if (l->links[i] && d->events[i].kind == EV_SYSCALL && l->tp_holds[i] < 0)
			l->tp_holds[i] = tp_hold(e->event);
		if (l->links[i]) {
			vlog("%s: %s attached by %s (%s)", d->name, e->event, e->method,
			     bpf_program__name(l->progs[i]));
			continue;
		}
		snprintf(e->why, sizeof(e->why), "%s attach failed: %s", e->method,
			 strerror(errno));
		vlog("%s: %s: %s", d->name, e->event, e->why);
		if (tp_btf && d->events[i].kind == EV_TP)
			return 1;
		if (e->required) {
			errorf("%s layer: cannot attach to %s: %s", d->name, e->event, e->why);
			return -1;
		}
		e->method = NULL;
	}
	return 0;
}

/* Is map a spill array of the layer's histograms? */
static bool is_spill(const struct layer_inst *l, const struct bpf_map *map)
{
	int h;

	for (h = 0; h < l->desc->nhists; h++)
		if (l->desc->hists[h].spill && layer_map(l, l->desc->hists[h].spill) == map)
			return true;
	return false;
}

/* Every map of the object but its .rodata/.bss and the session's shared ones: their memory.
 * A shared map is told by its kernel id: bpf_map__reuse_fd() holds a dup() of the session's fd,
 * so the object's fd never equals it, and the session lists those maps once (the total counts
 * each map once). */
static void report_maps(struct layer_inst *l)
{
	const int shared_fds[] = { l->shared->gen_fd, l->shared->reqs_fd, l->shared->comm_fd,
				   l->shared->snoop_fd };
	uint32_t shared[sizeof(shared_fds) / sizeof(shared_fds[0])];
	struct layer_report *rep = &l->rep;
	struct skel_head *h = l->skel;
	struct bpf_map *map;
	size_t k;

	for (k = 0; k < sizeof(shared) / sizeof(shared[0]); k++)
		shared[k] = shared_fds[k] >= 0 ? map_id(shared_fds[k]) : 0;
	rep->nmaps = 0;
	bpf_object__for_each_map(map, h->obj) {
		struct map_mem *m;
		int fd = bpf_map__fd(map);
		uint32_t id = map_id(fd);
		bool is_shared = false;

		for (k = 0; k < sizeof(shared) / sizeof(shared[0]); k++)
			is_shared |= id && id == shared[k];
		if (rep->nmaps == MAX_MAPS || bpf_map__is_internal(map) || is_shared)
			continue;
		m = &rep->maps[rep->nmaps++];
		snprintf(m->name, sizeof(m->name), "%s", bpf_map__name(map));
		m->bytes = map_memlock(fd);
		switch (bpf_map__type(map)) {
		case BPF_MAP_TYPE_PERCPU_HASH:
			snprintf(m->note, sizeof(m->note), "preallocated: %u B x %d CPUs per key, "
				 "%u keys", bpf_map__value_size(map), l->ncpus,
				 bpf_map__max_entries(map));
			break;
		case BPF_MAP_TYPE_ARRAY:
			if (is_spill(l, map)) {
				if (!l->spill)
					snprintf(m->note, sizeof(m->note), "spill slots, unused: "
						 "the per-CPU map holds the keys these options need");
				else
					snprintf(m->note, sizeof(m->note), "spill slots, shared by "
						 "the CPUs: %u x %u B", bpf_map__max_entries(map),
						 bpf_map__value_size(map));
				break;
			}
			snprintf(m->note, sizeof(m->note), "%u slots x %u B",
				 bpf_map__max_entries(map), bpf_map__value_size(map));
			break;
		case BPF_MAP_TYPE_TASK_STORAGE:
			snprintf(m->note, sizeof(m->note), "task storage: a %u B slot per thread, "
				 "made at its first traced call", bpf_map__value_size(map));
			break;
		default:
			m->note[0] = '\0';
		}
	}
}

/* No stage this layer could measure: its first stage says why. */
static const char *no_stage(const struct layer_report *rep)
{
	int i;

	for (i = 0; i < rep->nstages; i++)
		if (rep->stages[i].available)
			return NULL;
	return rep->nstages ? rep->stages[0].how : "no stages";
}

int layer_start(const struct layer *d, const struct trace_config *cfg,
		const struct session_shared *sh, struct layer_inst **out, struct layer_report *rep)
{
	struct layer_inst *l = calloc(1, sizeof(*l));
	bool tp_btf = !cfg->force_raw_tp;
	const char *why;
	int err, i;

	*out = NULL;
	if (l) {
		l->desc = d;
		l->cfg = cfg;
		l->shared = sh;
		l->ncpus = libbpf_num_possible_cpus();
		l->vals = l->ncpus > 0 ? calloc((size_t)l->ncpus * (size_t)d->nstages,
						sizeof(struct hist)) : NULL;
		l->blank = l->ncpus > 0 ? calloc((size_t)l->ncpus * (size_t)d->nstages,
						 sizeof(struct hist)) : NULL;
		l->spill_blank = calloc((size_t)d->nstages, sizeof(struct hist));
		for (i = 0; i < MAX_EVENTS; i++)
			l->tp_holds[i] = -1;
	}
	if (!l || !l->vals || !l->blank || !l->spill_blank) {
		errorf("out of memory for the %s layer", d->name);
		layer_free(l);
		return -1;
	}
	for (;;) {
		memset(&l->rep, 0, sizeof(l->rep));
		probe_events(d, cfg, tp_btf, sh->tracefs, &l->rep);
		describe_stages(d, &l->rep);
		if ((why = missing_required(&l->rep))) {
			for (i = 0; strcmp(l->rep.events[i].event, why); i++)
				;
			errorf("required tracepoint %s:%s unavailable (%s)", d->name, why,
			       l->rep.events[i].why);
			goto fail;
		}
		if ((why = no_stage(&l->rep))) {
			errorf("%s layer %s", d->name, why);
			goto fail;
		}
		if (d->check && d->check(l))
			goto fail;
		err = load(l);
		if (err && !tp_btf) {
			errorf("cannot load the %s layer's BPF programs: %s (-v shows the verifier "
			       "log)", d->name, strerror(-err));
			goto fail;
		}
		if (!err) {
			err = attach(l, tp_btf);
			if (err < 0)
				goto fail;
			if (!err)
				break;
		}
		unload(l);
		for (i = 0; i < d->nevents && d->events[i].kind != EV_TP; i++)
			;
		if (!tp_btf || i == d->nevents) {
			errorf("cannot load the %s layer's BPF programs: %s", d->name,
			       strerror(err > 0 ? EINVAL : -err));
			goto fail;
		}
		vlog("%s: tp_btf programs %s; trying their raw_tp twins", d->name,
		     err > 0 ? "did not attach" : "did not load");
		tp_btf = false;
	}
	describe_stages(d, &l->rep);
	report_maps(l);
	if (rep)
		*rep = l->rep;
	*out = l;
	return 0;
fail:
	if (rep && l)
		*rep = l->rep;
	layer_free(l);
	return -1;
}

/* ---- draining */

/*
 * Read a retired key's per-CPU values (ncpus x nstages histograms) into vals, then zero them in
 * place (blank: zeros; a per-CPU update copies into the element). Zeroing, not deleting: a
 * program preempted past the grace period still holds a pointer to the element, and its late
 * write then lands in the zeroed element, reported when this generation is read again, where a
 * deleted element would lose it. A hash key that held nothing is deleted, so keys of processes
 * and disks gone free their room. False when the key held nothing.
 */
static bool read_and_empty(struct layer_inst *l, int fd, const void *key)
{
	size_t size = (size_t)l->ncpus * (size_t)l->desc->nstages * sizeof(struct hist);

	if (bpf_map_lookup_elem(fd, key, l->vals))
		return false;
	if (!memcmp(l->vals, l->blank, size)) {
		bpf_map_delete_elem(fd, key);	/* arrays refuse: their slots stay */
		return false;
	}
	bpf_map_update_elem(fd, key, l->blank, BPF_EXIST);
	return true;
}

/* A record per stage that saw anything, the ncpus copies summed, labelled from key. */
static int to_recs(struct layer_inst *l, const void *key, int ncpus, struct interval *iv)
{
	const struct layer *d = l->desc;
	struct rec *rec;
	int cpu, st;

	for (st = 0; st < d->nstages; st++) {
		struct hist sum;

		if (!d->stages[st].name || !stage_wanted(l->cfg, id_of(d), st))
			continue;
		memset(&sum, 0, sizeof(sum));
		for (cpu = 0; cpu < ncpus; cpu++) {
			struct hist *h = &l->vals[cpu * d->nstages + st];

			hist_mend(h);	/* a write torn by the read: each CPU's copy alone */
			hist_merge(&sum, h);
		}
		if (!sum.count && !sum.unmeasured)
			continue;
		rec = recs_add(&iv->recs);
		if (!rec)
			return -ENOMEM;
		rec->layer = d->name;
		rec->stage = d->stages[st].name;
		rec->stage_order = st;
		d->label(l, key, rec);
		rec->h = sum;
	}
	return 0;
}

int layer_add_stage(const struct layer_inst *l, const void *key, int stage, uint64_t from,
		    uint64_t to, struct interval *iv)
{
	struct rec *rec;

	if (!l->desc->stages[stage].name || !stage_wanted(l->cfg, id_of(l->desc), stage))
		return 0;
	rec = recs_add(&iv->recs);
	if (!rec)
		return -ENOMEM;
	rec->layer = l->desc->name;
	rec->stage = l->desc->stages[stage].name;
	rec->stage_order = stage;
	l->desc->label(l, key, rec);
	/* merged with the drained record of the same labels */
	if (from && to >= from)
		hist_record(&rec->h, to - from);
	else
		rec->h.unmeasured = 1;
	return 0;
}

/* Every key of a hash map, collected before any is deleted (deleting restarts a walk); *keys
 * is to be freed. */
static int map_keys(int fd, size_t key_size, char **keys, size_t *n)
{
	size_t cap = 0;
	char *v = NULL, *grown;

	*n = 0;
	*keys = NULL;
	for (;;) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(v, cap * key_size);
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
		}
		if (bpf_map_get_next_key(fd, *n ? v + (*n - 1) * key_size : NULL,
					 v + *n * key_size))
			break;
		(*n)++;
	}
	*keys = v;
	return 0;
}

#define SWEEP_BATCH 4096

/*
 * An array created BPF_F_MMAPABLE (the tables) is read through a mapping: the kernel's batch
 * lookup copies an array element at a time, and a 16M-entry table (--inflight's largest) took
 * ~20 s of system time to sweep at the stop. 1: not mappable here (the batch way then).
 */
static int array_sweep_mapped(int fd, size_t value_size,
			      int (*fn)(uint32_t idx, const void *v, void *arg), void *arg)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info), i;
	size_t stride, bytes, page = (size_t)sysconf(_SC_PAGESIZE);
	const char *m;
	int err = 0;

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != BPF_MAP_TYPE_ARRAY ||
	    !(info.map_flags & BPF_F_MMAPABLE) || info.value_size != value_size)
		return 1;
	stride = (value_size + 7) & ~(size_t)7;	/* the kernel's elem_size */
	bytes = (stride * info.max_entries + page - 1) & ~(page - 1);
	m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 1;
	for (i = 0; i < info.max_entries && !err; i++)
		err = fn(i, m + (size_t)i * stride, arg);
	munmap((void *)m, bytes);
	return err;
}

int array_sweep(int fd, size_t value_size,
		int (*fn)(uint32_t idx, const void *v, void *arg), void *arg)
{
	uint32_t *keys = calloc(SWEEP_BATCH, sizeof(*keys)), batch = 0, count, i;
	char *v = calloc(SWEEP_BATCH, value_size);
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	bool more = true, first = true;
	int err = array_sweep_mapped(fd, value_size, fn, arg);

	if (err != 1) {
		free(keys);
		free(v);
		return err;
	}
	err = 0;
	if (!keys || !v) {
		free(keys);
		free(v);
		return -ENOMEM;
	}
	while (more && !err) {
		count = SWEEP_BATCH;
		if (bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys, v, &count, &o)) {
			if (errno != ENOENT) {
				err = -errno;
				break;
			}
			more = false;	/* the last batch: count holds what it read */
		}
		first = false;
		for (i = 0; i < count && !err; i++)
			err = fn(keys[i], v + i * value_size, arg);
	}
	free(keys);
	free(v);
	return err;
}

struct spill_check {
	uint32_t nslots;
	size_t spill_off;
	uint32_t *counted, *placed;
};

static int spill_one(uint32_t idx, const void *v, void *arg)
{
	struct spill_check *c = arg;
	uint32_t w, probe;
	uint64_t key;

	if (idx >= c->nslots)
		return 0;
	memcpy(&key, v, sizeof(key));	/* the table's entries start with their key */
	memcpy(&w, (const char *)v + c->spill_off, sizeof(w));
	c->counted[idx] = w & 0xffff;
	probe = w >> 16;
	if (key && probe)
		c->placed[(idx - probe) & (c->nslots - 1)]++;
	return 0;
}

int table_spill_check(int fd, const char *name, uint32_t nslots, size_t value_size,
		      size_t spill_off)
{
	struct spill_check c = { nslots, spill_off, calloc(nslots, sizeof(uint32_t)),
				 calloc(nslots, sizeof(uint32_t)) };
	int err = c.counted && c.placed ? 0 : -ENOMEM, bad = 0;
	uint32_t i;

	if (!err)
		err = array_sweep(fd, value_size, spill_one, &c);
	for (i = 0; !err && i < nslots; i++)
		bad += c.counted[i] != c.placed[i];
	if (bad)
		warnf("the %s table's counts of displaced entries disagree with its entries at %d "
		      "slots: a lookup may have missed an entry (a defect; please report it)",
		      name, bad);
	free(c.counted);
	free(c.placed);
	return err ?: bad;
}

/* The keys of generation gen in a per-CPU hash of histograms: records, emptied. *held counts
 * the keys of both generations, which share the map's room. */
static int drain_hash(struct layer_inst *l, int fd, size_t key_size, uint32_t gen,
		      struct interval *iv, size_t *held)
{
	size_t nkeys, i;
	char *keys = NULL;
	uint32_t g;
	int err;

	err = map_keys(fd, key_size, &keys, &nkeys);
	for (i = 0; i < nkeys && !err; i++) {
		const char *k = keys + i * key_size;

		memcpy(&g, k, sizeof(g));
		(*held)++;
		if (g != gen)
			continue;
		if (read_and_empty(l, fd, k))
			err = to_recs(l, k, l->ncpus, iv);
	}
	free(keys);
	return err;
}

/*
 * Read spill slot into l->vals and empty it in place (an array: the update copies into it).
 * 1: it held something, now in l->vals; 0: empty; -1: not read or not emptied, left as it is
 * for a later drain (reported then, never twice).
 */
static int spill_take(struct layer_inst *l, int fd, uint32_t slot)
{
	size_t size = (size_t)l->desc->nstages * sizeof(struct hist);

	if (bpf_map_lookup_elem(fd, &slot, l->vals))
		return -1;
	if (!memcmp(l->vals, l->spill_blank, size))
		return 0;
	return bpf_map_update_elem(fd, &slot, l->spill_blank, BPF_EXIST) ? -1 : 1;
}

/*
 * Spill slots whose keys an earlier drain dropped go back to the free queue, each read once
 * more first: a program that looked its key up before the drop may have written since, and that
 * is reported late under its own key (as a late write into a per-CPU value zeroed in place).
 * A slot that cannot be emptied or queued now stays held, for the next drain.
 */
static int spill_release(struct layer_inst *l, struct interval *iv)
{
	size_t i, n = 0;
	int err = 0, r;

	for (i = 0; i < l->nheld; i++) {
		struct spill_held *e = &l->held[i];
		const struct layer_hists *hm = &l->desc->hists[e->hists];

		r = err ? -1 : spill_take(l, bpf_map__fd(layer_map(l, hm->spill)), e->slot);
		if (r > 0)
			err = to_recs(l, e->key, 1, iv);
		if (r < 0 || bpf_map_update_elem(bpf_map__fd(layer_map(l, hm->spill_free)), NULL,
						 &e->slot, 0))
			l->held[n++] = *e;
	}
	l->nheld = n;
	return err;
}

/*
 * The spill slots of generation gen's keys: records, emptied; a key that held nothing is
 * dropped. *held counts the keys of both generations, which share the slots.
 */
static int drain_spill(struct layer_inst *l, int h, uint32_t gen, struct interval *iv,
		       size_t *held)
{
	const struct layer_hists *hm = &l->desc->hists[h];
	int fd = bpf_map__fd(layer_map(l, hm->spill));
	int ifd = bpf_map__fd(layer_map(l, hm->spill_idx));
	size_t nkeys, i;
	char *keys = NULL;
	uint32_t g, slot;
	int err, r;

	err = map_keys(ifd, hm->key_size, &keys, &nkeys);
	for (i = 0; i < nkeys && !err; i++) {
		const char *k = keys + i * hm->key_size;

		memcpy(&g, k, sizeof(g));
		(*held)++;
		if (g != gen || bpf_map_lookup_elem(ifd, k, &slot))
			continue;
		r = spill_take(l, fd, slot);
		if (r > 0)
			err = to_recs(l, k, 1, iv);
		if (r)
			continue;
		if (l->nheld == l->held_cap) {
			size_t cap = l->held_cap ? 2 * l->held_cap : 64;
			struct spill_held *p = realloc(l->held, cap * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				break;
			}
			l->held = p;
			l->held_cap = cap;
		}
		if (bpf_map_delete_elem(ifd, k))
			continue;
		l->held[l->nheld] = (struct spill_held){ .slot = slot, .hists = h };
		memcpy(l->held[l->nheld++].key, k, hm->key_size);
	}
	free(keys);
	return err;
}

int layer_drain(struct layer_inst *l, uint32_t gen, struct interval *iv)
{
	const struct layer *d = l->desc;
	size_t held = 0, spilled = 0;
	int h, err;

	err = spill_release(l, iv);	/* before this drain holds any */
	for (h = 0; h < d->nhists && !err; h++) {
		const struct layer_hists *hm = &d->hists[h];
		struct bpf_map *map = layer_map(l, hm->map);
		int fd = bpf_map__fd(map);
		char key[64];
		uint32_t i, idx;

		if (hm->key_size) {
			err = drain_hash(l, fd, hm->key_size, gen, iv, &held);
			/* a key can be in both (room freed meanwhile): its records fold */
			if (!err && hm->spill && l->spill)
				err = drain_spill(l, h, gen, iv, &spilled);
			continue;
		}
		for (i = 0; i < hm->per_gen && !err; i++) {
			idx = hm->interleaved ? i * 2 + gen : gen * hm->per_gen + i;
			if (idx >= bpf_map__max_entries(map))
				break;
			if (!read_and_empty(l, fd, &idx))
				continue;
			memset(key, 0, sizeof(key));
			hm->array_key(gen, i, key);
			err = to_recs(l, key, l->ncpus, iv);
		}
	}
	if (held > l->keys_peak)
		l->keys_peak = held;
	if (spilled > l->spill_peak)
		l->spill_peak = spilled;
	return err;
}

void layer_log_keys(const struct layer_inst *l)
{
	const struct layer *d = l->desc;
	uint64_t room = 0, spill_room = 0;
	int h;

	for (h = 0; h < d->nhists; h++) {
		const struct layer_hists *hm = &d->hists[h];

		if (!hm->key_size)
			continue;
		room += bpf_map__max_entries(layer_map(l, hm->map));
		if (hm->spill && l->spill)
			spill_room += bpf_map__max_entries(layer_map(l, hm->spill));
	}
	if (l->keys_peak || l->spill_peak)	/* else unused, or nothing came */
		vlog("%s: histogram keys: at most %zu per CPU (room for %llu), %zu in spill slots "
		     "(room for %llu)", d->name, l->keys_peak, (unsigned long long)room,
		     l->spill_peak, (unsigned long long)spill_room);
}

/* The growth since the last call of a per-CPU counter array's named slots. */
static int counters_read(struct layer_inst *l, struct bpf_map *map, int n,
			 const char *const *names, uint64_t *prev, struct counter *out, int *nout)
{
	uint64_t *pc = calloc((size_t)l->ncpus, sizeof(*pc)), sum;
	uint32_t r;
	int cpu;

	if (!pc)
		return -ENOMEM;
	for (r = 0; r < (uint32_t)n; r++) {
		if (!names[r])
			continue;
		sum = 0;
		if (bpf_map_lookup_elem(bpf_map__fd(map), &r, pc)) {
			counters_add(out, nout, names[r], 0);	/* unread: counted the next time */
			continue;
		}
		for (cpu = 0; cpu < l->ncpus; cpu++)
			sum += pc[cpu];
		counters_add(out, nout, names[r], sum - prev[r]);
		prev[r] = sum;
	}
	free(pc);
	return 0;
}

/* The reasons, as every layer's drop counters are named after them (with its prefix). */
static const char *const drop_reason_names[DROP_NREASONS] = {
	[DROP_INFLIGHT_FULL] = "inflight_full",
	[DROP_INFLIGHT_STALE] = "inflight_stale",
	[DROP_INFLIGHT_REUSED] = "inflight_reused",
	[DROP_HIST_FULL] = "hist_full",
	[DROP_SC_START_FULL] = "start_full",
	[DROP_REAP_UNSEEN] = "reap_unseen",
	[DROP_AIO_BATCH] = "batch_cut",
	[DROP_COMPLETE_UNSEEN] = "complete_unseen",
	[DROP_SNOOP_LOST] = "snoop_lost",
	[DROP_RING_FULL] = "ring_full",
	[DROP_UNREADABLE] = "unreadable",
};

bool layer_drop_reason(const char *name)
{
	int r;

	for (r = 0; r < DROP_NREASONS; r++)
		if (drop_reason_names[r] && !strcmp(name, drop_reason_names[r]))
			return true;
	return false;
}

int layer_counters(struct layer_inst *l, struct interval *iv)
{
	const struct layer *d = l->desc;
	const char *names[DROP_NREASONS];
	int r, err;

	for (r = 0; r < DROP_NREASONS; r++) {
		names[r] = NULL;
		if (!(d->drops & (1u << r)) && !(r == DROP_SNOOP_LOST && l->cfg->snoop))
			continue;
		snprintf(l->drop_names[r], sizeof(l->drop_names[r]), "%s%s%s",
			 d->drops_unprefixed ? "" : d->name, d->drops_unprefixed ? "" : "_",
			 drop_reason_names[r]);
		names[r] = l->drop_names[r];
	}
	err = counters_read(l, layer_map(l, d->drops_map), DROP_NREASONS, names, l->prev_drops,
			    iv->drops, &iv->ndrops);

	if (!err && d->events_map && d->event_names)
		err = counters_read(l, layer_map(l, d->events_map), EV_NEVENTS, d->event_names,
				    l->prev_events, iv->events, &iv->nevents);
	return err;
}

static uint64_t prog_info_sum(const struct layer_inst *l, bool run_time)
{
	struct bpf_prog_info info;
	uint32_t len;
	uint64_t n = 0;
	int i;

	/*
	 * Every program loaded, attached or not: detached at the end (the final interval's read),
	 * each keeps its totals; one never attached has none. Taking only the attached ones made the
	 * final interval's delta 0 - the last total, wrapped round 2^64.
	 */
	for (i = 0; i < MAX_EVENTS; i++) {
		if (!l->progs[i] || bpf_program__fd(l->progs[i]) < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(l->progs[i]), &info, &len))
			n += run_time ? info.run_time_ns : info.recursion_misses;
	}
	return n;
}

uint64_t layer_recursion_misses(const struct layer_inst *l)
{
	return prog_info_sum(l, false);
}

uint64_t layer_run_time_ns(const struct layer_inst *l)
{
	return prog_info_sum(l, true);
}

uint32_t hist_map_keys(const struct layer_inst *l, uint32_t want)
{
	uint64_t size = (uint64_t)l->desc->nstages * sizeof(struct hist);
	uint64_t fit = HIST_MAP_BUDGET / (size * (uint64_t)(l->ncpus > 0 ? l->ncpus : 1));

	if (fit < 16)
		fit = 16;
	if (l->cfg->hist_keys && fit > l->cfg->hist_keys)
		fit = l->cfg->hist_keys;
	return want < fit ? want : (uint32_t)fit;
}

uint32_t hist_spill_keys(const struct layer_inst *l, uint32_t want, uint32_t percpu)
{
	uint64_t fit = HIST_MAP_BUDGET / ((uint64_t)l->desc->nstages * sizeof(struct hist));

	if (want <= percpu)
		return 0;
	/* twice the shortfall: a key dropped and back finds a slot while its old one is held */
	want = 2 * (want - percpu);
	if (fit < 16)
		fit = 16;
	if (l->cfg->spill_keys && fit > l->cfg->spill_keys)
		fit = l->cfg->spill_keys;
	return want < fit ? want : (uint32_t)fit;
}
