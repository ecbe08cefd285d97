// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sbuf.h"

static bool grow(struct sbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->oom)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	while (b->len + n + 1 > cap)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void sbuf_put(struct sbuf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_put(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !grow(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->p)
		b->p[0] = '\0';
}

void sbuf_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
