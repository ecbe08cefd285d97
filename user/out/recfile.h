/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A recording on disk: NDJSON written line by line, each line handed to the kernel whole before
 * the next is made, so that a file cut short (SIGKILL, power loss) reads up to its last whole
 * line. gzip when the name ends in ".gz": every line ends a sync-flushed deflate block.
 */
#ifndef IOSTRATA_RECFILE_H
#define IOSTRATA_RECFILE_H

#include <stdbool.h>
#include <stddef.h>

struct recfile;

/* Create path: refused if it exists unless force. NULL with one line said. */
struct recfile *recfile_create(const char *path, bool force);
/* Append one line (len bytes, without its newline). -1 with errno set. */
int recfile_line(struct recfile *f, const char *buf, size_t len);
/* Close; -1 with one line said when what was written could not be completed. */
int recfile_close(struct recfile *f);
/* Close and remove: nothing was recorded (tracing could not start). */
void recfile_discard(struct recfile *f);

#endif
