// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* An interval as one NDJSON record (docs/interval.schema.json). */
#include <stdio.h>
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
		if (hist_percentile(&r->h, pcts[j], &p))
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
