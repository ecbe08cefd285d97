// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sbuf.h"
#include "utf8.h"

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
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	va_list ap;
	int n;

	/* into the room there is, most of the time: formatted once */
	va_start(ap, fmt);
	n = b->oom ? -1 : vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < room) {
		b->len += (size_t)n;
		return;
	}
	if (n < 0 || !grow(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void sbuf_esc(struct sbuf *b, const char *s)
{
	const unsigned char *p;
	uint32_t prev = 0;	/* the character before, for a variation selector (utf8_shown) */
	int n;

	for (p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x80)
			prev = *p >= 0x20 && *p != 0x7f ? *p : 0;
		switch (*p) {
		case '&': sbuf_puts(b, "&amp;"); break;
		case '<': sbuf_puts(b, "&lt;"); break;
		case '>': sbuf_puts(b, "&gt;"); break;
		case '"': sbuf_puts(b, "&quot;"); break;
		case '\'': sbuf_puts(b, "&#39;"); break;
		default:
			/*
			 * Well-formed UTF-8 goes through (the page is UTF-8): two processes named
			 * in Cyrillic stay two. Control characters (C0 but tab and newline, DEL,
			 * C1), which XML 1.0 refuses or discourages, U+FFFE and U+FFFF, which it
			 * refuses, and bytes of no well-formed sequence (a name need not be
			 * UTF-8) are '?'; so are bidirectional controls and invisible characters
			 * (utf8_hidden), as on a terminal: a browser applies them too, and no
			 * isolation (<bdi>) would keep an override from reversing the name itself,
			 * nor reach a <title> tooltip or an attribute. A variation selector where
			 * it picks how the character before it is drawn is kept (utf8_shown).
			 */
			n = utf8_len(p);
			if (n > 1 && !utf8_xml_bad(p, n) && utf8_shown(p, &n, &prev)) {
				sbuf_put(b, (const char *)p, (size_t)n);
				p += n - 1;
			} else if (n > 1) {
				sbuf_put(b, "?", 1);
				prev = 0;
				p += n - 1;
			} else if ((*p < 0x20 && *p != '\t' && *p != '\n') || *p >= 0x7f) {
				prev = 0;
				sbuf_put(b, "?", 1);
			} else {
				sbuf_put(b, (const char *)p, 1);
			}
		}
	}
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
