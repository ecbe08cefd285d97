// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* compare's text and JSON: one aligned table per layer, or the members of one JSON object. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "compare.h"
#include "histfmt.h"
#include "json.h"
#include "utf8.h"

static const char *q_value(char *buf, size_t len, double ns)
{
	if (isnan(ns))
		return "-";
	return fmt_ns4(buf, len, ns);
}

static void ci_text(char *buf, size_t len, const struct cmp_cell *c)
{
	char lo[32], hi[32];

	if (isnan(c->lo))
		snprintf(buf, len, "-");
	else if (isinf(c->hi))	/* the events lost leave it no upper bound */
		snprintf(buf, len, "%s..inf", cmp_ratio_str(lo, sizeof(lo), c->lo));
	else
		snprintf(buf, len, "%s..%s", cmp_ratio_str(lo, sizeof(lo), c->lo),
			 cmp_ratio_str(hi, sizeof(hi), c->hi));
}

static void ratio_text(char *buf, size_t len, double v)
{
	if (isfinite(v))
		cmp_ratio_str(buf, len, v);
	else
		snprintf(buf, len, "-");
}

/* Column widths of one layer's rows [from, to): stage, labels, B/A and its interval. */
static void widths(const struct cmp_result *r, size_t from, size_t to, int *ws, int *wl,
		   int *wr, int *wc)
{
	char buf[48];
	size_t i;
	int n, k;

	*ws = 5;
	*wl = 6;
	*wr = 7;
	*wc = 14;
	for (i = from; i < to; i++) {
		n = (int)strlen(r->rows[i].stage);
		*ws = n > *ws ? n : *ws;
		n = utf8_cols(r->rows[i].labels);	/* columns, not bytes: "тест" is 4 */
		*wl = n > *wl ? n : *wl;
		for (k = 0; k < CMP_NQ; k++) {
			ratio_text(buf, sizeof(buf), r->rows[i].c[k].ratio);
			n = (int)strlen(buf);
			*wr = n > *wr ? n : *wr;
			ci_text(buf, sizeof(buf), &r->rows[i].c[k]);
			n = (int)strlen(buf);
			*wc = n > *wc ? n : *wc;
		}
	}
}

static void layer_table(const struct cmp_result *r, size_t from, size_t to, FILE *f)
{
	char a[32], b[32], ra[32], ci[48], na[24], nb[24];
	int ws, wl, wr, wc, k;
	size_t i;

	widths(r, from, to, &ws, &wl, &wr, &wc);
	fprintf(f, "\n%s\n", r->rows[from].layer);
	fprintf(f, "  %-*s  %-*s  %-5s  %9s  %9s  %9s  %9s  %*s  %-*s  %s\n", ws, "STAGE", wl,
		"LABELS", "Q", "COUNT A", "COUNT B", "A", "B", wr, "B/A", wc, "95% CI", "VERDICT");
	for (i = from; i < to; i++) {
		const struct cmp_row *row = &r->rows[i];

		for (k = 0; k < CMP_NQ; k++) {
			snprintf(na, sizeof(na), "%llu", (unsigned long long)row->a.count);
			snprintf(nb, sizeof(nb), "%llu", (unsigned long long)row->b.count);
			ratio_text(ra, sizeof(ra), row->c[k].ratio);
			ci_text(ci, sizeof(ci), &row->c[k]);
			fprintf(f, "  %-*s  %-*s  %-5s  %9s  %9s  %9s  %9s  %*s  %-*s  %s\n",
				ws, k ? "" : row->stage, utf8_field(k ? "" : row->labels, wl),
				k ? "" : row->labels, cmp_q_name[k],
				k ? "" : na, k ? "" : nb, q_value(a, sizeof(a), row->a.q[k]),
				q_value(b, sizeof(b), row->b.q[k]), wr, ra, wc, ci,
				cmp_verdict_name(row->c[k].v));
		}
	}
}

static void lone_lines(const struct cmp_result *r, char side, FILE *f)
{
	size_t i, n = 0;

	for (i = 0; i < r->nlone; i++) {
		if (r->lone[i].side != side)
			continue;
		if (!n++)
			fprintf(f, "\nonly in %c (not compared): ", side);
		else
			fputs("; ", f);
		fprintf(f, "%s/%s %s", r->lone[i].layer, r->lone[i].stage, r->lone[i].labels);
	}
	if (n)
		fputc('\n', f);
}

void cmp_print_text(const struct cmp_result *r, FILE *f)
{
	int compared, changes = cmp_changes(r, &compared), slower = 0, faster = 0, k;
	size_t i, from;

	fprintf(f, "A: %u interval%s, %u file%s; B: %u interval%s, %u file%s\n", r->a_intervals,
		r->a_intervals == 1 ? "" : "s", r->a_files, r->a_files == 1 ? "" : "s",
		r->b_intervals, r->b_intervals == 1 ? "" : "s", r->b_files,
		r->b_files == 1 ? "" : "s");
	if (r->a_drops || r->b_drops) {
		int lost = cmp_lost(r);

		fprintf(f, "DROPS: the tracer lost events (A %" PRIu64 ", B %" PRIu64 "): "
			"the histograms miss them.\nEach interval below holds whatever values they "
			"had; ", r->a_drops, r->b_drops);
		if (lost)
			fprintf(f, "%d verdict%s they could change %s withheld (-v says which)\n",
				lost, lost == 1 ? "" : "s", lost == 1 ? "is" : "are");
		else
			fprintf(f, "they change no verdict\n");
	}
	fprintf(f, "a change is called when B/A's %.0f%% interval (simultaneous over %d quantiles, "
		"widened %.2fx)\nlies wholly outside 1 +/- %.2f%%: the larger of twice the bucket "
		"error and --threshold %.2f%%\n", 100 * (1 - r->o.alpha), r->family, r->widen,
		100 * r->limit, 100 * r->o.threshold);
	for (from = 0; from < r->nrows; from = i) {
		for (i = from; i < r->nrows && !strcmp(r->rows[i].layer, r->rows[from].layer); i++)
			;
		layer_table(r, from, i, f);
	}
	for (i = 0; i < r->nrows; i++) {
		for (k = 0; k < CMP_NQ; k++) {
			slower += r->rows[i].c[k].v == CMP_SLOWER;
			faster += r->rows[i].c[k].v == CMP_FASTER;
		}
	}
	lone_lines(r, 'A', f);
	lone_lines(r, 'B', f);
	for (i = 0; i < r->nrows; i++) {	/* counted, value unknown: beside what was timed */
		const struct cmp_row *w = &r->rows[i];

		if (w->a.unmeasured || w->b.unmeasured)
			fprintf(f, "unmeasured: %s %s %s: A %" PRIu64 " of %" PRIu64 ", B %" PRIu64
				" of %" PRIu64 " (iostrata(8) says why)\n", w->layer, w->stage,
				w->labels, w->a.unmeasured, w->a.unmeasured + w->a.count,
				w->b.unmeasured, w->b.unmeasured + w->b.count);
	}
	fprintf(f, "\n%d of %d compared quantiles changed (%d slower, %d faster); %d without enough "
		"data (-v says why)\n", changes, compared, slower, faster,
		(int)(r->nrows * CMP_NQ) - compared);
}

void cmp_print_why(const struct cmp_result *r, FILE *f)
{
	size_t i;
	int k;

	for (i = 0; i < r->nrows; i++)
		for (k = 0; k < CMP_NQ; k++)
			if (r->rows[i].c[k].v == CMP_NOT_ENOUGH)
				fprintf(f, "not enough data: %s/%s %s %s: %s\n", r->rows[i].layer,
					r->rows[i].stage, r->rows[i].labels, cmp_q_name[k],
					r->rows[i].c[k].why);
}

static void side_json(struct jw *w, const char *key, const struct cmp_side *s)
{
	int k;

	jw_obj(w, key);
	jw_u64(w, "count", s->count);
	jw_u64(w, "unmeasured", s->unmeasured);
	jw_u64(w, "intervals", s->intervals);
	for (k = 0; k < CMP_NQ; k++)
		jw_f64(w, cmp_q_name[k], s->q[k]);
	jw_end_obj(w);
}

static void lone_json(struct jw *w, const struct cmp_result *r, char side)
{
	size_t i;

	jw_arr(w, side == 'A' ? "only_a" : "only_b");
	for (i = 0; i < r->nlone; i++) {
		if (r->lone[i].side != side)
			continue;
		jw_obj(w, NULL);
		jw_str(w, "layer", r->lone[i].layer);
		jw_str(w, "stage", r->lone[i].stage);
		jw_str(w, "labels", r->lone[i].true_labels);
		jw_end_obj(w);
	}
	jw_end_arr(w);
}

void cmp_write_json(const struct cmp_result *r, struct jw *w)
{
	int compared, changes = cmp_changes(r, &compared), k;
	size_t i;

	jw_obj(w, "a");
	jw_u64(w, "files", r->a_files);
	jw_u64(w, "intervals", r->a_intervals);
	jw_u64(w, "drops", r->a_drops);
	jw_end_obj(w);
	jw_obj(w, "b");
	jw_u64(w, "files", r->b_files);
	jw_u64(w, "intervals", r->b_intervals);
	jw_u64(w, "drops", r->b_drops);
	jw_end_obj(w);
	jw_bool(w, "decided", cmp_decided(r));
	jw_obj(w, "method");
	jw_str(w, "resampling", "interval block bootstrap");
	jw_u64(w, "resamples", (uint64_t)r->o.resamples);
	jw_u64(w, "seed", r->o.seed);
	jw_f64(w, "alpha", r->o.alpha);
	jw_f64(w, "threshold", r->o.threshold);
	jw_f64(w, "limit", r->limit);
	jw_u64(w, "min_intervals", CMP_MIN_INTERVALS);
	jw_u64(w, "min_tail", CMP_MIN_TAIL);
	jw_u64(w, "family", (uint64_t)r->family);
	jw_f64(w, "widen", r->widen);
	jw_end_obj(w);
	jw_arr(w, "rows");
	for (i = 0; i < r->nrows; i++) {
		const struct cmp_row *row = &r->rows[i];

		jw_obj(w, NULL);
		jw_str(w, "layer", row->layer);
		jw_str(w, "stage", row->stage);
		jw_str(w, "labels", row->true_labels);
		side_json(w, "a", &row->a);
		side_json(w, "b", &row->b);
		jw_arr(w, "quantiles");
		for (k = 0; k < CMP_NQ; k++) {
			const struct cmp_cell *c = &row->c[k];

			jw_obj(w, NULL);
			jw_str(w, "q", cmp_q_name[k]);
			jw_f64(w, "a_ns", row->a.q[k]);
			jw_f64(w, "b_ns", row->b.q[k]);
			jw_f64(w, "ratio", c->ratio);
			jw_f64(w, "ci_lo", c->lo);
			jw_f64(w, "ci_hi", c->hi);
			jw_str(w, "verdict", cmp_verdict_name(c->v));
			if (c->v == CMP_NOT_ENOUGH)
				jw_str(w, "reason", c->why);
			if (c->lost)
				jw_bool(w, "lost", true);
			jw_end_obj(w);
		}
		jw_end_arr(w);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	lone_json(w, r, 'A');
	lone_json(w, r, 'B');
	jw_u64(w, "compared", (uint64_t)compared);
	jw_u64(w, "changes", (uint64_t)changes);
}

void cmp_aa_print_text(const struct cmp_aa *aa, FILE *f)
{
	int wl = 6, ws = 5, n, k;
	char rate[CMP_NQ][16], why[256];
	double fpr;
	size_t i;

	for (i = 0; i < aa->nrows; i++) {
		n = utf8_cols(aa->rows[i].labels);
		wl = n > wl ? n : wl;
		n = (int)strlen(aa->rows[i].stage) + (int)strlen(aa->rows[i].layer) + 1;
		ws = n > ws ? n : ws;
	}
	fprintf(f, "A/A: %d random splits of %u intervals into halves of %u, each compared as "
		"compare would (limit 1 +/- %.2f%%, %d resamples)\n", aa->nsplits, aa->intervals,
		aa->intervals / 2, 100 * aa->limit, aa->o.resamples);
	if (aa->drops)
		fprintf(f, "DROPS: the tracer lost %" PRIu64 " events: the halves' histograms "
			"miss them, and this check does not bound for them as compare A B does\n",
			aa->drops);
	fprintf(f, "  %-*s  %-*s  %12s  %12s  %12s  %12s\n", ws, "STAGE", wl, "LABELS", "P50",
		"P90", "P99", "P99.9");
	for (i = 0; i < aa->nrows; i++) {
		const struct cmp_aa_row *row = &aa->rows[i];
		char stage[160];

		snprintf(stage, sizeof(stage), "%s/%s", row->layer, row->stage);
		for (k = 0; k < CMP_NQ; k++) {
			if (row->compared[k])
				snprintf(rate[k], sizeof(rate[k]), "%d/%d", row->changes[k],
					 row->compared[k]);
			else
				snprintf(rate[k], sizeof(rate[k]), "-");
		}
		fprintf(f, "  %-*s  %-*s  %12s  %12s  %12s  %12s\n", ws, stage,
			utf8_field(row->labels, wl), row->labels,
			rate[0], rate[1], rate[2], rate[3]);
	}
	if (!cmp_aa_rate(aa, &fpr, why, sizeof(why)))	/* nothing judged is no evidence */
		fprintf(f, "false-positive rate: undetermined: %s; alpha %.0f%%\n"
			"A/A not decided: exit 4\n", why, 100 * aa->o.alpha);
	else if (aa->judged == aa->nsplits)
		fprintf(f, "false-positive rate: %d of %d splits called a change (%.1f%%); "
			"alpha %.0f%%\n", aa->any, aa->nsplits, 100 * fpr, 100 * aa->o.alpha);
	else
		fprintf(f, "false-positive rate: %d of the %d splits with enough data for a "
			"quantile called a change (%.1f%%; %d of %d had none); alpha %.0f%%\n",
			aa->any, aa->judged, 100 * fpr, aa->nsplits - aa->judged, aa->nsplits,
			100 * aa->o.alpha);
}

void cmp_aa_write_json(const struct cmp_aa *aa, struct jw *w)
{
	char why[256];
	double fpr;
	size_t i;
	int k;

	jw_u64(w, "splits", (uint64_t)aa->nsplits);
	jw_u64(w, "intervals", aa->intervals);
	jw_u64(w, "half", aa->intervals / 2);
	jw_u64(w, "drops", aa->drops);
	jw_u64(w, "resamples", (uint64_t)aa->o.resamples);
	jw_u64(w, "seed", aa->o.seed);
	jw_f64(w, "alpha", aa->o.alpha);
	jw_f64(w, "limit", aa->limit);
	jw_u64(w, "splits_with_change", (uint64_t)aa->any);
	jw_u64(w, "splits_judged", (uint64_t)aa->judged);
	if (cmp_aa_rate(aa, &fpr, why, sizeof(why))) {
		jw_f64(w, "false_positive_rate", fpr);
	} else {	/* null: undetermined, and why */
		jw_f64(w, "false_positive_rate", NAN);
		jw_str(w, "reason", why);
	}
	jw_arr(w, "rows");
	for (i = 0; i < aa->nrows; i++) {
		jw_obj(w, NULL);
		jw_str(w, "layer", aa->rows[i].layer);
		jw_str(w, "stage", aa->rows[i].stage);
		jw_str(w, "labels", aa->rows[i].true_labels);
		jw_arr(w, "quantiles");
		for (k = 0; k < CMP_NQ; k++) {
			jw_obj(w, NULL);
			jw_str(w, "q", cmp_q_name[k]);
			jw_u64(w, "compared", (uint64_t)aa->rows[i].compared[k]);
			jw_u64(w, "changes", (uint64_t)aa->rows[i].changes[k]);
			jw_end_obj(w);
		}
		jw_end_arr(w);
		jw_end_obj(w);
	}
	jw_end_arr(w);
}
