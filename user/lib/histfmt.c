// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "histfmt.h"

void hist_merge(struct hist *dst, const struct hist *src)
{
	uint32_t i;

	if (src->count) {
		if (!dst->count || src->min_ns < dst->min_ns)
			dst->min_ns = src->min_ns;
		if (src->max_ns > dst->max_ns)
			dst->max_ns = src->max_ns;
	}
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	dst->unmeasured += src->unmeasured;
	for (i = 0; i < HIST_NSLOTS; i++)
		dst->slots[i] += src->slots[i];
}

bool hist_mend(struct hist *h)
{
	uint32_t i, first = HIST_NSLOTS, last = 0;
	unsigned __int128 lo, hi;
	uint64_t n = 0;
	bool torn;

	for (i = 0; i < HIST_NSLOTS; i++)
		if (h->slots[i]) {
			n += h->slots[i];
			if (first == HIST_NSLOTS)
				first = i;
			last = i;
		}
	torn = n != h->count;
	h->count = n;
	if (!n) {
		torn |= h->sum_ns || h->min_ns || h->max_ns;
		h->sum_ns = h->min_ns = h->max_ns = 0;
		return torn;
	}
	/* min and max in the first and last buckets with samples, the sum between n x each */
	if (hist_index(h->min_ns) != first) {
		h->min_ns = hist_lo(first);
		torn = true;
	}
	if (hist_index(h->max_ns) != last) {
		h->max_ns = last >= HIST_OVERFLOW ? hist_lo(last) : hist_hi(last) - 1;
		torn = true;
	}
	if (h->max_ns < h->min_ns) {	/* one bucket: its bounds moved past each other */
		h->max_ns = h->min_ns;
		torn = true;
	}
	lo = (unsigned __int128)n * h->min_ns;
	hi = (unsigned __int128)n * h->max_ns;
	if (h->sum_ns < lo || h->sum_ns > hi) {
		/* the nearest sum the field holds: n x min can pass 2^64 too (a damaged file) */
		lo = lo > UINT64_MAX ? UINT64_MAX : lo;
		hi = hi > UINT64_MAX ? UINT64_MAX : hi;
		h->sum_ns = (uint64_t)(h->sum_ns < lo ? lo : hi);
		torn = true;
	}
	return torn;
}

uint64_t hist_mid(uint32_t i)
{
	uint64_t lo = hist_lo(i), hi = hist_hi(i);

	if (i >= HIST_OVERFLOW)
		return lo;
	return lo + (hi - lo) / 2;
}

enum hist_p hist_pct(const struct hist *h, uint32_t p_ppm, uint64_t *out_ns)
{
	unsigned __int128 rank;
	uint64_t total = 0, cum = 0, v, lo;
	uint32_t i;

	for (i = 0; i < HIST_NSLOTS; i++)
		total += h->slots[i];
	if (!total)
		return HIST_P_NONE;
	rank = ((unsigned __int128)total * p_ppm + 999999) / 1000000;
	if (rank < 1)
		rank = 1;
	for (i = 0; i < HIST_NSLOTS; i++) {
		cum += h->slots[i];
		if (cum >= rank)
			break;
	}
	if (i >= HIST_OVERFLOW) {
		/*
		 * The open-ended bucket: the quantile is somewhere in [lo, max], lo its bound or the
		 * exact min. Its middle is a value only if that keeps the 3.125 % promise.
		 */
		lo = hist_lo(HIST_OVERFLOW);
		if (h->count && h->min_ns > lo)
			lo = h->min_ns;
		if (!h->count || h->max_ns < lo || h->max_ns - lo > lo / 16) {
			*out_ns = lo;
			return HIST_P_ABOVE;
		}
		*out_ns = lo + (h->max_ns - lo) / 2;
		return HIST_P_VALUE;
	}
	v = hist_mid(i);
	if (h->count) {
		if (v < h->min_ns)
			v = h->min_ns;
		if (v > h->max_ns)
			v = h->max_ns;
	}
	*out_ns = v;
	return HIST_P_VALUE;
}

bool hist_percentile(const struct hist *h, uint32_t p_ppm, uint64_t *out_ns)
{
	return hist_pct(h, p_ppm, out_ns) == HIST_P_VALUE;
}

static char *fmt_ns_as(char *buf, size_t len, uint64_t ns, bool in_ms, bool down);

char *fmt_pct(char *buf, size_t len, const struct hist *h, uint32_t p_ppm, bool in_ms,
	      const char *ge)
{
	uint64_t v;
	char n[32];

	switch (hist_pct(h, p_ppm, &v)) {
	case HIST_P_VALUE:
		return fmt_ns(buf, len, v, in_ms);
	case HIST_P_ABOVE:
		/* at least v: shown cut, never rounded up past it */
		snprintf(buf, len, "%s%s", ge, fmt_ns_as(n, sizeof(n), v, in_ms, true));
		return buf;
	default:
		snprintf(buf, len, "-");
		return buf;
	}
}

/* Row r covers [2^(r-1), 2^r) for r >= 1, row 0 covers [0, 1); the last row is the overflow. */
static size_t row_of(uint32_t slot)
{
	uint64_t lo = hist_lo(slot);
	size_t r = 0;

	if (slot >= HIST_OVERFLOW)
		return HIST_MAX_LOG2 + 1;
	while (lo) {
		lo >>= 1;
		r++;
	}
	return r;
}

size_t hist_fold(const struct hist *h, struct hist_row *rows, size_t max_rows)
{
	uint64_t counts[HIST_MAX_ROWS] = { 0 };
	size_t first = HIST_MAX_ROWS, last = 0, r, n = 0;
	uint32_t i;

	for (i = 0; i < HIST_NSLOTS; i++) {
		if (!h->slots[i])
			continue;
		r = row_of(i);
		counts[r] += h->slots[i];
		if (r < first)
			first = r;
		if (r > last)
			last = r;
	}
	if (first == HIST_MAX_ROWS)
		return 0;
	for (r = first; r <= last && n < max_rows; r++, n++) {
		rows[n].lo = r ? 1ULL << (r - 1) : 0;
		rows[n].hi = r == HIST_MAX_LOG2 + 1 ? UINT64_MAX : (r ? 1ULL << r : 1);
		rows[n].count = counts[r];
	}
	return n;
}

/* v with d decimals, rounded, or (down) cut: what a lower bound ">=" may show */
static void fmt_dec(char *num, size_t len, double v, int d, bool down)
{
	double p = 1;
	int k;

	if (down) {
		for (k = 0; k < d; k++)
			p *= 10;
		if (v * p < 1e18)	/* beyond, a double has no decimals left to cut */
			v = (double)(uint64_t)(v * p) / p;
	}
	snprintf(num, len, "%.*f", d, v);
}

/*
 * ns in the smallest of ns, us, ms, s under which it stays below 1000 once rounded, to sig
 * significant digits (whole ns below 1 us). The decimals are chosen on the value as it prints,
 * not as it is: 9999 ns rounds to "10.0us" (3 digits), never "10.00us", and 999.7 ns is
 * "1.000us", never "1000ns". down: never above ns (a lower bound).
 */
static char *fmt_sig(char *buf, size_t len, double ns, int sig, bool down)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	double v = ns, lim;
	char num[48];
	int u, d, k;

	for (u = 0;; u++, v /= 1000) {
		for (d = u ? sig - 1 : 0; d >= 0; d--) {
			fmt_dec(num, sizeof(num), v, d, down);
			for (lim = 1, k = d ? sig - d : 3; k > 0; k--)	/* d decimals: below 10^(sig-d) */
				lim *= 10;
			if (strtod(num, NULL) < lim || (u == 3 && !d)) {
				snprintf(buf, len, "%s%s", num, unit[u]);
				return buf;
			}
		}
	}
}

static char *fmt_ns_as(char *buf, size_t len, uint64_t ns, bool in_ms, bool down)
{
	char num[48];

	if (in_ms) {
		/* 3 decimals, and below 0.1 ms as many more (up to whole ns) as 3 significant
		 * digits need: 296 ns is "0.000296ms", not "0.000ms" */
		double v = (double)ns / 1e6, lim = 0.1;
		int d;

		for (d = 3;; d++, lim /= 10) {
			fmt_dec(num, sizeof(num), v, d, down);
			if (d == 6 || !ns || strtod(num, NULL) >= lim)
				break;
		}
		snprintf(buf, len, "%sms", num);
		return buf;
	}
	return fmt_sig(buf, len, (double)ns, 3, down);
}

char *fmt_ns(char *buf, size_t len, uint64_t ns, bool in_ms)
{
	return fmt_ns_as(buf, len, ns, in_ms, false);
}

char *fmt_ns4(char *buf, size_t len, double ns)
{
	return fmt_sig(buf, len, ns, 4, false);
}
