// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* An interval on the terminal: a summary per layer and label set, histograms or waterfalls. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "json.h"
#include "layer.h"
#include "output.h"
#include "utf8.h"

static const uint32_t pcts[] = { 500000, 900000, 990000, 999000 };

static bool in_ms;	/* set by output_text for the call it makes: -m */
/* a latency column's width: -m prints 0.000296ms where 296ns is enough */
#define VW (in_ms ? 10 : 8)

static const char *fmt_v(char *buf, size_t len, uint64_t ns)
{
	return fmt_ns(buf, len, ns, in_ms);
}

/* A percentile: ">=68.72s" when only bounded below (the open-ended bucket) */
static const char *fmt_pv(char *buf, size_t len, const struct hist *h, uint32_t ppm)
{
	return fmt_pct(buf, len, h, ppm, in_ms, ">=");
}

static bool waterfall_layer(const struct rec *r);

/* One block of rows per layer and label set: "block [vda read]", then a row per stage. */
static void print_summary(const struct interval *iv, bool waterfall, FILE *f)
{
	char lab[REC_LABELS_LEN], v[5][24];
	bool rows = false;
	size_t i;
	int j;

	for (i = 0; i < iv->recs.n && !rows; i++)
		rows = !waterfall || !waterfall_layer(&iv->recs.v[i]);
	if (rows)	/* -W of the uring and aio layers alone: no header over no row */
		fprintf(f, "%-17s %9s %*s %*s %*s %*s %*s\n", "STAGE", "COUNT", VW, "P50", VW,
			"P90", VW, "P99", VW, "P99.9", VW, "MAX");
	for (i = 0; i < iv->recs.n; i++) {
		const struct rec *r = &iv->recs.v[i];

		if (waterfall && waterfall_layer(r))
			continue;	/* shown as a waterfall */
		if (!i || !rec_same_labels(r, &iv->recs.v[i - 1])) {
			rec_labels(r, lab, sizeof(lab));
			fprintf(f, "%s [%s]\n", r->layer, lab);
		}
		if (!r->h.count) {
			fprintf(f, "  %-15s %9s %*s %*s %*s %*s %*s\n", r->stage, "0", VW, "-", VW,
				"-", VW, "-", VW, "-", VW, "-");
			continue;
		}
		for (j = 0; j < 4; j++)
			fmt_pv(v[j], sizeof(v[j]), &r->h, pcts[j]);
		fmt_v(v[4], sizeof(v[4]), r->h.max_ns);
		fprintf(f, "  %-15s %9" PRIu64 " %*s %*s %*s %*s %*s\n", r->stage,
			(uint64_t)r->h.count, VW, v[0], VW, v[1], VW, v[2], VW, v[3], VW, v[4]);
	}
	/* what could not be measured is said, not hidden in a smaller count (-W: under each
	 * waterfall, of its records merged as it shows them) */
	for (i = 0; i < iv->recs.n; i++) {
		const struct rec *r = &iv->recs.v[i];

		if (!r->h.unmeasured || (waterfall && waterfall_layer(r)))
			continue;
		rec_labels(r, lab, sizeof(lab));
		fprintf(f, "  unmeasured: %s %s [%s] %" PRIu64 " of %" PRIu64 ": %s\n",
			r->layer, r->stage, lab, (uint64_t)r->h.unmeasured,
			(uint64_t)(r->h.unmeasured + r->h.count),
			layer_unmeasured_why(r->layer, r->stage));
	}
}

#define BAR_WIDTH 36

static void print_hist(const struct rec *r, FILE *f)
{
	struct hist_row rows[HIST_MAX_ROWS];
	char lab[REC_LABELS_LEN], lo[24], hi[24], bar[BAR_WIDTH + 1];
	uint64_t maxc = 0;
	size_t n, i;
	int w;

	n = hist_fold(&r->h, rows, HIST_MAX_ROWS);
	if (!n)
		return;
	rec_labels(r, lab, sizeof(lab));
	fprintf(f, "\n%s %s [%s]  count %" PRIu64 "  mean %s\n", r->layer, r->stage, lab,
		(uint64_t)r->h.count, fmt_v(hi, sizeof(hi), r->h.sum_ns / r->h.count));
	for (i = 0; i < n; i++)
		if (rows[i].count > maxc)
			maxc = rows[i].count;
	for (i = 0; i < n; i++) {
		w = maxc ? (int)((rows[i].count * BAR_WIDTH + maxc - 1) / maxc) : 0;
		memset(bar, '*', (size_t)w);
		memset(bar + w, ' ', (size_t)(BAR_WIDTH - w));
		bar[BAR_WIDTH] = '\0';
		fmt_v(lo, sizeof(lo), rows[i].lo);
		if (rows[i].hi == UINT64_MAX)
			snprintf(hi, sizeof(hi), "...");
		else
			fmt_v(hi, sizeof(hi), rows[i].hi);
		fprintf(f, "  %10s - %-10s %10" PRIu64 " |%s|\n", lo, hi, rows[i].count, bar);
	}
}

/*
 * -W: per process and opcode, one row per stage of a request's life in the order it lives them,
 * with its share of the mean total; the io_uring/aio records of every path (flags) merged.
 */
static const char *const wf_order[] = { "submit_bio", "wait", "device", "device_cqe",
					 "cqe_reap", "complete_reap", "submit_cqe",
					 "submit_complete", "total" };
#define WF_N (sizeof(wf_order) / sizeof(wf_order[0]))

static bool waterfall_layer(const struct rec *r)
{
	return !strcmp(r->layer, "uring") || !strcmp(r->layer, "aio");
}

static bool same_request_group(const struct rec *a, const struct rec *b)
{
	return !strcmp(a->layer, b->layer) && !strcmp(a->opcode, b->opcode) &&
	       a->pid == b->pid && !strcmp(a->comm, b->comm);
}

static void print_waterfall_group(const struct interval *iv, size_t first, FILE *f)
{
	static struct hist st[WF_N];
	const struct rec *g = &iv->recs.v[first];
	char lab[REC_LABELS_LEN], p50[24], p99[24], mean[24], bar[32], share[16];
	uint64_t whole;
	size_t i, k;
	int w, ruled = 0;

	memset(st, 0, sizeof(st));
	for (i = first; i < iv->recs.n; i++) {
		const struct rec *r = &iv->recs.v[i];

		if (!waterfall_layer(r) || !same_request_group(r, g))
			continue;
		for (k = 0; k < WF_N; k++)
			if (!strcmp(r->stage, wf_order[k]))
				hist_merge(&st[k], &r->h);
	}
	/* the whole: total (submit -> reap) when seen, else submit -> CQE / completion */
	whole = 0;
	for (k = WF_N; k-- > 6 && !whole;)
		if (st[k].count)
			whole = st[k].sum_ns / st[k].count;
	{
		struct rec tmp = *g;	/* the label set without the path flags: they are merged */

		tmp.flags[0] = '\0';
		rec_id_labels_paths_merged(&tmp.id, lab, sizeof(lab));
	}
	fprintf(f, "%s [%s]  linked %" PRIu64 " of %" PRIu64 "\n", g->layer, lab,
		(uint64_t)st[2].count, (uint64_t)(st[2].count + st[2].unmeasured));
	fprintf(f, "  %-15s %9s %*s %*s %*s %6s\n", "STAGE", "COUNT", VW, "P50", VW, "P99", VW,
		"MEAN", "SHARE");
	for (k = 0; k < WF_N; k++) {
		const struct hist *h = &st[k];
		uint64_t m;

		if (!h->count)
			continue;
		if (k >= 6 && !ruled++)	/* below: the spans the stages above add up to */
			fprintf(f, "  %.15s\n", "---------------");
		fmt_pv(p50, sizeof(p50), h, 500000);
		fmt_pv(p99, sizeof(p99), h, 990000);
		m = h->sum_ns / h->count;
		fmt_v(mean, sizeof(mean), m);
		w = whole ? (int)(m * 20 / whole) : 0;
		memset(bar, '#', (size_t)(w > 20 ? 20 : w));
		bar[w > 20 ? 20 : w] = '\0';
		/* a share of a whole not recorded (--stages without total or submit_cqe): unknown */
		if (whole)
			snprintf(share, sizeof(share), "%5.1f%%", 100.0 * (double)m / (double)whole);
		else
			snprintf(share, sizeof(share), "%6s", "-");
		fprintf(f, "  %-15s %9" PRIu64 " %*s %*s %*s %s %s%s\n", wf_order[k],
			(uint64_t)h->count, VW, p50, VW, p99, VW, mean, share, k < 6 ? bar : "",
			/* io_uring's reap is read at the ring's next event: cqe_reap and its total */
			k == 4 || (k == 8 && !strcmp(g->layer, "uring")) ? " (upper bound)" : "");
	}
	for (k = 0; k < WF_N; k++)	/* of the same requests as the rows: paths merged */
		if (st[k].unmeasured)
			fprintf(f, "  unmeasured: %s %s [%s] %" PRIu64 " of %" PRIu64 ": %s\n",
				g->layer, wf_order[k], lab, (uint64_t)st[k].unmeasured,
				(uint64_t)(st[k].unmeasured + st[k].count),
				layer_unmeasured_why(g->layer, wf_order[k]));
}

static void print_waterfall(const struct interval *iv, FILE *f)
{
	size_t i, j;
	bool seen;

	for (i = 0; i < iv->recs.n; i++) {
		const struct rec *r = &iv->recs.v[i];

		if (!waterfall_layer(r))
			continue;
		for (j = 0, seen = false; j < i && !seen; j++)
			seen = waterfall_layer(&iv->recs.v[j]) && same_request_group(&iv->recs.v[j], r);
		if (!seen)
			print_waterfall_group(iv, i, f);
	}
}

void output_text(const struct interval *iv, const struct text_opts *o, FILE *f)
{
	char when[64];
	struct tm tm;
	time_t t = (time_t)(iv->ts_ns / 1000000000ULL);
	size_t i;
	int j, any = 0;

	in_ms = o->ms;
	if (o->timestamps) {
		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		fprintf(f, "%s  ", when);
	}
	fprintf(f, "interval %.2fs%s\n", iv->interval_ns / 1e9, o->ms ? "  (ms)" : "");
	if (!iv->recs.n)
		fprintf(f, "no I/O completed in this interval\n");
	else {
		if (o->waterfall)
			print_waterfall(iv, f);
		print_summary(iv, o->waterfall, f);
	}
	for (i = 0; i < iv->recs.n && !o->waterfall; i++)
		print_hist(&iv->recs.v[i], f);
	fprintf(f, "\ndrops:");
	for (j = 0; j < iv->ndrops; j++) {
		if (!iv->drops[j].n)
			continue;
		fprintf(f, " %s=%" PRIu64, iv->drops[j].name, iv->drops[j].n);
		any = 1;
	}
	fprintf(f, "%s\n", any ? "" : " none");
	for (j = any = 0; j < iv->nevents; j++) {
		if (!iv->events[j].n)
			continue;
		fprintf(f, "%s %s=%" PRIu64, any ? "" : "events:", iv->events[j].name,
			iv->events[j].n);
		any = 1;
	}
	fprintf(f, "%s\n", any ? "\n" : "");
	fflush(f);
}

/* ---- snoop */

/* -1 when it could not be written, errno saying why (it is flushed at once) */
int output_req_header(FILE *f)
{
	fprintf(f, "%-15s %-7s %7s %7s %-15s %-20s %8s  %s\n", "TIME", "LAYER", "PID", "TID",
		"COMM", "CGROUP", "TOTAL", "WHAT, THEN EACH STAGE");
	return fflush(f) ? -1 : 0;
}

int output_req_text(const struct req_rec *r, FILE *f)
{
	char when[32], v[24], what[256], comm[sizeof(r->comm)], cgroup[sizeof(r->cgroup)];
	char pid[12], tid[12];
	time_t t = (time_t)(r->ts_ns / 1000000000ULL);
	size_t used = 0;
	struct tm tm;
	int i;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	what[0] = '\0';
#define WHAT(...) do {								\
	if (used < sizeof(what))						\
		used += (size_t)snprintf(what + used, sizeof(what) - used, __VA_ARGS__); \
} while (0)
	if (*r->disk)
		WHAT("%s ", r->disk);
	if (*r->op)
		WHAT("%s ", r->op);
	if (*r->code)
		WHAT("%s ", r->code);
	if (*r->flags)
		WHAT("[%s] ", r->flags);
	if (r->has_sector)
		WHAT("sector %" PRIu64 " bytes %u ", r->sector, r->bytes);
	if (r->has_file)
		WHAT("file %s/%" PRIu64 " ", r->fdev, r->ino);
	if (r->has_res)
		WHAT("res %" PRId64 " ", r->res);
	for (i = 0; i < r->nstages; i++)
		WHAT("%s%s %s", i ? ", " : "| ", r->stages[i].name,
		     fmt_ns(v, sizeof(v), r->stages[i].ns, false));
#undef WHAT
	/* pid 0: no submitter known (a flush the kernel made): "-", not a process 0 */
	snprintf(pid, sizeof(pid), r->pid ? "%u" : "-", r->pid);
	snprintf(tid, sizeof(tid), r->pid ? "%u" : "-", r->tid);
	/* padded to display columns, not bytes: "тест" takes 4 columns in 8 bytes */
	utf8_printable(r->comm, comm, sizeof(comm));
	utf8_printable(r->cgroup, cgroup, sizeof(cgroup));
	/* a write that fails here sets errno now: the caller stops at the first failure */
	return fprintf(f, "%s.%06u %-7s %7s %7s %-*s %-*s %8s  %s\n", when,
		       (unsigned)(r->ts_ns % 1000000000ULL / 1000), r->layer, pid, tid,
		       utf8_field(comm, 15), comm, utf8_field(cgroup, 20), cgroup,
		       fmt_ns(v, sizeof(v), r->total_ns, false), what) < 0 ? -1 : 0;
}

void snoop_nf_add(struct snoop_counts *c, const char *name, uint64_t n)
{
	int i;

	for (i = 0; i < c->nnf; i++)
		if (!strcmp(c->nf[i].name, name))
			break;
	if (i == c->nnf && c->nnf < SNOOP_NF_MAX)
		snprintf(c->nf[c->nnf++].name, sizeof(c->nf[0].name), "%s", name);
	else if (i == c->nnf)
		i = SNOOP_NF_MAX - 1;
	c->nf[i].n += n;
}

uint64_t snoop_nf_sum(const struct snoop_counts *c)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < c->nnf; i++)
		n += c->nf[i].n;
	return n;
}

/* "# N requests not followed (a=1, b=2): ..." when there were any */
static void nf_text(const struct snoop_counts *c, bool final, FILE *f)
{
	int i;

	if (!c->nnf)
		return;
	fprintf(f, "# %" PRIu64 " requests not followed%s (", snoop_nf_sum(c), final ? " in all" : "");
	for (i = 0; i < c->nnf; i++)
		fprintf(f, "%s%s=%" PRIu64, i ? ", " : "", c->nf[i].name, c->nf[i].n);
	fprintf(f, "): slow ones among them are not shown\n");
}

int output_snoop_counts_text(uint64_t ts_ns, bool final, const struct snoop_counts *c, FILE *f)
{
	if (final)
		fprintf(f, "# %" PRIu64 " requests printed, %" PRIu64 " lost (no room in the ring "
			"buffer)\n", c->printed, c->lost);
	if (final && c->unseen)
		fprintf(f, "# %" PRIu64 " block requests not shown: their completion reached no BPF "
			"program (complete_unseen)\n", c->unseen);
	else if (!final && c->lost)
		fprintf(f, "# lost %" PRIu64 " requests: no room in the ring buffer\n", c->lost);
	nf_text(c, final, f);
	fflush(f);
	return ferror(f) ? -1 : 0;
}
