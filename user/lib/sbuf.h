/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A growable text buffer: what the report's renderers build an SVG or a page in. */
#ifndef IOSTRATA_SBUF_H
#define IOSTRATA_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;	/* an append failed: the buffer is incomplete */
};

void sb_put(struct sbuf *b, const char *s, size_t n);
void sb_puts(struct sbuf *b, const char *s);
void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with &, <, >, " and ' escaped for HTML/XML text and attributes. */
void sb_esc(struct sbuf *b, const char *s);
void sb_free(struct sbuf *b);

#endif
