// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A latency heatmap as SVG: x = interval time (UTC), y = rows of whole buckets of bpf/hist.h,
 * colour = count (log or sqrt scale, viridis computed here), empty cells hatched (blank where
 * no recording covers the time); p50, p99
 * and max lines over it; a <title> on every cell (time, bucket range, count, share of the
 * column) and its range and count as data attributes (data-lo, data-hi, data-n).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report_int.h"
#include "utf8.h"

struct geom {
	double w, h, x0, x1, y0, y1;	/* the plot area: x0..x1, y0 (top)..y1 (bottom) */
	double cw, rh;			/* cell width, row height */
};

/*
 * A panel title's width, from above: its bold 12px sans-serif takes at most this much a column
 * (a wide character two; measured in Chromium, "kubepods.slice/" bold is 7.4 px a character),
 * the count beside it in regular weight this much a character.
 */
#define TITLE_COL_PX	8.0
#define COUNT_CHAR_PX	7.0

/*
 * what in buf, cut where it does not fit in room columns, leaving one for the ellipsis the
 * caller adds; true when cut. Cut between UTF-8 sequences, never inside one.
 */
static bool title_fit(const char *what, double room, char *buf, size_t len)
{
	int max = room > 8 ? (int)room : 8, cols = 0, w, n;
	size_t i = 0, fits = 0;

	while (what[i]) {
		n = utf8_char(what + i, &w);
		if (cols + w > max)
			break;
		cols += w;
		i += (size_t)n;
		if (cols + 1 <= max)	/* room for the ellipsis after it */
			fits = i;
	}
	if (!what[i]) {
		snprintf(buf, len, "%s", what);
		return false;
	}
	snprintf(buf, len, "%.*s", (int)fits, what);
	return true;
}

static void geometry(const struct panel *p, struct geom *g)
{
	g->w = p->small ? 480 : 960;
	g->x0 = p->small ? 58 : 66;
	g->x1 = g->w - 10;
	g->y0 = 26;
	g->y1 = g->y0 + (p->small ? 150 : 300);
	/* a big panel's legend has a second line: its colour note (legend()) */
	g->h = g->y1 + (p->small ? 52 : 70);
	g->cw = (g->x1 - g->x0) / p->cols;
	g->rh = (g->y1 - g->y0) / p->nrows;
}

/* viridis, a polynomial fit (t in 0..1): perceptually uniform and colour-blind safe. */
unsigned int report_viridis(double t)
{
	static const double c[7][3] = {
		{ 0.2777273272234177, 0.005407344544966578, 0.3340998053353061 },
		{ 0.1050930431085774, 1.404613529898575, 1.384590162594685 },
		{ -0.3308618287255563, 0.214847559468213, 0.09509516302823659 },
		{ -4.634230498983486, -5.799100973351585, -19.33244095627987 },
		{ 6.228269936347081, 14.17993336680509, 56.69055260068105 },
		{ 4.776384997670288, -13.74514537774601, -65.35303263337234 },
		{ -5.435455855934631, 4.645852612178535, 26.3124352495832 },
	};
	unsigned int rgb = 0;
	int ch, k;

	for (ch = 0; ch < 3; ch++) {
		double v = c[6][ch];

		for (k = 5; k >= 0; k--)
			v = v * t + c[k][ch];
		v = v < 0 ? 0 : v > 1 ? 1 : v;
		rgb = rgb << 8 | (unsigned int)lround(v * 255);
	}
	return rgb;
}

/* The colour of a cell of n I/Os where the panel's fullest cell has max. */
static double scale_t(bool sqrt_scale, uint64_t n, uint64_t max)
{
	if (max <= 1)
		return 1;
	return sqrt_scale ? sqrt((double)n / (double)max) : log1p((double)n) / log1p((double)max);
}

/* A count of column c as if the column held as many intervals as the fullest one. */
static uint64_t col_scaled(const struct panel *p, int c, uint64_t n)
{
	uint32_t k = p->colivs[c];

	if (!k || k == p->colivs_max)
		return n;
	return (uint64_t)llround((double)n * p->colivs_max / k);
}

static unsigned int cell_colour(bool sqrt_scale, uint64_t n, uint64_t max)
{
	/* from t = 0.12: the darkest purple would be too close to a dark page */
	return report_viridis(0.12 + 0.88 * scale_t(sqrt_scale, n, max));
}

/* y of a latency: its row, and where in the row, linearly. */
static double value_y(const struct panel *p, const struct geom *g, uint64_t v)
{
	int k = report_row_key(hist_index(v), p->rpo) - p->key0;
	double frac = 0.5;

	if (k < 0)
		return g->y1;
	if (k >= p->nrows)
		return g->y0;
	if (p->rowhi[k] != UINT64_MAX && p->rowhi[k] > p->rowlo[k])
		frac = (double)(v - p->rowlo[k]) / (double)(p->rowhi[k] - p->rowlo[k]);
	return g->y1 - (k + frac) * g->rh;
}

static void range_text(char *buf, size_t len, uint64_t lo, uint64_t hi)
{
	char a[24], b[24];

	fmt_ns(a, sizeof(a), lo, false);
	if (hi == UINT64_MAX) {
		snprintf(buf, len, "&gt;=%s", a);
		return;
	}
	fmt_ns(b, sizeof(b), hi, false);
	snprintf(buf, len, "%s-%s", a, b);
}

/* A coordinate: one decimal, none when it is whole. */
static void num(char *buf, size_t len, double v)
{
	long t = lround(v * 10);

	if (t < -100000000 || t > 100000000)	/* no coordinate of ours comes near */
		t = 0;
	if (t % 10)
		snprintf(buf, len, "%ld.%ld", t / 10, labs(t % 10));
	else
		snprintf(buf, len, "%ld", t / 10);
}

char *report_tick_label(char *buf, size_t len, uint64_t v)
{
	static const char *const units[] = { "ns", "us", "ms", "s" };
	uint64_t div = 1;
	char frac[16];
	int u = 0, n;

	while (u < 3 && v / div >= 1000) {
		div *= 1000;
		u++;
	}
	if (v % div == 0) {
		snprintf(buf, len, "%" PRIu64 "%s", v / div, units[u]);
		return buf;
	}
	n = snprintf(frac, sizeof(frac), "%0*" PRIu64, 3 * u, v % div);
	while (n > 0 && frac[n - 1] == '0')	/* 1.050 -> 1.05 */
		frac[--n] = '\0';
	snprintf(buf, len, "%" PRIu64 ".%s%s", v / div, frac, units[u]);
	return buf;
}

/*
 * The top of the rows a tick can be placed in: hi, or with the open-ended row on top (hi
 * UINT64_MAX) its bound, since every value above it is drawn in that one row (a tick there
 * would say where 100 s and 500 s lie: on one line).
 */
static uint64_t ticks_top(uint64_t hi)
{
	return hi == UINT64_MAX ? hist_lo(HIST_OVERFLOW) : hi;
}

/* v within the panel's latency range [lo, hi), below the open-ended row */
static bool in_rows(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v < ticks_top(hi);
}

#define YTICKS_MAX 40

/*
 * The latency axis's ticks: decades (1 us, 10 us, ...); over fewer than three of them, 1, 2 and
 * 5 times them; over a range with fewer than two of those (2.1 to 8.4 ms: 5 ms alone), the
 * multiples of the largest 1-2-5 step that gives three (4, 6, 8 ms). A panel spans at least
 * two octaves (panel_bin), so three such multiples always exist.
 */
static int y_ticks(uint64_t lo, uint64_t hi, uint64_t *v)
{
	static const uint64_t mult[] = { 1, 2, 5 }, down[] = { 5, 2, 1 };
	uint64_t dec, step, top = ticks_top(hi), x;
	int n = 0, nm, m;

	for (nm = 1; nm <= 3; nm += 2) {
		n = 0;
		for (dec = 1; dec <= 100000000000ULL; dec *= 10)
			for (m = 0; m < nm; m++)
				if (in_rows(dec * mult[m], lo, hi) && n < YTICKS_MAX)
					v[n++] = dec * mult[m];
		if (n >= (nm == 1 ? 3 : 2))
			return n;
	}
	for (dec = 100000000000ULL; dec; dec /= 10)
		for (m = 0; m < 3; m++) {
			step = dec * down[m];
			if (step >= top)
				continue;
			n = 0;
			for (x = (lo + step - 1) / step * step; x < top && n < YTICKS_MAX; x += step)
				v[n++] = x;
			if (n >= 3)
				return n;
		}
	return n;
}

static void y_tick(const struct geom *g, double y, uint64_t v, const char *label,
		   struct sbuf *b)
{
	sbuf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
		  "class=\"grid\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
		  "data-ns=\"%" PRIu64 "\">%s</text>", g->x0 - 4, g->x0, y, y, g->x0 - 6, y + 4, v,
		  label);
}

/* The ticks; with the open-ended row on top, its own label (>=68.7s) there, ticks too near it
 * left out. */
static void y_axis(const struct panel *p, const struct geom *g, struct sbuf *b)
{
	uint64_t v[YTICKS_MAX], bound = hist_lo(HIST_OVERFLOW);
	bool open = p->rowhi[p->nrows - 1] == UINT64_MAX;
	int i, n = y_ticks(p->rowlo[0], p->rowhi[p->nrows - 1], v);
	double top = open ? value_y(p, g, bound) : 0, y;
	char t[32], f[24];

	for (i = 0; i < n; i++) {
		y = value_y(p, g, v[i]);
		if (!open || y - top >= 12)
			y_tick(g, y, v[i], report_tick_label(t, sizeof(t), v[i]), b);
	}
	if (open) {
		snprintf(t, sizeof(t), "&#8805;%s", fmt_ns(f, sizeof(f), bound, false));
		y_tick(g, top, bound, t, b);
	}
}

static const uint64_t steps_s[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600,
				     7200, 10800, 21600, 43200, 86400 };

static void x_axis(const struct report *r, const struct panel *p, const struct geom *g,
		   struct sbuf *b)
{
	uint64_t span = r->t1 > r->t0 ? r->t1 - r->t0 : 1, step = 0, t;
	int max_ticks = p->small ? 4 : 8;
	size_t i;
	char lab[24];

	for (i = 0; i < sizeof(steps_s) / sizeof(steps_s[0]); i++) {
		step = steps_s[i] * 1000000000ULL;
		if (span / step < (uint64_t)max_ticks)
			break;
	}
	if (span / step >= (uint64_t)max_ticks)	/* months or years: whole days apart */
		step = (span / (uint64_t)max_ticks / (86400ULL * 1000000000ULL) + 1) *
		       86400ULL * 1000000000ULL;
	for (t = (r->t0 + step - 1) / step * step; t <= r->t1; t += step) {
		double x = g->x0 + (double)(t - r->t0) / (double)span * (g->x1 - g->x0), tx = x;
		const char *anchor = "middle";

		fmt_clock(lab, sizeof(lab), t, step < 60000000000ULL);
		/* a label at the right edge ends there rather than past the picture (digits of
		 * 13px sans-serif are 8.3px wide at most) */
		if (x + (double)strlen(lab) * 8.3 / 2 > g->w - 2) {
			tx = g->w - 2;
			anchor = "end";
		}
		sbuf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
			  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>", x, x,
			  g->y1, g->y1 + 4, tx, g->y1 + 16, anchor, lab);
	}
}

/*
 * A percentile (or the max) per column as a line, broken where a column is empty or its
 * percentile is not known (in the open-ended bucket, bounded below only).
 */
static void pct_line(const struct panel *p, const struct geom *g, uint32_t ppm,
		     const char *cls, struct sbuf *b)
{
	bool open = false;
	uint64_t v;
	int c;

	sbuf_printf(b, "<path class=\"%s\" d=\"", cls);
	for (c = 0; c < p->cols; c++) {
		const struct hist *h = &p->colh[c];

		if (!h->count || (ppm && !hist_percentile(h, ppm, &v))) {
			open = false;
			continue;
		}
		if (!ppm)
			v = p->colmax[c];
		if (open)	/* a step: up or down at the column's edge, then across it */
			sbuf_printf(b, "V%.1f", value_y(p, g, v));
		else
			sbuf_printf(b, "M%.1f %.1f", g->x0 + c * g->cw, value_y(p, g, v));
		sbuf_printf(b, "H%.1f", g->x0 + (c + 1) * g->cw);
		open = true;
	}
	sbuf_puts(b, "\"/>");
}

/*
 * Columns no interval covers, as true in a new array (NULL: out of memory): the time between
 * recordings given together, in which nothing was recorded, is not a time of no I/O. A column
 * an interval overlaps at all is covered, and so is the one its counts are drawn in.
 */
static bool *uncovered_cols(const struct report *r, const struct panel *p)
{
	uint64_t span = r->t1 > r->t0 ? r->t1 - r->t0 : 1, s, e;
	bool *unc = malloc((size_t)p->cols * sizeof(*unc));
	unsigned int cols = (unsigned int)p->cols;
	size_t i, c, lo, hi;

	if (!unc)
		return NULL;
	for (c = 0; c < cols; c++)
		unc[c] = true;
	for (i = 0; i < r->nivs; i++) {
		const struct interval_info *ii = &r->ivs[i];

		e = ii->ts_ns < r->t0 ? r->t0 : ii->ts_ns > r->t1 ? r->t1 : ii->ts_ns;
		s = ii->ts_ns - (ii->interval_ns < ii->ts_ns ? ii->interval_ns : ii->ts_ns);
		s = s < r->t0 ? r->t0 : s > e ? e : s;
		lo = (size_t)((unsigned __int128)(s - r->t0) * cols / span);
		hi = (size_t)(((unsigned __int128)(e - r->t0) * cols + span - 1) / span);
		for (c = lo; c < hi && c < cols; c++)
			unc[c] = false;
		unc[report_column(r, i, p->cols)] = false;
	}
	return unc;
}

/* Runs of columns no recording covers: blank, not hatched, and said so. */
static void not_recorded(const struct report *r, const struct panel *p, const struct geom *g,
			 struct sbuf *b)
{
	bool *unc = uncovered_cols(r, p);
	uint64_t span = r->t1 - r->t0;
	char t0[16], t1[16];
	int c, e;

	for (c = 0; unc && c < p->cols; c = e) {
		e = c + 1;
		if (!unc[c])
			continue;
		for (; e < p->cols && unc[e]; e++)
			;
		fmt_clock(t0, sizeof(t0), r->t0 + (uint64_t)((double)span * c / p->cols), true);
		fmt_clock(t1, sizeof(t1), r->t0 + (uint64_t)((double)span * e / p->cols), true);
		sbuf_printf(b, "<rect class=\"unrec\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			  "height=\"%.1f\"><title>%s-%s UTC: not recorded (no recording covers this "
			  "time)</title></rect>", g->x0 + c * g->cw, g->y0, (e - c) * g->cw,
			  g->y1 - g->y0, t0, t1);
		if ((e - c) * g->cw >= 96)
			sbuf_printf(b, "<text class=\"unrec-t\" x=\"%.1f\" y=\"%.1f\" "
				  "text-anchor=\"middle\">not recorded</text>",
				  g->x0 + (c + e) * g->cw / 2, (g->y0 + g->y1) / 2 + 4);
	}
	free(unc);
}

/* Columns holding different numbers of intervals: colours are counts scaled (col_scaled). */
static bool uneven_cols(const struct panel *p)
{
	int c;

	for (c = 0; c < p->cols; c++)
		if (p->colivs[c] && p->colivs[c] != p->colivs_max)
			return true;
	return false;
}

static void legend(const struct report *r, const struct panel *p, const struct geom *g,
		   uint64_t max, struct sbuf *b)
{
	double x = g->x0, y = g->y1 + 30;
	int i, steps = p->small ? 4 : 6;
	uint64_t n, last = 0;

	sbuf_printf(b, "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
		  "fill=\"url(#e-%s)\"/><text x=\"%.1f\" y=\"%.1f\">0</text>",
		  x, y, p->id, x + 15, y + 10);
	x += 32;
	for (i = 0; i < steps && max; i++) {
		double t = (double)i / (steps - 1);

		/* the count at this point of the scale */
		n = r->o.sqrt_scale ? (uint64_t)llround(t * t * (double)max) :
				       (uint64_t)llround(expm1(t * log1p((double)max)));
		if (n < 1)
			n = 1;
		if (n <= last)
			continue;
		last = n;
		sbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"#%06x\"/>"
			  "<text x=\"%.1f\" y=\"%.1f\">%" PRIu64 "</text>", x, y,
			  cell_colour(r->o.sqrt_scale, n, max), x + 15, y + 10, n);
		x += 24 + 8.0 * (double)snprintf(NULL, 0, "%" PRIu64, n);
	}
	x += 8;
	sbuf_printf(b, "<path class=\"p50\" d=\"M%.1f %.1fh18\"/><text x=\"%.1f\" y=\"%.1f\">p50</text>"
		  "<path class=\"p99\" d=\"M%.1f %.1fh18\"/><text x=\"%.1f\" y=\"%.1f\">p99</text>"
		  "<path class=\"max\" d=\"M%.1f %.1fh18\"/><text x=\"%.1f\" y=\"%.1f\">max</text>",
		  x, y + 6, x + 22, y + 10, x + 56, y + 6, x + 78, y + 10, x + 112, y + 6,
		  x + 134, y + 10);
	/* on a line of its own: beside the keys, a wide count scale ran into it */
	if (!p->small)
		sbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">colour: %s of the "
			  "count%s; %d rows per octave</text>", g->x1, y + 28,
			  r->o.sqrt_scale ? "sqrt" : "log", uneven_cols(p) ?
			  " (per column of as many intervals)" : "", p->rpo);
	sbuf_puts(b, "</g>");
}

const char svg_rules[] =
	"svg.heatmap text{font:13px sans-serif;fill:currentColor}"
	"svg.heatmap.small text{font:12px sans-serif}"
	"svg.heatmap .grid{stroke:currentColor;stroke-opacity:.4}"
	"svg.heatmap .frame{stroke:currentColor;stroke-opacity:.35;fill:none}"
	"svg.heatmap .p50,svg.heatmap .p99,svg.heatmap .max{fill:none;stroke:#f0027f;"
	"stroke-width:1.6}"
	"svg.heatmap .p99{stroke-dasharray:5 3}"
	"svg.heatmap .max{stroke-dasharray:1.5 2.5;stroke-width:2}"
	"svg.heatmap .halo{fill:none;stroke:var(--halo,#fff);stroke-opacity:.75;stroke-width:3.6}"
	"svg.heatmap .drop{fill:#d7301f}"
	"svg.heatmap .unrec{fill:var(--bg,#fff);stroke:currentColor;stroke-opacity:.35}"
	"svg.heatmap text.unrec-t{font-style:italic;fill-opacity:.7}";

static void svg_style(struct sbuf *b)
{
	sbuf_puts(b, "<style>");
	sbuf_puts(b, svg_rules);
	sbuf_puts(b, "</style>");
}

void svg_heatmap(const struct report *r, const struct panel *p, bool standalone,
		 struct sbuf *b)
{
	struct geom g;
	uint64_t max = 0, n, *drops;
	char when[48], t0[16], t1[16], what[REC_LABELS_LEN + 64], shown[sizeof(what)], count[64],
	     x[24], w[24], h[24], (*rows)[48], (*ys)[24];
	int c, k;
	size_t i;
	bool cut;

	geometry(p, &g);
	for (c = 0; c < p->cols; c++)
		for (k = 0; k < p->nrows; k++) {
			n = col_scaled(p, c, p->grid[(size_t)c * (size_t)p->nrows + (size_t)k]);
			if (n > max)
				max = n;
		}
	if (standalone)
		sbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	snprintf(what, sizeof(what), "%s %s [%s]", p->layer, p->stage, p->labels);
	sbuf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap%s\" "
		  "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" "
		  "data-layer=\"", p->small ? " small" : "", g.w, g.h, g.w, g.h);
	sbuf_esc(b, p->layer);
	sbuf_puts(b, "\" data-stage=\"");
	sbuf_esc(b, p->stage);
	sbuf_puts(b, "\" data-labels=\"");
	sbuf_esc(b, p->labels);
	sbuf_printf(b, "\" data-count=\"%" PRIu64 "\" id=\"svg-%s\"><title>", p->count, p->id);
	sbuf_esc(b, what);
	sbuf_puts(b, " latency heatmap</title>");
	if (standalone)	/* in the page, its stylesheet has these rules */
		svg_style(b);
	sbuf_printf(b, "<defs><pattern id=\"e-%s\" width=\"6\" height=\"6\" "
		   "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
		   "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#888\" stroke-opacity=\".35\" "
		   "stroke-width=\"2\"/></pattern></defs>", p->id);
	if (p->unmeasured)
		snprintf(count, sizeof(count), "%" PRIu64 " I/O, %" PRIu64 " unmeasured", p->count,
			 p->unmeasured);
	else
		snprintf(count, sizeof(count), "%" PRIu64 " I/O", p->count);
	/* the title beside the count: a long label set (a cgroup path) is cut to fit, whole in
	 * the title's tooltip */
	sbuf_printf(b, "<text x=\"%.1f\" y=\"16\" style=\"font-weight:bold\">", g.x0);
	cut = title_fit(what, (g.x1 - g.x0 - COUNT_CHAR_PX * (double)(strlen(count) + 1)) /
			TITLE_COL_PX, shown, sizeof(shown));
	if (cut) {
		sbuf_puts(b, "<title>");
		sbuf_esc(b, what);
		sbuf_puts(b, "</title>");
	}
	sbuf_esc(b, shown);
	if (cut)
		sbuf_puts(b, "&#8230;");	/* an ellipsis, as a character reference */
	sbuf_printf(b, "</text><text x=\"%.1f\" y=\"16\" text-anchor=\"end\">%s</text>", g.x1,
		    count);
	/* the plot: hatched where nothing completed */
	sbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		  "fill=\"url(#e-%s)\"/>", g.x0, g.y0, g.x1 - g.x0, g.y1 - g.y0, p->id);
	/* blank where no recording covers the time (between recordings given together) */
	not_recorded(r, p, &g, b);
	/* what every cell of a row or column shares, made once */
	rows = calloc((size_t)p->nrows, sizeof(*rows));
	ys = calloc((size_t)p->nrows, sizeof(*ys));
	for (k = 0; rows && ys && k < p->nrows; k++) {
		range_text(rows[k], sizeof(rows[k]), p->rowlo[k], p->rowhi[k]);
		num(ys[k], sizeof(ys[k]), g.y1 - (k + 1) * g.rh);
	}
	num(w, sizeof(w), g.cw);
	num(h, sizeof(h), g.rh);
	sbuf_printf(b, "<g class=\"cells\"><title>%s UTC</title>", "time, latency: count (share "
		  "of the column)");
	for (c = 0; rows && ys && c < p->cols; c++) {
		uint64_t c0 = r->t0 + (uint64_t)((double)(r->t1 - r->t0) * c / p->cols);
		uint64_t c1 = r->t0 + (uint64_t)((double)(r->t1 - r->t0) * (c + 1) / p->cols);

		if (!p->colsum[c])
			continue;
		num(x, sizeof(x), g.x0 + c * g.cw);
		fmt_clock(t0, sizeof(t0), c0, true);
		fmt_clock(t1, sizeof(t1), c1, true);
		/* the end's hour and minute only when they differ */
		snprintf(when, sizeof(when), "%s-%s", t0, strncmp(t0, t1, 6) ? t1 : t1 + 6);
		for (k = 0; k < p->nrows; k++) {
			n = p->grid[(size_t)c * (size_t)p->nrows + (size_t)k];
			if (!n)
				continue;
			sbuf_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" "
				  "fill=\"#%06x\" data-lo=\"%" PRIu64 "\" data-hi=\"", x, ys[k], w, h,
				  cell_colour(r->o.sqrt_scale, col_scaled(p, c, n), max), p->rowlo[k]);
			if (p->rowhi[k] == UINT64_MAX)
				sbuf_puts(b, "inf");
			else
				sbuf_printf(b, "%" PRIu64, p->rowhi[k]);
			sbuf_printf(b, "\" data-n=\"%" PRIu64 "\"><title>%s, %s: %" PRIu64
				  " (%.0f%%)</title></rect>", n, when, rows[k], n,
				  100.0 * (double)n / (double)p->colsum[c]);
		}
	}
	sbuf_puts(b, "</g>");
	free(rows);
	free(ys);
	/* lines: a light halo under each so they read on any colour */
	pct_line(p, &g, 500000, "halo", b);
	pct_line(p, &g, 500000, "p50", b);
	pct_line(p, &g, 990000, "halo", b);
	pct_line(p, &g, 990000, "p99", b);
	pct_line(p, &g, 0, "max", b);
	sbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"frame\"/>",
		  g.x0, g.y0, g.x1 - g.x0, g.y1 - g.y0);
	/* columns that lost events: a mark under the axis nobody can miss */
	drops = calloc((size_t)p->cols, sizeof(*drops));
	for (i = 0; drops && i < r->nivs; i++)
		if (r->ivs[i].drops)
			drops[report_column(r, i, p->cols)] += r->ivs[i].drops;
	for (c = 0; drops && c < p->cols; c++)
		if (drops[c])
			sbuf_printf(b, "<rect class=\"drop\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				  "height=\"4\"><title>%" PRIu64 " events dropped in this time "
				  "(every layer)</title></rect>", g.x0 + c * g.cw, g.y1 + 1, g.cw,
				  drops[c]);
	free(drops);
	/* nothing measured: said in the plot, and no latency axis that no value set */
	if (!p->count) {
		sbuf_printf(b, "<text class=\"unrec-t\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
			  "nothing measured", (g.x0 + g.x1) / 2, (g.y0 + g.y1) / 2 + 4);
		if (p->unmeasured)
			sbuf_printf(b, ": %" PRIu64 " unmeasured", p->unmeasured);
		sbuf_puts(b, "</text>");
	}
	sbuf_puts(b, "<g>");
	if (p->count)
		y_axis(p, &g, b);
	x_axis(r, p, &g, b);
	sbuf_puts(b, "</g>");
	legend(r, p, &g, max, b);
	sbuf_puts(b, "</svg>\n");
}
