/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* User-side histogram arithmetic: merging per-CPU copies, percentiles, folded display rows. */
#ifndef IOSTRATA_HISTFMT_H
#define IOSTRATA_HISTFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hist.h"

/* dst += src, keeping min/max exact. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * Make a histogram read from the kernel agree with itself: count the sum of its buckets, min and
 * max in its first and last buckets with samples, sum_ns between count x min and count x max.
 * hist_record is not atomic: a program preempted while the loader reads and zeroes its element
 * (docs/design.md, generations) leaves a bucket in one interval and the count, min, max or sum
 * that go with it in the next. The event stays where its bucket is. Returns whether h changed.
 */
bool hist_mend(struct hist *h);

/*
 * The p-th quantile, p in parts per million (p50 = 500000, p99.9 = 999000). Rule (fio's): the
 * first bucket whose cumulative count reaches ceil(p * N) holds it; it is reported at the
 * bucket's midpoint, clamped into the exact [min, max] (HIST_P_VALUE). In the open-ended
 * bucket (>= 2^36 ns) it is known only to lie between the bucket's bound (or the exact min) and
 * the exact max: a value when that span keeps the midpoint within 3.125 %, else HIST_P_ABOVE
 * with *out_ns the lower bound. HIST_P_NONE: the histogram is empty.
 */
enum hist_p { HIST_P_NONE, HIST_P_VALUE, HIST_P_ABOVE };
enum hist_p hist_pct(const struct hist *h, uint32_t p_ppm, uint64_t *out_ns);
/* hist_pct's value, when it has one (not empty, not only bounded below) */
bool hist_percentile(const struct hist *h, uint32_t p_ppm, uint64_t *out_ns);
/* hist_pct for people: fmt_ns's value, ge (">=", "&ge;") and the bound when only bounded below,
 * "-" when empty */
char *fmt_pct(char *buf, size_t len, const struct hist *h, uint32_t p_ppm, bool in_ms,
	      const char *ge);

/* The reported value of slot i: its midpoint (the exact value for 1-ns slots). */
uint64_t hist_mid(uint32_t i);

/* Display rows: fine slots folded into power-of-two rows [lo, hi). */
struct hist_row {
	uint64_t lo, hi;	/* hi == UINT64_MAX: open-ended */
	uint64_t count;
};
/* Fills rows[] (from the first to the last non-empty row); returns the number of rows. */
size_t hist_fold(const struct hist *h, struct hist_row *rows, size_t max_rows);
#define HIST_MAX_ROWS	(HIST_MAX_LOG2 + 2)

/* "850ns", "12.3us", "4.56ms", "1.23s"; in_ms forces milliseconds. Returns buf. */
char *fmt_ns(char *buf, size_t len, uint64_t ns, bool in_ms);

/* ns to 4 significant digits: "850ns", "16.85us", "1.010ms", "2.500s". Returns buf. */
char *fmt_ns4(char *buf, size_t len, double ns);

#endif
