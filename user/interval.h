/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The in-memory interval: what a session's drain produces and every renderer takes. The same
 * fields as the NDJSON record (docs/interval.schema.json): per layer, stage and label set, a
 * histogram with its unmeasured count; the drops and the traced applications' events.
 */
#ifndef IOSTRATA_INTERVAL_H
#define IOSTRATA_INTERVAL_H

#include <stddef.h>
#include <stdint.h>
#include "cgroups.h"
#include "histfmt.h"

/*
 * A comm's room: the kernel's 15 bytes (TASK_COMM_LEN), as a recording gives them back. The
 * kernel cuts a name at 15 bytes, inside a UTF-8 character as often as not; each byte of no
 * character is written U+FFFD (3 bytes) and read so: "\u00e9" x 7 and a cut byte is 17 bytes.
 */
#define REC_COMM_LEN	(15 * 3 + 1)

/*
 * A record's identity: its layer, stage and labels. Labels "" (or pid 0) are not labels of
 * the record; cgroup (-C) is the cgroup v2 path, or "cgroup:ID" when it cannot be found.
 */
#define REC_ID_FIELDS							\
	const char *layer;						\
	const char *stage;						\
	int stage_order;						\
	char disk[32];							\
	char op[24];							\
	char flags[96];							\
	char syscall[24];						\
	char opcode[24];						\
	uint32_t pid;							\
	char comm[REC_COMM_LEN];					\
	char cgroup[CGROUP_LABEL_LEN];

struct rec_id {
	REC_ID_FIELDS
};

/* One histogram and its identity: r->disk and r->id.disk are the same field (a common initial
 * sequence), so that what keeps identities alone (report's series) keeps no histogram. */
struct rec {
	union {
		struct {
			REC_ID_FIELDS
		};
		struct rec_id id;
	};
	struct hist h;
};

struct recs {
	struct rec *v;
	size_t n, cap;
};

/* A zeroed record at the end; NULL when out of memory. */
struct rec *recs_add(struct recs *r);
/* By layer, labels, then stage order; records with the same layer, labels and stage merged. */
void recs_sort(struct recs *r);
void recs_clear(struct recs *r);
/*
 * The label set as text: "vda read sync", "pid 42 fio", or "all" when it has no labels; of the
 * uring and aio layers, whose records are all keyed by path flags, "no path flag" then.
 */
void rec_labels(const struct rec *r, char *buf, size_t len);
void rec_id_labels(const struct rec_id *r, char *buf, size_t len);
/* The same of a record whose path flags were merged away (cleared): "all" when none is left. */
void rec_id_labels_paths_merged(const struct rec_id *r, char *buf, size_t len);
/* The same with each name as it is (controls, invisible characters, any byte): for JSON, whose
 * writer escapes them, so that it carries the true name (rec_labels' is for a terminal). */
void rec_id_labels_true(const struct rec_id *r, char *buf, size_t len);
/* Room for rec_labels()' text: every label, a cgroup path of CGROUP_LABEL_LEN among them. */
#define REC_LABELS_LEN	(CGROUP_LABEL_LEN + 256)
/* Do a and b carry the same layer and labels (any stage)? */
int rec_same_labels(const struct rec *a, const struct rec *b);
int rec_id_same_labels(const struct rec_id *a, const struct rec_id *b);

/* One named counter of events that could not be recorded (or of the applications' events). */
struct counter {
	const char *name;
	uint64_t n;
};
#define MAX_COUNTERS 48

struct interval {
	uint64_t ts_ns;		/* end of the interval, Unix time */
	uint64_t interval_ns;	/* measured length */
	uint64_t end_mono_ns;	/* CLOCK_MONOTONIC when the interval ended */
	struct recs recs;
	struct counter drops[MAX_COUNTERS];
	int ndrops;
	struct counter events[MAX_COUNTERS];	/* the traced applications' events */
	int nevents;
};

/* Add n to the counter called name (created at the end if new); -1 when full. */
int counters_add(struct counter *c, int *nc, const char *name, uint64_t n);
void interval_clear(struct interval *iv);

#endif
