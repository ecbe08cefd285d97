// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <stdlib.h>
#include "stats.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint32_t rng_below(struct rng *r, uint32_t n)
{
	uint64_t m = (uint64_t)(uint32_t)(rng_next(r) >> 32) * n;
	uint32_t l = (uint32_t)m, t;

	if (l < n) {
		t = -n % n;
		while (l < t) {
			m = (uint64_t)(uint32_t)(rng_next(r) >> 32) * n;
			l = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

/* Hoare's selection: v[k] as it would be sorted, smaller ones before it, larger after. */
static double select_kth(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1, i, j;
	double pivot, t;

	while (lo < hi) {
		pivot = v[lo + (hi - lo) / 2];
		i = lo;
		j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

double quantile_select(double *v, size_t n, double q)
{
	double h, a, b;
	size_t i, k;

	if (!n)
		return NAN;
	h = q * (double)(n - 1);
	i = (size_t)h;
	a = select_kth(v, n, i);
	if (i + 1 >= n)
		return a;
	/* the next order statistic: the smallest of those after v[i] */
	for (b = v[i + 1], k = i + 2; k < n; k++)
		if (v[k] < b)
			b = v[k];
	return a + (h - (double)i) * (b - a);
}

double hist_interp(uint32_t slot, double below, double in, double rank, uint64_t min, uint64_t max)
{
	double lo = (double)hist_lo(slot), hi, f, v, j;

	/*
	 * The bucket as the continuous range [lo, hi), cut to the exact [min, max + 1), its `in`
	 * samples taken as spread evenly, each at the middle of its share; the rank-th sample
	 * overall (rounded up, as the exact quantile is) is the j-th of the bucket. One sample is
	 * read at the bucket's middle (the midpoint rule); samples spanning the exact min and max
	 * in one bucket, across that span.
	 */
	hi = slot >= HIST_OVERFLOW ? (double)max + 1 : (double)hist_hi(slot);
	if (lo < (double)min)
		lo = (double)min;
	if (hi > (double)max + 1)
		hi = (double)max + 1;
	j = ceil(rank - below);
	j = j < 1 ? 1 : j > in ? in : j;
	f = in > 0 ? (j - 0.5) / in : 0.5;
	if (f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	v = lo + f * (hi - lo);
	if (v > (double)max)
		v = (double)max;
	if (v < (double)min)
		v = (double)min;
	return v;
}

double hist_quantile(const struct hist *h, double q)
{
	double rank, cum = 0;
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < HIST_NSLOTS; i++)
		total += h->slots[i];
	if (!total)
		return NAN;
	rank = q * (double)total;
	for (i = 0; i < HIST_NSLOTS; i++) {
		if (!h->slots[i])
			continue;
		if (cum + (double)h->slots[i] >= rank)
			break;
		cum += (double)h->slots[i];
	}
	if (i == HIST_NSLOTS)		/* q >= 1 */
		return (double)h->max_ns;
	return hist_interp(i, cum, (double)h->slots[i], rank, h->min_ns, h->max_ns);
}
