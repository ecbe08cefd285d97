// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * compare's page, in the report's style and through its writer: one HTML file, nothing
 * fetched. First what changed; then a heatmap of the ratios B/A (a row per layer, stage and
 * label set, a column per quantile; a diverging, colour-blind-safe scale, faded where no change
 * was called, an arrow where one was); then per row the two CDFs overlaid, on a tail axis
 * (50 %, 90 %, 99 %, 99.9 % evenly spaced) so that the quantiles compared can be seen.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compare.h"
#include "histfmt.h"
#include "report_int.h"
#include "utf8.h"

/* CDF panels at most: the rows with a quantile compared, in the table's order. */
#define MAX_CDFS	60
/* The tail axis ends at 99.99 %: -log10(1 - F) from 0 to 4. */
#define TAIL_MAX	4.0
/* A CDF panel's viewBox width, and its latency axis's ticks: at least 3 labelled, at most
 * XTICKS_MAX, labels LABEL_GAP_PX apart at least */
#define CDF_W		470
#define XTICKS_MIN	3
#define XTICKS_MAX	16
#define LABEL_GAP_PX	6

static const char cmp_css[] =
	"svg.cmp{display:block;height:auto;max-width:100%}"
	"svg.cmp text{font:12px sans-serif;fill:currentColor}"
	"svg.cmp .grid{stroke:currentColor;stroke-opacity:.18}"
	"svg.cmp .frame{stroke:currentColor;stroke-opacity:.35;fill:none}"
	"svg.cmp text.in{fill:#1b1c1f}svg.cmp text.in.dark{fill:#fff}"
	"svg.cmp text.na{font-style:italic}"
	"svg.cdf .a{fill:none;stroke:#0072b2;stroke-width:2}"
	"svg.cdf .b{fill:none;stroke:#d55e00;stroke-width:2;stroke-dasharray:6 3}"
	".cdfs{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));"
	"gap:8px 18px}.cdfs svg{max-width:560px}"
	"td.slower{color:#b2182b;font-weight:600}td.faster{color:#2166ac;font-weight:600}"
	"@media (prefers-color-scheme:dark){td.slower{color:#f4a582}td.faster{color:#92c5de}}";

/* ColorBrewer RdBu (11 classes), blue to red: diverging and safe for colour-blind readers. */
static const unsigned int rdbu[11] = { 0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0,
				       0xf7f7f7, 0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b,
				       0x67001f };

/* The colour of ratio v: log2 from -1 (twice as fast) to +1 (twice as slow), blue to red. */
static unsigned int ratio_colour(double v, double *t_out)
{
	double t = (log2(v) + 1) / 2, f;
	unsigned int rgb = 0, a, b;
	int i, ch;

	t = isfinite(t) ? fmin(fmax(t, 0), 1) : (v > 1 ? 1 : 0);
	*t_out = t;
	i = (int)(t * 10);
	if (i > 9)
		i = 9;
	f = t * 10 - i;
	for (ch = 16; ch >= 0; ch -= 8) {
		a = (rdbu[i] >> ch) & 0xff;
		b = (rdbu[i + 1] >> ch) & 0xff;
		rgb = rgb << 8 | (unsigned int)lround(a + f * ((double)b - a));
	}
	return rgb;
}

static void esc(struct sbuf *b, const char *s)
{
	sbuf_esc(b, s);
}

static const char *ns_text(char *buf, size_t len, double ns)
{
	if (isnan(ns))
		return "-";
	return fmt_ns4(buf, len, ns);
}

/* A cell's interval of B/A: lo, sep, hi; events lost can leave it no upper bound (why). */
static void ci_html(struct sbuf *b, const struct cmp_cell *c, const char *sep, const char *why)
{
	char lo[32], hi[32];

	cmp_ratio_str(lo, sizeof(lo), c->lo);
	if (isinf(c->hi))
		sbuf_printf(b, "%s%s&#8734;%s", lo, sep, why);	/* numeric: the SVG is XML */
	else
		sbuf_printf(b, "%s%s%s", lo, sep, cmp_ratio_str(hi, sizeof(hi), c->hi));
}

static void row_name(struct sbuf *b, const struct cmp_row *row)
{
	esc(b, row->layer);
	sbuf_puts(b, " ");
	esc(b, row->stage);
	sbuf_puts(b, " ");
	esc(b, row->labels);
}

static void header(const struct cmp_result *r, const char *a, const char *b, struct sbuf *s)
{
	sbuf_puts(s, "<h1>Did B make I/O faster or slower?</h1><p class=\"sub\">A: <code>");
	esc(s, a);
	sbuf_printf(s, "</code> (%u intervals, %u file%s) &nbsp; B: <code>", r->a_intervals,
		    r->a_files, r->a_files == 1 ? "" : "s");
	esc(s, b);
	sbuf_printf(s, "</code> (%u intervals, %u file%s)</p>", r->b_intervals, r->b_files,
		    r->b_files == 1 ? "" : "s");
	if (r->a_drops || r->b_drops) {
		int lost = cmp_lost(r);

		sbuf_printf(s, "<div class=\"drops\" id=\"drops\" role=\"alert\"><strong>Events "
			    "were lost</strong> (A %" PRIu64 ", B %" PRIu64 "), so the histograms "
			    "miss them. Each "
			    "interval holds whatever values they had; ", r->a_drops, r->b_drops);
		if (lost)
			sbuf_printf(s, "%d verdict%s they could change %s withheld (not enough "
				    "data), and a gate on %s is not decided.", lost,
				    lost == 1 ? "" : "s", lost == 1 ? "is" : "are",
				    lost == 1 ? "it" : "them");
		else
			sbuf_puts(s, "they change no verdict.");
		sbuf_puts(s, " What each reason is: <code>drops</code> under OUTPUT in iostrata(8) "
			   "(<code>iostrata report</code> of each recording names them).</div>\n");
	}
	sbuf_printf(s, "<p class=\"help\">Ratios B/A of each quantile, with %.0f%% intervals from "
		    "a bootstrap over whole intervals (%d resamples, seed %llu), simultaneous "
		    "over the %d quantiles compared (each widened %.2f&times;). A change is called "
		    "only when the interval lies wholly outside 1 &plusmn; %.2f%%: the larger of "
		    "twice the bucket error and the threshold (%.2f%%). See docs/compare.md.</p>\n",
		    100 * (1 - r->o.alpha), r->o.resamples, (unsigned long long)r->o.seed,
		    r->family, r->widen, 100 * r->limit, 100 * r->o.threshold);
}

static void changes_table(const struct cmp_result *r, struct sbuf *s)
{
	char x[32], y[32];
	int compared, n = cmp_changes(r, &compared), k;
	size_t i;

	sbuf_printf(s, "<section id=\"changes\"><h2>Changes</h2><p>%d of %d quantiles compared "
		    "changed; %d without enough data.</p>", n, compared,
		    (int)(r->nrows * CMP_NQ) - compared);
	if (!n) {
		sbuf_puts(s, "</section>\n");
		return;
	}
	sbuf_puts(s, "<div class=\"scroll\"><table><thead><tr><th class=\"l\">layer</th>"
		  "<th class=\"l\">stage</th><th class=\"l\">label set</th><th>q</th><th>A</th>"
		  "<th>B</th><th>B/A</th><th>interval</th><th class=\"l\">verdict</th></tr>"
		  "</thead><tbody>");
	for (i = 0; i < r->nrows; i++) {
		const struct cmp_row *row = &r->rows[i];

		for (k = 0; k < CMP_NQ; k++) {
			const struct cmp_cell *c = &row->c[k];
			char rt[32];

			if (c->v != CMP_SLOWER && c->v != CMP_FASTER)
				continue;
			sbuf_puts(s, "<tr><td class=\"l\">");
			esc(s, row->layer);
			sbuf_puts(s, "</td><td class=\"l\">");
			esc(s, row->stage);
			sbuf_puts(s, "</td><td class=\"l ls\">");	/* a long one wraps */
			esc(s, row->labels);
			sbuf_printf(s, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>",
				    cmp_q_name[k], ns_text(x, sizeof(x), row->a.q[k]),
				    ns_text(y, sizeof(y), row->b.q[k]),
				    cmp_ratio_str(rt, sizeof(rt), c->ratio));
			ci_html(s, c, "&ndash;", " (events lost: no upper bound)");
			sbuf_printf(s, "</td><td class=\"l %s\">%s</td></tr>",
				    cmp_verdict_name(c->v), cmp_verdict_name(c->v));
		}
	}
	sbuf_puts(s, "</tbody></table></div></section>\n");
}

static void heat_cell(const struct cmp_row *row, int k, double x, double y, double w, double h,
		      struct sbuf *s)
{
	const struct cmp_cell *c = &row->c[k];
	bool called = c->v == CMP_SLOWER || c->v == CMP_FASTER;
	char va[32], vb[32], rs[32];
	unsigned int rgb;
	double t;

	sbuf_printf(s, "<g data-q=\"%s\" data-verdict=\"%s\"", cmp_q_name[k],
		    cmp_verdict_name(c->v));
	if (isfinite(c->ratio))
		sbuf_printf(s, " data-ratio=\"%.4f\"", c->ratio);
	sbuf_puts(s, "><title>");
	row_name(s, row);
	sbuf_printf(s, ", %s: A %s, B %s", cmp_q_name[k], ns_text(va, sizeof(va), row->a.q[k]),
		    ns_text(vb, sizeof(vb), row->b.q[k]));
	if (isfinite(c->ratio))
		sbuf_printf(s, ", B/A %s", cmp_ratio_str(rs, sizeof(rs), c->ratio));
	if (!isnan(c->lo)) {
		sbuf_puts(s, " (");
		ci_html(s, c, " to ", ": events lost, no upper bound");
		sbuf_puts(s, ")");
	}
	sbuf_printf(s, ": %s", cmp_verdict_name(c->v));
	if (c->v == CMP_NOT_ENOUGH && c->why[0]) {
		sbuf_puts(s, " (");
		esc(s, c->why);
		sbuf_puts(s, ")");
	}
	sbuf_puts(s, "</title>");
	if (c->v == CMP_NOT_ENOUGH || !isfinite(c->ratio)) {
		/* the ratio as the text table gives it ("-" where none), greyed: shown, not judged
		 * (the tooltip says why); "n/a" had hidden a ratio the text printed */
		sbuf_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			    "fill=\"#888\" fill-opacity=\".18\"/><text class=\"na\" x=\"%.1f\" "
			    "y=\"%.1f\" text-anchor=\"middle\" fill-opacity=\".6\">%s</text></g>",
			    x, y, w, h, x + w / 2, y + h / 2 + 4, isfinite(c->ratio) ?
			    cmp_ratio_str(rs, sizeof(rs), c->ratio) : "-");
		return;
	}
	rgb = ratio_colour(c->ratio, &t);
	/* the colour is the ratio; it is faded where no change was called */
	sbuf_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		    "fill=\"#%06x\"%s/>", x, y, w, h, rgb, called ? "" : " fill-opacity=\".4\"");
	if (called)
		sbuf_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			    "fill=\"none\" stroke=\"currentColor\" stroke-width=\"2\"/>",
			    x + 1, y + 1, w - 2, h - 2);
	sbuf_printf(s, "<text class=\"in%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
		    "%s%s</text></g>", called && fabs(t - 0.5) > 0.3 ? " dark" : "",
		    x + w / 2, y + h / 2 + 4, cmp_ratio_str(rs, sizeof(rs), c->ratio),
		    c->v == CMP_SLOWER ? " \xe2\x96\xb2" : c->v == CMP_FASTER ? " \xe2\x96\xbc" : "");
}

/* The colour scale: 0.5x to 2x, the no-change band marked. */
static void heat_legend(const struct cmp_result *r, double x, double y, struct sbuf *s)
{
	static const double ticks[] = { 0.5, 0.71, 1, 1.41, 2 };
	const double w = 300, h = 12;
	double t, lo, hi;
	unsigned int i;

	sbuf_printf(s, "<text x=\"%.1f\" y=\"%.1f\">B/A: faster</text>", x, y + 10);
	x += 90;
	for (i = 0; i < 60; i++) {
		double v = exp2(i / 59.0 * 2 - 1);

		sbuf_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
			    "fill=\"#%06x\"/>", x + w * i / 60, y, w / 60 + 0.3, h,
			    ratio_colour(v, &t));
	}
	lo = x + w * (log2(1 - r->limit) + 1) / 2;
	hi = x + w * (log2(1 + r->limit) + 1) / 2;
	sbuf_printf(s, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		    "height=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\">slower</text>", lo, y - 2,
		    hi - lo, h + 4, x + w + 8, y + 10);
	for (i = 0; i < sizeof(ticks) / sizeof(ticks[0]); i++)
		sbuf_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.2g</text>",
			    x + w * (log2(ticks[i]) + 1) / 2, y + h + 14, ticks[i]);
	sbuf_printf(s, "<text x=\"%.1f\" y=\"%.1f\">framed on the scale: no change, 1 &#177; "
		    "%.2f%%</text><text x=\"%.1f\" y=\"%.1f\">a cell framed, with an arrow: a "
		    "change called; faded: none called</text><text x=\"%.1f\" y=\"%.1f\">grey, "
		    "the ratio in italics: not enough data, not judged</text>", x - 90, y + h + 32,
		    100 * r->limit, x - 90, y + h + 48, x - 90, y + h + 64);
}

/*
 * The heatmap's row label (layer, stage, labels) in at most cols columns of its 12px text
 * (7 px a column, a wide character two): whole, or its head and tail around an ellipsis (a
 * cgroup path's container id is at its end), the whole in a tooltip. It had been cut at the
 * panel's left edge. Cut between UTF-8 sequences, never inside one.
 */
#define HEAT_COL_PX	7.0

static void heat_label(const struct cmp_row *row, int cols, struct sbuf *s)
{
	struct sbuf t = { 0 };
	size_t n, i, k, nch = 0, *at = NULL;
	int *wd = NULL, total = 0, got, len, w, room_head, room_tail;

	sbuf_printf(&t, "%s %s %s", row->layer, row->stage, row->labels);
	n = t.p ? strlen(t.p) : 0;
	at = malloc((n + 1) * sizeof(*at));
	wd = malloc((n + 1) * sizeof(*wd));
	if (!t.p || !at || !wd) {
		s->oom = true;	/* the page is not written without it: one error line */
		goto out;
	}
	for (i = 0; i < n; i += (size_t)len, total += w) {
		len = utf8_char(t.p + i, &w);
		at[nch] = i;
		wd[nch++] = w;
	}
	at[nch] = n;
	if (total <= cols) {
		esc(s, t.p);
		goto out;
	}
	room_head = (cols - 1) * 3 / 5;
	room_tail = cols - 1 - room_head;
	for (k = 0, got = 0; k < nch && got + wd[k] <= room_head; got += wd[k++])
		;
	i = at[k];	/* the head's end */
	for (k = nch, got = 0; k > 0 && got + wd[k - 1] <= room_tail; got += wd[--k])
		;
	sbuf_puts(s, "<title>");
	esc(s, t.p);
	sbuf_puts(s, "</title>");
	{
		char c = t.p[i];

		t.p[i] = '\0';
		esc(s, t.p);
		t.p[i] = c;
	}
	sbuf_puts(s, "\xe2\x80\xa6");
	esc(s, t.p + at[k]);
out:
	free(at);
	free(wd);
	sbuf_free(&t);
}

static void heatmap(const struct cmp_result *r, struct sbuf *s)
{
	const double cw = 104, rh = 24, top = 28;
	double lw = 120, width, height;
	size_t i, n;
	int k;

	for (i = 0; i < r->nrows; i++) {
		n = strlen(r->rows[i].layer) + strlen(r->rows[i].stage) + strlen(r->rows[i].labels);
		lw = fmax(lw, 7.0 * (double)(n + 2) + 12);
	}
	lw = fmin(lw, 420);
	width = fmax(lw + CMP_NQ * cw + 10, 480);	/* the legend's width at least */
	height = top + rh * (double)r->nrows + 102;	/* the legend's 3 lines below */
	sbuf_puts(s, "<section id=\"heatmap\"><h2>Ratios B/A</h2><div class=\"scroll\">");
	sbuf_printf(s, "<svg class=\"cmp heat\" xmlns=\"http://www.w3.org/2000/svg\" "
		    "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" role=\"img\" data-rows=\"%zu\">"
		    "<title>Ratio B/A of each quantile, per layer, stage and label set</title>",
		    width, height, width, r->nrows);
	for (k = 0; k < CMP_NQ; k++)
		sbuf_printf(s, "<text x=\"%.1f\" y=\"18\" text-anchor=\"middle\" "
			    "font-weight=\"600\">%s</text>", lw + cw * (k + 0.5), cmp_q_name[k]);
	for (i = 0; i < r->nrows; i++) {
		double y = top + rh * (double)i;

		sbuf_printf(s, "<text class=\"rl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
			    lw - 8, y + rh / 2 + 4);
		heat_label(&r->rows[i], (int)((lw - 8 - 4) / HEAT_COL_PX), s);
		sbuf_puts(s, "</text>");
		for (k = 0; k < CMP_NQ; k++)
			heat_cell(&r->rows[i], k, lw + cw * k, y, cw - 2, rh - 2, s);
	}
	heat_legend(r, 10, top + rh * (double)r->nrows + 16, s);
	sbuf_puts(s, "</svg></div></section>\n");
}

/* ---- a row's CDFs ---- */

struct cdf_geom {
	double x0, x1, y0, y1;		/* the plot area */
	double llo, lhi;		/* log10 of the latency range */
};

static double cdf_x(const struct cdf_geom *g, double ns)
{
	return g->x0 + (g->x1 - g->x0) * (log10(fmax(ns, 1)) - g->llo) / (g->lhi - g->llo);
}

/* The tail axis: F at -log10(1 - F), 0 (F = 0) at the bottom, 99.99 % at the top. */
static double cdf_y(const struct cdf_geom *g, double f)
{
	double u = f >= 1 ? TAIL_MAX : fmin(-log10(1 - f), TAIL_MAX);

	return g->y1 - (g->y1 - g->y0) * u / TAIL_MAX;
}

/* The side's CDF through each bucket's upper edge (cut to the exact max). */
static void cdf_line(const struct cdf_geom *g, const struct cmp_dist *h, const char *cls,
		     struct sbuf *s)
{
	uint64_t cum = 0;
	uint32_t k, i;
	double x;

	if (!h->count)
		return;
	sbuf_printf(s, "<polyline class=\"%s\" points=\"%.1f,%.1f", cls, cdf_x(g, h->min_ns),
		    cdf_y(g, 0));
	for (k = 0; k < h->n; k++) {
		i = h->slot[k];
		cum += h->cnt[k];
		x = i >= HIST_OVERFLOW ? (double)h->max_ns :
			fmin((double)hist_hi(i), (double)h->max_ns);
		sbuf_printf(s, " %.1f,%.1f", cdf_x(g, x), cdf_y(g, (double)cum / h->count));
	}
	sbuf_puts(s, "\"/>");
}

/* ---- the latency axis's ticks ---- */

/* Grid lines at every tick; a label on every stride-th from off when all of them crowd. */
struct xticks {
	int n, stride, off;
	uint64_t v[XTICKS_MAX];
	char label[XTICKS_MAX][24];
	double x[XTICKS_MAX];		/* the tick's line */
	double tx[XTICKS_MAX];		/* its label's centre: kept inside the panel */
};

static bool in_range(const struct cdf_geom *g, uint64_t v)
{
	double l = log10((double)v);

	return l >= g->llo - 1e-9 && l <= g->lhi + 1e-9;
}

static bool labelled(const struct xticks *t, int i)
{
	return i >= t->off && (i - t->off) % t->stride == 0;
}

/* v as the next tick; false when there is no room for it. */
static bool xticks_add(struct xticks *t, uint64_t v)
{
	if (t->n == XTICKS_MAX)
		return false;
	t->v[t->n++] = v;
	return true;
}

/* The first nm of mult (1, 2, 5) times every power of ten in the range. */
static bool xticks_log(const struct cdf_geom *g, const uint64_t *mult, int nm, struct xticks *t)
{
	uint64_t dec;
	int m;

	t->n = 0;
	for (dec = 1; dec <= 100000000000ULL; dec *= 10)
		for (m = 0; m < nm; m++)
			if (in_range(g, dec * mult[m]) && !xticks_add(t, dec * mult[m]))
				return false;
	return true;
}

/* Every multiple of step in the range: a linear scale, for a range too narrow for 1-2-5. */
static bool xticks_linear(const struct cdf_geom *g, uint64_t step, struct xticks *t)
{
	/* from a hair below the range: pow() gives its low end back a hair above or below */
	uint64_t v = (uint64_t)ceil(pow(10, g->llo) / (double)step - 1e-6) * step;

	t->n = 0;
	for (; log10((double)v) <= g->lhi + 1e-9; v += step)
		if (in_range(g, v) && !xticks_add(t, v))
			return false;
	return true;
}

/* A label's width in 12px sans-serif at its widest (DejaVu Sans): "m" 11.7px, every other
 * character of ours (digits, ".", "n", "u", "s") 7.6px at most. */
static double label_px(const char *s)
{
	double w = 0;

	for (; *s; s++)
		w += *s == 'm' ? 11.7 : 7.6;
	return w;
}

/* Labels on every stride-th tick from off: at least XTICKS_MIN, none overlapping another. */
static bool xticks_labels_fit(const struct cdf_geom *g, struct xticks *t)
{
	double w, prev_right = -1e9;
	int i, n = 0;

	for (i = 0; i < t->n; i++) {
		t->x[i] = cdf_x(g, (double)t->v[i]);
		if (!labelled(t, i))
			continue;
		report_tick_label(t->label[i], sizeof(t->label[i]), t->v[i]);
		w = label_px(t->label[i]);
		t->tx[i] = fmin(t->x[i], CDF_W - w / 2);	/* a label at the right edge */
		if (t->tx[i] - w / 2 < prev_right + LABEL_GAP_PX)
			return false;
		prev_right = t->tx[i] + w / 2;
		n++;
	}
	return n >= XTICKS_MIN;
}

/* Every tick labelled if they fit, else every other one, every third, ...: true if some do. */
static bool xticks_fit(const struct cdf_geom *g, struct xticks *t, int max_stride)
{
	for (t->stride = 1; t->stride <= max_stride; t->stride++)
		for (t->off = 0; t->off < t->stride; t->off++)
			if (xticks_labels_fit(g, t))
				return true;
	return false;
}

/* The largest 1-2-5 step with XTICKS_MIN multiples in the range, if enough labels fit. */
static bool xticks_step(const struct cdf_geom *g, struct xticks *t)
{
	static const uint64_t down[] = { 5, 2, 1 };
	double span = pow(10, g->lhi) - pow(10, g->llo);
	uint64_t dec;
	int m;

	for (dec = 100000000000ULL; dec; dec /= 10)
		for (m = 0; m < 3; m++) {
			if ((double)(dec * down[m]) > span)
				continue;
			if (!xticks_linear(g, dec * down[m], t))
				return false;
			if (t->n >= XTICKS_MIN)		/* a smaller step only crowds them more */
				return xticks_fit(g, t, 3);
		}
	return false;
}

/*
 * The latency axis's ticks, the first set whose labels fit: decades over a wide range (labels
 * on every other one, ... when they crowd), 1, 2 and 5 times them over a range of less than
 * two decades, and over a range with fewer than three of those (1.0 to 1.2 ms) the multiples
 * of the largest 1-2-5 step that gives three (1.0, 1.1, 1.2 ms). cdf_panel makes the range at
 * least a tenth of a decade and 2 ns wide, so that the last always has labels that fit at this
 * panel's width (tests/test_compare.py sweeps ranges from 1 ns to 68 s).
 */
static void xticks_choose(const struct cdf_geom *g, struct xticks *t)
{
	static const uint64_t ladder[] = { 1, 2, 5 };

	if (g->lhi - g->llo >= 2 && xticks_log(g, ladder, 1, t) && xticks_fit(g, t, 4))
		return;
	if ((xticks_log(g, ladder, 3, t) && xticks_fit(g, t, 1)) ||
	    (xticks_log(g, ladder, 1, t) && xticks_fit(g, t, 1)) || xticks_step(g, t))
		return;
	t->n = 0;	/* not reached: no labels rather than a jumble */
}

static void cdf_axes(const struct cdf_geom *g, struct sbuf *s)
{
	static const double pct[] = { 0, 0.5, 0.9, 0.99, 0.999, 0.9999 };
	static const char *const pname[] = { "0", "50%", "90%", "99%", "99.9%", "99.99%" };
	struct xticks t;
	unsigned int i;
	double y;
	int k;

	for (i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		y = cdf_y(g, pct[i]);
		sbuf_printf(s, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
			    "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s"
			    "</text>", g->x0, g->x1, y, y, g->x0 - 5, y + 4, pname[i]);
	}
	xticks_choose(g, &t);
	for (k = 0; k < t.n; k++) {
		sbuf_printf(s, "<g class=\"xtick\" data-ns=\"%" PRIu64 "\"><line class=\"grid\" "
			    "x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", t.v[k], t.x[k],
			    t.x[k], g->y0, g->y1);
		if (labelled(&t, k))
			sbuf_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s"
				    "</text>", t.tx[k], g->y1 + 16, t.label[k]);
		sbuf_puts(s, "</g>");
	}
	sbuf_printf(s, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		    "height=\"%.1f\"/>", g->x0, g->y0, g->x1 - g->x0, g->y1 - g->y0);
}

/*
 * The panel's title (layer, stage, labels) in its 12px bold sans-serif, measured from above:
 * 8 px a column (a wide character two). It wraps at spaces (a word longer than a line at a
 * character) into lines across the panel, at most TITLE_LINES, the last cut with an ellipsis
 * (the <title> tooltip and the tables above have it whole). The A/B legend sits on the first
 * line when that one ends before it, else on a line of its own below the title.
 */
#define TITLE_X		58
#define TITLE_COL_PX	8
#define TITLE_COLS	((CDF_W - TITLE_X - 4) / TITLE_COL_PX)
#define TITLE_LINES	3
#define LINE_PX		16
#define LEGEND_X	340

struct tline {
	size_t at, len;
};

/* t's lines (at most TITLE_LINES) in ln; their number. *cut: some of t did not fit. */
static int title_wrap(const char *t, struct tline *ln, bool *cut, int *first_cols)
{
	size_t i = 0, n = strlen(t), line = 0, space = 0, slash = 0, last = 0;
	int nl = 0, cols = 0, w, step;

	*cut = false;
	*first_cols = 0;
	while (i < n) {
		step = utf8_char(t + i, &w);
		if (t[i] == ' ')
			space = i;
		if (cols + w <= TITLE_COLS) {
			cols += w;
			last = i;
			i += (size_t)step;
			if (t[i - 1] == '/' && i - 1 > line)
				slash = i;	/* a cgroup path: after a '/' */
			continue;
		}
		if (nl == TITLE_LINES - 1) {
			*cut = true;
			if (cols + 1 > TITLE_COLS && last > line)
				i = last;	/* room for the ellipsis */
			break;
		}
		/* break at the line's last space, else after its last '/', else here */
		ln[nl].at = line;
		ln[nl].len = (space > line ? space : slash > line ? slash : i) - line;
		if (!nl++)
			*first_cols = cols;
		line = space > line ? space + 1 : slash > line ? slash : i;
		i = line;
		cols = 0;
		space = slash = 0;
	}
	ln[nl].at = line;
	ln[nl].len = (*cut ? i : n) - line;
	if (!nl++)
		*first_cols = cols;
	return nl;
}

/* The title's lines, as <text class="ttl">; the legend's line (its baseline - 4) out. */
static int cdf_title(const struct cmp_row *row, struct sbuf *s)
{
	struct sbuf t = { 0 };
	struct tline ln[TITLE_LINES];
	int nl, k, first;
	bool cut;

	sbuf_printf(&t, "%s %s %s", row->layer, row->stage, row->labels);
	if (!t.p) {
		s->oom = true;	/* the page is not written without it: one error line */
		return 0;
	}
	nl = title_wrap(t.p, ln, &cut, &first);
	sbuf_printf(s, "<text class=\"ttl\" x=\"%d\" y=\"18\" font-weight=\"600\">", TITLE_X);
	for (k = 0; k < nl; k++) {
		char save = t.p[ln[k].at + ln[k].len];

		t.p[ln[k].at + ln[k].len] = '\0';
		sbuf_printf(s, "<tspan x=\"%d\" y=\"%d\">", TITLE_X, 18 + k * LINE_PX);
		esc(s, t.p + ln[k].at);
		sbuf_puts(s, k == nl - 1 && cut ? "\xe2\x80\xa6</tspan>" : "</tspan>");
		t.p[ln[k].at + ln[k].len] = save;
	}
	sbuf_puts(s, "</text>");
	sbuf_free(&t);
	if (nl == 1 && TITLE_X + first * TITLE_COL_PX <= LEGEND_X - 8)
		return 0;
	return nl * LINE_PX;
}

static void cdf_panel(const struct cmp_row *row, struct sbuf *s)
{
	struct sbuf title = { 0 };
	int shift = cdf_title(row, &title), ly = 14 + shift;
	struct cdf_geom g = { .x0 = 58, .x1 = 450, .y0 = 30 + shift, .y1 = 210 + shift };
	double lo = (double)row->a.h.min_ns, hi = (double)row->a.h.max_ns;

	if (row->b.h.count) {
		lo = row->a.h.count ? fmin(lo, (double)row->b.h.min_ns) : (double)row->b.h.min_ns;
		hi = fmax(hi, (double)row->b.h.max_ns);
	}
	lo = fmax(lo, 1);
	hi = fmax(hi, 1);
	if (hi - lo < 2) {	/* a few ns: three whole ns to label */
		hi = fmax(ceil(hi), floor(lo) + 2);
		lo = floor(lo);
	}
	g.llo = log10(lo);
	g.lhi = log10(hi);
	if (g.lhi - g.llo < 0.1) {	/* a narrow peak: a tenth of a decade around it */
		g.llo -= 0.05;
		g.lhi += 0.05;
	}
	/* the axis's range in ns, for whoever checks the ticks */
	sbuf_printf(s, "<div><svg class=\"cmp cdf\" xmlns=\"http://www.w3.org/2000/svg\" "
		    "viewBox=\"0 0 %d %d\" width=\"%d\" role=\"img\" data-x-lo=\"%.6g\" "
		    "data-x-hi=\"%.6g\" data-layer=\"", CDF_W, 240 + shift, CDF_W,
		    pow(10, g.llo), pow(10, g.lhi));
	esc(s, row->layer);
	sbuf_puts(s, "\" data-stage=\"");
	esc(s, row->stage);
	sbuf_puts(s, "\" data-labels=\"");
	esc(s, row->labels);
	sbuf_puts(s, "\"><title>CDFs of A and B: ");
	row_name(s, row);
	sbuf_puts(s, "</title>");
	sbuf_puts(s, title.p ? title.p : "");
	if (title.oom)
		s->oom = true;	/* the page is not written without it: one error line */
	sbuf_free(&title);
	cdf_axes(&g, s);
	cdf_line(&g, &row->a.h, "a", s);
	cdf_line(&g, &row->b.h, "b", s);
	sbuf_printf(s, "<g class=\"legend\"><line class=\"a\" x1=\"%d\" x2=\"%d\" y1=\"%d\" "
		    "y2=\"%d\"/><text x=\"%d\" y=\"%d\">A</text><line class=\"b\" x1=\"%d\" "
		    "x2=\"%d\" y1=\"%d\" y2=\"%d\"/><text x=\"%d\" y=\"%d\">B</text></g>",
		    LEGEND_X, LEGEND_X + 26, ly, ly, LEGEND_X + 30, ly + 4, LEGEND_X + 52,
		    LEGEND_X + 78, ly, ly, LEGEND_X + 82, ly + 4);
	sbuf_puts(s, "</svg></div>");
}

static void cdfs(const struct cmp_result *r, struct sbuf *s, int *drawn)
{
	int compared, k;
	size_t i, left = 0;

	sbuf_puts(s, "<section id=\"cdfs\"><h2>CDFs</h2><p class=\"help\">The share of I/O at or "
		  "below each latency, A solid, B dashed; the vertical axis stretches the tail "
		  "so that 50, 90, 99 and 99.9 % are evenly spaced. Rows with a quantile "
		  "compared, in the table's order.</p><div class=\"cdfs\">");
	for (i = 0; i < r->nrows; i++) {
		for (k = 0, compared = 0; k < CMP_NQ; k++)
			compared += r->rows[i].c[k].v != CMP_NOT_ENOUGH;
		if (!compared)
			continue;
		if (*drawn == MAX_CDFS) {
			left++;
			continue;
		}
		cdf_panel(&r->rows[i], s);
		(*drawn)++;
	}
	sbuf_puts(s, "</div>");
	if (left)
		sbuf_printf(s, "<p class=\"note\">%zu more rows with a quantile compared are not "
			    "drawn (at most %d); -j has them all.</p>", left, MAX_CDFS);
	sbuf_puts(s, "</section>\n");
}

int cmp_write_html(const struct cmp_result *r, const char *a_name, const char *b_name,
		   const char *path, bool force)
{
	struct sbuf s = { 0 };
	int drawn = 0, err;

	sbuf_puts(&s, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
		  "<meta name=\"generator\" content=\"iostrata compare\"><title>I/O latency: ");
	esc(&s, a_name);
	sbuf_puts(&s, " vs ");
	esc(&s, b_name);
	sbuf_printf(&s, "</title><style>%s%s</style></head><body>\n", report_css, cmp_css);
	header(r, a_name, b_name, &s);
	sbuf_puts(&s, "<nav><a href=\"#changes\">Changes</a><a href=\"#heatmap\">Ratios</a>"
		  "<a href=\"#cdfs\">CDFs</a></nav>\n");
	changes_table(r, &s);
	heatmap(r, &s);
	cdfs(r, &s, &drawn);
	sbuf_printf(&s, "<footer><p>Made by <code>iostrata compare</code>: one file, nothing "
		    "fetched; every number from the recordings.</p></footer>\n"
		    "<script>document.documentElement.setAttribute('data-rendered',"
		    "String(document.querySelectorAll('svg.cmp').length));</script>\n"
		    "<!-- iostrata-svgs %d -->\n</body></html>\n", drawn + 1);
	err = report_write_file(path, force, &s);
	sbuf_free(&s);
	return err;
}
