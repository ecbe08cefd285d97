// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of compare's statistics pieces (user/lib/stats.c): the seeded PRNG, selection
 * quantiles, and the histogram quantile estimator, whose error against the exact sample
 * quantile is measured here on several distributions (and the midpoint rule's beside it) and
 * printed one line per distribution: docs/compare.md quotes these lines. No root needed.
 * Exits non-zero on any failed check; the last line is "N passed, N failed".
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "histfmt.h"
#include "stats.h"

#include "check.h"

static struct rng rng;

static double uniform(void)
{
	return (double)(rng_next(&rng) >> 11) / 9007199254740992.0;
}

static double normal(void)
{
	double u = uniform(), v = uniform();

	return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void test_rng(void)
{
	struct rng a, b;
	uint32_t counts[10] = { 0 }, i;
	double chi = 0;

	rng_seed(&a, 42);
	rng_seed(&b, 42);
	CHECK(rng_next(&a) == rng_next(&b), "the same seed gives the same stream");
	rng_seed(&b, 43);
	CHECK(rng_next(&a) != rng_next(&b), "another seed, another stream");
	for (i = 0; i < 100000; i++)
		counts[rng_below(&a, 10)]++;
	for (i = 0; i < 10; i++)
		chi += (counts[i] - 10000.0) * (counts[i] - 10000.0) / 10000.0;
	/* 9 degrees of freedom: above 27.9 one time in a thousand */
	CHECK(chi < 27.9, "rng_below(10) is not uniform: chi-square %.1f", chi);
	for (i = 0; i < 1000; i++)
		if (rng_below(&a, 3) >= 3)
			break;
	CHECK(i == 1000, "rng_below out of range");
}

static void test_select(void)
{
	double v[501], s[501], q, want, got;
	int n, t, bad = 0;
	size_t i;

	for (t = 0; t < 200; t++) {
		n = 1 + (int)rng_below(&rng, 500);
		for (i = 0; i < (size_t)n; i++)
			v[i] = rng_below(&rng, 4) ? uniform() : floor(uniform() * 5);	/* ties */
		memcpy(s, v, (size_t)n * sizeof(*s));
		qsort(s, (size_t)n, sizeof(*s), dcmp);
		q = uniform();
		/* R's type 7 on the sorted copy */
		want = s[(size_t)(q * (n - 1))];
		if ((size_t)(q * (n - 1)) + 1 < (size_t)n)
			want += (q * (n - 1) - floor(q * (n - 1))) *
				(s[(size_t)(q * (n - 1)) + 1] - s[(size_t)(q * (n - 1))]);
		got = quantile_select(v, (size_t)n, q);
		bad += fabs(got - want) > 1e-12;
	}
	CHECK(bad == 0, "quantile_select disagrees with sorting %d times", bad);
	CHECK(isnan(quantile_select(v, 0, 0.5)), "no values, no quantile");
}

static void record(struct hist *h, uint64_t v)
{
	hist_record(h, v);
}

/* Exact sample quantile (type 1, the inverse CDF: the ceil(q n)-th smallest). */
static double exact_q(const double *s, size_t n, double q)
{
	size_t k = (size_t)ceil(q * (double)n);

	return s[k ? k - 1 : 0];
}

/*
 * Samples of one distribution, counted into a histogram: the estimator's and the midpoint
 * rule's worst relative error over p50, p90, p99, p99.9 and many draws.
 */
enum dist { NARROW, EXPONENTIAL, LOGNORMAL, BIMODAL, UNIFORM_WIDE };
static const char *const dist_name[] = { "narrow peak (0.5 % wide)", "exponential",
					  "lognormal sigma 0.5", "bimodal (x10 apart)",
					  "uniform over 3 octaves" };

static double draw(enum dist d, double scale)
{
	switch (d) {
	case NARROW: return scale * (1 + 0.005 * uniform());
	case EXPONENTIAL: return scale * -log(1 - uniform());
	case LOGNORMAL: return scale * exp(0.5 * normal());
	case BIMODAL: return scale * (rng_below(&rng, 10) ? 1 : 10) * exp(0.05 * normal());
	default: return scale * (1 + 7 * uniform());
	}
}

static void measure(enum dist d, double *interp_worst, double *mid_worst, double *interp_mean)
{
	static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	static double s[20000];
	double sum = 0, scale, e, x;
	uint64_t mid;
	size_t n = 20000, i;
	int t, k, cnt = 0;
	struct hist h;

	*interp_worst = *mid_worst = 0;
	for (t = 0; t < 50; t++) {
		memset(&h, 0, sizeof(h));
		scale = 1000 * exp(uniform() * log(10000.0));	/* 1 us to 10 ms */
		for (i = 0; i < n; i++) {
			s[i] = floor(draw(d, scale));
			record(&h, (uint64_t)s[i]);
		}
		qsort(s, n, sizeof(*s), dcmp);
		for (k = 0; k < 4; k++) {
			x = exact_q(s, n, qs[k]);
			e = fabs(hist_quantile(&h, qs[k]) - x) / x;
			*interp_worst = fmax(*interp_worst, e);
			sum += e;
			cnt++;
			hist_percentile(&h, (uint32_t)lround(qs[k] * 1e6), &mid);
			*mid_worst = fmax(*mid_worst, fabs((double)mid - x) / x);
		}
	}
	*interp_mean = sum / cnt;
}

static void test_estimator(void)
{
	double w, m, mean;
	int d;

	for (d = NARROW; d <= UNIFORM_WIDE; d++) {
		measure(d, &w, &m, &mean);
		printf("estimator %-26s interpolated: worst %.3f%%, mean %.3f%%; midpoint rule: "
		       "worst %.3f%%\n", dist_name[d], 100 * w, 100 * mean, 100 * m);
		/* one bucket width (1/16 of an octave) is the bound whatever the distribution */
		CHECK(w <= 0.0625, "%s: worst error %.3f%% above one bucket width", dist_name[d],
		      100 * w);
	}
	/* a narrow peak is read from its exact min and max: within its own width */
	measure(NARROW, &w, &m, &mean);
	CHECK(w <= 0.005, "narrow peak: worst error %.3f%% wider than the peak", 100 * w);
}

/*
 * io_uring TIMEOUTs of 1.00 and 1.10 ms fire a few microseconds late: 1.00x ms lands in the
 * bucket [983040, 1015808), 1.10x ms in [1048576, 1114112); their midpoints' ratio is 1.082
 * whatever the true one. The estimator's ratio of medians is the true one within 0.5 %.
 */
static void test_timeouts(void)
{
	struct hist a, b;
	double ra, rb;
	int i;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK(hist_lo(hist_index(1003000)) == 983040 && hist_hi(hist_index(1003000)) == 1015808,
	      "1.003 ms is in [983040, 1015808)");
	CHECK(hist_lo(hist_index(1103000)) == 1048576 &&
	      hist_hi(hist_index(1103000)) == 1114112, "1.103 ms is in [1048576, 1114112)");
	for (i = 0; i < 3000; i++) {
		double late = 3000 + 5000 * uniform();

		record(&a, (uint64_t)(1000000 + late));
		record(&b, (uint64_t)(1100000 + 5000 * uniform() + 3000));
	}
	ra = hist_quantile(&a, 0.5);
	rb = hist_quantile(&b, 0.5);
	printf("timeouts: p50 %.0f ns and %.0f ns, ratio %.4f (true about 1.0995)\n", ra, rb,
	       rb / ra);
	CHECK(fabs(rb / ra - 1.0995) < 0.005, "ratio of medians %.4f", rb / ra);
}

static void test_interp_edges(void)
{
	struct hist h;

	memset(&h, 0, sizeof(h));
	CHECK(isnan(hist_quantile(&h, 0.5)), "an empty histogram has no quantile");
	record(&h, 5);
	CHECK(hist_quantile(&h, 0.5) == 5, "one sample of 5 ns is 5 ns");
	record(&h, 1000);
	CHECK(hist_quantile(&h, 0.99) >= 992 && hist_quantile(&h, 0.99) <= 1000,
	      "the top of two samples: in its bucket cut at the max");
	memset(&h, 0, sizeof(h));
	record(&h, 1ULL << 40);		/* the overflow bucket ends at the exact max */
	CHECK(hist_quantile(&h, 0.5) == (double)(1ULL << 40), "overflow: the exact max");
	/* one sample alone in its bucket is read at the middle, as the midpoint rule does */
	CHECK(fabs(hist_interp(hist_index(1000000), 0, 1, 0.5, 0, UINT64_MAX) -
		   (double)hist_mid(hist_index(1000000))) <= 1, "one sample: the middle");
}

int main(void)
{
	rng_seed(&rng, 7);
	test_rng();
	test_select();
	test_interp_edges();
	test_estimator();
	test_timeouts();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
