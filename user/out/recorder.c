// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A recording: meta, intervals, end (recorder.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "cmd.h"
#include "iosched.h"
#include "json.h"
#include "log.h"
#include "output.h"
#include "recfile.h"
#include "recorder.h"
#include "sysinfo.h"

/* The recording's format: a reader warns about a newer one and reads what it knows. */
#define RECORD_FORMAT 1

struct stage_total {
	const char *layer, *stage;
	uint64_t count, unmeasured;
};

struct recorder {
	char *path;
	struct recfile *file;
	struct jw w;
	bool echo;
	long intervals;
	uint64_t duration_ns;
	struct stage_total totals[NLAYERS * MAX_STAGES];
	int ntotals;
	struct counter drops[MAX_COUNTERS], events[MAX_COUNTERS];
	int ndrops, nevents;
	bool echo_closed;	/* stdout went away (a closed pipe under -j), or failed */
	int echo_errno;		/* why it failed, when not a closed pipe */
	bool failed;		/* the file could not be written: said once */
	bool wrote;		/* a line is in the file: the meta record */
};

struct recorder *recorder_create(const char *path, bool force, bool echo)
{
	struct recorder *rc = calloc(1, sizeof(*rc));

	if (!rc || !(rc->path = strdup(path))) {
		free(rc);
		errorf("out of memory");
		return NULL;
	}
	rc->file = recfile_create(path, force);
	if (!rc->file) {
		free(rc->path);
		free(rc);
		return NULL;
	}
	rc->echo = echo;
	jw_init(&rc->w);
	return rc;
}

/* The line in w to the file, and to stdout when echoing; then w is emptied. 0, or 1 said. */
static int emit(struct recorder *rc)
{
	int err = 0;

	if (rc->w.oom) {
		errorf("out of memory");
		return 1;
	}
	if (!rc->failed && recfile_line(rc->file, rc->w.buf, rc->w.len)) {
		/* the meta record not written, nothing is kept (recorder_discard) */
		errorf("writing %s: %s (%s)", rc->path, strerror(errno), rc->wrote ?
		       "it ends with its last whole record" : "not one record written: no file is left");
		rc->failed = true;
	}
	rc->wrote |= !rc->failed;
	err = rc->failed;
	if (!err && rc->echo && !rc->echo_closed && jw_flush_line(&rc->w, stdout)) {
		/* the file goes on; only the copy on stdout stops (a failure said at the end) */
		rc->echo_closed = true;
		if (errno != EPIPE)
			rc->echo_errno = errno ? errno : EIO;
	}
	rc->w.len = 0;
	rc->w.depth = 0;
	rc->w.first[0] = true;
	return err;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void meta_disks(struct jw *w)
{
	char *names[512], sched[64];
	struct dirent *de;
	DIR *d = opendir("/sys/block");
	size_t n = 0, i;

	jw_arr(w, "disks");
	while (d && (de = readdir(d)) && n < 512)
		if (de->d_name[0] != '.' && (names[n] = strdup(de->d_name)))
			n++;
	if (d)
		closedir(d);
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (i = 0; i < n; i++) {
		iosched_active(names[i], sched, sizeof(sched));
		jw_obj(w, NULL);
		jw_str(w, "name", names[i]);
		jw_str(w, "scheduler", sched);
		jw_end_obj(w);
		free(names[i]);
	}
	jw_end_arr(w);
}

static void meta_options(struct jw *w, const struct rec_meta *m)
{
	const struct trace_config *c = m->cfg;
	char disk[64];
	int i;

	jw_arr(w, "argv");
	for (i = 0; i < m->argc; i++)
		jw_str(w, NULL, m->argv[i]);
	jw_end_arr(w);
	jw_obj(w, "options");
	jw_arr(w, "layers");
	for (i = 0; i < NLAYERS; i++)
		if (c->layers & (1u << i))
			jw_str(w, NULL, layers[i]->name);
	jw_end_arr(w);
	if (c->dev)
		jw_str(w, "disk", disk_name(c->dev, disk, sizeof(disk)));
	if (c->tgid)
		jw_u64(w, "pid", (uint64_t)c->tgid);
	if (c->cgroup)
		jw_str(w, "cgroup", c->cgroup);
	if (c->comm)
		jw_str(w, "comm", c->comm);
	jw_arr(w, "stages");	/* --stages, as layer.stage; empty: every stage */
	for (i = 0; i < NLAYERS; i++) {
		int s;

		for (s = 0; s < layers[i]->nstages; s++) {
			char name[64];

			if (!(c->stages[i] & (1u << s)) || !layers[i]->stages[s].name)
				continue;
			snprintf(name, sizeof(name), "%s.%s", layers[i]->name,
				 layers[i]->stages[s].name);
			jw_str(w, NULL, name);
		}
	}
	jw_end_arr(w);
	jw_bool(w, "per_disk", c->per_disk);
	jw_bool(w, "per_op", c->per_op);
	jw_bool(w, "per_process", c->per_process);
	jw_bool(w, "per_opcode", c->per_opcode);
	jw_u64(w, "interval_ns", (uint64_t)(m->lim->interval_s * 1e9));
	jw_u64(w, "count", (uint64_t)m->lim->count);
	jw_u64(w, "duration_ns", (uint64_t)(m->lim->duration_s * 1e9));
	jw_u64(w, "inflight", c->inflight_slots);
	jw_end_obj(w);
}

/* The layers that run, each with the tracepoints it attached and how. */
static void meta_layers(struct jw *w, const struct session *s, const struct layer_report *reps)
{
	int i, e;

	jw_arr(w, "layers");
	for (i = 0; i < NLAYERS; i++) {
		if (!session_has(s, i))
			continue;
		jw_obj(w, NULL);
		jw_str(w, "name", layers[i]->name);
		jw_arr(w, "stages");
		for (e = 0; e < layers[i]->nstages; e++)
			if (layers[i]->stages[e].name)
				jw_str(w, NULL, layers[i]->stages[e].name);
		jw_end_arr(w);
		jw_arr(w, "attach");
		for (e = 0; e < reps[i].nevents; e++) {
			const struct event_status *ev = &reps[i].events[e];

			if (!ev->method)
				continue;
			jw_obj(w, NULL);
			jw_str(w, "event", ev->event);
			jw_str(w, "method", ev->method);
			jw_end_obj(w);
		}
		jw_end_arr(w);
		jw_end_obj(w);
	}
	jw_end_arr(w);
}

int recorder_meta(struct recorder *rc, const struct rec_meta *m)
{
	struct jw *w = &rc->w;
	struct utsname u;
	char host[256] = "";
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	uname(&u);
	gethostname(host, sizeof(host) - 1);
	jw_obj(w, NULL);
	jw_str(w, "type", "meta");
	jw_u64(w, "format", RECORD_FORMAT);
	jw_str(w, "tool", "iostrata");
	jw_str(w, "version", IOSTRATA_VERSION);
	jw_str(w, "host", host);
	jw_obj(w, "kernel");
	jw_str(w, "release", u.release);
	jw_str(w, "version", u.version);
	jw_str(w, "machine", u.machine);
	jw_end_obj(w);
	jw_u64(w, "cpus", cpus > 0 ? (uint64_t)cpus : 0);
	jw_u64(w, "start_ns", clock_ns(CLOCK_REALTIME));
	meta_options(w, m);
	meta_layers(w, m->s, m->reps);
	/* the scheme the buckets of every interval record follow (bpf/hist.h) */
	jw_obj(w, "buckets");
	jw_str(w, "scheme", "log-linear");
	jw_u64(w, "exact_below_ns", HIST_SUB);
	jw_u64(w, "per_octave", HIST_SUB);
	jw_u64(w, "overflow_from_ns", 1ULL << HIST_MAX_LOG2);
	jw_u64(w, "slots", HIST_NSLOTS);
	jw_end_obj(w);
	meta_disks(w);
	if (m->extra)
		m->extra(w, m->extra_arg);
	jw_end_obj(w);
	return emit(rc);
}

static void totals_add(struct recorder *rc, const struct interval *iv)
{
	size_t i;
	int t, j;

	rc->intervals++;
	rc->duration_ns += iv->interval_ns;
	for (i = 0; i < iv->recs.n; i++) {
		const struct rec *r = &iv->recs.v[i];

		for (t = 0; t < rc->ntotals; t++)
			if (rc->totals[t].layer == r->layer && !strcmp(rc->totals[t].stage, r->stage))
				break;
		if (t == rc->ntotals) {
			if (t == (int)ARRAY_LEN(rc->totals))
				continue;
			rc->totals[t] = (struct stage_total){ r->layer, r->stage, 0, 0 };
			rc->ntotals++;
		}
		rc->totals[t].count += r->h.count;
		rc->totals[t].unmeasured += r->h.unmeasured;
	}
	for (j = 0; j < iv->ndrops; j++)
		counters_add(rc->drops, &rc->ndrops, iv->drops[j].name, iv->drops[j].n);
	for (j = 0; j < iv->nevents; j++)
		counters_add(rc->events, &rc->nevents, iv->events[j].name, iv->events[j].n);
}

int recorder_interval(struct recorder *rc, const struct interval *iv)
{
	output_json_build(iv, &rc->w);
	if (emit(rc))
		return 1;
	totals_add(rc, iv);
	return 0;
}

long recorder_intervals(const struct recorder *rc)
{
	return rc->intervals;
}

bool recorder_echo_closed(const struct recorder *rc)
{
	return rc->echo_closed;
}

int recorder_echo_errno(const struct recorder *rc)
{
	return rc->echo_errno;
}

static int end_write(struct recorder *rc, const char *reason)
{
	struct jw *w = &rc->w;
	int t, j;

	jw_obj(w, NULL);
	jw_str(w, "type", "end");
	jw_u64(w, "ts", clock_ns(CLOCK_REALTIME));
	jw_str(w, "reason", reason);
	jw_u64(w, "intervals", (uint64_t)rc->intervals);
	jw_u64(w, "duration_ns", rc->duration_ns);
	jw_arr(w, "totals");
	for (t = 0; t < rc->ntotals; t++) {
		jw_obj(w, NULL);
		jw_str(w, "layer", rc->totals[t].layer);
		jw_str(w, "stage", rc->totals[t].stage);
		jw_u64(w, "count", rc->totals[t].count);
		jw_u64(w, "unmeasured", rc->totals[t].unmeasured);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_obj(w, "drops");
	for (j = 0; j < rc->ndrops; j++)
		jw_u64(w, rc->drops[j].name, rc->drops[j].n);
	jw_end_obj(w);
	jw_obj(w, "events");
	for (j = 0; j < rc->nevents; j++)
		jw_u64(w, rc->events[j].name, rc->events[j].n);
	jw_end_obj(w);
	jw_end_obj(w);
	return emit(rc);
}

static void recorder_free(struct recorder *rc)
{
	jw_free(&rc->w);
	free(rc->path);
	free(rc);
}

int recorder_close(struct recorder *rc, const char *reason)
{
	int err = rc->failed ? 1 : end_write(rc, reason);

	if (recfile_close(rc->file))
		err = 1;
	recorder_free(rc);
	return err;
}

void recorder_discard(struct recorder *rc)
{
	recfile_discard(rc->file);
	recorder_free(rc);
}
