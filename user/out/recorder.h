/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A recording as `iostrata record` writes it and `iostrata report` / `compare` read it: a meta
 * record, the interval records, an end record (NDJSON, docs/interval.schema.json), through
 * recfile (each line whole). record writes one; sched-ab one per round.
 */
#ifndef IOSTRATA_RECORDER_H
#define IOSTRATA_RECORDER_H

#include <stdbool.h>
#include "config.h"
#include "interval.h"
#include "layer.h"
#include "session.h"

struct jw;
struct recorder;

/* What the meta record says about the run. */
struct rec_meta {
	const struct trace_config *cfg;
	const struct run_limits *lim;
	int argc;
	char **argv;
	const struct session *s;
	const struct layer_report *reps;	/* from session_open */
	/* more members of the meta record (sched-ab: its round), or NULL */
	void (*extra)(struct jw *w, const void *arg);
	const void *extra_arg;
};

/* Create path: refused if it exists unless force. echo: every line to stdout too (-j). NULL
 * with one line said. */
struct recorder *recorder_create(const char *path, bool force, bool echo);
/* The meta record, first. 0, or 1 said. */
int recorder_meta(struct recorder *rc, const struct rec_meta *m);
/* An interval record, added to the totals of the end record. 0, or 1 said. */
int recorder_interval(struct recorder *rc, const struct interval *iv);
/* Intervals written so far. */
long recorder_intervals(const struct recorder *rc);
/* Has stdout, echoed to, gone away (a closed pipe)? The file goes on regardless. */
bool recorder_echo_closed(const struct recorder *rc);
/* Why the copy on stdout failed, when not a closed pipe (a full disk): an errno, or 0. */
int recorder_echo_errno(const struct recorder *rc);
/* The end record (reason: signal, count, duration, error, ...), then close. 0, or 1 said. */
int recorder_close(struct recorder *rc, const char *reason);
/* Close and remove: nothing was recorded (tracing could not start). */
void recorder_discard(struct recorder *rc);

#endif
