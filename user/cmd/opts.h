/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The options every tracing command takes alike (trace, snoop, ...): what to trace and where,
 * and the testing ones. A command adds TRACE_OPTS_SHORT and TRACE_OPTS_LONG to its getopt
 * tables, hands each option to trace_opt() first, calls trace_opts_finish() after the loop, and
 * prints trace_opts_help / trace_opts_testing_help in its --help.
 */
#ifndef IOSTRATA_OPTS_H
#define IOSTRATA_OPTS_H

#include <getopt.h>
#include "config.h"

#define TRACE_OPTS_SHORT "d:p:c:l:v"
/* long-only options: above any command's own (which start at 256) */
enum { OPT_COMM = 512, OPT_INFLIGHT, OPT_FAIL_PROBE, OPT_FORCE_RAW_TP, OPT_DURATION };
#define TRACE_OPTS_LONG								\
	{ "disk", required_argument, NULL, 'd' },				\
	{ "pid", required_argument, NULL, 'p' },				\
	{ "cgroup", required_argument, NULL, 'c' },				\
	{ "layers", required_argument, NULL, 'l' },				\
	{ "comm", required_argument, NULL, OPT_COMM },				\
	{ "inflight", required_argument, NULL, OPT_INFLIGHT },			\
	{ "fail-probe", required_argument, NULL, OPT_FAIL_PROBE },		\
	{ "force-raw-tp", no_argument, NULL, OPT_FORCE_RAW_TP },		\
	{ "duration", required_argument, NULL, OPT_DURATION },			\
	{ "verbose", no_argument, NULL, 'v' }

/* What the options named, resolved once they are all read. */
struct trace_opts {
	const char *disk, *pid;
	double duration_s;	/* --duration; 0 = until stopped */
	int verbose;		/* -v, -vv */
};

/* Before the first trace_getopt: nothing named yet, getopt from argv[1], its messages ours. */
void trace_opts_start(struct trace_opts *t);
/*
 * getopt_long (optstring starting ":" TRACE_OPTS_SHORT), taking the shared options into c and t
 * itself: returns the next option that is the command's own (':' or '?' for a problem, as
 * getopt_long), -1 at the end, or TRACE_OPT_BAD after a bad value (said).
 */
#define TRACE_OPT_BAD (-2)
int trace_getopt(int argc, char **argv, const char *optstring, const struct option *longopts,
		 struct trace_config *c, struct trace_opts *t);
/* After the options: the disk and process named, the cgroup checked. 0, or -1 said. */
int trace_opts_finish(struct trace_config *c, const struct trace_opts *t);

/* Their --help lines: the filters and -l; --duration; the testing options; -v. */
extern const char trace_opts_help[];
extern const char trace_opts_duration_help[];
extern const char trace_opts_testing_help[];
extern const char trace_opts_verbose_help[];

struct session;
/*
 * A command's start once its options are read: logging as -j and -v say, root checked,
 * SIGINT/SIGTERM set to stop, the session opened. 0, or -1 with one line said.
 */
int trace_session_open(const struct trace_config *c, bool json, int verbose, struct session **s);
/* A sink's answer after writing to stdout (err: its -1): 0 written, -1 a closed pipe (stop
 * quietly), 1 any other error (said). */
int sink_written(int err);

/* Positive seconds (INTERVAL, --duration); an integer in [min, max]. 0, or -1 said. */
int parse_seconds(const char *what, const char *s, double *out);
int parse_long(const char *what, const char *s, long min, long max, long *out);
/* ... and a power of two */
int parse_pow2(const char *what, const char *s, long min, long max, long *out);

#endif
