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

double quantile_sorted(const double *v, size_t n, double q)
{
	double h, f;
	size_t i;

	if (!n)
		return NAN;
	h = q * (double)(n - 1);
	i = (size_t)h;
	if (i + 1 >= n)
		return v[n - 1];
	f = h - (double)i;
	return v[i] + f * (v[i + 1] - v[i]);
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void sort_doubles(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), dcmp);
}

double hist_interp(uint32_t slot, double below, double in, double rank, uint64_t min, uint64_t max)
{
	double lo = (double)hist_lo(slot), hi, f, v;

	/*
	 * The bucket as the continuous range [lo, hi), cut to the exact [min, max + 1); its `in`
	 * samples taken as spread evenly, each at the middle of its share: one sample alone is
	 * reported at the middle (the midpoint rule), a bucket the min and max both fall in at
	 * their span.
	 */
	hi = slot >= HIST_OVERFLOW ? (double)max + 1 : (double)hist_hi(slot);
	if (lo < (double)min)
		lo = (double)min;
	if (hi > (double)max + 1)
		hi = (double)max + 1;
	f = in > 0 ? (rank - below - 0.5) / in : 0.5;
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
