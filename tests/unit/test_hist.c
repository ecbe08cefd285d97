// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of the shared bucket scheme (bpf/hist.h) and the user-side percentile rule
 * (user/histfmt.c). No root needed. Prints one line per failed check and a closing
 * "N passed, N failed" line; exits non-zero on any failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "histfmt.h"

#include "check.h"

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A value's bucket must hold it, and its midpoint must be within the documented bound. */
static double worst_err;
static uint64_t worst_v;
static int check_value(uint64_t v)
{
	uint32_t i = hist_index(v);
	double err;

	if (i >= HIST_NSLOTS || v < hist_lo(i) || (i < HIST_OVERFLOW && v >= hist_hi(i))) {
		printf("FAIL value %" PRIu64 " -> slot %u [%" PRIu64 ", %" PRIu64 ")\n",
		       v, i, (uint64_t)hist_lo(i), (uint64_t)hist_hi(i));
		return 0;
	}
	if (v && i < HIST_OVERFLOW) {
		uint64_t m = hist_mid(i);

		err = (m > v ? (double)(m - v) : (double)(v - m)) / (double)v;
		if (err > worst_err) {
			worst_err = err;
			worst_v = v;
		}
	}
	return 1;
}

static void test_buckets(void)
{
	uint64_t v, bad = 0, n = 0;
	uint32_t i;
	int b;

	/* the slots tile [0, 2^36) without gaps or overlaps, and 2^36.. is the overflow */
	CHECK(hist_lo(0) == 0, "slot 0 starts at 0");
	for (i = 0; i + 1 < HIST_NSLOTS; i++)
		if (hist_hi(i) != hist_lo(i + 1))
			bad++;
	CHECK(bad == 0, "%" PRIu64 " slots do not end where the next starts", bad);
	CHECK(hist_lo(HIST_OVERFLOW) == 1ULL << HIST_MAX_LOG2, "overflow starts at 2^36");
	CHECK(HIST_NSLOTS == 529, "529 slots (got %u)", HIST_NSLOTS);

	/* exhaustive below 2^22, then every octave's edges and random values up to 2^64 */
	bad = 0;
	for (v = 0; v < (1u << 22); v++, n++)
		bad += !check_value(v);
	for (b = 22; b < 64; b++) {
		uint64_t base = 1ULL << b, k;

		for (k = 0; k < 64; k++, n += 3) {
			bad += !check_value(base + k);
			bad += !check_value(base - 1 - k);
			bad += !check_value(base + (xorshift() & (base - 1)));
		}
	}
	bad += !check_value(UINT64_MAX);
	CHECK(bad == 0, "%" PRIu64 " of %" PRIu64 " values outside their bucket", bad, n);
	/* the documented bound, 1/32 exactly (HIST_MAX_REL_ERR_PPM), with room for rounding only */
	CHECK(worst_err <= HIST_MAX_REL_ERR_PPM / 1e6 + 1e-12, "worst relative error %.4f%% at %"
	      PRIu64 " exceeds %.4f%%", worst_err * 100, worst_v, HIST_MAX_REL_ERR_PPM / 1e4);
	printf("bucket sweep: %" PRIu64 " values, worst-case relative error %.4f%% (at %" PRIu64
	       " ns), bound %.4f%%\n", n + 1, worst_err * 100, worst_v, HIST_MAX_REL_ERR_PPM / 1e4);

	/* monotonic: a larger value never lands in an earlier slot */
	bad = 0;
	for (v = 1; v < (1u << 20); v++)
		if (hist_index(v) < hist_index(v - 1))
			bad++;
	CHECK(bad == 0, "index not monotonic in %" PRIu64 " places", bad);

	/* msb cascade against the compiler's clz */
	bad = 0;
	for (b = 0; b < 100000; b++) {
		v = xorshift() >> (xorshift() & 63);
		if (v && hist_msb(v) != 63u - (uint32_t)__builtin_clzll(v))
			bad++;
	}
	CHECK(bad == 0, "msb cascade disagrees with clz %" PRIu64 " times", bad);
}

static void add(struct hist *h, uint64_t v, uint64_t times)
{
	if (!times)
		return;
	if (!h->count || v < h->min_ns)
		h->min_ns = v;
	if (v > h->max_ns)
		h->max_ns = v;
	h->count += times;
	h->sum_ns += v * times;
	h->slots[hist_index(v)] += times;
}

static uint64_t pct(const struct hist *h, uint32_t ppm)
{
	uint64_t v = UINT64_MAX;

	hist_percentile(h, ppm, &v);
	return v;
}

static void test_percentiles(void)
{
	struct hist *h = calloc(1, sizeof(*h)), *a = calloc(1, sizeof(*a));
	uint64_t v;
	int i;

	CHECK(!hist_percentile(h, 500000, &v), "empty histogram has no percentile");

	/* 90 x 10 ns, 9 x 1000 ns, 1 x 100000 ns */
	add(h, 10, 90);
	add(h, 1000, 9);
	add(h, 100000, 1);
	CHECK(pct(h, 500000) == 10, "p50 = 10 (got %" PRIu64 ")", pct(h, 500000));
	CHECK(pct(h, 900000) == 10, "p90: rank 90 is still the 10 ns bucket (got %" PRIu64 ")",
	      pct(h, 900000));
	/* rank 91..99 fall in 1000's bucket [992, 1024): midpoint 1008 */
	CHECK(pct(h, 990000) == 1008, "p99 = 1008 (got %" PRIu64 ")", pct(h, 990000));
	/* rank ceil(99.9) = 100: 100000's bucket [98304, 102400) midpoint 100352, clamped to max */
	CHECK(pct(h, 999000) == 100000, "p99.9 clamped to max (got %" PRIu64 ")", pct(h, 999000));
	CHECK(pct(h, 1000000) == 100000, "p100 = max");
	CHECK(pct(h, 1) == 10, "p0.0001 = first value");

	/* one value: every percentile is that value exactly (clamped to min = max) */
	memset(h, 0, sizeof(*h));
	add(h, 123456789, 1);
	CHECK(pct(h, 500000) == 123456789 && pct(h, 999000) == 123456789,
	      "single value reported exactly");

	/* uniform 1..1000 ns: p50 near 500, p99 near 990, within the bucket error */
	memset(h, 0, sizeof(*h));
	for (i = 1; i <= 1000; i++)
		add(h, i, 1);
	v = pct(h, 500000);
	CHECK(v >= 500 * 0.968 && v <= 500 * 1.032, "uniform p50 ~500 (got %" PRIu64 ")", v);
	v = pct(h, 990000);
	CHECK(v >= 990 * 0.968 && v <= 990 * 1.032, "uniform p99 ~990 (got %" PRIu64 ")", v);

	/* rank boundary: 2 values, p50 is rank 1 (the smaller), p50.0001 is rank 2 */
	memset(h, 0, sizeof(*h));
	add(h, 5, 1);
	add(h, 7, 1);
	CHECK(pct(h, 500000) == 5, "p50 of {5,7} = 5");
	CHECK(pct(h, 500001) == 7, "p50.0001 of {5,7} = 7");

	/* overflow bucket reports the exact max */
	memset(h, 0, sizeof(*h));
	add(h, 100ULL << 30, 1);
	CHECK(pct(h, 500000) == 100ULL << 30, "overflow value reported as max");

	/* the open-ended bucket: bounded below only, unless min..max keeps 3.125 % */
	memset(h, 0, sizeof(*h));
	add(h, 70050000000ULL, 90);
	add(h, 200000000000ULL, 10);
	CHECK(hist_pct(h, 500000, &v) == HIST_P_ABOVE && v == 70050000000ULL,
	      "p50 in the open-ended bucket: at least the exact min (got %" PRIu64 ")", v);
	CHECK(!hist_percentile(h, 990000, &v), "p99 there is no value");
	{
		char b[32];

		CHECK(!strcmp(fmt_pct(b, sizeof(b), h, 500000, false, ">="), ">=70.0s"),
		      "shown as >=70.0s (got %s)", b);
		/* a lower bound is cut, not rounded: 70.09 s is at least 70.0 s, not 70.1 */
		memset(h, 0, sizeof(*h));
		add(h, 70090000000ULL, 90);
		add(h, 200000000000ULL, 10);
		CHECK(!strcmp(fmt_pct(b, sizeof(b), h, 500000, false, ">="), ">=70.0s"),
		      "shown as >=70.0s (got %s)", b);
		CHECK(!strcmp(fmt_pct(b, sizeof(b), h, 500000, true, ">="), ">=70090.000ms"),
		      "shown as >=70090.000ms (got %s)", b);
		memset(a, 0, sizeof(*a));
		CHECK(!strcmp(fmt_pct(b, sizeof(b), a, 500000, false, ">="), "-"), "empty: -");
	}
	memset(h, 0, sizeof(*h));
	add(h, 70000000000ULL, 5);
	add(h, 72000000000ULL, 5);
	CHECK(hist_pct(h, 500000, &v) == HIST_P_VALUE && v == 71000000000ULL,
	      "min..max within 1/16 of min: the middle (got %" PRIu64 ")", v);
	memset(h, 0, sizeof(*h));
	add(h, 1ULL << 36, 1);
	add(h, 1ULL << 37, 1);
	CHECK(hist_pct(h, 500000, &v) == HIST_P_ABOVE && v == 1ULL << 36,
	      "bounded by the bucket's bound (got %" PRIu64 ")", v);

	/* merge keeps exact min/max/count/sum, ignoring empty inputs' zero min */
	memset(a, 0, sizeof(*a));
	memset(h, 0, sizeof(*h));
	add(a, 50, 2);
	add(a, 70, 1);
	hist_merge(h, a);
	memset(a, 0, sizeof(*a));
	hist_merge(h, a);
	memset(a, 0, sizeof(*a));
	add(a, 20, 1);
	a->unmeasured = 3;
	hist_merge(h, a);
	CHECK(h->count == 4 && h->sum_ns == 190 && h->min_ns == 20 && h->max_ns == 70 &&
	      h->unmeasured == 3, "merge: count %" PRIu64 " sum %" PRIu64 " min %" PRIu64
	      " max %" PRIu64, (uint64_t)h->count, (uint64_t)h->sum_ns,
	      (uint64_t)h->min_ns, (uint64_t)h->max_ns);
	free(h);
	free(a);
}

/* A write torn by the loader's read and zeroing (hist_record's order: bucket, min, max, count, sum) */
static void test_mend(void)
{
	struct hist *h = calloc(1, sizeof(*h));

	add(h, 1000, 3);
	add(h, 5000, 1);
	CHECK(!hist_mend(h) && h->count == 4 && h->sum_ns == 8000 && h->min_ns == 1000 &&
	      h->max_ns == 5000, "a whole histogram is left as it is");

	/* read after the bucket, before the count: one bucket more than counted */
	h->slots[hist_index(100)]++;
	h->min_ns = 100;
	CHECK(hist_mend(h) && h->count == 5 && h->min_ns == 100 && h->sum_ns >= 5 * 100 &&
	      h->sum_ns <= 5 * 5000, "count from the buckets (count %" PRIu64 " sum %" PRIu64 ")",
	      (uint64_t)h->count, (uint64_t)h->sum_ns);

	/* zeroed after the bucket: the rest lands in an empty element */
	memset(h, 0, sizeof(*h));
	h->min_ns = h->max_ns = h->sum_ns = 777;
	h->count = 1;
	h->unmeasured = 2;
	CHECK(hist_mend(h) && h->count == 0 && h->sum_ns == 0 && h->min_ns == 0 &&
	      h->max_ns == 0 && h->unmeasured == 2, "no bucket: nothing measured");

	/* the bucket alone: min and max from its bounds */
	memset(h, 0, sizeof(*h));
	h->slots[hist_index(1000)] = 1;
	CHECK(hist_mend(h) && h->count == 1 && hist_index(h->min_ns) == hist_index(1000) &&
	      hist_index(h->max_ns) == hist_index(1000) && h->sum_ns == h->min_ns,
	      "a bucket alone: min %" PRIu64 " max %" PRIu64 " sum %" PRIu64,
	      (uint64_t)h->min_ns, (uint64_t)h->max_ns, (uint64_t)h->sum_ns);

	/* 2^40 samples of ~1 s: n x min passes 2^64, the sum held is the largest there is
	 * (it was n x min cut to 64 bits, a sum below every sample's) */
	memset(h, 0, sizeof(*h));
	h->slots[hist_index(1000000000)] = h->count = UINT64_C(1) << 40;
	h->min_ns = h->max_ns = 1000000000;
	h->sum_ns = 12345;
	CHECK(hist_mend(h) && h->sum_ns == UINT64_MAX && h->count == UINT64_C(1) << 40,
	      "a sum past 64 bits: %" PRIu64, (uint64_t)h->sum_ns);
	free(h);
}

static void test_fold(void)
{
	struct hist *h = calloc(1, sizeof(*h));
	struct hist_row rows[HIST_MAX_ROWS];
	uint64_t total = 0;
	size_t n, i;

	add(h, 3, 4);		/* row [2, 4) */
	add(h, 1500, 2);	/* row [1024, 2048) */
	add(h, 1ULL << 40, 1);	/* overflow row */
	n = hist_fold(h, rows, HIST_MAX_ROWS);
	for (i = 0; i < n; i++)
		total += rows[i].count;
	CHECK(total == 7, "folded rows keep every count (got %" PRIu64 ")", total);
	CHECK(n > 0 && rows[0].lo == 2 && rows[0].hi == 4 && rows[0].count == 4,
	      "first row is [2,4) x4");
	CHECK(n > 0 && rows[n - 1].hi == UINT64_MAX && rows[n - 1].count == 1,
	      "last row is the overflow");
	free(h);
}

/* A value never prints as 1000 of a unit: it is 1 of the next. */
static void test_units(void)
{
	static const struct { uint64_t ns; const char *s; } v[] = {
		{ 999, "999ns" }, { 1000, "1.00us" }, { 9994, "9.99us" }, { 999499, "999us" },
		{ 999500, "1.00ms" }, { 999700, "1.00ms" }, { 1000000, "1.00ms" },
		{ 999499999, "999ms" }, { 999700000, "1.00s" },
		/* digits chosen on the rounded value: 3, never 4 (9999 was "10.00us") */
		{ 9996, "10.0us" }, { 9999, "10.0us" }, { 99949, "99.9us" }, { 99950, "100us" },
		{ 9999999, "10.0ms" }, { 99999999, "100ms" }, { 9994999999ULL, "9.99s" },
		{ 9995000001ULL, "10.0s" }, { 1234500000000ULL, "1234s" }, { 1, "1ns" }, { 0, "0ns" },
	};
	static const struct { double ns; const char *s; } w[] = {
		{ 999.4, "999ns" }, { 999.7, "1.000us" }, { 999.97, "1.000us" }, { 9999.6, "10.00us" },
		{ 999960.0, "1.000ms" }, { 12345.0, "12.35us" },
	};
	static const struct { uint64_t ns; const char *s; } m[] = {
		{ 0, "0.000ms" }, { 5, "0.000005ms" }, { 296, "0.000296ms" }, { 512, "0.000512ms" },
		{ 1024, "0.00102ms" }, { 9999, "0.0100ms" }, { 45600, "0.0456ms" },
		{ 99999, "0.100ms" }, { 105000, "0.105ms" }, { 1010000, "1.010ms" },
		{ 999999, "1.000ms" }, { 200000000000ULL, "200000.000ms" },
	};
	char b[32];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECK(!strcmp(fmt_ns(b, sizeof(b), v[i].ns, false), v[i].s), "fmt_ns %llu: %s, "
		      "not %s", (unsigned long long)v[i].ns, b, v[i].s);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		CHECK(!strcmp(fmt_ns4(b, sizeof(b), w[i].ns), w[i].s), "fmt_ns4 %g: %s, not %s",
		      w[i].ns, b, w[i].s);
	/* -m: milliseconds, 3 decimals, more below 0.1 ms for 3 significant digits: a 296 ns
	 * latency is never "0.000ms", two rows of a histogram never "0.001ms - 0.001ms" */
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		CHECK(!strcmp(fmt_ns(b, sizeof(b), m[i].ns, true), m[i].s), "fmt_ns -m %llu: %s, "
		      "not %s", (unsigned long long)m[i].ns, b, m[i].s);
}

int main(void)
{
	test_units();
	test_buckets();
	test_percentiles();
	test_mend();
	test_fold();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
