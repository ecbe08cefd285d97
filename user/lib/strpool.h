/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Names kept as long as their owner: each distinct string stored once, found by hash. */
#ifndef IOSTRATA_STRPOOL_H
#define IOSTRATA_STRPOOL_H

#include <stddef.h>

struct strpool {
	char **v;
	size_t n;
	size_t *tab;	/* open addressing: index + 1 into v, 0 = empty */
	size_t cap;	/* a power of two, at least twice n */
};

/* The pool's copy of s (made on first use); NULL when out of memory. */
const char *strpool_intern(struct strpool *p, const char *s);
void strpool_free(struct strpool *p);

#endif
