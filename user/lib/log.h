/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Diagnostics: one error line ("iostrata: error: ..." or a JSON error record under -j), and
 * verbose notes under -v. The state is this module's own, set once by the command.
 */
#ifndef IOSTRATA_LOG_H
#define IOSTRATA_LOG_H

#include <stdbool.h>

/* The program name errors carry, JSON errors, and the -v level; also routes libbpf's log. */
void log_init(const char *prog, bool json, int verbose);
int log_verbosity(void);
bool log_json(void);

/* One line on stderr: "PROG: error: ..." or {"type":"error","message":...} under -j. */
void errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One warning line on stderr: "PROG: warning: ...". */
void warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Warnings held back from now (report, compare: a reader's warnings come at a file's end,
 * and an error found after them must stand alone, one line): said by log_flush_warnings(),
 * dropped by an error. At most 16 are kept, then a count of the others.
 */
void log_defer_warnings(void);
void log_flush_warnings(void);
/* Diagnostics shown under -v only. */
void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * While muted, errorf() speaks only under -v and keeps the first message: an optional layer
 * that cannot start is skipped, and its reason is shown only if nothing else could start.
 */
void log_mute(bool on);
/* The first error said while muted since the last log_mute(true); "" if none. */
const char *log_muted_error(void);

#endif
