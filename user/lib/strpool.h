/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Names kept as long as their owner: each distinct string stored once. */
#ifndef IOSTRATA_STRPOOL_H
#define IOSTRATA_STRPOOL_H

#include <stddef.h>

struct strpool {
	char **v;
	size_t n;
};

/* The pool's copy of s (made on first use); NULL when out of memory. */
const char *strpool_intern(struct strpool *p, const char *s);
void strpool_free(struct strpool *p);

#endif
