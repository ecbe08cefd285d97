/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A small streaming JSON writer into a growable buffer; a record is written out whole. */
#ifndef IOSTRATA_JSON_H
#define IOSTRATA_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 16

struct jw {
	char *buf;
	size_t len, cap;
	int depth;
	bool first[JW_MAX_DEPTH];
	bool oom;
};

void jw_init(struct jw *w);
void jw_free(struct jw *w);
/* key is NULL for array elements and the top level */
void jw_obj(struct jw *w, const char *key);
void jw_end_obj(struct jw *w);
void jw_arr(struct jw *w, const char *key);
void jw_end_arr(struct jw *w);
void jw_str(struct jw *w, const char *key, const char *val);
void jw_u64(struct jw *w, const char *key, uint64_t val);
void jw_i64(struct jw *w, const char *key, int64_t val);
/* A number to 6 significant digits; null when it is not finite (NaN, infinity). */
void jw_f64(struct jw *w, const char *key, double val);
void jw_bool(struct jw *w, const char *key, bool val);
void jw_null(struct jw *w, const char *key);
/* "key": [[lo_ns, hi_ns, count], ...] for every non-empty bucket; hi is null for the overflow. */
struct hist;
void jw_hist_buckets(struct jw *w, const char *key, const struct hist *h);
/* Writes the buffer and a newline to f in one call, then empties it; -1 on error. */
int jw_flush_line(struct jw *w, FILE *f);

#endif
