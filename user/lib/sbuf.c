// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sbuf.h"

static bool grow(struct sbuf *b, size_t n)
{
	size_t cap;
	char *s;

	if (b->oom)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 65536;
	while (cap < b->len + n + 1)
		cap *= 2;
	s = realloc(b->s, cap);
	if (!s) {
		b->oom = true;
		return false;
	}
	b->s = s;
	b->cap = cap;
	return true;
}

void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void sb_puts(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!grow(b, 256))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		if (!grow(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void sb_esc(struct sbuf *b, const char *s)
{
	const char *p;

	for (p = s; *p; p++) {
		switch (*p) {
		case '&': sb_puts(b, "&amp;"); break;
		case '<': sb_puts(b, "&lt;"); break;
		case '>': sb_puts(b, "&gt;"); break;
		case '"': sb_puts(b, "&quot;"); break;
		case '\'': sb_puts(b, "&#39;"); break;
		default:
			/* control characters are not allowed in XML 1.0, and a process or host
			 * name need not be UTF-8: only ASCII goes through */
			if (((unsigned char)*p < 0x20 && *p != '\t' && *p != '\n') ||
			    (unsigned char)*p >= 0x7f)
				sb_put(b, "?", 1);
			else
				sb_put(b, p, 1);
		}
	}
}

void sb_free(struct sbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}
