/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Compare two sets of recordings: for every layer, stage and label set present in both, the
 * quantiles of each side, the ratio B/A with a bootstrap confidence interval, and a verdict.
 * The unit of replication is the interval, never the single I/O: a bootstrap resample draws
 * whole intervals with replacement, sums their bucket vectors and reads the quantiles from the
 * sum (docs/compare.md says why, and what the verdicts promise).
 */
#ifndef IOSTRATA_COMPARE_H
#define IOSTRATA_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "hist.h"
#include "interval.h"

/* The quantiles compared: p50, p90, p99, p99.9. */
#define CMP_NQ			4
extern const double cmp_q[CMP_NQ];
extern const char *const cmp_q_name[CMP_NQ];

/*
 * Not enough data: a side with fewer intervals holding samples of the row than this (with 5,
 * even the order-statistics interval of a median cannot reach 95 %: 2 / 2^5 > 5 %), or with
 * fewer than CMP_MIN_TAIL samples above the quantile (count * (1 - q)).
 */
#define CMP_MIN_INTERVALS	6
#define CMP_MIN_TAIL		10
/*
 * ... or whose samples at and above the quantile's bucket come from fewer intervals than this
 * in effect (Kish's effective number): a tail made of a few intervals' bursts can only be
 * reshuffled by the bootstrap, whose interval then comes out too narrow (docs/compare.md).
 */
#define CMP_MIN_TAIL_INTERVALS	8

struct cmp_opts {
	double threshold;	/* the smallest change called, as a fraction (0.05) */
	uint64_t seed;		/* of the resampling: the same seed, the same intervals */
	int resamples;		/* bootstrap resamples (1000) */
	double alpha;		/* 1 - the confidence of the interval (0.05) */
};
#define CMP_OPTS_DEFAULT { .threshold = 0.05, .seed = 1, .resamples = 1000, .alpha = 0.05 }

/* A set of recordings: every interval of every file, kept sparse per layer, stage, label set. */
struct cmp_set;

struct cmp_set *cmp_set_new(void);
/* A recording (plain or .gz), read through recread. 0, or -1 with one line said. */
int cmp_set_add_file(struct cmp_set *s, const char *path);
/* A recording, or a directory: every *.ndjson and *.ndjson.gz in it. 0, or -1 said. */
int cmp_set_add_path(struct cmp_set *s, const char *path);
/*
 * One interval from memory (its records need not be sorted). 0; -1 said (out of memory);
 * CMP_WRAPS, not said: a sum over the set would pass 2^64 (a damaged or forged file).
 */
#define CMP_WRAPS	(-2)
int cmp_set_add_interval(struct cmp_set *s, const struct interval *iv);
uint32_t cmp_set_intervals(const struct cmp_set *s);
uint32_t cmp_set_files(const struct cmp_set *s);
void cmp_set_free(struct cmp_set *s);

enum cmp_verdict { CMP_NOT_ENOUGH, CMP_SAME, CMP_FASTER, CMP_SLOWER };
/*
 * A ratio of B/A for people: 3 decimals, or 3 significant digits below 0.1 (a ratio of 0.0004
 * was printed 0.000, and its interval 0.000..0.000 beside a "faster") and from 1e6 up (at
 * most 12 bytes). Returns buf.
 */
const char *cmp_ratio_str(char *buf, size_t len, double v);
const char *cmp_verdict_name(enum cmp_verdict v);	/* "not enough data", "no change", ... */

/* One side of a row. */
/*
 * Every interval of a side merged (for the CDFs): its buckets that hold samples, in order. Not
 * a struct hist: 529 slots, 4 KiB a side, for each of a per-process recording's hundreds of
 * thousands of rows, were 1.7 GB for an hour of 50 new processes a second.
 */
struct cmp_dist {
	uint64_t count, min_ns, max_ns;
	uint32_t n;		/* buckets below */
	uint16_t *slot;		/* [n]: hist.h's index */
	uint64_t *cnt;		/* [n]: its samples */
};

struct cmp_side {
	uint64_t count;		/* samples */
	uint64_t unmeasured;	/* events of the row whose value could not be known */
	uint32_t intervals;	/* intervals holding samples of the row */
	double q[CMP_NQ];	/* ns; NAN when the side has no samples */
	struct cmp_dist h;
};

/* One quantile of a row. */
struct cmp_cell {
	enum cmp_verdict v;
	double ratio;		/* B / A; NAN when a side is empty */
	/* the (1 - alpha) interval of the ratio, holding whatever values the events lost had
	 * (0 or infinite where they leave it no bound); NAN when not enough data */
	double lo, hi;
	bool lost;		/* CMP_NOT_ENOUGH for the events lost: without them, a verdict */
	char why[128];		/* CMP_NOT_ENOUGH: the reason */
};

struct cmp_row {
	const char *layer, *stage, *labels;	/* labels: "vda read", or "all" */
	const char *true_labels;	/* with the names as they are (labels: as printed) */
	int stage_order;
	struct cmp_side a, b;
	struct cmp_cell c[CMP_NQ];
};

/* A row found on one side only. */
struct cmp_lone {
	const char *layer, *stage, *labels, *true_labels;
	char side;		/* 'A' or 'B' */
};

struct cmp_result {
	struct cmp_opts o;
	double limit;		/* max(2 x bucket error, threshold): a change must clear it */
	int family;		/* cells whose intervals are simultaneous (enough data) */
	double widen;		/* how much simultaneity widened each interval (1: alone) */
	uint32_t a_intervals, b_intervals, a_files, b_files;
	/* events each side's tracer saw and could not record (drops, but uring_ring_full, whose
	 * reaps are counted as unmeasured, and snoop_lost): its histograms miss them. Each
	 * interval holds whatever their values were; a verdict they could change is withheld
	 * (cmp_cell.lost) */
	uint64_t a_drops, b_drops;
	struct cmp_row *rows;	/* by layer, stage order, label set */
	size_t nrows;
	struct cmp_lone *lone;
	size_t nlone;
	void *pool;		/* the names the rows point into */
};

/*
 * Compare A with B. NULL with one line said: no layer, stage and label set in common, an empty
 * set, bad options, out of memory. The result owns its names; the sets may be freed.
 */
struct cmp_result *cmp_run(const struct cmp_set *a, const struct cmp_set *b,
			   const struct cmp_opts *o);
/* Verdicts withheld for the events lost (cmp_cell.lost). */
int cmp_lost(const struct cmp_result *r);
/* None was: every cell is as it would be without them. */
static inline bool cmp_decided(const struct cmp_result *r)
{
	return !cmp_lost(r);
}
/* Did the events lost withhold layer:stage's verdict at quantile qi in some label set? */
bool cmp_stage_lost(const struct cmp_result *r, const char *layer, const char *stage, int qi);
/* Cells (row x quantile) called faster or slower; *ncompared: cells with a verdict at all. */
int cmp_changes(const struct cmp_result *r, int *ncompared);
/* Is layer:stage slower at quantile qi in any label set? *found: the stage was compared. */
bool cmp_regressed(const struct cmp_result *r, const char *layer, const char *stage, int qi,
		   bool *found);
/* Label sets of layer:stage with a verdict at quantile qi (not "not enough data"). */
int cmp_stage_compared(const struct cmp_result *r, const char *layer, const char *stage, int qi);
/*
 * The largest upper bound of B/A's interval at quantile qi over layer:stage's label sets with a
 * verdict; NAN if none has one. Below 1 + limit, the data exclude a slowdown beyond the limit.
 */
double cmp_stage_hi(const struct cmp_result *r, const char *layer, const char *stage, int qi);
/* The quantile index of "p50", "p90", "p99", "p99.9"; -1 if none. */
int cmp_q_index(const char *name);
void cmp_result_free(struct cmp_result *r);

/*
 * The A/A check: nsplits random even splits of one set's intervals into two halves (an odd
 * interval out left out), each half compared with the other as cmp_run would. A change called
 * in a split is a false positive; their rate says whether the verdicts can be trusted here.
 */
struct cmp_aa_row {
	const char *layer, *stage, *labels, *true_labels;
	int stage_order;
	int changes[CMP_NQ];	/* splits that called this cell faster or slower */
	int compared[CMP_NQ];	/* splits that had enough data for it */
};

struct cmp_aa {
	struct cmp_opts o;
	double limit;
	int nsplits;
	int any;		/* splits with any change called */
	int judged;		/* splits with enough data for at least one quantile */
	uint32_t intervals;	/* of the set; each half has intervals / 2 */
	uint64_t drops;		/* events the set's tracer lost (cmp_result's a_drops) */
	struct cmp_aa_row *rows;
	size_t nrows;
	void *pool;
};

struct cmp_aa *cmp_aa_run(const struct cmp_set *s, int nsplits, const struct cmp_opts *o);
/*
 * The false-positive rate, any over the splits that judged a quantile, is known only when at
 * least half the splits judged one: a split that compared nothing could call nothing, and its
 * silence is no evidence. true with the rate; false with the reason in why.
 */
bool cmp_aa_rate(const struct cmp_aa *aa, double *rate, char *why, size_t len);
void cmp_aa_free(struct cmp_aa *aa);

/* Renderers (user/out/compare.c, cmphtml.c). cmp_write_json writes members into the object
 * the caller has opened, so that it can stand alone or inside a larger document. */
struct jw;
void cmp_print_text(const struct cmp_result *r, FILE *f);
/* One line per quantile without enough data, saying why. */
void cmp_print_why(const struct cmp_result *r, FILE *f);
void cmp_write_json(const struct cmp_result *r, struct jw *w);
void cmp_aa_print_text(const struct cmp_aa *aa, FILE *f);
void cmp_aa_write_json(const struct cmp_aa *aa, struct jw *w);
/* One self-contained page: overlaid CDFs and a heatmap of the ratios. 0, or -1 said. */
int cmp_write_html(const struct cmp_result *r, const char *a_name, const char *b_name,
		   const char *path, bool force);

#endif
