// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
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

char *fmt_pct(char *buf, size_t len, const struct hist *h, uint32_t p_ppm, bool in_ms,
	      const char *ge)
{
	uint64_t v;
	char n[32];

	switch (hist_pct(h, p_ppm, &v)) {
	case HIST_P_VALUE:
		return fmt_ns(buf, len, v, in_ms);
	case HIST_P_ABOVE:
		snprintf(buf, len, "%s%s", ge, fmt_ns(n, sizeof(n), v, in_ms));
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

char *fmt_ns(char *buf, size_t len, uint64_t ns, bool in_ms)
{
	double v = (double)ns;

	if (in_ms)
		snprintf(buf, len, "%.3fms", v / 1e6);
	else if (ns < 1000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 999500)	/* what would round to "1000us" is "1.00ms" */
		snprintf(buf, len, "%.*fus", v < 1e4 ? 2 : v < 1e5 ? 1 : 0, v / 1e3);
	else if (ns < 999500000)
		snprintf(buf, len, "%.*fms", v < 1e7 ? 2 : v < 1e8 ? 1 : 0, v / 1e6);
	else
		snprintf(buf, len, "%.2fs", v / 1e9);
	return buf;
}

char *fmt_ns4(char *buf, size_t len, double ns)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	int u = 0;

	if (ns < 999.5) {	/* what would round to "1000ns" is "1.000us" */
		snprintf(buf, len, "%.0fns", ns);
		return buf;
	}
	while (u < 3 && ns >= 999.95) {
		ns /= 1000;
		u++;
	}
	snprintf(buf, len, "%.*f%s", ns < 9.9995 ? 3 : ns < 99.995 ? 2 : 1, ns, unit[u]);
	return buf;
}
