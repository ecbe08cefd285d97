/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A growable string: appended to, read whole. Out of memory is sticky and checked at the end. */
#ifndef IOSTRATA_SBUF_H
#define IOSTRATA_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
	char *p;		/* NUL-terminated once anything is appended */
	size_t len, cap;
	bool oom;
};

void sbuf_put(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empty it, keeping the memory. */
void sbuf_reset(struct sbuf *b);
void sbuf_free(struct sbuf *b);

#endif
