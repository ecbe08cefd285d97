/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The log-linear latency histogram shared by the BPF programs, the loaders and the load
 * generator. One definition, so a value lands in the same bucket wherever it is counted.
 *
 * Scheme (the HDR / fio family, with HIST_SUB_BITS = 4):
 *   - values below 16 ns get one bucket each (exact);
 *   - from 16 ns up, each power-of-two octave [2^m, 2^(m+1)) is cut into 16 equal buckets of
 *     width 2^(m-4);
 *   - values at or above 2^HIST_MAX_LOG2 ns (68.7 s) share one overflow bucket.
 * A bucket [lo, hi) reported at its midpoint is off by at most (hi - lo) / 2 / lo =
 * 1 / (2 * 16) = 3.125 % of the true value (worst case at the bottom of each octave), and the
 * exact min/max kept beside the buckets bound the reported percentiles further.
 *
 * HIST_NSLOTS = 16 exact + (HIST_MAX_LOG2 - 4) * 16 octave buckets + 1 overflow = 529.
 */
#ifndef IOSTRATA_HIST_H
#define IOSTRATA_HIST_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define HIST_SUB_BITS	4
#define HIST_SUB	(1u << HIST_SUB_BITS)		/* buckets per octave */
#define HIST_MAX_LOG2	36				/* 2^36 ns = 68.7 s */
#define HIST_OVERFLOW	(HIST_SUB + (HIST_MAX_LOG2 - HIST_SUB_BITS) * HIST_SUB)
#define HIST_NSLOTS	(HIST_OVERFLOW + 1)

/* The worst-case relative error of a midpoint, in parts per million: 1/32. */
#define HIST_MAX_REL_ERR_PPM	31250

struct hist {
	__u64 count;		/* events measured into this histogram */
	__u64 sum_ns;		/* exact sum of the measured values */
	__u64 min_ns;		/* exact, valid when count > 0 */
	__u64 max_ns;		/* exact */
	__u64 unmeasured;	/* events seen whose value for this stage could not be known */
	/*
	 * BPF: nonzero in spill slots (docs/design.md, "Histogram keys on hosts with many CPUs"),
	 * which every CPU writes at once and so updates atomically; 0 anywhere else.
	 */
	__u64 shared;
	__u64 slots[HIST_NSLOTS];
};

/* Index of the most significant set bit of v (v > 0): a shift cascade, since BPF has no clz. */
static inline __u32 hist_msb(__u64 v)
{
	__u32 r = 0, s;

	s = (v > 0xffffffffULL) << 5; v >>= s; r |= s;
	s = (v > 0xffffULL) << 4;     v >>= s; r |= s;
	s = (v > 0xffULL) << 3;       v >>= s; r |= s;
	s = (v > 0xfULL) << 2;        v >>= s; r |= s;
	s = (v > 0x3ULL) << 1;        v >>= s; r |= s;
	r |= (__u32)(v >> 1);
	return r;
}

static inline __u32 hist_index(__u64 v)
{
	__u32 m;

	if (v < HIST_SUB)
		return (__u32)v;
	m = hist_msb(v);
	if (m >= HIST_MAX_LOG2)
		return HIST_OVERFLOW;
	/* octave m starts at slot (m - 3) * 16; the 4 bits under the msb pick the sub-bucket */
	return ((m - HIST_SUB_BITS + 1) << HIST_SUB_BITS) +
	       (__u32)((v >> (m - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* Inclusive lower bound of slot i. */
static inline __u64 hist_lo(__u32 i)
{
	__u32 m;

	if (i < HIST_SUB)
		return i;
	if (i >= HIST_OVERFLOW)
		return 1ULL << HIST_MAX_LOG2;
	m = (i >> HIST_SUB_BITS) + HIST_SUB_BITS - 1;
	return (__u64)(HIST_SUB + (i & (HIST_SUB - 1))) << (m - HIST_SUB_BITS);
}

/* Exclusive upper bound of slot i; the overflow slot is open-ended (~0). */
static inline __u64 hist_hi(__u32 i)
{
	if (i >= HIST_OVERFLOW)
		return ~0ULL;
	if (i < HIST_SUB)
		return i + 1;
	return hist_lo(i) + (1ULL << (((i >> HIST_SUB_BITS) + HIST_SUB_BITS - 1) - HIST_SUB_BITS));
}

/*
 * Count v. Not atomic: each writer owns its histogram (a per-CPU copy written by one program
 * that the kernel never runs nested on a CPU, or one job thread's). A shared spill map's
 * histograms are counted by hist_add_shared() in bpf/common.bpf.h instead.
 */
static inline void hist_record(struct hist *h, __u64 v)
{
	__u32 i = hist_index(v);

	if (i >= HIST_NSLOTS)		/* cannot happen; bounds the index for the verifier */
		i = HIST_NSLOTS - 1;
	h->slots[i]++;
	if (!h->count || v < h->min_ns)
		h->min_ns = v;
	if (v > h->max_ns)
		h->max_ns = v;
	h->count++;
	h->sum_ns += v;
}

#endif /* IOSTRATA_HIST_H */
