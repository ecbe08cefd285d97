/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The options every tracing command shares (trace, serve): what to trace (filters, layers,
 * stages), the session's knobs and its length. Each command puts TRACE_OPTS_LONG in its own
 * option table and TRACE_OPTS_SHORT in its getopt string, offers every option to trace_opt()
 * first, and calls trace_opts_finish() once the command line is read.
 */
#ifndef IOSTRATA_TRACE_OPTS_H
#define IOSTRATA_TRACE_OPTS_H

#include <getopt.h>
#include <stdio.h>
#include "config.h"
#include "output.h"
#include "session.h"

/* the commands' own long-only options are numbered from TOPT_NEXT on */
enum { TOPT_DURATION = 256, TOPT_INFLIGHT, TOPT_FAIL_PROBE, TOPT_FORCE_RAW_TP, TOPT_COMM,
       TOPT_STAGES, TOPT_NO_TAG_SLOTS, TOPT_LOSE_COMPLETIONS, TOPT_STALE_AFTER,
       TOPT_HIST_KEYS, TOPT_NEXT };

#define TRACE_OPTS_SHORT "d:p:c:l:POCv"
#define TRACE_OPTS_LONG							\
	{ "disk", required_argument, NULL, 'd' },				\
	{ "pid", required_argument, NULL, 'p' },				\
	{ "cgroup", required_argument, NULL, 'c' },				\
	{ "layers", required_argument, NULL, 'l' },				\
	{ "per-process", no_argument, NULL, 'P' },				\
	{ "per-opcode", no_argument, NULL, 'O' },				\
	{ "per-cgroup", no_argument, NULL, 'C' },				\
	{ "comm", required_argument, NULL, TOPT_COMM },				\
	{ "stages", required_argument, NULL, TOPT_STAGES },			\
	{ "duration", required_argument, NULL, TOPT_DURATION },			\
	{ "inflight", required_argument, NULL, TOPT_INFLIGHT },			\
	{ "fail-probe", required_argument, NULL, TOPT_FAIL_PROBE },		\
	{ "force-raw-tp", no_argument, NULL, TOPT_FORCE_RAW_TP },		\
	{ "no-tag-slots", no_argument, NULL, TOPT_NO_TAG_SLOTS },		\
	{ "lose-completions", required_argument, NULL, TOPT_LOSE_COMPLETIONS },	\
	{ "stale-after", required_argument, NULL, TOPT_STALE_AFTER },		\
	{ "hist-keys", required_argument, NULL, TOPT_HIST_KEYS },		\
	{ "verbose", no_argument, NULL, 'v' }

/* Their --help lines: what to trace, and the session's knobs with -h and -V (both end in a
 * newline). */
extern const char trace_opts_help_what[];
extern const char trace_opts_help_knobs[];

struct trace_opts {
	struct trace_config cfg;
	struct run_limits lim;
	int verbose;
	const char *disk, *pid;		/* resolved by trace_opts_finish() */
	bool started;			/* trace_getopt() began the command line */
	/* --stages: the sets of layers its names are stages of (bit m: some name is a stage of
	 * the layers in m), and the first such name, for -l to be checked against */
	unsigned int stage_sets;
	char stage_set_name[1u << NLAYERS][32];
	const struct option *lo;	/* the command's long options, for trace_opt_rest() */
};

#define TRACE_OPTS_DEFAULT { .cfg = TRACE_CONFIG_DEFAULT, .lim = { .interval_s = 1.0 } }

/* iostrata's (trace's) command line, and record's: the same with -o FILE and --force. */
struct trace_args {
	struct trace_opts t;
	struct text_opts text;
	bool json;
	const char *output;	/* record: -o FILE */
	bool force;		/* record: overwrite FILE */
};

/* 0 to go on, 1 when done (help, version), -1 on a usage error (said). */
int trace_args_parse(int argc, char **argv, struct trace_args *a, bool record);

/*
 * getopt_long over argv from its start, the shared options taken on the way: the next option
 * the command handles itself (its own from `own`, ':' or '?'), -1 at the end, -2 when a shared
 * option's value is bad (said). optind is then where the arguments start.
 */
int trace_getopt(struct trace_opts *t, int argc, char **argv, const char *own,
		 const struct option *lo);
/* The rest of a command's option switch: -h (usage(stdout)), -V, or what getopt found wrong
 * (':' or '?'). 1: exit 0 (help or version shown); -1: a usage error (said). */
int trace_opt_rest(const struct trace_opts *t, int o, char **argv, void (*usage)(FILE *f));
/* After the command line: --stages against -l, the disk, pid and cgroup looked up. 0, or -1
 * with one line said. */
int trace_opts_finish(struct trace_opts *t);

/*
 * A command's start once its command line is read: logging as -j and -v say, root checked,
 * SIGINT/SIGTERM set to stop, the session opened. 0, or -1 with one line said.
 */
int trace_session_open(const struct trace_opts *t, bool json, struct session **s);

/* Seconds, decimal, from 0.001 to a year / an integer in [min, max], or -1 with one line said. */
int parse_seconds(const char *what, const char *s, double *out);
/* --fail-probe=TP, for every command that loads the layers: -1 (said) past MAX_FAIL_TPS */
int parse_fail_probe(struct trace_config *c, const char *tp);
int parse_long(const char *what, const char *s, long min, long max, long *out);

/* "block, uring, aio, syscall" */
void layer_names(char *buf, size_t len);
/* The --help's list of layers and their stages. */
void usage_layers(FILE *f);

#endif
