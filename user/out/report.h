/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report of one or more recordings: intervals in, one self-contained HTML page (inline SVG
 * heatmaps, waterfalls, summary tables, drops, the recording's meta) and optionally one SVG
 * file per panel out. It keeps every interval's non-empty buckets, sparse, and bins them into
 * panels only when it writes.
 */
#ifndef IOSTRATA_REPORT_H
#define IOSTRATA_REPORT_H

#include <stdbool.h>
#include "interval.h"
#include "recread.h"

struct report_opts {
	int top;		/* label sets per layer given panels of their own */
	bool sqrt_scale;	/* colour by sqrt(count), not log(1 + count) */
	const char *html;	/* the page */
	const char *svg_dir;	/* NULL, or a directory for one SVG per panel */
	bool force;		/* replace files that exist (never anything but regular files) */
};

struct report;

struct report *report_new(const struct report_opts *o);
/* Each recording's meta and end record, as its reader has them. */
int report_add_meta(struct report *r, const char *file, const struct recread_meta *m);
void report_add_end(struct report *r, const char *file, const struct recread_end *e);
/* A file that ended without its end record (cut short), said on the page. */
void report_add_note(struct report *r, const char *note);
/*
 * One interval of file: its buckets kept sparse, its drops and events summed. 0, or -1 (said):
 * out of memory, or counts that would wrap round 2^64 summed with the others.
 */
int report_add_interval(struct report *r, const char *file, const struct interval *iv);
/* Write the page (and the SVGs): each file whole or not at all. 0, or -1 with one line said. */
int report_write(struct report *r);
void report_free(struct report *r);

#endif
