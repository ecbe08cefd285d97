// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "strpool.h"

static size_t hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (size_t)(h ^ h >> 29);
}

static int grow(struct strpool *p)
{
	size_t cap = p->cap ? p->cap * 2 : 64, i, j;
	size_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -1;
	for (i = 0; i < p->n; i++) {
		for (j = hash(p->v[i]) & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = i + 1;
	}
	free(p->tab);
	p->tab = t;
	p->cap = cap;
	return 0;
}

/* Linear in the string's length, whatever the pool holds (label sets by the ten thousand). */
const char *strpool_intern(struct strpool *p, const char *s)
{
	char **v;
	size_t i;

	if ((p->n + 1) * 2 > p->cap && grow(p))
		return NULL;
	for (i = hash(s) & (p->cap - 1); p->tab[i]; i = (i + 1) & (p->cap - 1))
		if (!strcmp(p->v[p->tab[i] - 1], s))
			return p->v[p->tab[i] - 1];
	v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	p->v = v;
	if (!(v[p->n] = strdup(s)))
		return NULL;
	p->tab[i] = ++p->n;
	return v[p->n - 1];
}

void strpool_free(struct strpool *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	free(p->tab);
	p->v = NULL;
	p->tab = NULL;
	p->n = p->cap = 0;
}
