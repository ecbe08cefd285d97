// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* An interval as one NDJSON record (docs/interval.schema.json). */
#include <stdio.h>
#include <string.h>
#include "json.h"
#include "output.h"

static const uint32_t pcts[] = { 500000, 900000, 990000, 999000 };
static const char *const pct_keys[] = { "p50_ns", "p90_ns", "p99_ns", "p999_ns" };

static void hist_json(struct jw *w, const struct rec *r)
{
	uint64_t p;
	int j;

	jw_obj(w, NULL);
	jw_str(w, "layer", r->layer);
	jw_str(w, "stage", r->stage);
	jw_obj(w, "labels");
	if (*r->disk)
		jw_str(w, "disk", r->disk);
	if (*r->op)
		jw_str(w, "op", r->op);
	if (*r->flags)
		jw_str(w, "flags", r->flags);
	if (*r->syscall)
		jw_str(w, "syscall", r->syscall);
	if (*r->opcode)
		jw_str(w, "opcode", r->opcode);
	if (r->pid)
		jw_u64(w, "pid", r->pid);
	if (*r->comm)
		jw_str(w, "comm", r->comm);
	if (*r->cgroup)
		jw_str(w, "cgroup", r->cgroup);
	jw_end_obj(w);
	jw_u64(w, "count", r->h.count);
	jw_u64(w, "sum_ns", r->h.sum_ns);
	if (r->h.count) {
		jw_u64(w, "min_ns", r->h.min_ns);
		jw_u64(w, "max_ns", r->h.max_ns);
	} else {
		jw_null(w, "min_ns");
		jw_null(w, "max_ns");
	}
	for (j = 0; j < 4; j++) {
		if (hist_percentile(&r->h, pcts[j], &p))	/* null: empty, or only bounded */
			jw_u64(w, pct_keys[j], p);
		else
			jw_null(w, pct_keys[j]);
	}
	jw_u64(w, "unmeasured", r->h.unmeasured);
	jw_hist_buckets(w, "buckets", &r->h);
	jw_end_obj(w);
}

void output_json_build(const struct interval *iv, struct jw *w)
{
	size_t i;
	int j;

	jw_obj(w, NULL);
	jw_str(w, "type", "interval");
	jw_u64(w, "ts", iv->ts_ns);
	jw_u64(w, "interval_ns", iv->interval_ns);
	jw_arr(w, "hists");
	for (i = 0; i < iv->recs.n; i++)
		hist_json(w, &iv->recs.v[i]);
	jw_end_arr(w);
	jw_obj(w, "drops");
	for (j = 0; j < iv->ndrops; j++)
		jw_u64(w, iv->drops[j].name, iv->drops[j].n);
	jw_end_obj(w);
	jw_obj(w, "events");
	for (j = 0; j < iv->nevents; j++)
		jw_u64(w, iv->events[j].name, iv->events[j].n);
	jw_end_obj(w);
	jw_end_obj(w);
}

int output_json(const struct interval *iv, FILE *f)
{
	struct jw w;
	int err;

	jw_init(&w);
	output_json_build(iv, &w);
	err = jw_flush_line(&w, f);
	jw_free(&w);
	return err;
}

/* ---- snoop */

int output_req_json(const struct req_rec *r, FILE *f)
{
	struct jw w;
	int i, err;

	jw_init(&w);
	jw_obj(&w, NULL);
	jw_str(&w, "type", "snoop");
	jw_u64(&w, "ts", r->ts_ns);
	jw_str(&w, "layer", r->layer);
	jw_u64(&w, "pid", r->pid);
	jw_u64(&w, "tid", r->tid);
	jw_str(&w, "comm", r->comm);
	jw_str(&w, "cgroup", r->cgroup);
	jw_u64(&w, "cgroup_id", r->cgroup_id);
	if (*r->disk)
		jw_str(&w, "disk", r->disk);
	if (*r->op)
		jw_str(&w, "op", r->op);
	if (*r->flags)
		jw_str(&w, "flags", r->flags);
	if (*r->code)
		jw_str(&w, strcmp(r->layer, "syscall") ? "opcode" : "syscall", r->code);
	if (r->has_sector) {
		jw_u64(&w, "sector", r->sector);
		jw_u64(&w, "bytes", r->bytes);
	}
	if (r->has_file) {
		jw_obj(&w, "file");
		jw_str(&w, "dev", r->fdev);
		jw_u64(&w, "ino", r->ino);
		jw_end_obj(&w);
	}
	if (r->has_res)
		jw_i64(&w, "res", r->res);
	jw_u64(&w, "total_ns", r->total_ns);
	jw_obj(&w, "boundaries");
	for (i = 0; i < r->nbounds; i++)
		jw_u64(&w, r->bounds[i].name, r->bounds[i].ns);
	jw_end_obj(&w);
	jw_obj(&w, "stages");
	for (i = 0; i < r->nstages; i++)
		jw_u64(&w, r->stages[i].name, r->stages[i].ns);
	jw_end_obj(&w);
	jw_end_obj(&w);
	err = jw_flush_line(&w, f);
	jw_free(&w);
	return err;
}

int output_snoop_counts_json(uint64_t ts_ns, bool final, const struct snoop_counts *c, FILE *f)
{
	struct jw w;
	int err;

	int i;

	if (!final && !c->lost && !c->nnf)
		return 0;
	jw_init(&w);
	jw_obj(&w, NULL);
	jw_str(&w, "type", final ? "snoop_summary" : "snoop_lost");
	jw_u64(&w, "ts", ts_ns);
	if (final)
		jw_u64(&w, "printed", c->printed);
	jw_u64(&w, "lost", c->lost);
	if (final)
		jw_u64(&w, "complete_unseen", c->unseen);
	if (final || c->nnf) {
		jw_obj(&w, "not_followed");
		for (i = 0; i < c->nnf; i++)
			jw_u64(&w, c->nf[i].name, c->nf[i].n);
		jw_end_obj(&w);
	}
	jw_end_obj(&w);
	err = jw_flush_line(&w, f);
	jw_free(&w);
	return err;
}
