/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The report's model, shared by its parts: report.c (intake, panels), svg.c, html.c. */
#ifndef IOSTRATA_REPORT_INT_H
#define IOSTRATA_REPORT_INT_H

#include <stdint.h>
#include "strpool.h"
#include "report.h"
#include "sbuf.h"

/* One non-empty bucket of one interval of one series. */
struct pt {
	uint32_t iv;
	uint32_t slot;
	uint64_t n;
};

/* One interval of one series with a count: its exact max and min. */
struct ivstat {
	uint32_t iv;
	uint64_t count, min, max, sum;
};

/* A series over the whole recording: its buckets are its points. */
struct series_tot {
	uint64_t count, sum_ns, min_ns, max_ns, unmeasured;
};

/*
 * Everything recorded for one layer, label set and stage: its identity and totals, its buckets
 * sparse (a few hundred bytes a series, and its points: no whole histogram each, which made a
 * recording of 100,000 processes 5.6 GB).
 */
struct series {
	struct rec_id key;	/* layer, stage, labels */
	struct series_tot tot;
	uint64_t hash;
	int labelset;		/* index into report.labelsets */
	struct pt *pts;
	size_t npts, cap;
	struct ivstat *ivs;
	size_t nivs, icap;
};

/* A layer and label set (any stage), ranked by its count within its layer. */
struct labelset {
	const struct rec_id *key;	/* its first series' key: its labels (any stage) */
	uint64_t count;		/* the largest count of its stages */
	int rank;		/* 0 = the most I/O in its layer */
};

struct interval_info {
	uint64_t ts_ns, interval_ns, drops;
};

struct file_info {
	char *file;
	struct recread_meta meta;	/* copied */
	bool has_meta, has_end;
	char *end_reason;
	uint64_t end_intervals;
};

/* Layers x stages a report sums latency for apart; the rest (no recording of ours has them)
 * share the last. */
#define MAX_STAGE_SUMS 64

struct report {
	struct report_opts o;
	struct series **series;
	size_t nseries, scap;
	size_t *table;		/* open addressing: index + 1 into series, 0 empty */
	size_t tcap;
	struct labelset *labelsets;
	size_t nlabelsets, lscap;
	size_t *ltable;		/* the same for labelsets, by key_hash without the stage */
	size_t lcap;
	struct interval_info *ivs;
	size_t nivs, ivcap;
	struct file_info *files;
	size_t nfiles;
	char **notes;
	size_t nnotes;
	struct counter drops[MAX_COUNTERS], events[MAX_COUNTERS];
	int ndrops, nevents;
	uint64_t drops_other;	/* drops under names beyond MAX_COUNTERS (recordings merged) */
	struct strpool pool;	/* names kept: layers, stages, counters */
	uint64_t t0, t1;	/* the recording's span: first interval's start, last's end */
	/*
	 * Everything added, summed: every count the page shows (a series', a panel's, a cell's,
	 * a counter's) is a part of one of these, so none wraps round 2^64 when these do not.
	 * Latency sums are only ever added up within one layer and stage (a panel, a waterfall's
	 * stage): summed per stage, since all stages together pass 2^64 ns sooner (a thousand
	 * requests in flight through six stages: 35 days) than any sum the page shows.
	 */
	uint64_t tot_count, tot_unmeasured, tot_drops, tot_events;
	struct stage_sum {
		const char *layer, *stage;	/* interned */
		uint64_t sum;
	} stsum[MAX_STAGE_SUMS];
	int nstsum;
};

/* A heatmap: one layer and stage, of one label set or (labelset -1) all merged. */
struct panel {
	const char *layer, *stage;
	int stage_order;
	int labelset;		/* -1: every label set of the layer merged */
	char labels[REC_LABELS_LEN];	/* the label set as text */
	char id[200];		/* file and anchor name: [a-z0-9_-] */
	bool small;
	int rpo_cap;		/* rows per octave at most (the size budget lowers it) */
	struct series **ser;
	int nser;
	size_t sercap;
	uint64_t count, unmeasured;
	/* binned by panel_bin() */
	int cols, rpo, key0, nrows;
	uint64_t *grid;		/* cols x nrows, row 0 at the bottom */
	uint64_t *colsum, *colmax;
	/* the recording's intervals in each column, and the most in any: 180 intervals in 120
	 * columns put 1 and 2 in turn, so cells are coloured by their count scaled to a column of
	 * colivs_max (a steady load is one colour, not stripes); tooltips keep the count */
	uint32_t *colivs, colivs_max;
	struct hist *colh;	/* fine buckets per column: its percentiles */
	uint64_t *rowlo, *rowhi;	/* row bounds in ns; rowhi UINT64_MAX: open-ended */
	size_t cells;		/* non-empty */
};

/* Series s's whole recording added into h (its buckets from its points). */
void series_hist(const struct series *s, struct hist *h);
/* The row a fine slot falls in at rpo rows per octave (monotonic in the slot). */
int report_row_key(uint32_t slot, int rpo);
/* Bin p at cols columns: grid, column sums and maxima, row bounds. -1 when out of memory. */
int panel_bin(const struct report *r, struct panel *p, int cols);
void panel_unbin(struct panel *p);
/* The column interval i falls in, of cols over the recording's span. */
int report_column(const struct report *r, size_t i, int cols);

/* One panel as an SVG element (standalone: with the XML declaration). */
void svg_heatmap(const struct report *r, const struct panel *p, bool standalone,
		 struct sbuf *b);
/* viridis at t in 0..1 as 0xRRGGBB: perceptually uniform, colour-blind safe. */
unsigned int report_viridis(double t);
/* The heatmaps' CSS: in each standalone SVG, once in the page. */
extern const char svg_rules[];
/* The page's CSS: light, dark and print. */
extern const char report_css[];
/* A tick's value in ns, in the largest unit it holds one of, with the decimals it needs and no
 * more: "500ns", "20us", "1.05ms" (the units of the page's figures). */
char *report_tick_label(char *buf, size_t len, uint64_t v);
/* b to path through path.tmp, renamed when whole: the file whole or not at all. 0, or -1 said. */
int report_write_file(const char *path, bool force, const struct sbuf *b);
/* The page around the panels. */
void html_page(const struct report *r, struct panel *panels, int npanels,
	       const struct sbuf *svgs, struct sbuf *b);

/* "14:03:05" (UTC) of a Unix time in ns. */
void fmt_clock(char *buf, size_t len, uint64_t ns, bool seconds);
/* "2026-11-23 14:03:05 UTC" */
void fmt_date(char *buf, size_t len, uint64_t ns);

#endif
