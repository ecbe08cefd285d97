// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "utf8.h"
#include "hist.h"

void jw_init(struct jw *w)
{
	memset(w, 0, sizeof(*w));
	w->first[0] = true;
}

void jw_free(struct jw *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

static void put(struct jw *w, const char *s, size_t n)
{
	if (w->oom)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		char *b;

		while (w->len + n + 1 > cap)
			cap *= 2;
		b = realloc(w->buf, cap);
		if (!b) {
			w->oom = true;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void putf(struct jw *w, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(w, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void put_string(struct jw *w, const char *s)
{
	const unsigned char *p;

	put(w, "\"", 1);
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': put(w, "\\\"", 2); break;
		case '\\': put(w, "\\\\", 2); break;
		case '\n': put(w, "\\n", 2); break;
		case '\t': put(w, "\\t", 2); break;
		case '\r': put(w, "\\r", 2); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				putf(w, "\\u%04x", *p);
			} else if (*p < 0x80) {
				put(w, (const char *)p, 1);
			} else {
				/* a name from the host need not be UTF-8: JSON must be */
				int n = utf8_len(p);

				/*
				 * C1 controls (U+0080..U+009F) and U+2028/U+2029 escaped: valid
				 * JSON raw, but line breaks to Unicode (Python's splitlines()
				 * splits at NEL, U+0085), so a name would cut its record in two.
				 * Bidirectional controls and invisible characters (utf8_hidden)
				 * escaped too: the name is kept, but -j on a terminal, or a record
				 * read with less, does not show it as another
				 */
				uint32_t cp = n ? utf8_cp(p, n) : 0;

				if ((n == 2 && p[0] == 0xc2 && p[1] < 0xa0) ||
				    (n && utf8_hidden(cp))) {
					if (cp >= 0x10000)	/* a surrogate pair */
						putf(w, "\\u%04x\\u%04x",
						     0xd800 + ((cp - 0x10000) >> 10),
						     0xdc00 + ((cp - 0x10000) & 0x3ff));
					else
						putf(w, "\\u%04x", cp);
					p += n - 1;
				} else if (n) {
					put(w, (const char *)p, (size_t)n);
					p += n - 1;
				} else {
					put(w, "\\ufffd", 6);
				}
			}
		}
	}
	put(w, "\"", 1);
}

static void member(struct jw *w, const char *key)
{
	if (!w->first[w->depth])
		put(w, ",", 1);
	w->first[w->depth] = false;
	if (key) {
		put_string(w, key);
		put(w, ":", 1);
	}
}

static void open_(struct jw *w, const char *key, const char *c)
{
	member(w, key);
	put(w, c, 1);
	if (w->depth + 1 < JW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_(struct jw *w, const char *c)
{
	put(w, c, 1);
	if (w->depth > 0)
		w->depth--;
}

void jw_obj(struct jw *w, const char *key) { open_(w, key, "{"); }
void jw_end_obj(struct jw *w) { close_(w, "}"); }
void jw_arr(struct jw *w, const char *key) { open_(w, key, "["); }
void jw_end_arr(struct jw *w) { close_(w, "]"); }

void jw_str(struct jw *w, const char *key, const char *val)
{
	member(w, key);
	put_string(w, val);
}

void jw_u64(struct jw *w, const char *key, uint64_t val)
{
	member(w, key);
	putf(w, "%llu", (unsigned long long)val);
}

void jw_i64(struct jw *w, const char *key, int64_t val)
{
	member(w, key);
	putf(w, "%lld", (long long)val);
}

/*
 * The fewest digits that read back as val: "0.0625", "280071.5", never a 6-digit cut (a CI
 * bound of 0.93749996 was written 0.9375, on the band's edge, beside a verdict off it).
 */
static const char *f64_shortest(char *buf, size_t len, double val)
{
	int p;

	for (p = 6; p < 17; p++) {
		snprintf(buf, len, "%.*g", p, val);
		if (strtod(buf, NULL) == val)
			return buf;
	}
	snprintf(buf, len, "%.17g", val);
	return buf;
}

void jw_f64(struct jw *w, const char *key, double val)
{
	char buf[32];

	if (!isfinite(val)) {
		jw_null(w, key);
		return;
	}
	member(w, key);
	putf(w, "%s", f64_shortest(buf, sizeof(buf), val));
}

void jw_bool(struct jw *w, const char *key, bool val)
{
	member(w, key);
	put(w, val ? "true" : "false", val ? 4 : 5);
}

void jw_null(struct jw *w, const char *key)
{
	member(w, key);
	put(w, "null", 4);
}

int jw_flush_line(struct jw *w, FILE *f)
{
	int err = 0;

	if (w->oom)
		err = -1;
	else if (w->len) {
		put(w, "\n", 1);
		if (fwrite(w->buf, 1, w->len, f) != w->len || fflush(f))
			err = -1;
	}
	w->len = 0;
	w->depth = 0;
	w->first[0] = true;
	if (w->buf)
		w->buf[0] = '\0';
	return err;
}

void jw_hist_buckets(struct jw *w, const char *key, const struct hist *h)
{
	uint32_t i;

	jw_arr(w, key);
	for (i = 0; i < HIST_NSLOTS; i++) {
		if (!h->slots[i])
			continue;
		jw_arr(w, NULL);
		jw_u64(w, NULL, hist_lo(i));
		if (i >= HIST_OVERFLOW)
			jw_null(w, NULL);
		else
			jw_u64(w, NULL, hist_hi(i));
		jw_u64(w, NULL, h->slots[i]);
		jw_end_arr(w);
	}
	jw_end_arr(w);
}
