/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Small statistics pieces: a seeded PRNG, sample quantiles, a histogram quantile estimator. */
#ifndef IOSTRATA_STATS_H
#define IOSTRATA_STATS_H

#include <stddef.h>
#include <stdint.h>
#include "hist.h"

/* xoshiro256** seeded through splitmix64: fast, and the same seed gives the same stream. */
struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n), n > 0, without modulo bias (Lemire's multiply-shift). */
uint32_t rng_below(struct rng *r, uint32_t n);

/*
 * The q-th quantile of v[0..n), interpolated between order statistics (R's type 7), found by
 * selection in O(n): v is reordered. NAN when n is 0.
 */
double quantile_select(double *v, size_t n, double q);

/*
 * The value at rank `rank` (q times the count) of a histogram whose slot `slot` holds `in`
 * samples with `below` samples under it: the bucket's samples taken as spread evenly across it,
 * each at the middle of its share, the bucket cut down to the exact [min, max] of the samples.
 * One sample alone is read at the bucket's middle (the midpoint rule); a narrow peak whose min
 * and max fall in one bucket, across its own span. At worst one bucket width (1/16 of its
 * octave) off, when the bucket's samples crowd one edge while the min or max lie beyond it;
 * tests/unit/test_stats.c measures it (docs/compare.md has the figures).
 */
double hist_interp(uint32_t slot, double below, double in, double rank, uint64_t min, uint64_t max);
/* The q-th quantile (0 < q < 1) of h by hist_interp; NAN when h is empty. */
double hist_quantile(const struct hist *h, double q);

#endif
