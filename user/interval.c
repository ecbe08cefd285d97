// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "interval.h"
#include "utf8.h"

struct rec *recs_add(struct recs *r)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct rec *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->v = v;
		r->cap = cap;
	}
	memset(&r->v[r->n], 0, sizeof(r->v[0]));
	return &r->v[r->n++];
}

void recs_clear(struct recs *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

static int labels_cmp(const struct rec_id *x, const struct rec_id *y)
{
	int c;

	if ((c = strcmp(x->layer, y->layer)))
		return c;
	if ((c = strcmp(x->disk, y->disk)))
		return c;
	if ((c = strcmp(x->op, y->op)))
		return c;
	if ((c = strcmp(x->flags, y->flags)))
		return c;
	if ((c = strcmp(x->syscall, y->syscall)))
		return c;
	if ((c = strcmp(x->opcode, y->opcode)))
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if ((c = strcmp(x->comm, y->comm)))
		return c;
	return strcmp(x->cgroup, y->cgroup);
}

void rec_labels(const struct rec *r, char *buf, size_t len)
{
	rec_id_labels(&r->id, buf, len);
}

/* The uring and aio layers key every record by its path flags: one without any is not all. */
static bool keyed_by_path(const struct rec_id *r)
{
	return r->layer && (!strcmp(r->layer, "uring") || !strcmp(r->layer, "aio"));
}

static void labels_text(const struct rec_id *r, char *buf, size_t len, bool printable,
			bool paths_merged)
{
	const char *parts[8] = { r->disk, r->op, r->opcode, r->flags, r->syscall, NULL, r->comm,
				 r->cgroup };
	char pid[16] = "", part[sizeof(r->cgroup)];
	size_t used = 0, i;

	if (r->pid)
		snprintf(pid, sizeof(pid), "pid %u", r->pid);
	parts[5] = pid;
	buf[0] = '\0';
	for (i = 0; i < 8; i++)
		if (*parts[i] && used < len)	/* names from the host: printable only, if asked */
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "",
						 printable ? utf8_printable(parts[i], part,
									    sizeof(part)) :
							     parts[i]);
	/* beside "io-wq", "all" read as including it: the requests of no path flag are those */
	if (!*buf)
		snprintf(buf, len, "%s", keyed_by_path(r) && !paths_merged ? "no path flag" : "all");
}

void rec_id_labels(const struct rec_id *r, char *buf, size_t len)
{
	labels_text(r, buf, len, true, false);
}

void rec_id_labels_paths_merged(const struct rec_id *r, char *buf, size_t len)
{
	labels_text(r, buf, len, true, true);
}

void rec_id_labels_true(const struct rec_id *r, char *buf, size_t len)
{
	labels_text(r, buf, len, false, false);
}

int rec_same_labels(const struct rec *a, const struct rec *b)
{
	return !labels_cmp(&a->id, &b->id);
}

int rec_id_same_labels(const struct rec_id *a, const struct rec_id *b)
{
	return !labels_cmp(a, b);
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = labels_cmp(&x->id, &y->id);

	return c ? c : x->stage_order - y->stage_order;
}

void recs_sort(struct recs *r)
{
	size_t i, n = 0;

	if (!r->n)
		return;
	qsort(r->v, r->n, sizeof(r->v[0]), rec_cmp);
	/* one record per (layer, labels, stage): the two generations of a final drain fold here */
	for (i = 0; i < r->n; i++) {
		if (n && !rec_cmp(&r->v[n - 1], &r->v[i])) {
			hist_merge(&r->v[n - 1].h, &r->v[i].h);
			continue;
		}
		if (n != i)
			r->v[n] = r->v[i];
		n++;
	}
	r->n = n;
}

int counters_add(struct counter *c, int *nc, const char *name, uint64_t n)
{
	int i;

	for (i = 0; i < *nc; i++) {
		if (!strcmp(c[i].name, name)) {
			c[i].n += n;
			return 0;
		}
	}
	if (*nc == MAX_COUNTERS)
		return -1;
	c[*nc].name = name;
	c[(*nc)++].n = n;
	return 0;
}

void interval_clear(struct interval *iv)
{
	recs_clear(&iv->recs);
	memset(iv, 0, sizeof(*iv));
}
