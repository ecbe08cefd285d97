// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The report page: one HTML file, nothing fetched (no script, font or image from anywhere),
 * light and dark (prefers-color-scheme) and print styles, readable at 1280 px and on a phone.
 * Drops first, where nobody can miss them; then per layer a summary table, the waterfalls of
 * io_uring/aio requests, the heatmaps; the recording's meta last.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "layer.h"
#include "report_int.h"

const char report_css[] =
	":root{--bg:#fff;--fg:#1b1c1f;--muted:#5b6068;--line:#d3d7dd;--card:#f5f6f8;"
	"--warn:#b3261e;--warn-bg:#fdeceb;--halo:#fff;color-scheme:light dark}"
	"@media (prefers-color-scheme:dark){:root{--bg:#141619;--fg:#e4e6e9;--muted:#a3a9b1;"
	"--line:#3a3f46;--card:#1c1f23;--warn:#ff8f80;--warn-bg:#3b1c19;--halo:#141619}}"
	"body{margin:0 auto;max-width:1240px;padding:12px 20px 40px;background:var(--bg);"
	"color:var(--fg);font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}"
	"h1{font-size:1.5em;margin:.4em 0 .1em}h2{font-size:1.25em;margin:1.6em 0 .4em;"
	"border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1.05em;"
	"margin:1.2em 0 .3em}.sub,.help,footer{color:var(--muted)}.help{max-width:60em}"
	"nav{display:flex;flex-wrap:wrap;gap:.3em 1em;margin:.8em 0;padding:.5em .8em;"
	"background:var(--card);border-radius:6px}a{color:inherit}"
	".drops{border:3px solid var(--warn);background:var(--warn-bg);padding:.6em 1em;"
	"margin:1em 0;border-radius:6px}.drops strong{color:var(--warn);font-size:1.1em}"
	".note{border-left:4px solid var(--warn);padding:.3em .8em;margin:.6em 0;"
	"background:var(--card)}"
	".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}"
	".sums{display:grid;grid-template-columns:repeat(auto-fill,minmax(580px,1fr));gap:0 24px}"
	".sums table{font-size:14px}.sums th,.sums td{padding:3px 5px}"
	"@media (max-width:640px){.sums{grid-template-columns:1fr}}"
	"table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.3em 0 1em}"
	"th,td{padding:3px 9px;border-bottom:1px solid var(--line);text-align:right;"
	"white-space:nowrap}th{font-weight:600}td.l,th.l{text-align:left}"
	"td.ls{white-space:normal;overflow-wrap:anywhere;min-width:12em;max-width:30em}"
	"tr.all td{font-weight:600}td.bad{color:var(--warn);font-weight:600}"
	"tr.sep td{border-top:2px solid var(--line)}"
	".panel{margin:10px 0 18px}.panel svg{width:100%;height:auto;max-width:960px;"
	"display:block}"
	".panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:8px 18px}"
	".panels svg{max-width:560px}"
	"svg.wf{width:100%;max-width:720px;height:auto;display:block}"
	"svg.wf text{font:12px sans-serif;fill:currentColor}"
	"dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:.4em 0}"
	"dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere;font-family:ui-monospace,"
	"monospace;font-size:.9em}"
	"@media (max-width:640px){body{padding:8px 10px 30px;font-size:14px}"
	".panels{grid-template-columns:1fr}.panel{overflow-x:auto}"
	".panel>svg:not(.small){min-width:760px}dl{grid-template-columns:1fr}dt{margin-top:.4em}}"
	"@media print{:root{--bg:#fff;--fg:#000;--muted:#333;--line:#bbb;--card:#fff;"
	"--warn:#b3261e;--warn-bg:#fff}body{max-width:none;padding:0;font-size:11pt}nav{display:none}"
	".panel,.panels>div,table,.wfbox,.sums>div{break-inside:avoid}h2,h3{break-after:avoid}"
	"svg.heatmap .halo{stroke:#fff}}";


static void esc(struct sbuf *b, const char *s)
{
	sbuf_esc(b, s);
}

/* A percentile cell: "&ge;68.7s" when only bounded below (the open-ended bucket), "-" empty */
static const char *html_pct(char *buf, size_t len, const struct hist *h, uint32_t ppm)
{
	return fmt_pct(buf, len, h, ppm, false, "&ge;");
}

static void dur_text(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000ULL;

	if (s >= 3600)
		snprintf(buf, len, "%" PRIu64 " h %02" PRIu64 " min", s / 3600, s / 60 % 60);
	else if (s >= 60)
		snprintf(buf, len, "%" PRIu64 " min %02" PRIu64 " s", s / 60, s % 60);
	else
		snprintf(buf, len, "%.1f s", ns / 1e9);
}

/* Is file i the first with a meta record naming its host? (files: the command line's) */
static bool host_first_named(const struct report *r, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (r->files[j].has_meta && !strcmp(r->files[j].meta.host, r->files[i].meta.host))
			return false;
	return true;
}

/*
 * The recordings' hosts: how many (*n), the first file of each in hosts[] (up to max); the
 * first file with a meta record returned (NULL: none has one).
 */
static const struct file_info *hosts_of(const struct report *r, const struct file_info **hosts,
					int max, int *n)
{
	size_t i;

	*n = 0;
	for (i = 0; i < r->nfiles; i++) {
		if (!r->files[i].has_meta || !host_first_named(r, i))
			continue;
		if (*n < max)
			hosts[*n] = &r->files[i];
		(*n)++;
	}
	return *n ? hosts[0] : NULL;
}

#define HOSTS_NAMED 4

/* Do all files with a meta record have f's kernel, CPUs and command? (else: Recording) */
static void meta_alike(const struct report *r, const struct file_info *f, bool *kernel,
		       bool *command)
{
	size_t i;

	*kernel = *command = true;
	for (i = 0; i < r->nfiles; i++) {
		const struct recread_meta *m = &r->files[i].meta;

		if (!r->files[i].has_meta)
			continue;
		if (strcmp(m->kernel, f->meta.kernel) || m->cpus != f->meta.cpus)
			*kernel = false;
		if (strcmp(m->command, f->meta.command))
			*command = false;
	}
}

static void header(const struct report *r, struct sbuf *b)
{
	const struct file_info *hosts[HOSTS_NAMED];
	char from[64], to[64], dur[48];
	int nhosts, k;
	const struct file_info *f = hosts_of(r, hosts, HOSTS_NAMED, &nhosts);
	bool kernel = false, command = false;

	if (f)
		meta_alike(r, f, &kernel, &command);

	sbuf_puts(b, "<header><h1>I/O latency, layer by layer</h1><p class=\"sub\">");
	if (nhosts > 1) {	/* recordings of several hosts on one timeline: each named */
		sbuf_printf(b, "<strong>%d hosts</strong>: ", nhosts);
		for (k = 0; k < nhosts && k < HOSTS_NAMED; k++) {
			sbuf_puts(b, k ? ", " : "");
			esc(b, hosts[k]->meta.host);
		}
		if (nhosts > HOSTS_NAMED)
			sbuf_printf(b, " and %d more", nhosts - HOSTS_NAMED);
		sbuf_puts(b, " (each in Recording below) &middot; ");
	} else if (f) {
		sbuf_puts(b, "<strong>");
		esc(b, f->meta.host);
		sbuf_puts(b, "</strong> &middot; ");
		if (!kernel) {		/* rebooted between recordings: each says which */
			sbuf_puts(b, "kernels or CPUs differ (each in Recording below) &middot; ");
		} else {
			sbuf_puts(b, "Linux ");
			esc(b, f->meta.kernel);
			if (f->meta.cpus > 0)	/* a meta record without it: nothing said, not 0 */
				sbuf_printf(b, " &middot; %ld CPUs", f->meta.cpus);
			sbuf_puts(b, " &middot; ");
		}
	}
	if (r->nivs) {
		fmt_date(from, sizeof(from), r->t0);
		fmt_date(to, sizeof(to), r->t1);
		dur_text(dur, sizeof(dur), r->t1 - r->t0);
		sbuf_printf(b, "%s to %s (%s, %zu intervals)", from, to, dur, r->nivs);
	} else {
		sbuf_puts(b, "no intervals recorded");
	}
	sbuf_puts(b, "</p>");
	if (f && command && *f->meta.command) {
		sbuf_puts(b, "<p class=\"sub\"><code>");
		esc(b, f->meta.command);
		sbuf_puts(b, "</code></p>");
	}
	sbuf_puts(b, "</header>\n");
}

/* Whether a drop counter of this reason (with or without a layer's prefix) is in the page. */
static bool drops_of_reason(const struct report *r, const char *reason)
{
	size_t len = strlen(reason), n;
	int j;

	for (j = 0; j < r->ndrops; j++) {
		n = strlen(r->drops[j].name);
		if (r->drops[j].n && n >= len && !strcmp(r->drops[j].name + n - len, reason))
			return true;
	}
	return false;
}

/*
 * Drops: at the top, framed in the warning colour, whenever one is not zero; what each reason
 * is and what, if anything, helps, by the reasons present. complete_unseen is not an event
 * the tracer saw: the kernel ran no program for it, and no option changes that.
 */
static void drops_banner(const struct report *r, struct sbuf *b)
{
	uint64_t total = 0;
	size_t i;
	int j, n = 0;

	for (i = 0; i < r->nivs; i++)	/* every drop, named or not (the marks' own counts) */
		total += r->ivs[i].drops;
	if (total) {
		sbuf_printf(b, "<div class=\"drops\" id=\"drops\" role=\"alert\"><strong>%" PRIu64
			  " events were lost</strong>: the histograms below miss them. ", total);
		for (j = 0; j < r->ndrops; j++) {
			if (!r->drops[j].n)
				continue;
			sbuf_puts(b, n++ ? ", " : "By reason: ");
			esc(b, r->drops[j].name);	/* names come from the file: escaped */
			sbuf_printf(b, "&nbsp;%" PRIu64, r->drops[j].n);
		}
		if (r->drops_other)
			sbuf_printf(b, "%sother&nbsp;%" PRIu64, n++ ? ", " : "By reason: ",
				    r->drops_other);
		for (i = 0, n = 0; i < r->nivs; i++)
			n += r->ivs[i].drops != 0;
		sbuf_printf(b, " (in %d of %zu intervals; red marks under the heatmaps show when).",
			    n, r->nivs);
		if (drops_of_reason(r, "inflight_full") || drops_of_reason(r, "inflight_stale") ||
		    drops_of_reason(r, "inflight_reused"))
			sbuf_puts(b, " <em>inflight</em>: I/O the in-flight table had no room for or "
				  "took for a leftover; <code>--inflight</code> makes it larger.");
		if (drops_of_reason(r, "hist_full"))
			sbuf_puts(b, " <em>hist_full</em>: more label sets than the histogram maps "
				  "hold; fewer keyed views (-P, -C, -F, -D) need fewer.");
		if (drops_of_reason(r, "complete_unseen"))
			sbuf_puts(b, " <em>complete_unseen</em>: block requests the kernel completed "
				  "without running a BPF program for their completion (docs/trust.md); "
				  "counted, never measured, and no option changes it.");
		sbuf_puts(b, " Every reason: <code>drops</code> under OUTPUT in iostrata(8).</div>\n");
	}
	for (i = 0; i < r->nnotes; i++) {
		sbuf_puts(b, "<p class=\"note\">");
		esc(b, r->notes[i]);
		sbuf_puts(b, "</p>\n");
	}
}

static void panel_hist(const struct panel *p, struct hist *h)
{
	int s;

	memset(h, 0, sizeof(*h));
	for (s = 0; s < p->nser; s++)
		series_hist(p->ser[s], h);
}

static void summary_row(const struct panel *p, bool first_of_set, bool label_column,
			struct sbuf *b)
{
	static const uint32_t pcts[] = { 500000, 900000, 990000, 999000 };
	struct hist h;
	char v[32];
	int j;

	panel_hist(p, &h);
	sbuf_puts(b, "<tr>");
	if (label_column) {
		/* a long label set (a cgroup path) wraps: the figures stay in view */
		sbuf_puts(b, "<td class=\"l ls\">");
		if (first_of_set) {
			esc(b, p->layer);
			sbuf_puts(b, " ");
			esc(b, p->labels);
		}
		sbuf_puts(b, "</td>");
	}
	sbuf_printf(b, "<td class=\"l\"><a href=\"#%s\">", p->id);
	esc(b, p->stage);
	sbuf_printf(b, "</a></td><td>%" PRIu64 "</td>", (uint64_t)h.count);
	for (j = 0; j < 4; j++)
		sbuf_printf(b, "<td>%s</td>", html_pct(v, sizeof(v), &h, pcts[j]));
	sbuf_printf(b, "<td>%s</td><td%s>%" PRIu64 "</td></tr>",
		  h.count ? fmt_ns(v, sizeof(v), h.max_ns, false) : "-",
		  h.unmeasured ? " class=\"bad\"" : "", (uint64_t)h.unmeasured);
}

/* Per layer: the merged label set's stages, then each top label set's. */
static void summary(const struct report *r, const struct panel *p, int n, struct sbuf *b)
{
	int i, j;
	const char *layer = NULL;

	sbuf_puts(b, "<section id=\"summary\"><h2>Summary</h2><p class=\"help\">Over the whole "
		   "recording, per layer and stage, its label sets merged. Percentiles by the "
		   "tool's rule (within 3.125&nbsp;%); count and max are exact. <em>Unmeasured</em>: I/O seen "
		   "whose start or end for that stage could not be known, never counted as a "
		   "value.</p>\n");
	if (!n) {	/* no histogram at all: said, not an empty section */
		if (r->nivs)
			sbuf_printf(b, "<p><strong>No I/O was recorded</strong>: none of the %zu "
				  "intervals holds a histogram, so no I/O completed in the layers and "
				  "filters traced (in Recording below).</p>", r->nivs);
		else
			sbuf_puts(b, "<p><strong>No I/O was recorded</strong>: the recording holds no "
				   "interval (it ended before its first).</p>");
	}
	sbuf_puts(b, "<div class=\"sums\">");
	for (i = 0; i < n; i++) {
		if (!layer || strcmp(layer, p[i].layer)) {
			if (layer)
				sbuf_puts(b, "</tbody></table></div></div>\n");
			layer = p[i].layer;
			sbuf_puts(b, "<div><h3>");
			esc(b, layer);
			sbuf_puts(b, p[i].labelset < 0 ? "" : " [");
			if (p[i].labelset >= 0)	/* the layer's one label set */
				esc(b, p[i].labels);
			sbuf_puts(b, p[i].labelset < 0 ? "" : "]");
			sbuf_puts(b, "</h3><div class=\"scroll\"><table><thead><tr>"
				   "<th class=\"l\">stage</th><th>count</th><th>p50</th>"
				   "<th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>unmeasured"
				   "</th></tr></thead><tbody>");
			/* the merged panels of the layer first, then the label sets in rank order */
			for (j = i; j < n && !strcmp(p[j].layer, layer); j++)
				if (!p[j].small)
					summary_row(&p[j], j == i, false, b);
		}
	}
	if (layer)
		sbuf_puts(b, "</tbody></table></div></div>\n");
	(void)r;
	sbuf_puts(b, "</div></section>\n");
}

static void label_set_rows(const struct panel *p, int n, struct sbuf *b)
{
	int i, j;

	for (i = 0; i < n; i++) {
		if (!p[i].small)
			continue;
		for (j = 0; j < i; j++)
			if (p[j].small && !strcmp(p[j].layer, p[i].layer) &&
			    p[j].labelset == p[i].labelset)
				break;
		if (j < i)
			continue;
		/* the first panel of this label set: every stage of it */
		for (j = i; j < n; j++)
			if (p[j].small && !strcmp(p[j].layer, p[i].layer) &&
			    p[j].labelset == p[i].labelset)
				summary_row(&p[j], j == i, true, b);
	}
}

/* ---- waterfalls: io_uring and aio requests, per process and opcode, paths merged */

static const char *const wf_parts[] = { "submit_bio", "wait", "device", "device_cqe" };
static const char *const wf_reap[] = { "cqe_reap", "complete_reap" };
static const char *const wf_spans[] = { "submit_cqe", "submit_complete", "total" };

/* A waterfall: one layer, opcode and process; its series are v[first .. first + n). */
struct wf_group {
	const struct rec_id *key;
	size_t first, n;
	uint64_t count;		/* the most requests of its spans (its rank) */
};

static int wf_slot(const char *stage)
{
	int k;

	for (k = 0; k < 4; k++)
		if (!strcmp(stage, wf_parts[k]))
			return k;
	for (k = 0; k < 2; k++)
		if (!strcmp(stage, wf_reap[k]))
			return 4 + k;
	for (k = 0; k < 3; k++)
		if (!strcmp(stage, wf_spans[k]))
			return 6 + k;
	return -1;
}

static const char *wf_name(int k)
{
	return k < 4 ? wf_parts[k] : k < 6 ? wf_reap[k - 4] : wf_spans[k - 6];
}

static int group_cmp(const void *a, const void *b)
{
	const struct wf_group *x = a, *y = b;
	int c = strcmp(x->key->layer, y->key->layer);

	if (c)
		return -c;	/* uring before aio */
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->first < y->first ? -1 : x->first > y->first;	/* the same on every libc */
}

static uint64_t mean(const struct hist *h)
{
	return h->count ? h->sum_ns / h->count : 0;
}

/*
 * A stage's share of the waterfall's whole as the page writes it, in the table and on the bar
 * alike: one computation, so one stage never shows two figures. "-": no whole recorded.
 */
static const char *wf_share(char *buf, size_t len, uint64_t part, uint64_t whole)
{
	if (whole)
		snprintf(buf, len, "%.1f%%", 100.0 * (double)part / (double)whole);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* The swatch of a bar segment in its table row: its colour, or (tint < 0) the remainder's
 * hatching. */
static void wf_swatch(char *buf, size_t len, double tint)
{
	if (tint < 0)
		snprintf(buf, len, "<span style=\"display:inline-block;width:.8em;height:.8em;"
			 "margin-right:.4em;background:repeating-linear-gradient(45deg,#888 0 2px,"
			 "transparent 2px 5px);outline:1px solid #888\"></span>");
	else
		snprintf(buf, len, "<span style=\"display:inline-block;width:.8em;height:.8em;"
			 "margin-right:.4em;background:#%06x\"></span>", report_viridis(tint));
}

static void wf_row(const struct wf_group *g, const struct hist *st, int k, const char *swatch,
		   uint64_t whole, bool sep, struct sbuf *b)
{
	const struct hist *h = &st[k];
	/* io_uring's reap is read at the ring's next event: cqe_reap and its total */
	bool upper = k == 4 || (k == 8 && !strcmp(g->key->layer, "uring"));
	char v1[24], v2[24], v3[24], share[24];

	html_pct(v1, sizeof(v1), h, 500000);
	html_pct(v2, sizeof(v2), h, 990000);
	fmt_ns(v3, sizeof(v3), mean(h), false);
	/* a share of a whole not recorded (--stages without total or submit_cqe), or of a stage
	 * with no value: unknown, not 0 */
	wf_share(share, sizeof(share), mean(h), h->count ? whole : 0);
	sbuf_printf(b, "<tr%s><td class=\"l\">%s%s%s</td><td>%" PRIu64 "</td><td>%s</td>"
		  "<td>%s</td><td>%s</td><td>%s</td><td%s>%" PRIu64 "</td></tr>",
		  sep ? " class=\"sep\"" : "", swatch, wf_name(k), upper ? " (upper bound)" : "", (uint64_t)h->count,
		  h->count ? v1 : "-", h->count ? v2 : "-", h->count ? v3 : "-", share,
		  h->unmeasured ? " class=\"bad\"" : "", (uint64_t)h->unmeasured);
}

/* A bar segment's two label lines (its name, its share or mean), where they fit its width
 * (12px sans-serif: 7 px a character at most). */
static void wf_label(double x, double w, const char *name, const char *value, struct sbuf *b)
{
	size_t n = strlen(name) > strlen(value) ? strlen(name) : strlen(value);

	if (w >= 7.0 * (double)n + 4)
		sbuf_printf(b, "<text x=\"%.1f\" y=\"48\">%s</text><text x=\"%.1f\" y=\"60\">%s"
			  "</text>", 12 + x, name, 12 + x, value);
}

/*
 * One process's requests of one opcode: a bar of the mean time of each stage it lives through,
 * in order, and a table. With the whole known (total, else submit_cqe / submit_complete), the
 * bar is drawn to its scale and every segment is labelled with its share of it, the table's
 * share: what the stages shown do not cover is a hatched "unattributed" remainder, and stages
 * that add up to more than the whole (their means are of different requests: the bio stages
 * of linked requests only) pass a dashed line that marks it, said under the bar, not rescaled
 * away. Without a whole, the segments are the stages' means side by side, labelled with them:
 * no percentage of a whole that was not recorded.
 */
static void waterfall(const struct wf_group *g, const struct hist *st, size_t num,
		      struct sbuf *b)
{
	static const double tints[] = { 0.15, 0.38, 0.62, 0.86, 0.97 };
	uint64_t whole = 0, seg[6], sum = 0, rest = 0, scale;
	static const int ends[] = { 0, 1, 2, 3, 6, 7, 4, 5, 8 };	/* by where a stage ends */
	int i, k, j, nseg = 0, idx[6], wk = 8;
	bool over = false, inbar, sep;
	double x = 0, w;
	char lab[REC_LABELS_LEN], v1[24], v2[24], sh[24], swatch[200];
	struct rec_id tmp = *g->key;

	/* the whole: total (submit -> reaped) when seen, else submit -> CQE / completion */
	for (k = 8; k >= 6 && !whole; k--)
		if ((whole = mean(&st[k])))
			wk = k;
	/* the bar: the linked parts when there are any, else the submit span; then the reap */
	for (k = 0; k < 4; k++)
		if (st[k].count)
			idx[nseg++] = k;
	if (!nseg)
		for (k = 6; k < 8; k++)
			if (st[k].count)
				idx[nseg++] = k;
	for (k = 4; k < 6; k++)
		if (st[k].count)
			idx[nseg++] = k;
	for (k = 0; k < nseg; k++)
		sum += seg[k] = mean(&st[idx[k]]);
	/* a remainder or an excess the shares' one decimal cannot show is the means' rounding */
	if (nseg && whole > sum && strcmp(wf_share(sh, sizeof(sh), whole - sum, whole), "0.0%"))
		rest = whole - sum;
	over = whole && sum > whole && strcmp(wf_share(sh, sizeof(sh), sum, whole), "100.0%");
	scale = whole > sum ? whole : sum;
	tmp.flags[0] = '\0';
	rec_id_labels_paths_merged(&tmp, lab, sizeof(lab));
	sbuf_puts(b, "<div class=\"wfbox\"><h3>");
	esc(b, g->key->layer);
	sbuf_puts(b, " [");
	esc(b, lab);
	sbuf_puts(b, "]</h3>");
	if (nseg && scale) {
		sbuf_printf(b, "<svg class=\"wf\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 "
			  "720 62\" role=\"img\"><title>%s</title>", whole ?
			  "mean time per stage, to the scale of the mean whole" :
			  "mean time per stage, side by side: no whole was recorded");
		if (rest)
			sbuf_printf(b, "<defs><pattern id=\"wfu-%zu\" width=\"6\" height=\"6\" "
				  "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
				  "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#888\" "
				  "stroke-width=\"2\"/></pattern></defs>", num);
		for (k = 0; k < nseg; k++) {
			w = 700.0 * (double)seg[k] / (double)scale;
			fmt_ns(v1, sizeof(v1), seg[k], false);
			wf_share(sh, sizeof(sh), seg[k], whole);
			sbuf_printf(b, "<rect x=\"%.1f\" y=\"4\" width=\"%.1f\" height=\"26\" "
				  "fill=\"#%06x\" stroke=\"#fff\" stroke-width=\"1\" data-stage=\"%s\">"
				  "<title>%s: mean %s", 10 + x, w, report_viridis(tints[k % 5]),
				  wf_name(idx[k]), wf_name(idx[k]), v1);
			if (whole)
				sbuf_printf(b, ", %s of the mean %s", sh, wf_name(wk));
			sbuf_puts(b, "</title></rect>");
			wf_label(x, w, wf_name(idx[k]), whole ? sh : v1, b);
			x += w;
		}
		if (rest) {
			w = 700.0 * (double)rest / (double)scale;
			fmt_ns(v1, sizeof(v1), rest, false);
			wf_share(sh, sizeof(sh), rest, whole);
			sbuf_printf(b, "<rect x=\"%.1f\" y=\"4\" width=\"%.1f\" height=\"26\" "
				  "fill=\"url(#wfu-%zu)\" stroke=\"#888\" stroke-width=\"1\" "
				  "data-stage=\"unattributed\"><title>unattributed: %s, %s of the mean "
				  "%s, not covered by the means of the stages shown</title></rect>",
				  10 + x, w, num, v1, sh, wf_name(wk));
			wf_label(x, w, "unattributed", sh, b);
		}
		if (over) {
			w = 10 + 700.0 * (double)whole / (double)scale;
			fmt_ns(v1, sizeof(v1), whole, false);
			sbuf_printf(b, "<line class=\"whole\" x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"34\" "
				  "stroke=\"currentColor\" stroke-width=\"2\" stroke-dasharray=\"4 2\">"
				  "<title>the mean %s: %s</title></line>", w, w, wf_name(wk), v1);
		}
		sbuf_puts(b, "</svg>");
	}
	if (nseg && !whole)
		sbuf_puts(b, "<p class=\"help\">No whole was recorded (no total, submit_cqe or "
			   "submit_complete: <code>--stages</code> left them out), so no stage has a "
			   "share: the bar sets the stages' means side by side.</p>");
	if (over) {
		fmt_ns(v1, sizeof(v1), whole, false);
		sbuf_printf(b, "<p class=\"help\">The stages in the bar add up to %s of the mean %s "
			  "(%s): ", wf_share(sh, sizeof(sh), sum, whole), wf_name(wk), v1);
		if (wk < 8 && (st[4].count || st[5].count))
			sbuf_printf(b, "%s comes after it, which ends at the %s (no total was "
				  "recorded). ", st[4].count ? wf_name(4) : wf_name(5),
				  wk == 6 ? "CQE" : "completion");
		else if (idx[0] < 4)	/* the bar holds bio stages */
			sbuf_puts(b, "their means are of different requests (submit_bio, wait, device "
				   "and device_cqe of the requests linked to their bios only). ");
		else	/* a span and a reap: a request whose reap was not measured is in one */
			sbuf_puts(b, "their means are of different requests (a request whose reap "
				   "was not measured counts in the submit span only). ");
		sbuf_puts(b, "Not rescaled to fit: the dashed line marks the whole.</p>");
	}
	sbuf_printf(b, "<div class=\"scroll\"><table><thead><tr><th class=\"l\">stage</th>"
		  "<th>count</th><th>p50</th><th>p99</th><th>mean</th><th>share%s%s</th>"
		  "<th>unmeasured</th></tr></thead><tbody>", whole ? " of " : "",
		  whole ? wf_name(wk) : "");
	/* the bar's stages in its order, its remainder, then the rest (the spans, the whole) */
	for (j = 0; j < nseg; j++) {
		wf_swatch(swatch, sizeof(swatch), tints[j % 5]);
		wf_row(g, st, idx[j], swatch, whole, false, b);
	}
	if (rest) {
		wf_swatch(swatch, sizeof(swatch), -1);
		sbuf_printf(b, "<tr><td class=\"l\" title=\"the part of the mean whole the means of "
			  "the stages above do not cover\">%sunattributed</td><td>-</td><td>-</td>"
			  "<td>-</td><td>%s</td><td>%s</td><td>-</td></tr>", swatch,
			  fmt_ns(v1, sizeof(v1), rest, false),
			  wf_share(v2, sizeof(v2), rest, whole));
	}
	/* the rest in the order their stages end: the parts, the submit spans (at the CQE or
	 * completion), the reaps, the whole; set apart from the bar's rows by a rule */
	for (i = 0, sep = nseg || rest; i < 9; i++) {
		k = ends[i];
		for (j = 0, inbar = false; j < nseg; j++)
			inbar |= idx[j] == k;
		if (!inbar && (st[k].count || st[k].unmeasured)) {
			wf_row(g, st, k, "", whole, sep, b);
			sep = false;
		}
	}
	sbuf_puts(b, "</tbody></table></div></div>\n");
}

/* Series of one waterfall next to each other: by layer, opcode, process. */
static int wf_series_cmp(const void *a, const void *b)
{
	const struct rec_id *x = &(*(struct series *const *)a)->key;
	const struct rec_id *y = &(*(struct series *const *)b)->key;
	int c;

	if ((c = strcmp(x->layer, y->layer)) || (c = strcmp(x->opcode, y->opcode)))
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->comm, y->comm);
}

/* Within a waterfall too: a total order, so its first series (its heading) is the same on
 * every libc. */
static int wf_series_order(const void *a, const void *b)
{
	const struct rec_id *x = &(*(struct series *const *)a)->key;
	const struct rec_id *y = &(*(struct series *const *)b)->key;
	int c = wf_series_cmp(a, b);

	if (c || (c = strcmp(x->stage, y->stage)) || (c = strcmp(x->flags, y->flags)) ||
	    (c = strcmp(x->cgroup, y->cgroup)) || (c = strcmp(x->disk, y->disk)) ||
	    (c = strcmp(x->op, y->op)))
		return c;
	return strcmp(x->syscall, y->syscall);
}

/*
 * Grouped by sorting, ranked by counts alone; only the groups shown have their histograms
 * merged. (Each group once held merged histograms and was found by a linear search: a
 * recording of 100,000 processes took 5.8 GB and 290 s.)
 */
static void waterfalls(const struct report *r, struct sbuf *b)
{
	struct series **v = malloc((r->nseries + 1) * sizeof(*v));
	struct wf_group *g = malloc((r->nseries + 1) * sizeof(*g));
	struct hist *st = calloc(9, sizeof(*st));
	uint64_t sums[9];
	size_t i, j, n = 0, nv = 0;
	int k, shown[2] = { 0, 0 };

	if (!v || !g || !st) {
		b->oom = true;	/* the page is not written without them: one error line */
		goto out;
	}
	for (i = 0; i < r->nseries; i++) {
		const struct rec_id *key = &r->series[i]->key;

		if ((!strcmp(key->layer, "uring") || !strcmp(key->layer, "aio")) &&
		    wf_slot(key->stage) >= 0)
			v[nv++] = r->series[i];
	}
	qsort(v, nv, sizeof(*v), wf_series_order);
	for (i = 0; i < nv; i = j) {
		memset(sums, 0, sizeof(sums));
		for (j = i; j < nv && !wf_series_cmp(&v[i], &v[j]); j++)
			sums[wf_slot(v[j]->key.stage)] += v[j]->tot.count;
		g[n] = (struct wf_group){ .key = &v[i]->key, .first = i, .n = j - i };
		for (k = 6; k < 9; k++)
			if (sums[k] > g[n].count)
				g[n].count = sums[k];
		n++;
	}
	if (!n || r->o.top <= 0)	/* none shown (--top 0): no section, no link to one */
		goto out;
	qsort(g, n, sizeof(*g), group_cmp);
	sbuf_puts(b, "<section id=\"waterfalls\"><h2>Waterfalls</h2><p class=\"help\">io_uring "
		   "and aio requests per process and opcode (their paths merged): the mean time "
		   "of each stage a request lives through, in order, and its share of the mean "
		   "whole: total (submit to reap), else submit_cqe or submit_complete where no "
		   "total was recorded. The bar is drawn to the scale of the whole, labelled with "
		   "the table's shares; its hatched <em>unattributed</em> end is the part of the "
		   "whole the stages' means do not cover. submit_bio, wait, device and device_cqe "
		   "are measured for O_DIRECT requests linked to their bios only, so their means "
		   "are of those and need not add up to the whole (where they pass it, a dashed "
		   "line marks it); io_uring's cqe_reap and total are upper bounds.</p>\n");
	for (i = 0; i < n; i++) {
		int l = !strcmp(g[i].key->layer, "aio");

		if (shown[l]++ < r->o.top) {
			memset(st, 0, 9 * sizeof(*st));
			for (j = g[i].first; j < g[i].first + g[i].n; j++)
				series_hist(v[j], &st[wf_slot(v[j]->key.stage)]);
			waterfall(&g[i], st, i, b);
		}
		/* after a layer's last: what --top left out of it is said, not dropped unseen */
		if ((i + 1 == n || strcmp(g[i + 1].key->layer, g[i].key->layer)) &&
		    shown[l] > r->o.top)
			sbuf_printf(b, "<p class=\"help\">%d more %s waterfall%s, of fewer requests "
				  "each, not shown (--top %d).</p>\n", shown[l] - r->o.top,
				  l ? "aio" : "io_uring", shown[l] - r->o.top == 1 ? "" : "s",
				  r->o.top);
	}
	sbuf_puts(b, "</section>\n");
out:
	free(v);
	free(g);
	free(st);
}

/* A recorded option's value as a reader takes it: the empty lists of a run without -l or
 * --stages mean every layer (the block layer alone with -d), every stage, not none. */
static const char *option_value(const struct recread_meta *m, const char *key, const char *val)
{
	const char *p = val;
	size_t k;

	if (*p++ != '[')
		return val;
	p += strspn(p, " \t\n");
	if (strcmp(p, "]"))
		return val;
	if (!strcmp(key, "layers")) {
		for (k = 0; k < m->nkv; k++)
			if (!strcmp(m->kv[k].key, "disk") && *m->kv[k].val &&
			    strcmp(m->kv[k].val, "null"))
				return "the block layer (-d without -l)";
		return "every available layer (no -l)";
	}
	if (!strcmp(key, "stages"))
		return "every stage of those layers (no --stages)";
	return val;
}

static void recording(const struct report *r, struct sbuf *b)
{
	size_t i, k;
	char when[64];

	sbuf_puts(b, "<section id=\"recording\"><h2>Recording</h2>\n");
	for (i = 0; i < r->nfiles; i++) {
		const struct file_info *f = &r->files[i];

		sbuf_puts(b, "<dl><dt>file</dt><dd>");
		esc(b, f->file);
		sbuf_puts(b, "</dd>");
		if (f->has_meta) {
			if (f->meta.start_ns)
				fmt_date(when, sizeof(when), f->meta.start_ns);
			else	/* not in the meta record: not the epoch */
				snprintf(when, sizeof(when), "not recorded");
			sbuf_puts(b, "<dt>host</dt><dd>");
			esc(b, f->meta.host);
			sbuf_puts(b, "</dd><dt>kernel</dt><dd>");
			esc(b, f->meta.kernel);
			if (f->meta.cpus > 0)
				sbuf_printf(b, "</dd><dt>CPUs</dt><dd>%ld", f->meta.cpus);
			sbuf_puts(b, "</dd><dt>iostrata</dt><dd>");
			esc(b, f->meta.version);
			sbuf_printf(b, " (format %d)</dd><dt>started</dt><dd>%s</dd><dt>command</dt><dd>",
				  f->meta.format, when);
			esc(b, f->meta.command);
			sbuf_puts(b, "</dd>");
			for (k = 0; k < f->meta.nkv; k++) {
				sbuf_puts(b, "<dt>");
				esc(b, f->meta.kv[k].key);
				sbuf_puts(b, "</dt><dd>");
				esc(b, option_value(&f->meta, f->meta.kv[k].key,
						    f->meta.kv[k].val));
				sbuf_puts(b, "</dd>");
			}
		} else {
			sbuf_puts(b, "<dt>meta</dt><dd>none (iostrata -j output, or an older "
				   "recording)</dd>");
		}
		sbuf_puts(b, "<dt>ended</dt><dd>");
		if (f->has_end) {
			esc(b, f->end_reason);
			sbuf_printf(b, ", after %" PRIu64 " intervals", f->end_intervals);
		} else {
			sbuf_puts(b, "no end record: the recording was cut short (killed, or still "
				   "running)");
		}
		sbuf_puts(b, "</dd></dl>\n");
	}
	if (r->nevents) {
		int j, any = 0;

		for (j = 0; j < r->nevents; j++) {
			if (!r->events[j].n)
				continue;
			sbuf_puts(b, any++ ? ", " : "<p>Events of the traced applications: ");
			esc(b, r->events[j].name);	/* names come from the file: escaped */
			sbuf_printf(b, "&nbsp;%" PRIu64, r->events[j].n);
		}
		if (any)
			sbuf_puts(b, "</p>\n");
	}
	sbuf_puts(b, "</section>\n");
}

/* After a layer's panels: how many of its label sets --top left without panels of their own. */
static void heatmaps_left_out(const struct report *r, const char *layer, struct sbuf *b)
{
	size_t k, sets = 0;

	for (k = 0; k < r->nlabelsets; k++)
		sets += !strcmp(r->labelsets[k].key->layer, layer);
	/* one label set: its panel is the merged one, nothing left out */
	if (sets > 1 && sets > (size_t)r->o.top)
		sbuf_printf(b, "<p class=\"help\">%zu %slabel set%s of %s%s: in the merged panel "
			  "only (--top %d).</p>\n", sets - (size_t)r->o.top, r->o.top ? "more " : "",
			  sets - (size_t)r->o.top == 1 ? "" : "s", layer,
			  !r->o.top ? "" : sets - (size_t)r->o.top == 1 ? ", of less I/O" :
			  ", of less I/O each", r->o.top);
}

static void heatmaps(const struct report *r, const struct panel *p, int n,
		     const struct sbuf *svgs, struct sbuf *b)
{
	const char *layer = NULL;
	bool in_grid = false;
	int i;

	if (!n)		/* nothing to draw: the summary says why */
		return;
	sbuf_puts(b, "<section id=\"heatmaps\"><h2>Heatmaps</h2><p class=\"help\">Time (UTC) "
		   "across, latency up (whole buckets of the tracer's log-linear scheme, merged "
		   "to fewer rows per octave where a panel is small), colour by the count of "
		   "I/O that completed in that time with that latency (per column of as many "
		   "intervals, where columns differ); hatched: none; blank, marked <em>not "
		   "recorded</em>: a time no recording covers (between recordings given "
		   "together). Lines: "
		   "p50 (solid), p99 (dashed), max (dotted), per column. Every cell has a "
		   "tooltip: its time, latency range, count and share of its column.</p>\n");
	for (i = 0; i < n; i++) {
		if (!layer || strcmp(layer, p[i].layer)) {
			if (in_grid)
				sbuf_puts(b, "</div>");
			in_grid = false;
			if (layer)
				heatmaps_left_out(r, layer, b);
			layer = p[i].layer;
			sbuf_puts(b, "<h3 id=\"layer-");
			esc(b, layer);
			sbuf_puts(b, "\">");
			esc(b, layer);
			sbuf_puts(b, "</h3>\n");
		}
		if (p[i].small && !in_grid) {
			sbuf_puts(b, "<div class=\"panels\">");
			in_grid = true;
		} else if (!p[i].small && in_grid) {
			sbuf_puts(b, "</div>");
			in_grid = false;
		}
		sbuf_printf(b, "<div class=\"panel\" id=\"%s\">", p[i].id);
		sbuf_put(b, svgs[i].p ? svgs[i].p : "", svgs[i].len);
		sbuf_puts(b, "</div>\n");
	}
	if (in_grid)
		sbuf_puts(b, "</div>");
	heatmaps_left_out(r, layer, b);
	sbuf_puts(b, "</section>\n");
}

void html_page(const struct report *r, struct panel *panels, int npanels,
	       const struct sbuf *svgs, struct sbuf *b)
{
	const struct file_info *hosts[HOSTS_NAMED];
	char from[64], title[64];
	const char *layer = NULL;
	int i, nhosts;
	const struct file_info *f = hosts_of(r, hosts, HOSTS_NAMED, &nhosts);
	struct sbuf wf = { 0 };
	bool labelsets = false;

	/* made first: the navigation links only sections the page has */
	waterfalls(r, &wf);
	for (i = 0; i < npanels; i++)
		labelsets |= panels[i].small;

	fmt_date(from, sizeof(from), r->t0);
	snprintf(title, sizeof(title), "%d hosts", nhosts);
	sbuf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
	sbuf_printf(b, "<meta name=\"generator\" content=\"iostrata report\">"
		  "<meta name=\"iostrata-panels\" content=\"%d\"><title>I/O latency: ", npanels);
	esc(b, nhosts > 1 ? title : f ? f->meta.host : "recording");
	sbuf_printf(b, ", %s</title><style>%s%s</style></head><body>\n", r->nivs ? from : "",
		  report_css, svg_rules);
	header(r, b);
	drops_banner(r, b);
	sbuf_puts(b, "<nav><a href=\"#summary\">Summary</a>");
	for (i = 0; i < npanels; i++)
		if (!layer || strcmp(layer, panels[i].layer)) {
			layer = panels[i].layer;
			sbuf_puts(b, "<a href=\"#layer-");
			esc(b, layer);
			sbuf_puts(b, "\">");
			esc(b, layer);
			sbuf_puts(b, " heatmaps</a>");
		}
	if (wf.len)
		sbuf_puts(b, "<a href=\"#waterfalls\">Waterfalls</a>");
	if (labelsets)
		sbuf_puts(b, "<a href=\"#labelsets\">Label sets</a>");
	sbuf_puts(b, "<a href=\"#recording\">Recording</a></nav>\n");
	summary(r, panels, npanels, b);
	heatmaps(r, panels, npanels, svgs, b);
	sbuf_put(b, wf.p ? wf.p : "", wf.len);
	b->oom |= wf.oom;	/* the page is not written without them */
	sbuf_free(&wf);
	if (labelsets) {
		sbuf_puts(b, "<section id=\"labelsets\"><h2>Label sets</h2><p class=\"help\">"
			   "The label sets with the most I/O in each layer (--top), every "
			   "stage.</p><div class=\"scroll\"><table><thead><tr><th class=\"l\">"
			   "label set</th><th class=\"l\">stage</th><th>count</th><th>p50</th>"
			   "<th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>unmeasured"
			   "</th></tr></thead><tbody>");
		label_set_rows(panels, npanels, b);
		sbuf_puts(b, "</tbody></table></div></section>\n");
	}
	recording(r, b);
	sbuf_puts(b, "<footer><p>Made by <code>iostrata report</code>: one file, nothing fetched; "
		   "every number from the recording. Buckets: 1 ns below 16 ns, then 16 per "
		   "power of two (bpf/hist.h).</p></footer>\n"
		   "<script>document.documentElement.setAttribute('data-rendered',"
		   "String(document.querySelectorAll('svg.heatmap').length));</script>\n"
		   "</body></html>\n");
}
