/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Renderers of the interval model: they take an interval, never a BPF map. */
#ifndef IOSTRATA_OUTPUT_H
#define IOSTRATA_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>
#include "interval.h"
#include "reqrec.h"

struct text_opts {
	bool ms;		/* -m: milliseconds */
	bool timestamps;	/* -T */
	bool waterfall;		/* -W */
};

/* The terminal view: a summary per layer and label set, histograms or waterfalls, drops. */
void output_text(const struct interval *iv, const struct text_opts *o, FILE *f);
/* One NDJSON line; -1 when it could not be written whole. */
int output_json(const struct interval *iv, FILE *f);
/* The same record, appended to w (one line once flushed). */
struct jw;
void output_json_build(const struct interval *iv, struct jw *w);

/*
 * snoop: a slow request, as a line under output_req_header's, or as an NDJSON "snoop" record;
 * then the counts: records the ring buffer had no room for (lost, in an interval: printed only
 * when not 0) and, at the end, printed and lost in all, and the block completions no BPF
 * program received (complete_unseen: such a request cannot be printed, slow or not). -1 when
 * not written whole.
 */
#define SNOOP_NF_MAX 32
struct snoop_counts {
	uint64_t printed, lost, unseen;
	/*
	 * Every other drop, by name: requests iostrata could not follow (a table full, an entry
	 * stale after 120 s, a pointer it could not read...). A slow one among them is not shown.
	 */
	struct {
		char name[48];
		uint64_t n;
	} nf[SNOOP_NF_MAX];
	int nnf;
};
/* Add n to nf's count for name (a new name past SNOOP_NF_MAX goes to the last). */
void snoop_nf_add(struct snoop_counts *c, const char *name, uint64_t n);
/* Sum of the nf counts. */
uint64_t snoop_nf_sum(const struct snoop_counts *c);
int output_req_header(FILE *f);
int output_req_text(const struct req_rec *r, FILE *f);
int output_req_json(const struct req_rec *r, FILE *f);
int output_snoop_counts_text(uint64_t ts_ns, bool final, const struct snoop_counts *c, FILE *f);
int output_snoop_counts_json(uint64_t ts_ns, bool final, const struct snoop_counts *c, FILE *f);

#endif
