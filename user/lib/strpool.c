// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "strpool.h"

const char *strpool_intern(struct strpool *p, const char *s)
{
	char **v;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], s))
			return p->v[i];
	v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	p->v = v;
	if (!(v[p->n] = strdup(s)))
		return NULL;
	return v[p->n++];
}

void strpool_free(struct strpool *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}
