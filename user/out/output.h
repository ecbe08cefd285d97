/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Renderers of the interval model: they take an interval, never a BPF map. */
#ifndef IOSTRATA_OUTPUT_H
#define IOSTRATA_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>
#include "interval.h"

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

#endif
