/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one reader of recordings (`iostrata record`, or `iostrata -j` output): NDJSON, plain or
 * gzip, tokenized by jsmn, each interval record handed back as the in-memory interval every
 * renderer takes. Damage is said, never crashed on: a last line cut short, a newer or older
 * format are warnings (what is there is read); garbage, an empty file, a directory, a line
 * past RECREAD_MAX_LINE, a bucket outside this build's scheme, an interval read twice (the same
 * ts and interval_ns: the file repeated) are one-line errors.
 */
#ifndef IOSTRATA_RECREAD_H
#define IOSTRATA_RECREAD_H

#include <stddef.h>
#include <stdint.h>
#include "interval.h"

#define RECREAD_FORMAT		1		/* the newest format this build knows */
#define RECREAD_MAX_LINE	(64u << 20)	/* no record of ours comes near it */

/* A label: value pair of the meta or end record, for display. */
struct recread_kv {
	char *key, *val;
};

struct recread_meta {
	int format;			/* 0: no meta record (older file, or iostrata -j output) */
	char *host, *kernel, *version, *command;
	long cpus;
	uint64_t start_ns;
	struct recread_kv *kv;		/* options, layers and attach points, disks, ... */
	size_t nkv;
};

struct recread_end {
	char *reason;
	uint64_t intervals, duration_ns;
};

enum recread_kind { RR_EOF, RR_META, RR_INTERVAL, RR_END, RR_ERROR };

struct recread;

/* Open path. NULL with one line said (missing, a directory, empty). */
struct recread *recread_open(const char *path);
/*
 * The next record: RR_INTERVAL fills iv (cleared first), RR_META and RR_END fill the reader's
 * meta / end (recread_meta, recread_end). RR_EOF at the end (warnings said), RR_ERROR with
 * one line said.
 */
enum recread_kind recread_next(struct recread *r, struct interval *iv);
const struct recread_meta *recread_meta(const struct recread *r);
const struct recread_end *recread_end(const struct recread *r);
/* Records read so far of each kind. */
uint64_t recread_intervals(const struct recread *r);
void recread_close(struct recread *r);

/*
 * The runs of the recordings read so far, each known by its meta record's host and start and
 * by its first interval's end and length (iostrata -j output has no meta record; a recording
 * and that output of the same run share the first): one copied under another name, read
 * twice, would count its I/O twice. Zeroed to start.
 */
struct recread_runs {
	struct recread_run *v;
	size_t n;
};
/*
 * file's run noted, from its meta record m (iv NULL), or from its first interval iv: 0; -1 said
 * when an earlier file held the same run (or memory).
 */
int recread_runs_add(struct recread_runs *rs, const char *file, const struct recread_meta *m,
		     const struct interval *iv);
void recread_runs_free(struct recread_runs *rs);

#endif
