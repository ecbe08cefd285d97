/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Prometheus renderer: intervals folded into cumulative counts kept in user space, and the
 * text exposition format (version 0.0.4) of those counts. It never touches a BPF map: serve
 * drains the session into prom_add() each interval and a scrape renders what is here.
 *
 * Not thread-safe: the caller serialises prom_add() and prom_render().
 */
#ifndef IOSTRATA_PROM_H
#define IOSTRATA_PROM_H

#include <stdbool.h>
#include <stdint.h>
#include "interval.h"
#include "sbuf.h"

#define PROM_MAX_SERIES_DEFAULT 1000
#define PROM_MAX_SERIES_LIMIT 100000
/* An hour: a process or container gone for that long gives its label sets' room back. */
#define PROM_EXPIRE_DEFAULT_NS (3600ULL * 1000000000ULL)
/* Values below 2^PROM_FLOOR_LOG2 ns (256 ns) share the first bucket. */
#define PROM_FLOOR_LOG2 8

struct prom_opts {
	int buckets_per_octave;	/* 1, 2, 4 or 8: iostrata's 16 per octave merged */
	uint32_t max_series;	/* latency label sets; the excess is folded into "other" */
	uint64_t expire_ns;	/* a label set idle this long is dropped (its room freed); 0 never */
	bool comm;		/* a comm label (-P), never a pid */
	bool opcode;		/* an opcode label (-O) */
	bool cgroup;		/* a cgroup label (-C): the submitter's cgroup v2 path */
};

struct prom;

struct prom *prom_new(const struct prom_opts *o);
void prom_free(struct prom *p);
/*
 * Add an interval's records and counters; -1 when out of memory (nothing half added). Then the
 * label sets no I/O came to for expire_ns (by the interval's monotonic end) are dropped.
 */
int prom_add(struct prom *p, const struct interval *iv);
/* How many intervals were added so far (a renderer caches on it). */
uint64_t prom_intervals(const struct prom *p);
/* Append every family of accumulated counts in the text format. */
void prom_render(const struct prom *p, struct sbuf *out);

/* Upper edges of the merged buckets, in ns (the largest value each holds; the last, the
 * overflow, is +Inf and not listed); returns how many. */
int prom_bucket_edges(const struct prom *p, uint64_t *le_ns, int max);

/* For the other families a command adds: "# HELP" and "# TYPE" lines, and ns as seconds. */
void prom_family(struct sbuf *out, const char *name, const char *type, const char *help);
void prom_seconds(struct sbuf *out, uint64_t ns);

#endif
